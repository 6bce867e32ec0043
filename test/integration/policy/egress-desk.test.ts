// sbx-egress, the command every sandbox has: a client refused by the proxy can ask why and ask the person for the host.
// Real proxy, real forwarder, real store, the real shim as a child process; it sees only its own sandbox's policy and
// changes nothing but filing a request.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { startEgressProxy, type EgressProxy } from "../../../src/proxy/egress-proxy";
import { createDecisionSink } from "../../../src/policy/decision-sink";
import { createEgressDesk, deskText } from "../../../src/policy/egress-desk";
import { PolicyService, policyFor } from "../../../src/policy/service";
import { Store } from "../../../src/store/store";
import type { FeedEvent } from "../../../src/events/feed";
import { openTunnel, rawExchange, tempDir } from "../proxy/helpers";
import { DESK_MAX_WAITS } from "../../../src/core/bounds";

const SHIMS = join(import.meta.dir, "../../../shims");
const FORWARDER = join(SHIMS, "forwarder.ts");

let tmp: ReturnType<typeof tempDir>;
let store: Store;
let proxy: EgressProxy;
let fw: ReturnType<typeof Bun.spawn>;
let fwPort = 0;
let sb: { id: number; name: string };
let other: { id: number; name: string };
const feed: FeedEvent[] = [];

function egress(args: string[]) {
  const p = Bun.spawn([join(SHIMS, "sbx-egress"), ...args], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", SBX_BUN: process.execPath, HTTP_PROXY: `http://127.0.0.1:${fwPort}`, NO_PROXY: "localhost,127.0.0.1,::1" },
    stdout: "pipe",
    stderr: "pipe",
  });
  return Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]).then(([code, stdout, stderr]) => ({ code, stdout, stderr }));
}

beforeAll(async () => {
  tmp = tempDir();
  store = new Store(join(tmp.dir, "sbx.db"));
  sb = store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
  other = store.createSandbox({ name: "other", repo: "/r", backend: "fake" });
  store.addAllow(sb.id, "api.example.test", "test");
  store.addAllow(other.id, "secret-of-other.example.test", "test");
  const sink = createDecisionSink(store, { flushMs: 10 });
  const socketPath = join(tmp.dir, "sb", "proxy.sock");
  const desk = createEgressDesk({ store, sandbox: sb, publish: (e) => void feed.push(e) });
  proxy = await startEgressProxy({
    socketPath,
    sandbox: sb,
    policy: () => policyFor(store, sb.id),
    resolve: async () => [],
    onDecision: sink.onDecision,
    originHandler: (req, res) => void desk(req, res),
  });
  fw = Bun.spawn(["bun", FORWARDER, "--port", "0"], { env: { PATH: process.env.PATH ?? "", SBX_PROXY_SOCKET: socketPath }, stdout: "pipe", stderr: "pipe" });
  const { value } = await (fw.stdout as ReadableStream<Uint8Array>).getReader().read();
  fwPort = Number(/127\.0\.0\.1:(\d+)/.exec(new TextDecoder().decode(value))?.[1]);
});
afterAll(async () => {
  fw?.kill();
  await fw?.exited;
  await proxy?.close();
  store?.close();
  tmp?.cleanup();
});

