// In-sandbox exec agent: runs the commands of `sbx shell|run NAME -- cmd` (no terminal) for the daemon, which it reaches over the sandbox's agent socket. Bun built-ins only.
//
// The agent connects OUT to a socket the daemon listens on (the host never connects to a path in a directory the
// sandbox can write). It runs inside the container as the sandbox's user with the container's environment, so a
// command it starts has exactly what one started by `docker exec --user <uid>:<gid>` has: same user, same env (plus the
// request's terminal variables), same caps, same network namespace. It saves the engine's ~65 ms per exec.
// Nothing here is trusted by the host: whatever the agent answers is the sandbox's own output.
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { constants } from "node:os";
import { dirname, join } from "node:path";
import { fdPassing, type FdPassing } from "./fd-pass";
import {
  AGENT_PROTOCOL,
  AGENT_SIGNALS,
  commandNotFound,
  dataFrames,
  encodeFrame,
  EXIT_COMMAND_NOT_FOUND,
  FrameDecoder,
  FrameType,
  jsonFrame,
  parseJson,
  parseDial,
  parseStart,
  type Frame,
} from "./exec-frames";

/** The socket beside agent.sock where the agent hands the daemon the connections `sbx port` asked it to make. */
export const DIAL_SOCKET = "dial.sock";

export interface ExecAgentOptions {
  socketPath: string;
  /**
   * Where to hand over dialed connections (default: dial.sock beside socketPath); null: never (every byte of a
   * forwarded port then travels as frames on the agent's connection).
   */
  dialSocketPath?: string | null;
  /** The environment commands start from (the container's; its SANDBOX names the sandbox). */
  baseEnv: Record<string, string>;
  /** Reconnect delay bounds after the daemon's socket went away or refused. */
  retryMs?: { min: number; max: number };
  log?: (line: string) => void;
}

interface Running {
  proc: ReturnType<typeof Bun.spawn>;
  stdin: boolean;
}

/** The exit code of a finished process: its own, or 128 + the signal that ended it (what a shell reports). */
export function exitCodeOf(exitCode: number | null, signal: string | number | null): number {
  if (exitCode !== null) return exitCode;
  if (typeof signal === "number") return 128 + signal;
  const n = signal ? (constants.signals as Record<string, number>)[signal] : undefined;
  return n === undefined ? 255 : 128 + n;
}

/** What a session's commands and dials share: its running commands and connections, and how it writes frames. */
interface SessionIO {
  o: ExecAgentOptions;
  running: Map<number, Running>;
  dials: Map<number, Socket>;
  write(bytes: Uint8Array): Promise<void>;
  refuse(id: number, line: string, code: number): Promise<void>;
  pump(id: number, type: number, stream: ReadableStream<Uint8Array>): Promise<void>;
  /** The daemon's dial.sock as connected now, and libc's socket calls: where dialed connections are handed over. */
  handover: { lib: FdPassing; fd: number } | null;
  /** Dials being made to be handed over (a kill frame for one drops it). */
  handing: Set<number>;
}

