// port-handover: `sbx port` relays the host's client to a connection the sandbox's agent made and handed over on its
// dial.sock, and to nothing else. A hostile agent (the sandbox controls it) hands over a connection to another port,
// one tagged for another dial, a listening socket, a unix socket, a pipe, or nothing at all: each is closed, the host's
// client is cut, and no byte of it reaches anything but the port the person forwarded. A client that never reads
// costs the daemon a bounded few bytes. The real agent's handover carries bytes both ways (and the framed fallback
// still works where there is no dial.sock).
import { afterEach, describe, expect, test } from "bun:test";
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DIAL_SOCKET, startExecAgent } from "../../../shims/exec-agent";
import { AGENT_PROTOCOL, encodeFrame, FrameDecoder, FrameType, jsonFrame, parseDial, parseJson } from "../../../shims/exec-frames";
import { fdPassing } from "../../../shims/fd-pass";
import { AGENT_SOCKET, ExecAgents, execAgentGuard } from "../../../src/daemon/exec-agents";
import { PortForwards } from "../../../src/daemon/port-forwards";
import { Store } from "../../../src/store/store";
import { guardContext } from "../../support/guard-context";

const lib = fdPassing();
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const listen = (s: Server) => new Promise<number>((r) => s.listen(0, "127.0.0.1", () => r((s.address() as { port: number }).port)));
async function freePort(): Promise<number> {
  const s = createServer();
  const p = await listen(s);
  await new Promise<void>((r) => s.close(() => r()));
  return p;
}

/** A server "inside" that records what it is sent and answers `reply` to every chunk. */
async function recorder(reply = "", end = false) {
  const got: string[] = [];
  const srv = createServer((c) => {
    c.on("data", (d) => {
      got.push(String(d));
      if (reply) c.write(reply);
      if (end) c.end();
    });
    c.on("error", () => {});
  });
  const port = await listen(srv);
  cleanups.push(() => new Promise<void>((r) => srv.close(() => r())));
  return { port, got };
}

/** The daemon's side for one sandbox (its exec-agent guard, which serves agent.sock and dial.sock) and its forwards. */
async function daemon() {
  const root = mkdtempSync(join(tmpdir(), "sbx-handover-"));
  const store = new Store(":memory:");
  const sandbox = store.createSandbox({ name: "demo", repo: "/r", backend: "docker" });
  const dir = join(root, "sb");
  mkdirSync(dir, { mode: 0o700 });
  const agents = new ExecAgents();
  const handle = await execAgentGuard(agents).start(guardContext({ store, sandbox, dir, specDir: root, home: "/h" }));
  const forwards = new PortForwards(agents);
  cleanups.push(async () => {
    forwards.close(sandbox.id);
    await handle.stop();
    store.close();
    rmSync(root, { recursive: true, force: true });
  });
  return { agents, forwards, id: sandbox.id, dir };
}

type Hand = { kind: "fd"; fd: () => number; tag?: (id: number) => number } | { kind: "nothing" };

/**
 * A hostile agent: says hello on agent.sock, opens dial.sock, and answers each dial with `hand(port)`: a descriptor
 * of its choosing (tagged with the session unless told otherwise) and a `dialed` frame. Also records whether any
 * stdin frame (the host client's bytes) ever reached it.
 */
async function hostileAgent(dir: string, hand: (port: number) => Promise<Hand>) {
  const seen = { stdin: 0 };
  const chan = await Bun.connect<undefined>({ unix: join(dir, DIAL_SOCKET), socket: { data() {}, error() {} } });
  const sock = await Bun.connect<undefined>({
    unix: join(dir, AGENT_SOCKET),
    socket: {
      data(s, chunk) {
        for (const f of dec.push(chunk)) {
          if (f.type === FrameType.stdin) seen.stdin += f.payload.length;
          if (f.type !== FrameType.dial) continue;
          const port = parseDial(parseJson(f.payload))!;
          void hand(port).then((h) => {
            if (h.kind === "fd") lib!.sendTagged((chan as unknown as { fd: number }).fd, h.fd(), h.tag ? h.tag(f.session) : f.session);
            s.write(jsonFrame(FrameType.dialed, f.session, {}));
          });
        }
      },
      error() {},
    },
  });
  const dec = new FrameDecoder();
  sock.write(jsonFrame(FrameType.hello, 0, { v: AGENT_PROTOCOL }));
  cleanups.push(() => {
    sock.terminate();
    chan.terminate();
  });
  return seen;
}

/** A connection from this process to `port` on loopback, made with Bun (so its descriptor can be handed over). */
async function bunConn(port: number): Promise<number> {
  const s = await Bun.connect<undefined>({ hostname: "127.0.0.1", port, socket: { data() {}, error() {} } });
  const fd = lib!.dup((s as unknown as { fd: number }).fd);
  s.terminate();
  cleanups.push(() => lib!.close(fd));
  return fd;
}

/** The host's client: connects to the forward, writes `data`, and resolves with what it got once the daemon ends it. */
function hostClient(port: number, data: string): Promise<{ got: string; ended: boolean }> {
  return new Promise((resolve) => {
    const c: Socket = connect({ host: "127.0.0.1", port });
    let got = "";
    c.on("connect", () => c.write(data));
    c.on("data", (d) => (got += d));
    const done = (ended: boolean) => () => {
      clearTimeout(t);
      c.destroy();
      resolve({ got, ended });
    };
    c.on("end", done(true));
    c.on("close", done(true));
    c.on("error", () => {});
    const t = setTimeout(done(false), 4000);
  });
}

