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
// The test servers are the host's own (loopback): reached as published services, as a sandbox reaches any.
let lists: { sandbox: string[]; global: string[]; published?: string[] };
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
    lists = { sandbox: [`*.example.test:${echo.port}`], global: [], published: [`127.0.0.2:${echo.port}`] };
    for (const h of ["a.example.test", "a.b.example.test", "example.test", "evilexample.test"]) answers.set(h, [["127.0.0.2"]]);
    expect((await connectStatus(`a.example.test:${echo.port}`)).status).toBe(200);
    expect((await connectStatus(`A.B.Example.Test.:${echo.port}`)).status).toBe(200);
    const bare = await connectStatus(`example.test:${echo.port}`);
    expect(bare.status).toBe(403);
    expect(bare.response.headers["x-sbx-blocked"]).toStartWith("not-allowlisted");
    expect((await connectStatus(`evilexample.test:${echo.port}`)).status).toBe(403);
  });

  test("an exact name matches only itself", async () => {
    lists = { sandbox: [`exact.test:${echo.port}`], global: [], published: [`127.0.0.2:${echo.port}`] };
    answers.set("exact.test", [["127.0.0.2"]]);
    answers.set("sub.exact.test", [["127.0.0.2"]]);
    expect((await connectStatus(`exact.test:${echo.port}`)).status).toBe(200);
    expect((await connectStatus(`sub.exact.test:${echo.port}`)).status).toBe(403);
  });

  test("IP literals of the host's loopback are refused unless that service is published (also in numeric disguise)", async () => {
    lists = { sandbox: [`*.example.test:${echo.port}`], global: [] };
    lookups.length = 0;
    for (const a of [`127.0.0.2:${echo.port}`, `2130706434:${echo.port}`, `0x7f.0.0.2:${echo.port}`, `[::ffff:127.0.0.2]:${echo.port}`, `0.0.0.0:${echo.port}`]) {
      const t = await connectStatus(a);
      expect({ a, status: t.status }).toEqual({ a, status: 403 });
      expect(t.response.headers["x-sbx-blocked"]).toStartWith("host-address");
    }
    expect(lookups).toEqual([]);
    // Even an allowlist entry for it (stored before this rule, or written by hand) does not reach the host.
    lists = { sandbox: [`127.0.0.2:${echo.port}`, `0.0.0.0:${echo.port}`], global: [] };
    expect((await connectStatus(`127.0.0.2:${echo.port}`)).status).toBe(403);
    expect((await connectStatus(`0.0.0.0:${echo.port}`)).status).toBe(403);
    lists = { sandbox: [], global: [], published: [`127.0.0.2:${echo.port}`] };
    const t = await openTunnel({ path: proxy.socketPath }, `2130706434:${echo.port}`);
    expect(t.status).toBe(200);
    expect((await echoThrough(t, "ip")).toString()).toBe("ipbye 2");
  });

  test("a name that resolves to the host's loopback is refused unless that service is published", async () => {
    answers.set("loop.test", [["127.0.0.1"]]);
    lists = { sandbox: [`loop.test:${echo.port}`], global: [] };
    const refused = await connectStatus(`loop.test:${echo.port}`);
    expect(refused.status).toBe(403);
    expect(refused.response.headers["x-sbx-blocked"]).toBe(`host-address loop.test:${echo.port}`);
    expect(refused.response.body).toContain("127.0.0.1, which is the host's own loopback");
    expect(refused.response.body).toContain(`sbx publish demo 127.0.0.1:${echo.port}`);
    // Plain HTTP takes the same path; host.sbx.internal is the host's 127.0.0.1.
    answers.set("loopweb.test", [["127.0.0.1"]]);
    lists = { sandbox: [`loopweb.test:${web.port}`], global: [] };
    expect((await get(proxy.socketPath, `http://loopweb.test:${web.port}/`)).status).toBe(403);
    expect((await get(proxy.socketPath, `http://host.sbx.internal:${web.port}/`)).status).toBe(403);
    lists = { sandbox: [`loopweb.test:${web.port}`], global: [], published: [`127.0.0.1:${web.port}`] };
    const ok = await get(proxy.socketPath, `http://loopweb.test:${web.port}/`);
    expect({ status: ok.status, body: ok.status === 200 ? "" : ok.body }).toEqual({ status: 200, body: "" });
    expect((await get(proxy.socketPath, `http://host.sbx.internal:${web.port}/`)).status).toBe(200);
  });

  test("private, link-local, CGNAT and metadata answers are refused (nothing is connected to)", async () => {
    for (const [name, addr, kind] of [
      ["priv.test", "10.1.2.3", "private"],
      ["ll.test", "169.254.1.1", "link-local"],
      ["cg.test", "100.64.0.1", "cgnat"],
      ["md.test", "169.254.169.254", "metadata"],
      ["md6.test", "fd00:ec2::254", "metadata"],
      ["mapped.test", "::ffff:10.0.0.1", "private"],
      ["nat64.test", "64:ff9b::a00:1", "private"],
      ["6to4.test", "2002:a9fe:a9fe::1", "metadata"],
    ] as const) {
      answers.set(name, [[addr]]);
      lists = { sandbox: [name], global: [] };
      const t = await connectStatus(`${name}:443`);
      expect({ name, status: t.status }).toEqual({ name, status: 403 });
      expect(t.response.body).toContain(`a ${kind} address`);
    }
    // A network on the allowlist reaches none of them: only the exact address does.
    answers.set("net.test", [["10.1.2.3"]]);
    lists = { sandbox: ["net.test", "10.1.2.0/24"], global: [] };
    expect((await connectStatus("net.test:443")).status).toBe(403);
  });

  test("one lookup: the proxy connects to the address it checked, not to a second answer", async () => {
    // First answer 127.0.0.2, any later one 127.0.0.1 (the other echo server on the same port).
    answers.set("once.test", [["127.0.0.2"], ["127.0.0.1"]]);
    lists = { sandbox: [`once.test:${echo.port}`], global: [], published: [`127.0.0.2:${echo.port}`] };
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
    lists = { sandbox: ["ports.test"], global: [], published: [`127.0.0.2:${echo.port}`] };
    const t = await connectStatus(`ports.test:${echo.port}`);
    expect(t.status).toBe(403);
    expect(t.response.headers["x-sbx-blocked"]).toBe(`port-not-allowed ports.test:${echo.port}`);
    expect(t.response.body).toContain(`sbx allow ports.test:${echo.port} --sandbox demo`);
    expect((await connectStatus(`ports.test:22`)).status).toBe(403);
  });
});

