// The egress proxy over a real unix socket to loopback servers: CONNECT, plain HTTP, 403s, approvals, live allowlist changes.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdirSync, realpathSync, statSync } from "node:fs";
import { join } from "node:path";
import type { EgressEvent } from "../../../src/core/egress-events";
import { startEgressProxy, type EgressProxy } from "../../../src/proxy/egress-proxy";
import { createDecisionSink } from "../../../src/policy/decision-sink";
import { PolicyService, policyFor } from "../../../src/policy/service";
import { Store } from "../../../src/store/store";
import { echoServer, echoThrough, get, httpServer, openTunnel, rawExchange, tempDir } from "./helpers";

let echo: Awaited<ReturnType<typeof echoServer>>;
let web: Awaited<ReturnType<typeof httpServer>>;
beforeAll(async () => {
  echo = await echoServer();
  web = await httpServer();
});
afterAll(async () => {
  await echo.close();
  await web.close();
});

describe("CONNECT and plain HTTP with a static policy", () => {
  let tmp: ReturnType<typeof tempDir>;
  let proxy: EgressProxy;
  let lists: { sandbox: string[]; global: string[]; published: string[] };
  const events: EgressEvent[] = [];
  const resolved: string[] = [];
  beforeEach(async () => {
    tmp = tempDir();
    events.length = 0;
    resolved.length = 0;
    lists = { sandbox: [`local.test:${web.port}`, `local.test:${echo.port}`], global: [], published: [`127.0.0.1:${echo.port}`, `127.0.0.1:${web.port}`] };
    proxy = await startEgressProxy({
      socketPath: join(tmp.dir, "sb", "proxy.sock"),
      sandbox: { id: 7, name: "demo" },
      policy: () => lists,
      resolve: async (h) => {
        resolved.push(h);
        // Only loopback answers: tests never send traffic anywhere else.
        return h === "local.test" || h === "late.test" ? ["127.0.0.1"] : [];
      },
      onDecision: (e) => events.push(e),
    });
  });
  afterEach(async () => {
    await proxy.close();
    tmp.cleanup();
  });

  test("the socket is 0600 in a 0700 dir, and /health answers", async () => {
    expect(statSync(proxy.socketPath).mode & 0o777).toBe(0o600);
    expect(statSync(join(tmp.dir, "sb")).mode & 0o777).toBe(0o700);
    const r = await rawExchange(proxy.socketPath, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toEqual({ ok: true, sandbox: "demo" });
  });

  test("a CONNECT tunnel carries bytes both ways and respects half-close", async () => {
    const t = await openTunnel({ path: proxy.socketPath }, `127.0.0.1:${echo.port}`);
    expect(t.status).toBe(200);
    const out = await echoThrough(t, "ping");
    // The server saw our FIN, then still sent its reply and closed: half-close passed both ways.
    expect(out.toString()).toBe("pingbye 4");
    await Bun.sleep(20);
    const closed = events.find((e) => e.type === "closed");
    expect(closed).toMatchObject({ type: "closed", method: "CONNECT", host: "127.0.0.1", bytesUp: 4, bytesDown: 9, source: "published" });
  });

  test("CONNECT by name: resolved once through the seam, connected to the checked address", async () => {
    const t = await openTunnel({ path: proxy.socketPath }, `LOCAL.test.:${echo.port}`);
    expect(t.status).toBe(200);
    expect((await echoThrough(t, "x")).toString()).toBe("xbye 1");
    expect(resolved).toEqual(["local.test"]);
  });

  test("plain HTTP with an absolute URI is forwarded, hop-by-hop headers dropped", async () => {
    const r = await get(proxy.socketPath, `http://local.test:${web.port}/a/b?c=1`, "Proxy-Connection: keep-alive\r\n");
    expect(r.status).toBe(200);
    expect(r.body).toBe(`hello GET /a/b?c=1 host=local.test:${web.port} via=127.0.0.1 body=0`);
    expect(r.headers["x-seen-proxy-connection"]).toBe("");
  });

  test("plain HTTP keep-alive: two requests on one connection, the second to another host", async () => {
    const text =
      `GET http://127.0.0.1:${web.port}/one HTTP/1.1\r\nHost: 127.0.0.1:${web.port}\r\n\r\n` +
      `POST http://local.test:${web.port}/two HTTP/1.1\r\nHost: local.test:${web.port}\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello`;
    const raw = await new Promise<string>((resolve, reject) => {
      const s = require("node:net").connect({ path: proxy.socketPath });
      let out = "";
      s.on("data", (d: Buffer) => (out += d));
      s.on("end", () => resolve(out));
      s.on("error", reject);
      s.write(text);
    });
    expect(raw).toContain("hello GET /one");
    expect(raw).toContain("hello POST /two host=local.test");
    expect(raw).toContain("body=5");
  });

  test("denied CONNECT: 403, X-Sbx-Blocked, a one-paragraph body with the exact command; no DNS lookup", async () => {
    const t = await openTunnel({ path: proxy.socketPath }, "example.org:443");
    expect(t.status).toBe(403);
    expect(t.response.headers["x-sbx-blocked"]).toBe("not-allowlisted example.org:443");
    expect(t.response.body).toContain("example.org:443");
    expect(t.response.body).toContain("sbx allow example.org --sandbox demo");
    expect(t.response.body.trim().split("\n")).toHaveLength(1);
    expect(resolved).toEqual([]);
    expect(events).toEqual([expect.objectContaining({ type: "denied", host: "example.org", port: 443, reason: "not-allowlisted", suggest: "example.org" })]);
  });

  test("denied plain HTTP: 403 with header and body", async () => {
    const r = await get(proxy.socketPath, "http://example.org/x");
    expect(r.status).toBe(403);
    expect(r.headers["x-sbx-blocked"]).toBe("not-allowlisted example.org:80");
    expect(r.body).toContain("sbx allow example.org --sandbox demo");
  });

  test("origin-form requests get 400 without an origin handler; https absolute URIs are refused", async () => {
    expect((await rawExchange(proxy.socketPath, "GET /llm/anthropic/v1/messages HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")).status).toBe(400);
    expect((await get(proxy.socketPath, "https://api.anthropic.com/")).status).toBe(400);
  });

  test("an allowed destination that refuses: 502 from the proxy", async () => {
    const closedPort = await (async () => {
      const e = await echoServer();
      const p = e.port;
      await e.close();
      return p;
    })();
    lists.published.push(`127.0.0.1:${closedPort}`);
    const t = await openTunnel({ path: proxy.socketPath }, `127.0.0.1:${closedPort}`);
    expect(t.status).toBe(502);
  });

  test("the policy is read per request: a list change applies to the next request", async () => {
    expect((await openTunnel({ path: proxy.socketPath }, `late.test:${echo.port}`)).status).toBe(403);
    lists.sandbox.push(`late.test:${echo.port}`);
    const t = await openTunnel({ path: proxy.socketPath }, `late.test:${echo.port}`);
    expect(t.status).toBe(200);
    expect((await echoThrough(t, "z")).toString()).toBe("zbye 1");
  });
});

describe("with the Store: approvals recorded once, an allow applies without restart", () => {
  let tmp: ReturnType<typeof tempDir>;
  let store: Store;
  let proxy: EgressProxy;
  let repo: string;
  let sandboxId: number;
  let sink: ReturnType<typeof createDecisionSink>;
  const notified: string[] = [];

  beforeEach(async () => {
    tmp = tempDir();
    repo = join(tmp.dir, "repo");
    mkdirSync(repo);
    repo = realpathSync(repo);
    store = new Store(join(tmp.dir, "state", "sbx", "sbx.db"));
    sandboxId = store.createSandbox({ name: "demo", repo, backend: "fake" }).id;
    sink = createDecisionSink(store, { flushMs: 10, notify: (a) => notified.push(a.host) });
    proxy = await startEgressProxy({
      socketPath: join(tmp.dir, "run", "proxy.sock"),
      sandbox: { id: sandboxId, name: "demo" },
      policy: () => policyFor(store, sandboxId),
      resolve: async (h) => (h === "svc.test" ? ["127.0.0.1"] : []),
      onDecision: sink.onDecision,
    });
  });
  afterEach(async () => {
    await proxy.close();
    sink.close();
    store.close();
    tmp.cleanup();
  });

  test("three refused attempts make one pending approval with count 3, three audit rows, one notification", async () => {
    notified.length = 0;
    for (let i = 0; i < 3; i++) expect((await openTunnel({ path: proxy.socketPath }, `svc.test:${echo.port}`)).status).toBe(403);
    const pending = store.listApprovals({ state: "pending" });
    expect(pending).toHaveLength(1);
    expect(pending[0]).toMatchObject({ host: "svc.test", port: echo.port, count: 3, sandboxId });
    expect(store.listAudit({ sandboxId }).filter((a) => a.action === "denied")).toHaveLength(3);
    expect(notified).toEqual(["svc.test"]);
  });

  test("an allow (the policy service, on another Store connection) then success, same proxy, no restart", async () => {
    const other = new Store(join(tmp.dir, "state", "sbx", "sbx.db"));
    const policy = new PolicyService({ store: other });
    const sb = other.getSandbox(sandboxId)!;
    expect((await openTunnel({ path: proxy.socketPath }, `svc.test:${echo.port}`)).status).toBe(403);

    policy.allow({ kind: "sandbox", sandbox: sb }, [`svc.test:${echo.port}`], "cli:t");
    // The name is allowed now, but it resolves to the host's loopback: refused until that service is published.
    const mid = await openTunnel({ path: proxy.socketPath }, `svc.test:${echo.port}`);
    expect(mid.status).toBe(403);
    expect(mid.response.headers["x-sbx-blocked"]).toBe(`host-address svc.test:${echo.port}`);
    expect(mid.response.body).toContain(`sbx publish demo 127.0.0.1:${echo.port}`);
    // No allowlist entry reaches it…
    expect(() => policy.allow({ kind: "sandbox", sandbox: sb }, [`127.0.0.1:${echo.port}`], "cli:t")).toThrow(/sbx publish NAME/);
    // …publishing it does (stored as `sbx publish` stores it; read by the proxy at the next request).
    other.updateIdentity(sandboxId, { ...other.getSandbox(sandboxId)!.identity, publish: [`127.0.0.1:${echo.port}`] });
    other.close();
    const t = await openTunnel({ path: proxy.socketPath }, `svc.test:${echo.port}`);
    expect(t.status).toBe(200);
    expect((await echoThrough(t, "ok")).toString()).toBe("okbye 2");
    await Bun.sleep(50);
    const allowed = store.listAudit({ sandboxId }).filter((a) => a.action === "allowed");
    expect(allowed).toHaveLength(1);
    expect(allowed[0]!.detail).toMatchObject({ host: "svc.test", address: "127.0.0.1", bytesUp: 2, bytesDown: 7 });
  });

  test("deciding the approval (allow for its sandbox) lets the next request through", async () => {
    store.addAllow(sandboxId, `svc.test:${echo.port}`, "test");
    expect((await openTunnel({ path: proxy.socketPath }, `svc.test:${echo.port}`)).status).toBe(403);
    const [p] = store.listApprovals({ state: "pending" });
    expect(p).toMatchObject({ host: "127.0.0.1", port: echo.port });
    const other = new Store(join(tmp.dir, "state", "sbx", "sbx.db"));
    // A host service is never for every sandbox; for its own sandbox, the approval publishes it.
    expect(() => new PolicyService({ store: other }).decide(p!.id, "allow-global", "cli:t")).toThrow(/never for every sandbox/);
    expect(new PolicyService({ store: other }).decide(p!.id, "allow-sandbox", "cli:t")).toMatchObject({ pattern: `127.0.0.1:${echo.port}`, added: true });
    expect(other.getSandbox(sandboxId)!.identity.publish).toEqual([`127.0.0.1:${echo.port}`]);
    other.close();
    const t = await openTunnel({ path: proxy.socketPath }, `svc.test:${echo.port}`);
    expect(t.status).toBe(200);
    t.socket.destroy();
  });
});

describe("socket lifecycle", () => {
  test("a stale socket (its server was killed) is replaced; a live one is never unlinked", async () => {
    const tmp = tempDir();
    const path = join(tmp.dir, "proxy.sock");
    const child = Bun.spawn(["bun", "-e", `require("node:net").createServer().listen(${JSON.stringify(path)}, () => console.log("up"))`], { stdout: "pipe" });
    await child.stdout.getReader().read();
    child.kill("SIGKILL");
    await child.exited;
    expect(statSync(path).isSocket()).toBe(true);

    const opts = { socketPath: path, sandbox: { id: 1, name: "a" }, policy: () => ({ sandbox: [], global: [] }) };
    const first = await startEgressProxy(opts);
    let err: unknown;
    try {
      await startEgressProxy({ ...opts, sandbox: { id: 2, name: "b" } });
    } catch (e) {
      err = e;
    }
    expect(String(err)).toContain("already listening");
    const r = await rawExchange(path, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    expect(JSON.parse(r.body).sandbox).toBe("a");
    await first.close();
    tmp.cleanup();
  });

  test("origin-form requests go to the origin handler", async () => {
    const tmp = tempDir();
    const p = await startEgressProxy({
      socketPath: join(tmp.dir, "p.sock"),
      sandbox: { id: 1, name: "a" },
      policy: () => ({ sandbox: [], global: [] }),
      originHandler: (req, res) => res.end(`origin ${req.url}`),
    });
    const r = await rawExchange(p.socketPath, "GET /llm/anthropic/v1/messages HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    expect(r.body).toBe("origin /llm/anthropic/v1/messages");
    await p.close();
    tmp.cleanup();
  });
});
