// Invariant 2, allowlist-exact, at the proxy: wildcards exact, IP literals and internal resolutions refused, one lookup, ports limited.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { startEgressProxy, type EgressProxy } from "../../../src/proxy/egress-proxy";
import { echoServer, echoThrough, get, httpServer, openTunnel, tempDir } from "./helpers";

let tmp: ReturnType<typeof tempDir>;
let echo: Awaited<ReturnType<typeof echoServer>>;
let echo2: Awaited<ReturnType<typeof echoServer>>;
let web: Awaited<ReturnType<typeof httpServer>>;
let proxy: EgressProxy;
let lists: { sandbox: string[]; global: string[] };
const lookups: string[] = [];
/** The resolver seam: answers change between calls, so a second lookup would be visible. Loopback only. */
const answers = new Map<string, string[][]>();

beforeAll(async () => {
  tmp = tempDir();
  echo = await echoServer("127.0.0.2");
  // The same port on 127.0.0.1: a proxy that looked the name up twice would reach this one instead.
  echo2 = await echoServer("127.0.0.1", echo.port);
  web = await httpServer();
  lists = { sandbox: [], global: [] };
  proxy = await startEgressProxy({
    socketPath: join(tmp.dir, "proxy.sock"),
    sandbox: { id: 1, name: "demo" },
    policy: () => lists,
    resolve: async (h) => {
      lookups.push(h);
      const seq = answers.get(h);
      if (!seq || seq.length === 0) throw new Error(`ENOTFOUND ${h}`);
      return seq.length > 1 ? seq.shift()! : seq[0]!;
    },
  });
});
afterAll(async () => {
  await proxy.close();
  await echo.close();
  await echo2.close();
  await web.close();
  tmp.cleanup();
});

const connectStatus = async (authority: string) => {
  const t = await openTunnel({ path: proxy.socketPath }, authority);
  t.socket.destroy();
  return t;
};

