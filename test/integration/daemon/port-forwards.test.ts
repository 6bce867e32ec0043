// `sbx port` below the CLI: host listeners (127.0.0.1 only) whose connections the exec agent carries to a port it dials
// inside; bytes both ways, half-close, a port nothing listens on, a dial session not counted as a running command,
// and listeners that follow the list (and close with the guard).
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startExecAgent } from "../../../shims/exec-agent";
import { AGENT_SOCKET, ExecAgents, execAgentGuard } from "../../../src/daemon/exec-agents";
import { PortForwards } from "../../../src/daemon/port-forwards";
import { spliceRelay, type SpliceRelay } from "../../../src/sys/splice-relay";
import { Store } from "../../../src/store/store";
import { guardContext } from "../../support/guard-context";
import { FakeExec } from "../../fakes/exec";

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const listen = (s: Server, host = "127.0.0.1") => new Promise<number>((r) => s.listen(0, host, () => r((s.address() as { port: number }).port)));
async function freePort(): Promise<number> {
  const s = createServer();
  const p = await listen(s);
  await new Promise<void>((r) => s.close(() => r()));
  return p;
}

/** A guard world with a real agent (in this process: "inside" is this machine's loopback here). */
async function world(who?: ConstructorParameters<typeof PortForwards>[2], relay?: SpliceRelay | null) {
  const root = mkdtempSync(join(tmpdir(), "sbx-ports-"));
  const store = new Store(":memory:");
  const sandbox = store.createSandbox({ name: "demo", repo: "/r", backend: "docker" });
  const dir = join(root, "sb");
  mkdirSync(dir, { mode: 0o700 });
  const ctx = guardContext({ store, sandbox, dir, specDir: root, home: "/h" });
  const agents = new ExecAgents();
  const handle = await execAgentGuard(agents).start(ctx);
  const a = startExecAgent({ socketPath: join(dir, AGENT_SOCKET), baseEnv: { PATH: "/usr/bin:/bin" }, retryMs: { min: 20, max: 100 } });
  const forwards = new PortForwards(agents, undefined, who, relay);
  cleanups.push(async () => {
    forwards.close(sandbox.id);
    a.stop();
    await handle.stop();
    store.close();
    rmSync(root, { recursive: true, force: true });
  });
  const link = await agents.wait(sandbox.id, 3000);
  if (!link) throw new Error("no agent");
  return { forwards, agents, id: sandbox.id, link };
}

/** Sends `data`, half-closes, and reads to the end. */
function roundTrip(port: number, data: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s: Socket = connect({ host: "127.0.0.1", port, allowHalfOpen: true });
    let got = "";
    s.on("data", (d) => (got += d));
    s.on("end", () => {
      s.end();
      resolve(got);
    });
    s.on("error", reject);
    s.on("connect", () => s.end(data));
  });
}

