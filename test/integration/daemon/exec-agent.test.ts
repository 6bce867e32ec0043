// The exec agent and the daemon's side of it, on a real unix socket with real processes: output, exit codes, stdin, env, cancel, and a hostile agent that gets nothing for it.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startExecAgent } from "../../../shims/exec-agent";
import { AGENT_PROTOCOL, encodeFrame, FRAME_HEADER, FrameDecoder, FrameType, jsonFrame, parseExit, parseJson, type StartPayload } from "../../../shims/exec-frames";
import type { BackendKind } from "../../../src/core/schemas";
import { AGENT_SOCKET, ExecAgents, execAgentGuard } from "../../../src/daemon/exec-agents";
import type { GuardContext, GuardHandle } from "../../../src/guards/guards";
import { Store } from "../../../src/store/store";
import { guardContext } from "../../support/guard-context";
import { AGENT_MAX_CONNECTIONS } from "../../../src/core/bounds";

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface World {
  root: string;
  ctx: GuardContext;
  agents: ExecAgents;
  handle: GuardHandle;
  sandboxId: number;
  socket: string;
}

async function world(backend: BackendKind = "docker"): Promise<World> {
  const root = mkdtempSync(join(tmpdir(), "sbx-agent-"));
  const store = new Store(":memory:");
  const sandbox = store.createSandbox({ name: "demo", repo: "/r", backend });
  const dir = join(root, "sb");
  mkdirSync(dir, { mode: 0o700 });
  const ctx = guardContext({ store, sandbox, dir, specDir: root, home: "/h" });
  const agents = new ExecAgents();
  const handle = await execAgentGuard(agents).start(ctx);
  cleanups.push(async () => {
    await handle.stop();
    store.close();
    rmSync(root, { recursive: true, force: true });
  });
  return { root, ctx, agents, handle, sandboxId: sandbox.id, socket: join(dir, AGENT_SOCKET) };
}

function agentFor(w: World, baseEnv: Record<string, string> = { PATH: process.env.PATH ?? "/usr/bin:/bin", BASE: "container" }) {
  const a = startExecAgent({ socketPath: w.socket, baseEnv, retryMs: { min: 20, max: 100 } });
  cleanups.push(() => a.stop());
  return a;
}

interface Result {
  out: string;
  err: string;
  code: number | null;
  failed: string | null;
}

async function collect(stream: ReadableStream<Uint8Array>, onFirstOut?: () => void): Promise<Result> {
  const r: Result = { out: "", err: "", code: null, failed: null };
  const d = new FrameDecoder();
  const td = new TextDecoder();
  for await (const chunk of stream) {
    for (const f of d.push(chunk)) {
      expect(f.session).toBe(0);
      if (f.type === FrameType.stdout) {
        r.out += td.decode(f.payload);
        onFirstOut?.();
      } else if (f.type === FrameType.stderr) r.err += td.decode(f.payload);
      else if (f.type === FrameType.exit) r.code = parseExit(parseJson(f.payload));
      else if (f.type === FrameType.failed) r.failed = String((parseJson(f.payload) as { message: string }).message);
    }
  }
  return r;
}

const cmd = (argv: string[], extra: Partial<StartPayload> = {}): StartPayload => ({ argv, cwd: "/", env: {}, stdin: false, ...extra });

async function connected(w: World) {
  const link = await w.agents.wait(w.sandboxId, 3000);
  if (!link) throw new Error("the agent did not connect");
  return link;
}

