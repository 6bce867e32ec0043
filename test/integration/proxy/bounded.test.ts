// bounded: one sandbox cannot make its proxy hold ever more: connections open at once (on its socket and on its
// port, tunnels and plain HTTP) are capped, the next refused with a 503 that says why and one audit line a second at
// most; the idle connections kept to servers for its plain HTTP are capped in all. Real sockets.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { fdPassing } from "../../../shims/fd-pass";
import { Pacer, PROXY_MAX_CONNECTIONS, PROXY_REQUESTS_BURST, PROXY_REQUESTS_PER_SECOND, UPSTREAM_MAX_IDLE } from "../../../src/core/bounds";
import { startEgressProxy, type EgressProxy } from "../../../src/proxy/egress-proxy";
import type { EgressEvent } from "../../../src/core/egress-events";
import { echoServer, echoThrough, get, httpServer, openFds, openTunnel, tempDir } from "./helpers";

let tmp: ReturnType<typeof tempDir>;
let echo: Awaited<ReturnType<typeof echoServer>>;
const webs: Awaited<ReturnType<typeof httpServer>>[] = [];
let proxy: EgressProxy;
const events: EgressEvent[] = [];
const lib = fdPassing();
let handedPort = 0;

beforeAll(async () => {
  tmp = tempDir();
  echo = await echoServer();
  for (let i = 0; i < 40; i++) webs.push(await httpServer());
  proxy = await startEgressProxy({
    socketPath: join(tmp.dir, "proxy.sock"),
    sandbox: { id: 1, name: "abuser" },
    policy: () => ({ sandbox: [], global: [], published: [`127.0.0.1:${echo.port}`, ...webs.map((w) => `127.0.0.1:${w.port}`)] }),
    resolve: async () => [],
    onDecision: (e) => void events.push(e),
  });
  if (lib) {
    const l = lib.listenLoopback(0);
    handedPort = l.port;
    proxy.serveListener(l.fd);
  }
});
afterAll(async () => {
  await proxy?.close();
  await echo?.close();
  for (const w of webs) await w.close();
  tmp?.cleanup();
});

/** A connection that sends nothing: a sandbox holding it open. Resolves once it is connected; `answer` is what it is told. */
function silent(target: { path: string } | { port: number }): Promise<{ s: Socket; answer: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const s = "path" in target ? connect({ path: target.path }) : connect({ port: target.port, host: "127.0.0.1" });
    let text = "";
    const answer = new Promise<string>((done) => {
      s.on("data", (d: Buffer) => (text += d.toString("latin1")));
      s.on("close", () => done(text));
    });
    s.on("error", () => undefined);
    s.once("connect", () => resolve({ s, answer }));
    s.once("error", reject);
  });
}

