// The egress proxy behind a company's proxy (a fake of its own on loopback, test/support/fake-parent.ts, that alone
// knows where its names are): allowed connections go to it as CONNECT name:port with sbx's credentials, plain HTTP
// too; sbx's decision comes first and the parent never sees what sbx refused; the parent is never a destination; a
// sandbox's own Proxy-Authorization reaches nobody; the credentials are in no event, refusal or error.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { EgressEvent } from "../../../src/core/egress-events";
import { parentFromConfig, parentFromEnv } from "../../../src/core/parent-proxy";
import { startEgressProxy, type EgressProxy } from "../../../src/proxy/egress-proxy";
import { ParentRouter } from "../../../src/sys/parent";
import { fdPassing } from "../../../shims/fd-pass";
import { startFakeParent, type FakeParent } from "../../support/fake-parent";
import { echoServer, echoThrough, get, httpServer, openTunnel, rawExchange, tempDir } from "./helpers";

const PASSWORD = "s3cret-Pa55:word";
let echo: Awaited<ReturnType<typeof echoServer>>;
let web: Awaited<ReturnType<typeof httpServer>>;
let parent: FakeParent;
beforeAll(async () => {
  echo = await echoServer();
  web = await httpServer();
  parent = await startFakeParent({ sites: { "echo.test": echo.port, "web.test": web.port, "blocked.test": echo.port }, credentials: `corp-user:${PASSWORD}`, deny: ["blocked.test"] });
});
afterAll(async () => {
  await parent.close();
  await echo.close();
  await web.close();
});

let tmp: ReturnType<typeof tempDir>;
let proxy: EgressProxy;
let lists: { sandbox: string[]; global: string[]; published: string[] };
const events: EgressEvent[] = [];
const resolved: string[] = [];
/** The stored secret the config's proxy.credentials names, as the daemon reads it. */
let stored: Record<string, string>;

async function start(router: ParentRouter, resolve?: (h: string) => Promise<string[]>, extra: Partial<Parameters<typeof startEgressProxy>[0]> = {}) {
  proxy = await startEgressProxy({
    ...extra,
    socketPath: join(tmp.dir, "sb", "proxy.sock"),
    sandbox: { id: 7, name: "demo" },
    policy: () => lists,
    // The host resolves nothing outside (a company network where only the proxy does), but its own loopback names.
    resolve:
      resolve ??
      (async (h) => {
        resolved.push(h);
        if (h === "direct.test" || h === "localhost") return ["127.0.0.1"];
        throw new Error(`getaddrinfo ENOTFOUND ${h}`);
      }),
    onDecision: (e) => events.push(e),
    parent: router,
    connectTimeoutMs: 2000,
  });
}

function configRouter(extra: { noProxy?: string[] } = {}): ParentRouter {
  const s = parentFromConfig({ url: parent.url, credentials: "PROXY_LOGIN", ...extra }).settings;
  return new ParentRouter(s, (name) => stored[name] ?? null);
}

beforeEach(() => {
  tmp = tempDir();
  events.length = 0;
  resolved.length = 0;
  parent.seen.length = 0;
  stored = { PROXY_LOGIN: `corp-user:${PASSWORD}` };
  lists = { sandbox: ["echo.test", "web.test", "blocked.test", "direct.test"], global: [], published: [`127.0.0.1:${web.port}`] };
});
afterEach(async () => {
  await proxy.close();
  tmp.cleanup();
});

/** Every byte sbx wrote about this sandbox's traffic (events), as one string. */
const told = () => JSON.stringify(events);
const basic = Buffer.from(`corp-user:${PASSWORD}`).toString("base64");