describe.skipIf(!lib)("port-handover: the daemon relays only to the connection it asked the sandbox to dial (skipped: no fd passing here)", () => {
  test("the real agent hands its connection over: bytes both ways, none through the agent's frames", async () => {
    const d = await daemon();
    const a = startExecAgent({ socketPath: join(d.dir, AGENT_SOCKET), baseEnv: {}, retryMs: { min: 20, max: 100 } });
    cleanups.push(() => a.stop());
    const link = await d.agents.wait(d.id, 3000);
    expect(link).toBeDefined();
    for (let i = 0; i < 50 && !d.agents.channel(d.id); i++) await Bun.sleep(20);
    expect(d.agents.channel(d.id)).not.toBeNull();
    const inside = await recorder("pong", true);
    const host = await freePort();
    await d.forwards.apply(d.id, [{ port: inside.port, host }]);
    const r = await hostClient(host, "ping");
    expect(r).toEqual({ got: "pong", ended: true });
    expect(inside.got.join("")).toBe("ping");
  });

  test("without dial.sock (an image whose libc cannot pass descriptors) the agent carries the bytes as frames", async () => {
    const d = await daemon();
    const a = startExecAgent({ socketPath: join(d.dir, AGENT_SOCKET), dialSocketPath: null, baseEnv: {}, retryMs: { min: 20, max: 100 } });
    cleanups.push(() => a.stop());
    await d.agents.wait(d.id, 3000);
    const inside = await recorder("pong", true);
    const host = await freePort();
    await d.forwards.apply(d.id, [{ port: inside.port, host }]);
    const r = await hostClient(host, "ping");
    expect(r).toEqual({ got: "pong", ended: true });
    expect(inside.got.join("")).toBe("ping");
  });

  const cases: [string, (forwarded: number, other: number) => Promise<Hand>][] = [
    ["a connection to another port of its loopback", async (_f, other) => ({ kind: "fd", fd: await bunConn(other).then((fd) => () => fd) })],
    ["the right connection, tagged for another dial", async (f) => ({ kind: "fd", fd: await bunConn(f).then((fd) => () => fd), tag: (id) => id + 1 })],
    [
      "a listening socket on the forwarded port's neighbour",
      async () => {
        const l = lib!.listenLoopback(0);
        cleanups.push(() => lib!.close(l.fd));
        return { kind: "fd", fd: () => l.fd };
      },
    ],
    [
      "a unix socket",
      async () => {
        const path = join(mkdtempSync(join(tmpdir(), "sbx-u-")), "u.sock");
        const l = Bun.listen<undefined>({ unix: path, socket: { data() {} } });
        const s = await Bun.connect<undefined>({ unix: path, socket: { data() {} } });
        cleanups.push(() => {
          s.terminate();
          l.stop(true);
        });
        return { kind: "fd", fd: () => (s as unknown as { fd: number }).fd };
      },
    ],
    [
      "a file",
      async () => {
        const fd = openSync(join(mkdtempSync(join(tmpdir(), "sbx-f-")), "f"), "w");
        cleanups.push(() => closeSync(fd));
        return { kind: "fd", fd: () => fd };
      },
    ],
    ["nothing (a dialed frame with no descriptor)", async () => ({ kind: "nothing" })],
  ];
  for (const [what, make] of cases) {
    test(`hostile agent hands over ${what}: refused, the host's client is cut, nothing else hears it`, async () => {
      const d = await daemon();
      const forwarded = await recorder("from-forwarded");
      const other = await recorder("from-other");
      const seen = await hostileAgent(d.dir, (port) => make(port, other.port));
      await d.agents.wait(d.id, 3000);
      const host = await freePort();
      await d.forwards.apply(d.id, [{ port: forwarded.port, host }]);
      const r = await hostClient(host, "secret-request");
      expect(r.ended).toBe(true);
      expect(r.got).toBe("");
      await Bun.sleep(100);
      expect(other.got).toEqual([]);
      expect(seen.stdin).toBe(0);
      expect(d.forwards.bufferedBytes(d.id)).toBe(0);
    });
  }

  test("bounded: a host client that never reads while the server inside sends 64 MB holds the daemon to a few chunks", async () => {
    const d = await daemon();
    const a = startExecAgent({ socketPath: join(d.dir, AGENT_SOCKET), baseEnv: {}, retryMs: { min: 20, max: 100 } });
    cleanups.push(() => a.stop());
    await d.agents.wait(d.id, 3000);
    for (let i = 0; i < 50 && !d.agents.channel(d.id); i++) await Bun.sleep(20);
    const chunk = Buffer.alloc(1 << 20, 0x61);
    let sent = 0;
    const srv = createServer((c) => {
      c.on("error", () => {});
      const pump = () => {
        while (sent < 64 << 20) {
          sent += chunk.length;
          if (!c.write(chunk)) return void c.once("drain", pump);
        }
      };
      pump();
    });
    const port = await listen(srv);
    cleanups.push(() => new Promise<void>((r) => srv.close(() => r())));
    const host = await freePort();
    await d.forwards.apply(d.id, [{ port, host }]);
    const c = connect({ host: "127.0.0.1", port: host });
    c.pause();
    cleanups.push(() => void c.destroy());
    await new Promise((r) => c.on("connect", r));
    let max = 0;
    for (let i = 0; i < 30; i++) {
      await Bun.sleep(50);
      max = Math.max(max, d.forwards.bufferedBytes(d.id));
    }
    // Kernel buffers fill (a few MB at most on loopback), then the server is held back: the relay holds one read's worth.
    expect(sent).toBeLessThan(32 << 20);
    expect(max).toBeLessThanOrEqual(1 << 20);
  });
});