/** One connection to the daemon: the frames it sends are read here, each session's command or dial run on its own. */
function agentSession(sock: Socket, o: ExecAgentOptions): void {
  const running = new Map<number, Running>();
  const decoder = new FrameDecoder();
  let open = true;
  // Writes wait for the socket to drain, so a command writing faster than the daemon reads is held back.
  const write = async (bytes: Uint8Array) => {
    if (!open) return;
    if (!sock.write(bytes)) await new Promise<void>((res) => {
      const done = () => {
        sock.off("drain", done);
        sock.off("close", done);
        res();
      };
      sock.on("drain", done);
      sock.on("close", done);
    });
  };
  const pump = async (id: number, type: number, stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) for (const f of dataFrames(type, id, chunk)) await write(f);
  };
  /** Ends a session that never ran: the reason on its stderr, then its exit code. */
  const refuse = async (id: number, line: string, code: number) => {
    for (const f of dataFrames(FrameType.stderr, id, new TextEncoder().encode(`${line}\n`))) await write(f);
    await write(jsonFrame(FrameType.exit, id, { code }));
  };
  const dials = new Map<number, Socket>();
  const io: SessionIO = { o, running, dials, write, refuse, pump, handover: null, handing: new Set() };
  // The hand-over channel: a second connection, to dial.sock, used only to send descriptors (the agent's own connection
  // is read by Bun, which would drop them). Without it (an old daemon, a libc bun:ffi cannot load) dials use frames.
  const lib = o.dialSocketPath === null ? null : fdPassing();
  let channel: import("bun").Socket<undefined> | null = null;
  if (lib) {
    Bun.connect<undefined>({
      unix: o.dialSocketPath ?? join(dirname(o.socketPath), DIAL_SOCKET),
      socket: {
        open(ch) {
          if (!open) return void ch.terminate();
          channel = ch;
          io.handover = { lib, fd: (ch as unknown as { fd: number }).fd };
        },
        data() {},
        close(ch) {
          if (channel === ch) io.handover = null;
        },
        error() {},
      },
    }).catch(() => {
      /* no dial.sock: frames */
    });
  }
  const onFrame = (f: Frame) => {
    const r = running.get(f.session);
    const d = dials.get(f.session);
    switch (f.type) {
      case FrameType.start:
        void runCommand(io, f.session, f.payload).catch((e: unknown) => o.log?.(`sbx exec agent: ${(e as Error).message}`));
        return;
      case FrameType.dial:
        dialLoopback(io, f.session, f.payload);
        return;
      case FrameType.stdin:
        if (d) d.write(f.payload);
        else if (r?.stdin) void (r.proc.stdin as import("bun").FileSink).write(f.payload);
        return;
      case FrameType.stdinEnd:
        if (d) d.end();
        else if (r?.stdin) void (r.proc.stdin as import("bun").FileSink).end();
        return;
      case FrameType.kill: {
        if (io.handing.delete(f.session)) return;
        if (d) {
          d.destroy();
          return;
        }
        const sig = (parseJson(f.payload) as { signal?: unknown } | undefined)?.signal;
        if (r && typeof sig === "string" && (AGENT_SIGNALS as readonly string[]).includes(sig)) r.proc.kill(sig as NodeJS.Signals);
        return;
      }
      default:
        return; // unknown frames are ignored: a newer daemon may send more
    }
  };
  sock.on("data", (chunk: Buffer) => {
    let frames: Frame[];
    try {
      frames = decoder.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    } catch {
      sock.destroy();
      return;
    }
    for (const f of frames) onFrame(f);
  });
  sock.on("close", () => {
    open = false;
    io.handover = null;
    channel?.terminate();
    // The daemon is gone: its callers are too, so what they started is stopped (a command of a gone caller
    // would otherwise run on unseen).
    for (const r of running.values()) r.proc.kill("SIGTERM");
    running.clear();
    for (const d of dials.values()) d.destroy();
    dials.clear();
  });
  void write(jsonFrame(FrameType.hello, 0, { v: AGENT_PROTOCOL }));
}

/** One command of a session: spawned in its own group, its output framed back, its exit code last. */
async function runCommand(io: SessionIO, id: number, payload: Uint8Array): Promise<void> {
  const { o, running, write, refuse, pump } = io;
    const req = parseStart(parseJson(payload));
    if (!req || running.has(id)) {
      return refuse(id, `sbx exec agent: ${running.has(id) ? "a session with this number is running" : "malformed start request"}`, 126);
    }
    let proc: ReturnType<typeof Bun.spawn>;
    try {
      proc = Bun.spawn({
        cmd: req.argv,
        cwd: req.cwd,
        env: { ...o.baseEnv, ...req.env },
        stdin: req.stdin ? "pipe" : "ignore",
        stdout: "pipe",
        stderr: "pipe",
        // Its own session and process group: what it leaves running is found (and ended) by the group.
        detached: true,
      });
    } catch (e) {
      const missing = (e as NodeJS.ErrnoException).code === "ENOENT";
      // ENOENT is also a working directory that is gone: only a command that is not there is "not found".
      if (missing && existsSync(req.cwd)) return refuse(id, commandNotFound(req.argv[0] ?? "", o.baseEnv.SANDBOX ?? "?"), EXIT_COMMAND_NOT_FOUND);
      return refuse(id, `sbx: cannot run ${req.argv[0]} in ${req.cwd}: ${(e as Error).message}`, missing ? EXIT_COMMAND_NOT_FOUND : 126);
    }
    // The sandbox's own process (this agent and the forwarder) is the last the kernel kills at the memory limit: a
    // command and what it starts are first (a process may raise its own and its children's score, never lower it).
    raiseOomScore(proc.pid);
    running.set(id, { proc, stdin: req.stdin });
    try {
      const pumps = Promise.all([pump(id, FrameType.stdout, proc.stdout as ReadableStream<Uint8Array>), pump(id, FrameType.stderr, proc.stderr as ReadableStream<Uint8Array>)]);
      await proc.exited;
      // What the command left running in its group ends with it (a fork bomb, a forgotten `&`): otherwise they
      // hold its output open, so it never ends for its caller, and hold the sandbox's process limit. A process
      // that wants to outlive the command leaves the group (setsid), as a daemon does.
      await endGroup(proc.pid);
      await pumps;
    } catch {
      /* the connection went away mid-stream: the exit frame below is lost with it */
    }
    running.delete(id);
    await write(jsonFrame(FrameType.exit, id, { code: exitCodeOf(proc.exitCode, proc.signalCode) }));
}