describe("parent-proxy: allowed connections go through the host's proxy, by name, with sbx's credentials", () => {
  test("a CONNECT the host cannot resolve goes to the parent as CONNECT name:port; bytes flow; the close says via", async () => {
    await start(configRouter());
    const t = await openTunnel({ path: proxy.socketPath }, "echo.test:443");
    expect(t.status).toBe(200);
    expect((await echoThrough(t, "ping")).toString()).toBe("pingbye 4");
    expect(parent.seen.map((s) => [s.method, s.target, s.authorization])).toEqual([["CONNECT", "echo.test:443", `Basic ${basic}`]]);
    await Bun.sleep(20);
    // The tunnel's own bytes, not sbx's CONNECT to the parent nor its answer.
    expect(events.find((e) => e.type === "closed")).toMatchObject({ host: "echo.test", port: 443, address: "", via: parent.url, bytesUp: 4, bytesDown: 9 });
  });

  test("plain HTTP goes as a CONNECT too (the parent never sees the request), Host the checked authority", async () => {
    await start(configRouter());
    const r = await get(proxy.socketPath, "http://web.test/a?b=1");
    expect(r.status).toBe(200);
    expect(r.body).toBe("hello GET /a?b=1 host=web.test via=127.0.0.1 body=0");
    expect(parent.seen.map((s) => [s.method, s.target])).toEqual([["CONNECT", "web.test:80"]]);
  });

  test("pooled plain connections through the parent are kept per name: two requests, one CONNECT", async () => {
    await start(configRouter());
    const two = await rawExchange(proxy.socketPath, "GET http://web.test/1 HTTP/1.1\r\nHost: web.test\r\n\r\nGET http://web.test/2 HTTP/1.1\r\nHost: web.test\r\nConnection: close\r\n\r\n");
    expect(two.body).toContain("hello GET /2");
    expect(parent.seen.length).toBe(1);
  });

  test("what sbx refuses never reaches the parent; what the parent refuses is a 502 naming it and its status", async () => {
    await start(configRouter());
    const refused = await openTunnel({ path: proxy.socketPath }, "other.test:443");
    expect(refused.status).toBe(403);
    const denied = await openTunnel({ path: proxy.socketPath }, "blocked.test:443");
    expect(denied.status).toBe(502);
    expect(denied.response.body).toContain(`the parent proxy ${parent.url} answered 403 Forbidden`);
    const unknown = await get(proxy.socketPath, "http://echo.test:8080/");
    expect(unknown.status).toBe(403); // a port not allowed: sbx's, before the parent
    expect(parent.seen.map((s) => s.target)).toEqual(["blocked.test:443"]);
  });

  test("NO_PROXY sends a name straight out (to the address sbx checked), the rest through the parent", async () => {
    lists.sandbox.push(`direct.test:${web.port}`);
    await start(new ParentRouter(parentFromEnv({ HTTPS_PROXY: parent.url.replace("http://", `http://corp-user:${encodeURIComponent(PASSWORD)}@`), HTTP_PROXY: parent.url, NO_PROXY: "direct.test" }).settings));
    const direct = await get(proxy.socketPath, `http://direct.test:${web.port}/d`);
    expect(direct.body).toBe(`hello GET /d host=direct.test:${web.port} via=127.0.0.1 body=0`);
    expect(parent.seen).toEqual([]);
    const t = await openTunnel({ path: proxy.socketPath }, "echo.test:443");
    expect(t.status).toBe(200);
    t.socket.destroy();
    // The environment's inline user:password, decoded once and sent as Basic.
    expect(parent.seen.map((s) => s.authorization)).toEqual([`Basic ${basic}`]);
  });

  test("a service of the host (a published loopback address) is reached here, never through the parent, NO_PROXY or not", async () => {
    lists.sandbox.push(`direct.test:${web.port}`);
    await start(configRouter());
    const byName = await get(proxy.socketPath, `http://direct.test:${web.port}/n`);
    expect(byName.body).toBe(`hello GET /n host=direct.test:${web.port} via=127.0.0.1 body=0`);
    const byAddress = await get(proxy.socketPath, `http://127.0.0.1:${web.port}/a`);
    expect(byAddress.status).toBe(200);
    expect(parent.seen).toEqual([]);
  });

  test("a name the host resolves is still checked on that answer: a private one is refused before the parent hears of it", async () => {
    await start(configRouter(), async () => ["10.20.30.40"]);
    const t = await openTunnel({ path: proxy.socketPath }, "echo.test:443");
    expect(t.status).toBe(403);
    expect(t.response.headers["x-sbx-blocked"]).toBe("internal-address echo.test:443");
    expect(parent.seen).toEqual([]);
  });
});