describe("a refused client can tell what happened", () => {
  test("CONNECT: the hint is in the reason phrase (what npm and curl -v print), printable only; plain HTTP too, with X-Sbx-Blocked", async () => {
    lists = { sandbox: [], global: [] };
    answers.set("nope.test", [["127.0.0.2"]]);
    const t = await connectStatus(`nope.test:443`);
    expect(t.response.head.split("\r\n")[0]).toBe("HTTP/1.1 403 sbx: nope.test:443 is not allowed (sbx allow nope.test --sandbox demo)");
    const host = await connectStatus(`127.0.0.2:${echo.port}`);
    expect(host.response.head.split("\r\n")[0]).toBe(`HTTP/1.1 403 sbx: 127.0.0.2:${echo.port} is not allowed (sbx publish demo 127.0.0.2:${echo.port})`);
    const never = await connectStatus(`0.0.0.0:${echo.port}`);
    expect(never.response.head.split("\r\n")[0]).toBe(`HTTP/1.1 403 sbx: 0.0.0.0:${echo.port} is not allowed (it cannot be allowed)`);
    const r = await get(proxy.socketPath, "http://nope.test/x");
    expect(r.status).toBe(403);
    expect(r.head.split("\r\n")[0]).toBe("HTTP/1.1 403 sbx: nope.test:80 is not allowed (sbx allow nope.test --sandbox demo)");
    expect(r.headers["x-sbx-blocked"]).toBe("not-allowlisted nope.test:80");
  });
});

describe("plain HTTP is judged by what is sent", () => {
  /** Writes raw bytes to the proxy and reads until it closes (or 2 s pass). */
  async function raw(text: string): Promise<string> {
    const { connect } = await import("node:net");
    return new Promise((resolve) => {
      const s = connect(proxy.socketPath);
      let out = "";
      const t = setTimeout(() => s.destroy(), 2000);
      s.on("data", (d) => (out += d.toString()));
      s.on("close", () => (clearTimeout(t), resolve(out)));
      s.on("error", () => undefined);
      s.write(text);
    });
  }

  test("a Host header naming another authority than the target is refused (400); the server is never reached", async () => {
    answers.set("web.test", [["127.0.0.1"]]);
    lists = { sandbox: [`web.test:${web.port}`], global: [], published: [`127.0.0.1:${web.port}`] };
    let seen = 0;
    const count = () => void seen++;
    web.server.on("request", count);
    for (const host of ["evil.test", `evil.test:${web.port}`, `web.test:${web.port + 1}`, "web.test", ""]) {
      const r = await raw(`GET http://web.test:${web.port}/x HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      expect({ host, line: r.split("\r\n")[0] }).toEqual({ host, line: "HTTP/1.1 400 Bad Request" });
    }
    expect(seen).toBe(0);
    web.server.off("request", count);
    // The same authority in another spelling is the same: it goes, and the server sees the checked one.
    const ok = await raw(`GET http://web.test:${web.port}/x HTTP/1.1\r\nHost: WEB.test.:${web.port}\r\nConnection: close\r\n\r\n`);
    expect(ok.split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
    expect(ok).toContain(`host=web.test:${web.port}`);
  });

  test("pipelined requests on one connection are each checked on their own", async () => {
    answers.set("web.test", [["127.0.0.1"]]);
    lists = { sandbox: [`web.test:${web.port}`], global: [], published: [`127.0.0.1:${web.port}`] };
    const r = await raw(
      `GET http://web.test:${web.port}/a HTTP/1.1\r\nHost: web.test:${web.port}\r\n\r\n` +
        `GET http://other.test:${web.port}/b HTTP/1.1\r\nHost: other.test:${web.port}\r\n\r\n` +
        `GET http://web.test:${web.port}/c HTTP/1.1\r\nHost: web.test:${web.port}\r\nConnection: close\r\n\r\n`,
    );
    // Bodies do not end in CRLF: the status lines are found where they are.
    expect([...r.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => m[1])).toEqual(["200", "403", "200"]);
    expect(r).toContain("hello GET /c host=web.test");
  });
});