/** `sbx port`: a connection to this sandbox's own loopback, 127.0.0.1 first, then ::1 (a server on `localhost` only). */
function dialLoopback(io: SessionIO, id: number, payload: Uint8Array): void {
  const { running, dials, write, refuse } = io;
    const port = parseDial(parseJson(payload));
    if (port === undefined || running.has(id) || dials.has(id) || io.handing.has(id)) return void refuse(id, "sbx exec agent: malformed dial request", 126);
    if (io.handover) return handOver(io, id, port, ["127.0.0.1", "::1"]);
    framedDial(io, id, port, ["127.0.0.1", "::1"]);
}

/**
 * `sbx port`, the fast way: the connection is made here (so it is this sandbox's, to its own loopback) and its
 * descriptor handed to the daemon on dial.sock, tagged with the session, then a `dialed` frame says so; the daemon
 * checks it and relays the host's client to it itself, and no byte of it passes through this process. When the channel
 * will not take it (full, gone), the connection is dropped and made again the framed way.
 */
function handOver(io: SessionIO, id: number, port: number, hosts: string[]): void {
  const { write, refuse, handing } = io;
  handing.add(id);
  Bun.connect<undefined>({
    hostname: hosts[0]!,
    port,
    socket: {
      open(s) {
        const h = io.handover;
        const wanted = handing.delete(id);
        const sent = wanted && h !== null && h.lib.sendTagged(h.fd, (s as unknown as { fd: number }).fd, id);
        // The daemon holds it now (or nobody wants it): this process lets go of its copy, which neither ends nor
        // resets the connection while another descriptor holds it.
        s.terminate();
        if (!wanted) return; // the daemon dropped the session meanwhile
        if (sent) return void write(jsonFrame(FrameType.dialed, id, {}));
        framedDial(io, id, port, hosts);
      },
      data() {
        /* never read here: the descriptor left in open */
      },
      connectError(_s, e) {
        if (!handing.has(id)) return;
        if (hosts.length > 1) return handOver(io, id, port, hosts.slice(1));
        handing.delete(id);
        void refuse(id, `sbx: nothing listens on port ${port} in this sandbox (${(e as NodeJS.ErrnoException).code ?? e.message})`, 1);
      },
      error() {},
    },
  }).catch(() => {
    /* connectError said it */
  });
}

/** `sbx port` the framed way: this process carries the connection's bytes as stdout/stdin frames. */
function framedDial(io: SessionIO, id: number, port: number, hosts0: string[]): void {
  const { dials, write, refuse } = io;
    const attempt = (hosts: string[]) => {
      const c = connect({ host: hosts[0]!, port, noDelay: true, allowHalfOpen: true });
      dials.set(id, c);
      let connected = false;
      c.on("connect", () => {
        connected = true;
        // An empty stdout frame first: the daemon learns this dial is framed (not handed over) and sends what the
        // host's client wrote meanwhile.
        void write(encodeFrame(FrameType.stdout, id));
      });
      c.on("data", (chunk: Buffer) => {
        // Held back while the daemon is behind (the frame writes wait for drain).
        c.pause();
        void (async () => {
          for (const fr of dataFrames(FrameType.stdout, id, new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))) await write(fr);
          c.resume();
        })();
      });
      c.on("error", (e: NodeJS.ErrnoException) => {
        if (!connected && hosts.length > 1) {
          c.removeAllListeners("close");
          return attempt(hosts.slice(1));
        }
        if (!connected) {
          dials.delete(id);
          void refuse(id, `sbx: nothing listens on port ${port} in this sandbox (${e.code ?? e.message})`, 1);
        }
      });
      // The server is done sending: the connection is done (a client still writing then sees it closed).
      c.on("end", () => c.end());
      c.on("close", () => {
        if (!connected || dials.get(id) !== c) return;
        dials.delete(id);
        void write(jsonFrame(FrameType.exit, id, { code: 0 }));
      });
    };
    attempt(hosts0);
}