const lib = fdPassing();
describe.skipIf(lib === null)("parent-proxy on the transparent path: a connection to a name's address goes to the parent by that name", () => {
  test("TLS-looking bytes to echo.test's address and plain HTTP to web.test's go to the parent as CONNECT name:port", async () => {
    const names = new Map([["echo.test", "127.77.0.5"], ["web.test", "127.77.0.6"]]);
    lists.sandbox.push("echo.test:7443");
    await start(configRouter(), undefined, { names: { addressOf: (n) => names.get(n) ?? null, nameOf: (a) => [...names].find(([, x]) => x === a)?.[0] ?? null }, transparentHttpPorts: [80] });
    const l = lib!.listenAll(0);
    // As inside a container the client dials name-address:port; the listener's port stands in for the site's.
    proxy.serveTransparent(l.fd, (s) => (s.localAddress ? { address: s.localAddress, port: s.localAddress === "127.77.0.6" ? 80 : 7443 } : null));
    const { connect } = await import("node:net");
    const talk = (address: string, bytes: string, until: (s: string) => boolean) =>
      new Promise<string>((resolve) => {
        const s = connect({ host: address, port: l.port, allowHalfOpen: true });
        let out = "";
        s.on("data", (d: Buffer) => {
          out += d.toString();
          if (until(out)) s.destroy();
        });
        s.on("close", () => resolve(out));
        s.on("error", () => resolve(out));
        s.write(bytes);
        s.end();
      });
    expect(await talk("127.77.0.5", "ping", (o) => o.includes("bye"))).toBe("pingbye 4");
    const plain = await talk("127.77.0.6", "GET /t HTTP/1.1\r\nHost: web.test\r\nConnection: close\r\n\r\n", () => false);
    expect(plain).toContain("hello GET /t host=web.test");
    expect(parent.seen.map((s) => s.target)).toEqual(["echo.test:7443", "web.test:80"]);
  });
});

describe("parent-proxy-never-a-destination: a sandbox cannot use the company's proxy itself", () => {
  test("CONNECT to the parent by its name is refused before the allowlist (no approval offered), allowlisted or not", async () => {
    const s = parentFromConfig({ url: `http://localhost:${parent.port}` }).settings;
    lists.sandbox.push("localhost", `localhost:${parent.port}`);
    await start(new ParentRouter(s));
    const t = await openTunnel({ path: proxy.socketPath }, `localhost:${parent.port}`);
    expect(t.status).toBe(403);
    expect(t.response.headers["x-sbx-blocked"]).toBe(`host-address localhost:${parent.port}`);
    expect(t.response.body).toContain("the parent proxy sbx itself goes out through");
    expect(t.response.body).not.toContain("sbx allow");
    expect(parent.seen).toEqual([]);
  });

  test("its address as an IP literal, even published, and a name that resolves to it, are refused; the host's other published services are not", async () => {
    lists.published.push(`127.0.0.1:${parent.port}`);
    lists.sandbox.push(`alias.test:${parent.port}`, `direct.test:${web.port}`);
    await start(new ParentRouter(parentFromConfig({ url: parent.url, noProxy: ["direct.test"] }).settings), async (h) => (h === "alias.test" || h === "direct.test" ? ["127.0.0.1"] : []));
    const literal = await openTunnel({ path: proxy.socketPath }, `127.0.0.1:${parent.port}`);
    expect(literal.status).toBe(403);
    expect(literal.response.body).toContain("is the parent proxy sbx itself goes out through");
    const alias = await openTunnel({ path: proxy.socketPath }, `alias.test:${parent.port}`);
    expect(alias.status).toBe(403);
    expect(alias.response.body).toContain(`alias.test resolves to 127.0.0.1, which is the parent proxy`);
    // Another port of the same loopback address is the host's own published service, as without a parent.
    const other = await get(proxy.socketPath, `http://direct.test:${web.port}/ok`);
    expect(other.status).toBe(200);
    expect(parent.seen).toEqual([]);
  });

  test("a plain request that names the parent (absolute-form to its host) is refused the same way", async () => {
    lists.published.push(`127.0.0.1:${parent.port}`);
    await start(new ParentRouter(parentFromConfig({ url: parent.url }).settings));
    const r = await get(proxy.socketPath, `http://127.0.0.1:${parent.port}/http://echo.test/`);
    expect(r.status).toBe(403);
    expect(parent.seen).toEqual([]);
  });
});