describe("exec agent ↔ daemon", () => {
  test("stdout, stderr and the exit code come back in order", async () => {
    const w = await world();
    agentFor(w);
    const link = await connected(w);
    const r = await collect(link.run(cmd(["sh", "-c", "echo out; echo err >&2; exit 3"])));
    expect(r).toEqual({ out: "out\n", err: "err\n", code: 3, failed: null });
  });

  test("the command gets the agent's environment plus the request's (request wins), in the requested cwd", async () => {
    const w = await world();
    agentFor(w);
    const link = await connected(w);
    const r = await collect(link.run(cmd(["sh", "-c", 'echo "$BASE $TERM $(pwd)"'], { cwd: w.root, env: { TERM: "xterm", BASE: "over" } })));
    expect(r.out).toBe(`over xterm ${w.root}\n`);
  });

  test("stdin bytes reach the command and its EOF ends it; without stdin it reads /dev/null", async () => {
    const w = await world();
    agentFor(w);
    const link = await connected(w);
    const input = new Uint8Array(300_000).map((_, i) => 97 + (i % 26));
    const r = await collect(link.run(cmd(["sh", "-c", "wc -c"], { stdin: true })));
    expect(r.out.trim()).toBe("0");
    const r2 = await collect(link.run(cmd(["wc", "-c"], { stdin: true }), input));
    expect(r2.out.trim()).toBe("300000");
    const r3 = await collect(link.run(cmd(["wc", "-c"])));
    expect(r3.out.trim()).toBe("0");
  });

  test("a missing command is 127, said as sbx says it (with the sandbox's name); a missing cwd says so; a signal is 128+n", async () => {
    const w = await world();
    agentFor(w, { PATH: process.env.PATH ?? "/usr/bin:/bin", SANDBOX: "demo" });
    const link = await connected(w);
    const r = await collect(link.run(cmd(["sbx-no-such-command"])));
    expect(r.code).toBe(127);
    expect(r.err).toBe("sbx: sbx-no-such-command: command not found in sandbox demo\n");
    const gone = await collect(link.run(cmd(["true"], { cwd: join(w.root, "no-such-dir") })));
    expect(gone.code).toBe(127);
    expect(gone.err).toContain(`sbx: cannot run true in ${join(w.root, "no-such-dir")}`);
    expect((await collect(link.run(cmd(["sh", "-c", "kill -9 $$"])))).code).toBe(137);
  });

  test("two commands at once keep their output apart", async () => {
    const w = await world();
    agentFor(w);
    const link = await connected(w);
    const [a, b] = await Promise.all([
      collect(link.run(cmd(["sh", "-c", "for i in 1 2 3 4 5; do echo a$i; sleep 0.01; done"]))),
      collect(link.run(cmd(["sh", "-c", "for i in 1 2 3 4 5; do echo b$i; sleep 0.01; done"]))),
    ]);
    expect(a.out).toBe("a1\na2\na3\na4\na5\n");
    expect(b.out).toBe("b1\nb2\nb3\nb4\nb5\n");
  });

  test("8 MB through a slow reader arrive whole and in order (the agent waits for the daemon to drain)", async () => {
    const w = await world();
    agentFor(w);
    const link = await connected(w);
    const stream = link.run(cmd(["sh", "-c", "seq 1 1000000"]));
    let text = "";
    const d = new FrameDecoder();
    let n = 0;
    for await (const chunk of stream) {
      for (const f of d.push(chunk)) if (f.type === FrameType.stdout) text += new TextDecoder().decode(f.payload);
      if (++n % 16 === 0) await Bun.sleep(1);
    }
    const lines = text.trimEnd().split("\n");
    expect(lines.length).toBe(1_000_000);
    expect(lines[999_999]).toBe("1000000");
  });

  test("the caller going away (stream cancelled) stops the command", async () => {
    const w = await world();
    agentFor(w);
    const link = await connected(w);
    const pidFile = join(w.root, "pid");
    const reader = link.run(cmd(["sh", "-c", `echo $$ > ${pidFile}; echo started; exec sleep 30`])).getReader();
    await reader.read(); // "started"
    const pid = Number(readFileSync(pidFile, "utf8"));
    await reader.cancel();
    const until = Date.now() + 5000;
    while (Date.now() < until && existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z")) await Bun.sleep(20);
    expect(existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z")).toBe(false);
  });

  test("the agent going away mid-command ends the session with failed, never an exit code", async () => {
    const w = await world();
    const a = agentFor(w);
    const link = await connected(w);
    const stream = link.run(cmd(["sleep", "30"]));
    setTimeout(() => a.stop(), 50);
    const r = await collect(stream);
    expect(r.code).toBeNull();
    expect(r.failed).toContain("went away");
    expect(w.agents.get(w.sandboxId)).toBeUndefined();
  });

  test("after a daemon restart (listener gone, then back) the agent dials again and is found", async () => {
    const w = await world();
    agentFor(w);
    await connected(w);
    expect(w.handle.health().detail).toStartWith("agent connected");
    await w.handle.stop();
    expect(w.agents.get(w.sandboxId)).toBeUndefined();
    const again = new ExecAgents();
    const h2 = await execAgentGuard(again).start(w.ctx);
    cleanups.push(() => h2.stop());
    const link = await again.wait(w.sandboxId, 3000);
    expect(link).toBeDefined();
    expect((await collect(link!.run(cmd(["echo", "back"])))).out).toBe("back\n");
  });
});

describe("ExecAgents.stream (the daemon's own commands inside: ref sync's git as the sandbox)", () => {
  test("null without an agent, so the caller takes the engine; the request's environment reaches the command", async () => {
    const w = await world();
    expect(w.agents.stream(w.sandboxId, cmd(["true"]), undefined, 1000)).toBeNull();
    agentFor(w);
    await connected(w);
    const run = w.agents.stream(w.sandboxId, cmd(["sh", "-c", "echo $PATH; echo e >&2; exit 2"], { env: { PATH: "/usr/bin:/bin" } }), undefined, 5000)!;
    expect(await new Response(run.stdout).text()).toBe("/usr/bin:/bin\n");
    expect(await run.done).toEqual({ exitCode: 2, stderr: "e\n" });
  });

  test("stream: the daemon's own commands get stdout as exact bytes (a pack), stdin given whole, stderr and the exit code", async () => {
    const w = await world();
    agentFor(w);
    await connected(w);
    const run = w.agents.stream(w.sandboxId, cmd(["sh", "-c", "printf '\\000\\377\\200PACK'; cat; echo oops >&2; exit 3"]), "in", 5000)!;
    const bytes = new Uint8Array(await new Response(run.stdout).arrayBuffer());
    expect([...bytes]).toEqual([0, 255, 128, 80, 65, 67, 75, 105, 110]);
    expect(await run.done).toEqual({ exitCode: 3, stderr: "oops\n" });
    expect(w.agents.stream(w.sandboxId + 1, cmd(["true"]), undefined, 5000)).toBeNull();
  });


  // Ref sync's first syncs wait for a starting sandbox's agent (src/daemon/driver-guards.ts) rather than each start a
  // `docker exec`; a wait never outlasts its time or the guard.
  test("waitFor: the agent that connects within the time is found; none after the time; an abort ends the wait at once", async () => {
    const w = await world();
    const t0 = performance.now();
    expect(await w.agents.waitFor(w.sandboxId, 150)).toBeUndefined();
    expect(performance.now() - t0).toBeGreaterThanOrEqual(140);
    const stop = new AbortController();
    const t1 = performance.now();
    const aborted = w.agents.waitFor(w.sandboxId, 10_000, stop.signal);
    setTimeout(() => stop.abort(), 50);
    expect(await aborted).toBeUndefined();
    expect(performance.now() - t1).toBeLessThan(2000);
    const waiting = w.agents.waitFor(w.sandboxId, 10_000);
    agentFor(w);
    const link = await waiting;
    expect(link).toBeDefined();
    expect((await collect(link!.run(cmd(["echo", "found"])))).out).toBe("found\n");
    // Connected: at once.
    expect(await w.agents.waitFor(w.sandboxId, 10_000)).toBe(link);
  });

  test("sessions-are-the-persons: sbx's own command running inside is no open session (a rebuild is not refused, a stop asks no one for it), yet a stop ends it", async () => {
    const w = await world();
    agentFor(w);
    const link = await connected(w);
    const pidFile = join(w.root, "own.pid");
    const own = w.agents.stream(w.sandboxId, cmd(["sh", "-c", `echo $$ > ${pidFile}; exec sleep 30`]), undefined, 30_000)!;
    const persons = link.run(cmd(["sh", "-c", "exec sleep 30"]));
    const reading = collect(persons);
    for (let i = 0; i < 250 && !existsSync(pidFile); i++) await Bun.sleep(20);
    expect(existsSync(pidFile)).toBe(true);
    // Only the person's command counts, and only it is said as ended.
    expect(link.running).toBe(1);
    expect(link.endAll("stopping")).toBe(1);
    expect((await reading).failed).toBe("stopping");
    await new Response(own.stdout).arrayBuffer();
    expect((await own.done).exitCode).not.toBe(0);
    expect(link.running).toBe(0);
  });

  test("a command past its time is stopped and reported as 124", async () => {
    const w = await world();
    agentFor(w);
    await connected(w);
    const pidFile = join(w.root, "slow.pid");
    const run = w.agents.stream(w.sandboxId, cmd(["sh", "-c", `echo $$ > ${pidFile}; exec sleep 30`]), undefined, 300)!;
    await new Response(run.stdout).arrayBuffer();
    const r = await run.done;
    expect(r.exitCode).toBe(124);
    expect(r.stderr).toContain("timed out");
    const pid = Number(readFileSync(pidFile, "utf8"));
    const until = Date.now() + 5000;
    const alive = () => existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z");
    while (Date.now() < until && alive()) await Bun.sleep(20);
    expect(alive()).toBe(false);
  });
});

describe("a hostile agent", () => {
  /** A raw connection that speaks frames as the test likes. */
  async function raw(w: World) {
    const sock = connect({ path: w.socket });
    await new Promise<void>((res, rej) => {
      sock.once("connect", () => res());
      sock.once("error", rej);
    });
    const received: Uint8Array[] = [];
    sock.on("data", (b: Buffer) => received.push(new Uint8Array(b)));
    const closed = new Promise<void>((res) => sock.on("close", () => res()));
    cleanups.push(() => void sock.destroy());
    return { sock, received, closed };
  }

  test("no hello, no link: a connection that never says hello runs nothing", async () => {
    const w = await world();
    await raw(w);
    expect(await w.agents.wait(w.sandboxId, 200)).toBeUndefined();
  });

  test("an oversized frame drops the connection", async () => {
    const w = await world();
    const { sock, closed } = await raw(w);
    sock.write(jsonFrame(FrameType.hello, 0, { v: AGENT_PROTOCOL }));
    await connected(w);
    const h = new Uint8Array(FRAME_HEADER);
    new DataView(h.buffer).setUint8(0, FrameType.stdout);
    new DataView(h.buffer).setUint32(5, 64 << 20);
    sock.write(h);
    await closed;
    expect(w.agents.get(w.sandboxId)).toBeUndefined();
  });

  test("exit codes out of range are clamped; frames for sessions never started are ignored", async () => {
    const w = await world();
    const { sock, received } = await raw(w);
    sock.write(jsonFrame(FrameType.hello, 0, { v: AGENT_PROTOCOL }));
    const link = await connected(w);
    const stream = link.run(cmd(["true"]));
    // The start frame arrives at the fake agent; it answers for a session that does not exist, then with a bad code.
    while (received.length === 0) await Bun.sleep(5);
    const d = new FrameDecoder();
    const start = d.push(new Uint8Array(Buffer.concat(received)))[0]!;
    expect(start.type).toBe(FrameType.start);
    sock.write(encodeFrame(FrameType.stdout, start.session + 100, new TextEncoder().encode("not yours")));
    sock.write(jsonFrame(FrameType.exit, start.session, { code: 100000 }));
    const r = await collect(stream);
    expect(r).toEqual({ out: "", err: "", code: 255, failed: null });
  });

  test("a guard of another backend listens on nothing", async () => {
    const w = await world("linux-user");
    expect(existsSync(w.socket)).toBe(false);
  });
});

describe("bounded: the agent socket", () => {
  /** A connection to agent.sock that claims a frame of `claim` bytes and sends `send` of them (a sandbox's own process). */
  function claimer(socket: string, claim: number, send: number): Promise<{ closed: Promise<void> }> {
    return new Promise((resolve, reject) => {
      const s = connect({ path: socket });
      const closed = new Promise<void>((done) => s.on("close", () => done()));
      s.on("error", () => undefined);
      s.once("connect", () => {
        const head = new Uint8Array(FRAME_HEADER);
        const v = new DataView(head.buffer);
        v.setUint8(0, FrameType.hello);
        v.setUint32(1, 0);
        v.setUint32(5, claim);
        s.write(head);
        if (send > 0) s.write(Buffer.alloc(send, 120));
        resolve({ closed });
      });
      s.once("error", reject);
    });
  }

  test(`a sandbox cannot make the daemon hold more than ${AGENT_MAX_CONNECTIONS} connections, nor a half-sent frame of 1 MiB on each, before a hello`, async () => {
    const w = await world();
    const conns = await Promise.all(Array.from({ length: 40 }, () => claimer(w.socket, 1 << 20, 512 * 1024)));
    // Every one is dropped: a hello is small (a 1 MiB claim before it is refused at once), and past the bound a
    // connection is closed at once whatever it sends.
    const gone = await Promise.all(conns.map((c) => Promise.race([c.closed.then(() => true), Bun.sleep(2000).then(() => false)])));
    expect(gone.filter((g) => !g).length).toBe(0);
    // An idle one (sends nothing) is dropped after the hello time; past the bound the oldest such makes room at once.
    const idle = await Promise.all(Array.from({ length: AGENT_MAX_CONNECTIONS + 10 }, () => claimer(w.socket, 0, 0).catch(() => null)));
    const early = await Promise.all(idle.map((c) => (c ? Promise.race([c.closed.then(() => true), Bun.sleep(500).then(() => false)]) : true)));
    expect(early.filter(Boolean).length).toBeGreaterThanOrEqual(10);
    // The real agent still gets in and runs commands.
    agentFor(w);
    for (let i = 0; i < 100 && !w.agents.get(w.sandboxId); i++) await Bun.sleep(20);
    expect(w.agents.get(w.sandboxId)).toBeDefined();
  }, 20_000);
});