describe("sbx-egress", () => {
  test("status: this sandbox's list and its latest refusals with the reason; never another sandbox's list", async () => {
    const refused = await openTunnel({ path: proxy.socketPath }, "blocked.example.test:443");
    expect(refused.status).toBe(403);
    refused.socket.destroy();
    const r = await egress([]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("its own list: api.example.test");
    expect(r.stdout).toContain("blocked.example.test:443 — not-allowlisted");
    expect(r.stdout).not.toContain("secret-of-other");
    const j = JSON.parse((await egress(["status", "--json"])).stdout) as { sandbox: string; pending: { host: string }[] };
    expect(j.sandbox).toBe("demo");
    expect(j.pending.map((p) => p.host)).toContain("blocked.example.test");
  });

  test("ask files a request with its reason, shown where denials are; it changes no list by itself", async () => {
    const r = await egress(["ask", "pkg.example.test", "--why", "the build fetches its packages\u001b[2J from there"]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe("waiting");
    const a = store.listApprovals({ state: "pending", sandboxId: sb.id }).find((x) => x.host === "pkg.example.test")!;
    expect(a.reason).toBe("asked: the build fetches its packages [2J from there");
    expect(feed.some((e) => e.kind === "egress" && e.host === "pkg.example.test" && e.reason === "asked")).toBe(true);
    expect(store.listAllow(sb.id).map((e) => e.pattern)).toEqual(["api.example.test"]);
    expect(store.listApprovals({ state: "pending", sandboxId: other.id })).toEqual([]);
  });

  test("ask --wait returns once the person answers: 0 allowed (and the host is reachable by the rule), 1 denied", async () => {
    const waiting = egress(["ask", "wait.example.test:8443", "--why", "a test server", "--wait", "30"]);
    let a;
    for (let i = 0; i < 100 && !(a = store.listApprovals({ state: "pending", sandboxId: sb.id }).find((x) => x.host === "wait.example.test")); i++) await Bun.sleep(50);
    new PolicyService({ store }).decide(a!.id, "allow-sandbox", "cli:test");
    const r = await waiting;
    expect({ code: r.code, out: r.stdout.trim() }).toEqual({ code: 0, out: "allowed" });
    expect(store.listAllow(sb.id).map((e) => e.pattern)).toContain("wait.example.test:8443");
    const denied = egress(["ask", "no.example.test", "--why", "curious", "--wait", "30"]);
    let b;
    for (let i = 0; i < 100 && !(b = store.listApprovals({ state: "pending", sandboxId: sb.id }).find((x) => x.host === "no.example.test")); i++) await Bun.sleep(50);
    new PolicyService({ store }).decide(b!.id, "deny", "cli:test");
    expect((await denied).code).toBe(1);
    expect((await egress(["ask", "slow.example.test", "--why", "nobody answers", "--wait", "1"])).code).toBe(2);
  }, 60_000);

  test("what cannot be asked for is refused with the reason; a bad call says how to use it", async () => {
    const broad = await egress(["ask", "*.com", "--why", "everything"]);
    expect(broad.code).toBe(65);
    expect(broad.stderr).toContain("covers a whole top-level domain");
    expect((await egress(["ask", "x.example.test"])).code).toBe(64);
    expect((await egress(["frobnicate"])).code).toBe(64);
    expect((await egress(["--help"])).stdout).toContain("usage: sbx-egress");
    expect(deskText("a\r\nb\u202ec\u0007".repeat(200)).length).toBeLessThanOrEqual(300);
  });
});

describe("bounded: the egress desk", () => {
  test(`at most ${DESK_MAX_WAITS} waits are held at once per sandbox; the rest are refused at once (429), and the shim waits its turn`, async () => {
    const ask = await rawExchange(proxy.socketPath, `POST /sbx/egress/ask HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 48\r\nConnection: close\r\n\r\n${JSON.stringify({ host: "held.example.test", why: "a held wait" }).padEnd(48)}`);
    expect(ask.status).toBe(200);
    const id = (JSON.parse(ask.body) as { id: number }).id;
    const started = Date.now();
    const waits = Array.from({ length: 200 }, () => rawExchange(proxy.socketPath, `GET /sbx/egress/approvals/${id}?wait=20 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`).then((r) => ({ ...r, ms: Date.now() - started })));
    const quick = await Promise.all(waits.map((w) => Promise.race([w, Bun.sleep(2000).then(() => null)])));
    const refused = quick.filter((r) => r !== null && r.status === 429);
    console.log(`bounded: 200 waits on one request: ${refused.length} refused, the last after ${Math.max(...refused.map((r) => r!.ms))} ms`);
    expect(refused.length).toBeGreaterThanOrEqual(200 - DESK_MAX_WAITS);
    expect(JSON.parse(refused[0]!.body)).toMatchObject({ error: "too_many" });
    // The shim, meanwhile, waits all the same (it asks again after a pause) and returns once the person answers.
    const shim = egress(["ask", "held.example.test", "--why", "a held wait", "--wait", "20"]);
    await Bun.sleep(500);
    new PolicyService({ store }).decide(id, "allow-sandbox", "cli:test");
    const r = await shim;
    expect({ code: r.code, out: r.stdout.trim() }).toEqual({ code: 0, out: "allowed" });
    // The held ones answer as soon as it is decided (not at their 20 s).
    const answered = await Promise.all(waits);
    expect(answered.filter((a) => a.status === 200).map((a) => (JSON.parse(a.body) as { state: string }).state)).toEqual(answered.filter((a) => a.status === 200).map(() => "allowed"));
    expect(Math.max(...answered.map((a) => a.ms))).toBeLessThan(10_000);
  }, 60_000);
});