describe("parent-proxy credentials: the sandbox's never reach the parent, sbx's are never shown", () => {
  test("a sandbox's own Proxy-Authorization (on CONNECT and on a plain request) is sent to nobody", async () => {
    await start(configRouter());
    const mine = `Basic ${Buffer.from("sandbox:guess").toString("base64")}`;
    const r = await get(proxy.socketPath, "http://web.test/x", `Proxy-Authorization: ${mine}\r\n`);
    expect(r.status).toBe(200);
    const t = await new Promise<string>((resolve) => {
      const { connect } = require("node:net") as typeof import("node:net");
      const s = connect({ path: proxy.socketPath });
      let out = "";
      s.on("data", (d: Buffer) => {
        out += d.toString();
        if (out.includes("\r\n\r\n")) {
          s.destroy();
          resolve(out.split("\r\n")[0]!);
        }
      });
      s.write(`CONNECT echo.test:443 HTTP/1.1\r\nHost: echo.test:443\r\nProxy-Authorization: ${mine}\r\n\r\n`);
    });
    expect(t).toBe("HTTP/1.1 200 Connection Established");
    // The parent got sbx's own credentials each time; the sandbox's went nowhere (the web server saw no such header).
    expect(parent.seen.map((s) => s.authorization)).toEqual([`Basic ${basic}`, `Basic ${basic}`]);
    expect(parent.seen.some((s) => s.head.includes("sandbox:guess") || s.head.includes(mine))).toBe(false);
  });

  test("refused for its credentials (407): the sandbox hears the parent and 407, and no event or answer holds them", async () => {
    stored.PROXY_LOGIN = `corp-user:wrong-${PASSWORD}`;
    await start(configRouter());
    const t = await openTunnel({ path: proxy.socketPath }, "echo.test:443");
    expect(t.status).toBe(502);
    expect(t.response.body).toContain(`the parent proxy ${parent.url} answered 407 Proxy Authentication Required`);
    const p = await get(proxy.socketPath, "http://web.test/");
    expect(p.status).toBe(502);
    expect(p.body).toContain("answered 407");
    for (const text of [t.response.head, t.response.body, p.head, p.body, told()]) {
      expect(text).not.toContain(PASSWORD);
      expect(text).not.toContain("corp-user");
      expect(text).not.toContain(Buffer.from(`corp-user:wrong-${PASSWORD}`).toString("base64"));
    }
  });

  test("a stored secret that is missing or not user:password: nothing is sent to the parent, and the 502 says what to set", async () => {
    delete stored.PROXY_LOGIN;
    await start(configRouter());
    const t = await openTunnel({ path: proxy.socketPath }, "echo.test:443");
    expect(t.status).toBe(502);
    expect(t.response.body).toContain("sbx secret set PROXY_LOGIN");
    stored.PROXY_LOGIN = PASSWORD.replace(":", "");
    const u = await openTunnel({ path: proxy.socketPath }, "echo.test:443");
    expect(u.response.body).toContain("must hold user:password");
    expect(u.response.body).not.toContain(PASSWORD.replace(":", ""));
    expect(parent.seen).toEqual([]);
  });
});