describe("port forwards through the exec agent", () => {
  test("bytes both ways and a half-close: an upper-casing echo inside answers the host's 127.0.0.1:HOST", async () => {
    const w = await world();
    const inside = createServer({ allowHalfOpen: true }, (c) => {
      let buf = "";
      c.on("data", (d) => (buf += d));
      c.on("end", () => c.end(buf.toUpperCase()));
    });
    const port = await listen(inside);
    cleanups.push(() => new Promise<void>((r) => inside.close(() => r())));
    const host = await freePort();
    const states = await w.forwards.apply(w.id, [{ port, host }]);
    expect(states).toEqual([{ port, host, state: "forwarding" }]);
    const big = "abc".repeat(200_000);
    expect(await roundTrip(host, big)).toBe(big.toUpperCase());
    // An open forwarded connection is not a command a stop would have to end.
    expect(w.link.running).toBe(0);
  });

  test("the server inside ends first (HTTP with Connection: close): the host's client sees its end, nothing hangs", async () => {
    const w = await world();
    const inside = createServer((c) => c.once("data", () => c.end("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nbye")));
    const port = await listen(inside);
    cleanups.push(() => new Promise<void>((r) => inside.close(() => r())));
    const host = await freePort();
    await w.forwards.apply(w.id, [{ port, host }]);
    const got = await new Promise<string>((resolve, reject) => {
      const s = connect({ host: "127.0.0.1", port: host });
      let out = "";
      s.on("data", (d) => (out += d));
      s.on("end", () => resolve(out));
      s.on("error", reject);
      s.write("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
      setTimeout(() => reject(new Error(`no end after 5 s; got ${JSON.stringify(out)}`)), 5000);
    });
    expect(got).toEndWith("bye");
  });

  test("nothing listening inside: the host's connection is closed, nothing hangs", async () => {
    const w = await world();
    const dead = await freePort();
    const host = await freePort();
    await w.forwards.apply(w.id, [{ port: dead, host }]);
    expect(await roundTrip(host, "hello")).toBe("");
  });

  test("listeners follow the list (127.0.0.1 only); a host port in use is an error state, not a throw; close ends them", async () => {
    const w = await world();
    const busy = createServer();
    const busyPort = await listen(busy);
    cleanups.push(() => new Promise<void>((r) => busy.close(() => r())));
    const [a, b] = [await freePort(), await freePort()];
    const s1 = await w.forwards.apply(w.id, [{ port: 1, host: a }, { port: 2, host: busyPort }]);
    expect(s1).toEqual([{ port: 1, host: a, state: "forwarding" }, { port: 2, host: busyPort, state: "error", error: `127.0.0.1:${busyPort} is in use on this machine` }]);
    const s2 = await w.forwards.apply(w.id, [{ port: 1, host: b }]);
    expect(s2).toEqual([{ port: 1, host: b, state: "forwarding" }]);
    const refused = await new Promise<boolean>((r) => {
      const c = connect({ host: "127.0.0.1", port: a });
      c.on("error", () => r(true));
      c.on("connect", () => {
        c.destroy();
        r(false);
      });
    });
    expect(refused).toBe(true);
    w.forwards.close(w.id);
    expect(w.forwards.live(w.id)).toBe(false);
  });

  test.skipIf(process.platform !== "linux")("ports-held: a host port held by a sandbox's guest is named with its sandbox, pid and argv; nothing that holds it is ended", async () => {
    const exec = new FakeExec().always((a) => a[0] === "getent", { stdout: "sbx-x-a1:x:994:994::/h:/bin/bash\n" });
    const w = await world({ exec, guestOf: async () => "a" });
    const busy = createServer();
    const busyPort = await listen(busy);
    cleanups.push(() => new Promise<void>((r) => busy.close(() => r())));
    const [s] = await w.forwards.apply(w.id, [{ port: 2, host: busyPort }]);
    expect(s?.state).toBe("error");
    expect(s?.error).toContain(`127.0.0.1:${busyPort} is held by pid ${process.pid} (`);
    expect(s?.error).toContain("of user sbx-x-a1 (sandbox a's account)");
    expect(busy.listening).toBe(true);
  });
});

/** An echo inside that keeps its connections open; resolves each connection's close as it happens. */
async function holdingEcho() {
  const closed: Promise<void>[] = [];
  const inside = createServer((c) => {
    closed.push(new Promise<void>((r) => c.on("close", () => r())));
    c.on("error", () => {});
    c.on("data", (d) => c.write(d));
  });
  const port = await listen(inside);
  cleanups.push(() => new Promise<void>((r) => inside.close(() => r())));
  return { port, closed };
}

/** A client that connects, sends `hello`, waits for the echo; resolves with the socket and a promise of its close. */
async function echoed(host: number): Promise<{ s: Socket; closed: Promise<void> }> {
  const s = connect({ host: "127.0.0.1", port: host, noDelay: true });
  s.on("error", () => {});
  const closed = new Promise<void>((r) => s.on("close", () => r()));
  cleanups.push(() => void s.destroy());
  await new Promise<void>((resolve, reject) => {
    s.once("data", (d) => (String(d) === "hello" ? resolve() : reject(new Error(`echo said ${d}`))));
    s.write("hello");
  });
  return { s, closed };
}

const within = <T>(p: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([p, Bun.sleep(ms).then(() => Promise.reject(new Error(`${what}: not within ${ms} ms`)))]);

describe.skipIf(spliceRelay() === null)("port relay in the kernel (splice, off the daemon's thread) keeps the relay's rules", () => {
  for (const [what, relay] of [["splice", () => spliceRelay()], ["Bun sockets (no splice)", () => null]] as const) {
    test(`${what}: bytes both ways and a half-close, a client that sent before the sandbox dialled included`, async () => {
      const w = await world(undefined, relay());
      const inside = createServer({ allowHalfOpen: true }, (c) => {
        let buf = "";
        c.on("data", (d) => (buf += d));
        c.on("end", () => c.end(buf.toUpperCase()));
      });
      const port = await listen(inside);
      cleanups.push(() => new Promise<void>((r) => inside.close(() => r())));
      const host = await freePort();
      await w.forwards.apply(w.id, [{ port, host }]);
      for (const data of ["x", "abc".repeat(400_000)]) expect(await roundTrip(host, data)).toBe(data.toUpperCase());
    });
  }

  test("a client that says nothing until the sandbox has dialled: its first bytes reach the server (the thread reads them, not Bun)", async () => {
    const w = await world(undefined, spliceRelay());
    const echo = await holdingEcho();
    const host = await freePort();
    await w.forwards.apply(w.id, [{ port: echo.port, host }]);
    // Bun's loop and the thread both hear the bytes arrive: whichever reads first wins, so try it on many connections.
    const one = async (i: number) => {
      const s = connect({ host: "127.0.0.1", port: host, noDelay: true });
      s.on("error", () => {});
      cleanups.push(() => void s.destroy());
      await new Promise((r) => s.on("connect", r));
      await Bun.sleep(150); // the dial and the hand-over are done by now
      s.write(`late${i}`);
      return String(await within(new Promise((r) => s.once("data", r)), 3000, `the echo of connection ${i}'s late first write`));
    };
    const got = await Promise.all(Array.from({ length: 12 }, (_, i) => one(i)));
    expect(got).toEqual(Array.from({ length: 12 }, (_, i) => `late${i}`));
  });

  test("gone-when-removed: closing a sandbox's forwards (stop, rm) cuts its spliced connections, on both sides", async () => {
    const w = await world(undefined, spliceRelay());
    const echo = await holdingEcho();
    const host = await freePort();
    await w.forwards.apply(w.id, [{ port: echo.port, host }]);
    const a = await echoed(host);
    const b = await echoed(host);
    w.forwards.close(w.id);
    await within(Promise.all([a.closed, b.closed]), 3000, "the host's clients closed");
    await within(Promise.all(echo.closed), 3000, "the server's connections inside closed");
  });

  test("bounded: with every relay thread busy, the next connection is relayed with Bun sockets, and works", async () => {
    const w = await world(undefined, spliceRelay(1));
    const echo = await holdingEcho();
    const host = await freePort();
    await w.forwards.apply(w.id, [{ port: echo.port, host }]);
    const held = await echoed(host); // takes the one thread
    const next = await echoed(host);
    next.s.write("again");
    expect(String(await new Promise((r) => next.s.once("data", r)))).toBe("again");
    held.s.write("still");
    expect(String(await new Promise((r) => held.s.once("data", r)))).toBe("still");
  });
});