describe("allowlist-exact through the proxy", () => {
  test("*.example.test reaches a.example.test and a.b.example.test, never example.test or evilexample.test", async () => {
    lists = { sandbox: [`*.example.test:${echo.port}`, `127.0.0.0/8:${echo.port}`], global: [] };
    for (const h of ["a.example.test", "a.b.example.test", "example.test", "evilexample.test"]) answers.set(h, [["127.0.0.2"]]);
    expect((await connectStatus(`a.example.test:${echo.port}`)).status).toBe(200);
    expect((await connectStatus(`A.B.Example.Test.:${echo.port}`)).status).toBe(200);
    const bare = await connectStatus(`example.test:${echo.port}`);
    expect(bare.status).toBe(403);
    expect(bare.response.headers["x-sbx-blocked"]).toStartWith("not-allowlisted");
    expect((await connectStatus(`evilexample.test:${echo.port}`)).status).toBe(403);
  });

  test("an exact name matches only itself", async () => {
    lists = { sandbox: [`exact.test:${echo.port}`, `127.0.0.2:${echo.port}`], global: [] };
    answers.set("exact.test", [["127.0.0.2"]]);
    answers.set("sub.exact.test", [["127.0.0.2"]]);
    expect((await connectStatus(`exact.test:${echo.port}`)).status).toBe(200);
    expect((await connectStatus(`sub.exact.test:${echo.port}`)).status).toBe(403);
  });

  test("IP literals are refused unless that IP is allowlisted (also in numeric disguise)", async () => {
    lists = { sandbox: [`*.example.test:${echo.port}`], global: [] };
    lookups.length = 0;
    for (const a of [`127.0.0.2:${echo.port}`, `2130706434:${echo.port}`, `0x7f.0.0.2:${echo.port}`, `[::ffff:127.0.0.2]:${echo.port}`]) {
      const t = await connectStatus(a);
      expect({ a, status: t.status }).toEqual({ a, status: 403 });
      expect(t.response.headers["x-sbx-blocked"]).toStartWith("ip-literal");
    }
    expect(lookups).toEqual([]);
    lists = { sandbox: [`127.0.0.2:${echo.port}`], global: [] };
    const t = await openTunnel({ path: proxy.socketPath }, `2130706434:${echo.port}`);
    expect(t.status).toBe(200);
    expect((await echoThrough(t, "ip")).toString()).toBe("ipbye 2");
  });

  test("a name that resolves to 127.0.0.1 is refused unless 127.0.0.1 itself is allowlisted", async () => {
    answers.set("loop.test", [["127.0.0.1"]]);
    lists = { sandbox: [`loop.test:${echo.port}`], global: [] };
    const refused = await connectStatus(`loop.test:${echo.port}`);
    expect(refused.status).toBe(403);
    expect(refused.response.headers["x-sbx-blocked"]).toBe(`internal-address loop.test:${echo.port}`);
    expect(refused.response.body).toContain("127.0.0.1, a loopback address");
    expect(refused.response.body).toContain(`sbx allow 127.0.0.1:${echo.port} --sandbox demo`);
    // Plain HTTP takes the same path.
    answers.set("loopweb.test", [["127.0.0.1"]]);
    lists = { sandbox: [`loopweb.test:${web.port}`], global: [] };
    expect((await get(proxy.socketPath, `http://loopweb.test:${web.port}/`)).status).toBe(403);
    lists = { sandbox: [`loopweb.test:${web.port}`, `127.0.0.1:${web.port}`], global: [] };
    expect((await get(proxy.socketPath, `http://loopweb.test:${web.port}/`)).status).toBe(200);
  });

  test("private, link-local, CGNAT and metadata answers are refused (nothing is connected to)", async () => {
    for (const [name, addr, kind] of [
      ["priv.test", "10.1.2.3", "private"],
      ["ll.test", "169.254.1.1", "link-local"],
      ["cg.test", "100.64.0.1", "cgnat"],
      ["md.test", "169.254.169.254", "metadata"],
      ["md6.test", "fd00:ec2::254", "metadata"],
      ["mapped.test", "::ffff:10.0.0.1", "private"],
      ["mixed.test", "127.0.0.2", "loopback"],
    ] as const) {
      answers.set(name, [[addr]]);
      lists = { sandbox: [name], global: [] };
      const t = await connectStatus(`${name}:443`);
      expect({ name, status: t.status }).toEqual({ name, status: 403 });
      expect(t.response.body).toContain(`a ${kind} address`);
    }
  });

  test("one lookup: the proxy connects to the address it checked, not to a second answer", async () => {
    // First answer 127.0.0.2, any later one 127.0.0.1 (the other echo server on the same port).
    answers.set("once.test", [["127.0.0.2"], ["127.0.0.1"]]);
    lists = { sandbox: [`once.test:${echo.port}`, `127.0.0.2:${echo.port}`], global: [] };
    lookups.length = 0;
    const before1 = echo.connections.length;
    const before2 = echo2.connections.length;
    const t = await openTunnel({ path: proxy.socketPath }, `once.test:${echo.port}`);
    expect(t.status).toBe(200);
    expect((await echoThrough(t, "a")).toString()).toBe("abye 1");
    expect(lookups).toEqual(["once.test"]);
    expect(echo.connections.slice(before1)).toEqual(["127.0.0.2"]);
    expect(echo2.connections.length).toBe(before2);
  });

  test("ports: 443 and 80 unless a pattern names the port", async () => {
    answers.set("ports.test", [["127.0.0.2"]]);
    lists = { sandbox: ["ports.test", "127.0.0.2"], global: [] };
    const t = await connectStatus(`ports.test:${echo.port}`);
    expect(t.status).toBe(403);
    expect(t.response.headers["x-sbx-blocked"]).toBe(`port-not-allowed ports.test:${echo.port}`);
    expect(t.response.body).toContain(`sbx allow ports.test:${echo.port} --sandbox demo`);
    expect((await connectStatus(`ports.test:22`)).status).toBe(403);
  });
});