describe("bounded: the proxy", () => {
  test(`at most ${PROXY_MAX_CONNECTIONS} connections of a sandbox at once (tunnels held idle, bare connections, on its socket and its port): the next gets a 503 that says why`, async () => {
    const tunnels = await Promise.all(Array.from({ length: PROXY_MAX_CONNECTIONS + 100 }, () => openTunnel({ path: proxy.socketPath }, `127.0.0.1:${echo.port}`).catch(() => null)));
    const open = tunnels.filter((t) => t?.status === 200);
    const refused = tunnels.filter((t) => t?.status === 503);
    try {
      console.log(`bounded: ${tunnels.length} idle tunnels asked for: ${open.length} open, ${refused.length} refused (503)`);
      expect(open.length).toBeLessThanOrEqual(PROXY_MAX_CONNECTIONS);
      expect(refused.length).toBeGreaterThanOrEqual(100);
      expect(refused[0]!.response.body).toContain(`${PROXY_MAX_CONNECTIONS} connections`);
      // A bare connection on the sandbox's port (a client that says nothing) is refused too, not held.
      if (handedPort) {
        const more = await silent({ port: handedPort });
        expect(await more.answer).toContain("503");
      }
      const more = await silent({ path: proxy.socketPath });
      expect(await more.answer).toContain("503");
      // Told once a second at most, not once a refusal.
      const told = events.filter((e) => e.type === "error" && /connections/.test(e.message));
      expect(told.length).toBeGreaterThanOrEqual(1);
      expect(told.length).toBeLessThanOrEqual(3);
    } finally {
      for (const t of tunnels) t?.socket.destroy();
    }
    // Once they are gone, there is room again.
    for (let i = 0; i < 100 && proxy.active() > 0; i++) await Bun.sleep(20);
    const again = await openTunnel({ path: proxy.socketPath }, `127.0.0.1:${echo.port}`);
    expect(again.status).toBe(200);
    again.socket.destroy();
  }, 60_000);

  test(`tunnels whose bytes moved to Bun sockets (judged, flowing) still count: ${PROXY_MAX_CONNECTIONS} carrying ones, the next gets a 503; their closed events count every byte`, async () => {
    for (let i = 0; i < 100 && proxy.active() > 0; i++) await Bun.sleep(20);
    const from = events.length;
    const tunnels = await Promise.all(Array.from({ length: PROXY_MAX_CONNECTIONS }, () => openTunnel({ path: proxy.socketPath }, `127.0.0.1:${echo.port}`)));
    try {
      expect(tunnels.every((t) => t.status === 200)).toBe(true);
      // Each sends and reads back a little: judged and flowing, so carried by the relay, not node:net, from here on.
      await Promise.all(
        tunnels.map(
          (t) =>
            new Promise<void>((done) => {
              t.socket.once("data", () => done());
              t.socket.resume();
              t.socket.write("ping");
            }),
        ),
      );
      const more = await openTunnel({ path: proxy.socketPath }, `127.0.0.1:${echo.port}`);
      expect(more.status).toBe(503);
    } finally {
      for (const t of tunnels) t.socket.destroy();
    }
    // One more, carried whole: its closed event has the bytes each way, however they were carried.
    for (let i = 0; i < 200 && proxy.active() > 0; i++) await Bun.sleep(20);
    const t = await openTunnel({ path: proxy.socketPath }, `127.0.0.1:${echo.port}`);
    const payload = Buffer.alloc(3 << 20, 0x62);
    const back = await echoThrough(t, payload);
    expect(back.subarray(0, payload.length).equals(payload)).toBe(true); // then the echo server says "bye N"
    for (let i = 0; i < 100 && !events.slice(from).some((e) => e.type === "closed" && e.bytesUp === payload.length); i++) await Bun.sleep(20);
    const closed = events.slice(from).filter((e) => e.type === "closed" && e.bytesUp === payload.length);
    expect(closed.length).toBe(1);
    expect(closed[0]).toMatchObject({ bytesUp: payload.length, bytesDown: back.length });
  }, 60_000);

  test(`the idle connections kept to servers for plain HTTP are at most ${UPSTREAM_MAX_IDLE} in all, however many servers it talks to`, async () => {
    for (let i = 0; i < 100 && proxy.active() > 0; i++) await Bun.sleep(20);
    await Bun.sleep(200);
    const before = openFds();
    // 16 requests at once to each of 40 servers in turn: each server's connections go back to the pool when answered.
    for (const w of webs) await Promise.all(Array.from({ length: 16 }, () => get(proxy.socketPath, `http://127.0.0.1:${w.port}/x`)));
    await Bun.sleep(300);
    const grew = openFds() - before;
    console.log(`bounded: plain HTTP to 40 servers, 16 at a time each: ${grew} descriptors still open (both ends of each idle connection)`);
    expect(grew).toBeLessThanOrEqual(2 * UPSTREAM_MAX_IDLE + 20);
  }, 60_000);
});

