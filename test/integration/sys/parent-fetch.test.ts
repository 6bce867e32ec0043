// parent-proxy-routes: the daemon's own fetches (downloads, sign-in refreshes, chat) go where sbx's router says, and
// nowhere else. A destination the config file's `proxy.noProxy` sends straight out must not go through a proxy the
// daemon's environment happens to name: Bun's fetch reads HTTP(S)_PROXY by itself unless it is told `proxy: false`.
import { afterEach, describe, expect, test } from "bun:test";
import { parentFromConfig } from "../../../src/core/parent-proxy";
import { parentFetch, ParentRouter } from "../../../src/sys/parent";

const saved = { ...process.env };
const stops: (() => void)[] = [];
afterEach(() => {
  for (const s of stops.splice(0)) s();
  for (const k of ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"]) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
});

/** A loopback listener that counts connections and answers none (a proxy the environment names). */
function counter(): { port: number; hits: () => number } {
  let n = 0;
  const l = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { open: (s) => void (n++, s.end()), data() {} } });
  stops.push(() => l.stop(true));
  return { port: l.port, hits: () => n };
}

describe("parent-proxy-routes: the daemon's fetch goes only where the router says", () => {
  test("a destination the config's noProxy names goes straight out, not through the environment's proxy", async () => {
    const site = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("direct") });
    stops.push(() => site.stop(true));
    const envProxy = counter();
    const parent = counter();
    process.env.HTTP_PROXY = process.env.http_proxy = `http://127.0.0.1:${envProxy.port}`;
    process.env.NO_PROXY = process.env.no_proxy = "";
    const { settings } = parentFromConfig({ url: `http://127.0.0.1:${parent.port}`, noProxy: ["127.0.0.1"] });
    const f = parentFetch(new ParentRouter(settings!, () => null));
    const r = await f(`http://127.0.0.1:${site.port}/`);
    expect(await r.text()).toBe("direct");
    expect({ envProxy: envProxy.hits(), parent: parent.hits() }).toEqual({ envProxy: 0, parent: 0 });
  });

  test("a destination the router sends to the parent goes there, not to the environment's proxy", async () => {
    const envProxy = counter();
    const parent = counter();
    process.env.HTTP_PROXY = process.env.http_proxy = `http://127.0.0.1:${envProxy.port}`;
    const { settings } = parentFromConfig({ url: `http://127.0.0.1:${parent.port}` });
    const f = parentFetch(new ParentRouter(settings!, () => null));
    await f("http://site.test/").catch(() => null);
    expect({ envProxy: envProxy.hits(), parent: parent.hits() }).toEqual({ envProxy: 0, parent: 1 });
  });
});