/** Starts the agent; it keeps reconnecting until stopped. */
export function startExecAgent(o: ExecAgentOptions): { stop(): void } {
  const retry = o.retryMs ?? { min: 100, max: 2000 };
  let stopped = false;
  let delay = retry.min;
  let current: Socket | null = null;

  const dial = () => {
    if (stopped) return;
    const sock = connect({ path: o.socketPath });
    current = sock;
    let connected = false;
    sock.on("connect", () => {
      connected = true;
      delay = retry.min;
      agentSession(sock, o);
    });
    sock.on("error", () => {
      /* close follows */
    });
    sock.on("close", () => {
      if (current === sock) current = null;
      if (stopped) return;
      const wait = connected ? retry.min : delay;
      if (!connected) delay = Math.min(retry.max, delay * 2);
      setTimeout(dial, wait).unref?.();
    });
  };
  dial();
  return {
    stop() {
      stopped = true;
      current?.destroy();
    },
  };
}

/** Kills every process of a process group until none is left (a fork bomb forks while it is killed); gives up after ~2 s. */
export async function endGroup(pgid: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {
      return; // ESRCH: the group is empty
    }
    await Bun.sleep(20);
  }
}

/** What a command's oom_score_adj becomes: half the memory limit's worth of badness added, so it goes before the agent. */
export const COMMAND_OOM_SCORE = 500;

/** Raises a process's OOM score (best effort: a process that already ended, or a kernel without the file, is fine). */
export function raiseOomScore(pid: number): void {
  try {
    writeFileSync(`/proc/${pid}/oom_score_adj`, String(COMMAND_OOM_SCORE));
  } catch {
    /* gone already */
  }
}

/**
 * What the sandbox's own long-lived Bun (sandbox-main) starts with, and what its commands never inherit. JSC makes some
 * helper threads when first needed (the JIT's worker, the GC's collector and markers, some of them ended again when
 * idle); inside a sandbox at its process limit (a fork bomb: threads count as processes) one cannot be made, and JSC
 * aborts the process, which ends the sandbox. With these it compiles and collects on its own thread; warmUp makes
 * the rest now. Measured on Bun 1.4.5 under --pids-limit 64 with a bomb while the process read pipes, made garbage
 * and spawned: aborted in 5 runs of 6 without them, in none of 12 with them and warmUp. (`useJIT=0` would do too,
 * but bun:ffi needs the JIT, and the forwarder hands its listener over with it.)
 */
export const MAIN_RUNTIME_ENV: Readonly<Record<string, string>> = {
  BUN_JSC_useConcurrentJIT: "0",
  BUN_JSC_useConcurrentGC: "0",
  BUN_JSC_numberOfGCMarkers: "1",
};

/** The names of this process's threads (Linux), or null where /proc does not say. */
function threadNames(): string[] | null {
  try {
    return readdirSync("/proc/self/task").map((t) => readFileSync(`/proc/self/task/${t}/comm`, "utf8").trim());
  } catch {
    return null;
  }
}

/**
 * Makes the threads running commands needs (spawning, several pipes read at once, a full GC, JSC's warm-up thread,
 * made once code runs hot) while they can still be made: a sandbox at its process limit has no room for one more,
 * and this process must keep working then. Best effort: an image without sh or seq skips that part; the JS work is
 * bounded (about 1 s at most).
 */
export async function warmUp(): Promise<void> {
  try {
    const ps = Array.from({ length: 4 }, () =>
      Bun.spawn(["/bin/sh", "-c", "seq 1 20000; seq 1 20000 >&2"], { stdin: "ignore", stdout: "pipe", stderr: "pipe", detached: true }),
    );
    await Promise.all(ps.flatMap((p) => [new Response(p.stdout).arrayBuffer(), new Response(p.stderr).arrayBuffer(), p.exited]));
  } catch {
    /* no sh in this image */
  }
  await Promise.all(Array.from({ length: 8 }, () => Bun.file("/proc/self/stat").text().catch(() => "")));
  // Hot code until JSC has made its warm-up thread (Bun 1.4.5 names it JSCWarmUp), in slices so nothing waits long.
  for (let round = 0; round < 100 && !(threadNames()?.includes("JSCWarmUp") ?? true); round++) {
    let junk: { i: number; s: string }[] = [];
    for (let i = 0; i < 20_000; i++) junk.push({ i, s: `x${i}` });
    junk = [];
    await Bun.sleep(2);
  }
  Bun.gc(true);
}