describe("bounded: the DNS stubs", () => {
  const query = (name: string) => {
    const q = [0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    for (const label of name.split(".")) q.push(label.length, ...Buffer.from(label));
    q.push(0, 0, 1, 0, 1);
    return Buffer.from(q);
  };
  /** Sends queries from sockets closed at once (the answers find nobody: ICMP unreachable), then asks as a client would. */
  async function gone(port: number, host: string): Promise<{ uncaught: unknown[]; answered: boolean }> {
    const uncaught: unknown[] = [];
    const onError = (e: unknown) => void uncaught.push(e);
    process.on("uncaughtException", onError);
    process.on("unhandledRejection", onError);
    try {
      for (let i = 0; i < 30; i++) {
        const c = await Bun.udpSocket({});
        for (let j = 0; j < 3; j++) c.send(query(`gone${i}.example.com`), port, host);
        c.close();
      }
      await Bun.sleep(500);
      const answered = await new Promise<boolean>((resolve) => {
        void Bun.udpSocket({ socket: { data: () => resolve(true) } }).then((c) => {
          c.send(query("after.example.com"), port, host);
          setTimeout(() => {
            c.close();
            resolve(false);
          }, 2000);
        });
      });
      return { uncaught, answered };
    } finally {
      process.off("uncaughtException", onError);
      process.off("unhandledRejection", onError);
    }
  }

  test("the daemon's (a Linux guest's) answers on, with no error, when its clients are gone before their answers", async () => {
    const { serveDnsStub } = await import("../../../src/proxy/dns-stub");
    const stub = await serveDnsStub("127.0.0.1", 0, { addressOf: () => "127.77.0.9", nameOf: () => null });
    try {
      const r = await gone(stub.port, "127.0.0.1");
      expect({ uncaught: r.uncaught.map(String).slice(0, 2), answered: r.answered }).toEqual({ uncaught: [], answered: true });
    } finally {
      stub.close();
    }
  });

  test.skipIf(!lib)("a container's (sandbox-main's, where an error ends the sandbox) likewise", async () => {
    const { startTransparent } = await import("../../../shims/transparent");
    const t = startTransparent({ lib: lib!, stub: "127.88.7.1", ports: [], socketPath: proxy.socketPath, handoffPath: join(tmp.dir, "no-listen.sock"), log: () => undefined });
    try {
      await Bun.sleep(200);
      const r = await gone(53, "127.88.7.1");
      expect({ uncaught: r.uncaught.map(String).slice(0, 2), answered: r.answered }).toEqual({ uncaught: [], answered: true });
    } finally {
      t.stop();
    }
  });
});

describe("bounded: the proxy paces the work one sandbox starts", () => {
  test(`a flood of refused requests goes ${PROXY_REQUESTS_BURST} at once, then ${PROXY_REQUESTS_PER_SECOND} a second, in order; another sandbox's requests meanwhile never wait for it (its own pacer)`, async () => {
    const mk = (id: number, name: string) =>
      startEgressProxy({ socketPath: join(tmp.dir, `${name}.sock`), sandbox: { id, name }, policy: () => ({ sandbox: [], global: [], published: [`127.0.0.1:${webs[0]!.port}`] }), resolve: async () => [] });
    // Each pacer's answers, by pacer: the bystander's must never be made to wait (judged on the pacer's own answers, not
    // on a latency: the suite holds no timing assertion, and a loaded machine makes any latency slow).
    const delays = new Map<Pacer, number[]>();
    const delay = Pacer.prototype.delay;
    Pacer.prototype.delay = function (this: Pacer, now: number) {
      const d = delay.call(this, now);
      delays.set(this, [...(delays.get(this) ?? []), d]);
      return d;
    };
    const a = await mk(11, "flooder");
    const b = await mk(12, "bystander");
    try {
      const total = PROXY_REQUESTS_BURST + PROXY_REQUESTS_PER_SECOND * 3;
      const started = performance.now();
      let sent = 0;
      const codes: number[] = [];
      const flood = Promise.all(
        Array.from({ length: 64 }, async () => {
          while (sent < total) {
            sent++;
            codes.push((await get(a.socketPath, `http://deny-${sent}.invalid/`)).status);
          }
        }),
      );
      // Meanwhile the other sandbox's requests.
      const other: number[] = [];
      await Bun.sleep(300);
      for (let i = 0; i < 20; i++) {
        const t0 = performance.now();
        const r = await get(b.socketPath, `http://127.0.0.1:${webs[0]!.port}/b${i}`);
        expect(r.status).toBe(200);
        other.push(performance.now() - t0);
        await Bun.sleep(50);
      }
      await flood;
      const took = (performance.now() - started) / 1000;
      other.sort((x, y) => x - y);
      console.log(`bounded: ${total} refused requests of one sandbox took ${took.toFixed(1)} s (paced); another's meanwhile: p50 ${other[10]!.toFixed(1)} ms, max ${other.at(-1)!.toFixed(1)} ms`);
      expect(codes.every((c) => c === 403)).toBe(true);
      expect(took).toBeGreaterThanOrEqual(((total - PROXY_REQUESTS_BURST) / PROXY_REQUESTS_PER_SECOND) * 0.9);
      // Two pacers: the flooder's (every request of it) and the bystander's (its 20, none made to wait).
      const byCount = [...delays.values()].sort((x, y) => x.length - y.length);
      expect(byCount.map((d) => d.length)).toEqual([20, total]);
      expect(byCount[0]!.filter((d) => d > 0)).toEqual([]);
    } finally {
      Pacer.prototype.delay = delay;
      await a.close();
      await b.close();
    }
  }, 60_000);
});
