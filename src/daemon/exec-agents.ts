// The daemon's side of the in-sandbox exec agent: a guard that listens on the agent socket of each sandbox whose kind has one (a container's), and the registry the control API runs commands through.
//
// The agent (shims/exec-agent.ts) dials in from inside the container; the socket it reaches is the sandbox's own, so
// a connection speaks for that sandbox and no other. What comes back is the sandbox's output and is treated as such:
// frames are size-bounded, unknown sessions ignored, exit codes clamped. When no agent is connected (a container made
// before the agent existed, an agent the sandbox killed) callers fall back to the engine's exec.
import { trace } from "../sys/trace";
import { rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import type { Socket as BunSocket } from "bun";
import { DIAL_SOCKET } from "../../shims/exec-agent";
import { fdPassing, loopbackConnectionTo, type FdPassing } from "../../shims/fd-pass";
import { join } from "node:path";
import {
  AGENT_PROTOCOL,
  dataFrames,
  encodeFrame,
  FrameDecoder,
  FrameType,
  jsonFrame,
  parseExit,
  parseJson,
  readExecStream,
  type Frame,
  type StartPayload,
} from "../../shims/exec-frames";
import type { GuardHandle, SandboxGuard } from "../guards/guards";
import type { StreamedRun } from "../sys/exec";
import { AGENT_HELLO_MAX, AGENT_HELLO_MS, AGENT_MAX_CONNECTIONS } from "../core/bounds";

/** The agent socket's name in a sandbox's socket dir (mounted at /run/sbx inside). */
export const AGENT_SOCKET = "agent.sock";

/** How long a caller waits for an agent of a sandbox whose guards came up moments ago (the container is starting). */
const FRESH_MS = 5000;

interface Session {
  controller: ReadableStreamDefaultController<Uint8Array>;
  done: boolean;
  /** Called once the command ended, before its exit frame: what it returns goes out on stderr first. */
  beforeExit?: () => Promise<string>;
  /** A forwarded connection (`sbx port`), not a command: not counted as a session a stop would end. */
  dial?: { port: number; handed: (fd: number) => void };
  /** The daemon's own work (ref sync's git as the sandbox): ended with the sandbox, never counted as a person's session. */
  own?: boolean;
}

/** Where a sandbox's agent hands over the connections it dials: its dial.sock connection, read only with recvmsg. */
export interface DialChannel {
  lib: FdPassing;
  fd: number;
}

/** Ends a session that is still open with a failed frame saying why; whether it was open. */
function fail(s: Session, message: string): boolean {
  if (s.done) return false;
  s.done = true;
  try {
    s.controller.enqueue(jsonFrame(FrameType.failed, 0, { message }));
    s.controller.close();
  } catch {
    /* the caller already went away */
  }
  return true;
}

/** One connected agent: runs commands as numbered sessions on its connection. */
export class AgentLink {
  private readonly sessions = new Map<number, Session>();
  private next = 1;
  private closed = false;

  /** `channel`: the sandbox's dial.sock connection now, where dialed connections arrive (none: every dial is framed). */
  constructor(
    private readonly sock: Socket,
    private readonly channel: () => DialChannel | null = () => null,
  ) {}

  get isOpen(): boolean {
    return !this.closed;
  }

  /** Commands a person started through this agent whose callers are still waiting (not sbx's own, not forwards). */
  get running(): number {
    return [...this.sessions.values()].filter((s) => !s.done && !s.dial && !s.own).length;
  }

  /**
   * Ends every running command (the sandbox is being stopped or removed): its caller is told why, and the command is
   * killed. How many were ended.
   */
  endAll(why?: string): number {
    let n = 0;
    for (const [id, s] of this.sessions) {
      if (!fail(s, why ?? "the sandbox is stopping")) continue;
      if (!s.own && !s.dial) n++;
      if (!this.closed) this.sock.write(jsonFrame(FrameType.kill, id, { signal: "SIGKILL" }));
    }
    return n;
  }

  /**
   * Starts a command and returns its output as CLI frames (session 0): stdout, stderr, then exit, or failed when the
   * agent goes away first. Cancelling the stream (the caller went away) sends SIGTERM, then SIGKILL 3 s later.
   */
  run(start: StartPayload, stdin?: Uint8Array, opts: { beforeExit?: () => Promise<string>; own?: boolean } = {}): ReadableStream<Uint8Array> {
    const id = this.next++;
    const sock = this.sock;
    let killTimer: ReturnType<typeof setTimeout> | undefined;
    return new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          if (this.closed) {
            controller.enqueue(jsonFrame(FrameType.failed, 0, { message: "the sandbox's exec agent is not connected" }));
            controller.close();
            return;
          }
          this.sessions.set(id, { controller, done: false, ...(opts.beforeExit ? { beforeExit: opts.beforeExit } : {}), ...(opts.own ? { own: true } : {}) });
          sock.write(jsonFrame(FrameType.start, id, start));
          if (start.stdin) {
            for (const f of dataFrames(FrameType.stdin, id, stdin ?? new Uint8Array(0))) sock.write(f);
            sock.write(encodeFrame(FrameType.stdinEnd, id));
          }
        },
        // The caller reads again: the connection may flow again (it was paused when the caller fell behind).
        pull: () => {
          if (!this.closed) sock.resume();
        },
        cancel: () => {
          const s = this.sessions.get(id);
          if (!s || s.done || this.closed) return;
          s.done = true;
          sock.write(jsonFrame(FrameType.kill, id, { signal: "SIGTERM" }));
          killTimer = setTimeout(() => {
            if (!this.closed && this.sessions.has(id)) sock.write(jsonFrame(FrameType.kill, id, { signal: "SIGKILL" }));
          }, 3000);
          killTimer.unref?.();
        },
      },
      { highWaterMark: 8 },
    );
  }

  /**
   * `sbx port`: a TCP connection to `port` of the sandbox's own loopback, made by the agent inside (the container has no
   * network the host could reach). Where the agent can hand it over, `handed` gets its descriptor (checked: a TCP
   * connection from the sandbox's loopback to that port, tagged with this session) and the frames end; otherwise its
   * bytes come as CLI frames (stdout, then exit or failed), `write` sends to it, `end` ends its writing side. `close`
   * drops it.
   */
  dial(port: number, handed: (fd: number) => void): { frames: ReadableStream<Uint8Array>; write(b: Uint8Array): void; end(): void; close(): void } {
    const id = this.next++;
    const sock = this.sock;
    const live = () => !this.closed && this.sessions.get(id)?.done === false;
    const close = () => {
      const s = this.sessions.get(id);
      if (!s || s.done || this.closed) return;
      s.done = true;
      sock.write(jsonFrame(FrameType.kill, id, { signal: "SIGTERM" }));
      try {
        s.controller.close();
      } catch {
        /* already closed */
      }
    };
    const frames = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          if (this.closed) {
            controller.enqueue(jsonFrame(FrameType.failed, 0, { message: "the sandbox's exec agent is not connected" }));
            controller.close();
            return;
          }
          this.sessions.set(id, { controller, done: false, dial: { port, handed } });
          sock.write(jsonFrame(FrameType.dial, id, { port }));
        },
        pull: () => {
          if (!this.closed) sock.resume();
        },
        cancel: close,
      },
      { highWaterMark: 8 },
    );
    return {
      frames,
      write: (b) => {
        if (live()) for (const f of dataFrames(FrameType.stdin, id, b)) sock.write(f);
      },
      end: () => {
        if (live()) sock.write(encodeFrame(FrameType.stdinEnd, id));
      },
      close,
    };
  }

  /** A frame from the agent. */
  onFrame(f: Frame): void {
    const s = this.sessions.get(f.session);
    if (!s) return; // a session this daemon never started, or one already ended
    if (f.type === FrameType.dialed) return this.takeDialed(f.session, s);
    if (f.type === FrameType.stdout || f.type === FrameType.stderr) {
      if (s.done) return;
      s.controller.enqueue(encodeFrame(f.type, 0, f.payload));
      // The caller is behind: stop reading the agent until it pulls (the agent's writes then wait for drain).
      if ((s.controller.desiredSize ?? 1) <= 0) this.sock.pause();
    } else if (f.type === FrameType.exit) {
      this.sessions.delete(f.session);
      if (s.done) return;
      s.done = true;
      const code = parseExit(parseJson(f.payload));
      const end = (note: string) => {
        try {
          if (note !== "") for (const fr of dataFrames(FrameType.stderr, 0, new TextEncoder().encode(note))) s.controller.enqueue(fr);
          s.controller.enqueue(jsonFrame(FrameType.exit, 0, { code }));
          s.controller.close();
        } catch {
          /* the caller went away meanwhile */
        }
      };
      // A note (a limit the sandbox hit while the command ran) goes out on stderr, before the exit status.
      if (s.beforeExit) void s.beforeExit().then(end, () => end(""));
      else end("");
    }
  }

  /**
   * The agent says a dial's connection is on dial.sock: exactly one descriptor is read for it, and it is relayed to only
   * if it carries this session's tag and is a TCP connection from the sandbox's loopback to the port asked for. Anything
   * else is closed and the dial fails (the host's client is cut): a sandbox gets nothing relayed to but the port the
   * person forwarded, on its own loopback.
   */
  private takeDialed(id: number, s: Session): void {
    this.sessions.delete(id);
    if (s.done || !s.dial) return void fail(s, "the agent said a connection was handed over for a session that is not a dial");
    const ch = this.channel();
    if (!ch) return void fail(s, "the agent said a connection was handed over, but it has no dial.sock connection");
    const got = ch.lib.recvTagged(ch.fd);
    if ("none" in got) return void fail(s, `no connection was handed over on dial.sock (${got.none})`);
    if (got.tag !== id) {
      ch.lib.close(got.fd);
      return void fail(s, `the connection handed over was tagged for dial ${got.tag}, not ${id}`);
    }
    const why = loopbackConnectionTo(ch.lib.socketInfo(got.fd), s.dial.port);
    if (why !== null) {
      ch.lib.close(got.fd);
      return void fail(s, `the connection handed over is not the one asked for: ${why}`);
    }
    s.done = true;
    try {
      s.controller.close();
    } catch {
      /* the caller went away */
    }
    s.dial.handed(got.fd);
  }

  /** The connection ended: every session still open ends with a failed frame. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const s of this.sessions.values()) fail(s, "the sandbox's exec agent went away (the sandbox stopped?)");
    this.sessions.clear();
    this.sock.destroy();
  }
}

/** Connected agents by sandbox (store row id). */
export class ExecAgents {
  private readonly links = new Map<number, AgentLink>();
  /** Each sandbox's dial.sock connection (the newest), where its agent hands over dialed connections. */
  private readonly channels = new Map<number, DialChannel>();

  /** The dial.sock connection of a sandbox now (execAgentGuard sets it). */
  channel(sandboxId: number): DialChannel | null {
    return this.channels.get(sandboxId) ?? null;
  }

  setChannel(sandboxId: number, ch: DialChannel | null): void {
    if (ch) this.channels.set(sandboxId, ch);
    else this.channels.delete(sandboxId);
  }
  private readonly since = new Map<number, number>();
  private readonly waiters = new Map<number, Set<() => void>>();

  /** The connected agent of a sandbox, if any. */
  get(sandboxId: number): AgentLink | undefined {
    const l = this.links.get(sandboxId);
    return l?.isOpen ? l : undefined;
  }

  /**
   * The agent of a sandbox; when none is connected yet and the sandbox's guard started within the last few seconds
   * (its container is still starting), waits up to `ms` for one.
   */
  async wait(sandboxId: number, ms: number): Promise<AgentLink | undefined> {
    const now = this.get(sandboxId);
    if (now) return now;
    const since = this.since.get(sandboxId);
    if (since === undefined || Date.now() - since > FRESH_MS) return undefined;
    return this.waitFor(sandboxId, ms);
  }

  /**
   * The agent of a sandbox, waiting up to `ms` for one to connect whatever its guard's age (ref sync's first syncs, begun
   * while the container starts), or until `signal` aborts.
   */
  async waitFor(sandboxId: number, ms: number, signal?: AbortSignal): Promise<AgentLink | undefined> {
    const now = this.get(sandboxId);
    if (now || ms <= 0 || signal?.aborted) return now;
    await new Promise<void>((resolve) => {
      const set = this.waiters.get(sandboxId) ?? new Set();
      this.waiters.set(sandboxId, set);
      const done = () => {
        clearTimeout(t);
        set.delete(done);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const t = setTimeout(done, ms);
      set.add(done);
      signal?.addEventListener("abort", done);
    });
    return this.get(sandboxId);
  }

  /** A guard started listening for this sandbox. */
  listening(sandboxId: number): void {
    this.since.set(sandboxId, Date.now());
  }

  attach(sandboxId: number, link: AgentLink): void {
    trace("d exec agent attached");
    const old = this.links.get(sandboxId);
    this.links.set(sandboxId, link);
    if (old && old !== link) old.close();
    for (const w of [...(this.waiters.get(sandboxId) ?? [])]) w();
  }

  detach(sandboxId: number, link?: AgentLink): void {
    const cur = this.links.get(sandboxId);
    if (link && cur !== link) return;
    this.links.delete(sandboxId);
    if (!link) this.since.delete(sandboxId);
    cur?.close();
  }

  get size(): number {
    return this.links.size;
  }

  /**
   * Runs a command through the sandbox's agent with its stdout as bytes (the daemon's own work: ref sync's git as the
   * sandbox, whose packs are binary), or null when none is connected (the caller then uses the engine). stdin is given
   * whole. A command still running after `timeoutMs` is stopped (the stream is cancelled: SIGTERM, then SIGKILL) and
   * ends with exit code 124.
   */
  stream(sandboxId: number, start: StartPayload, stdin: string | undefined, timeoutMs: number): StreamedRun | null {
    const link = this.get(sandboxId);
    if (!link) return null;
    const frames = link.run({ ...start, stdin: stdin !== undefined }, stdin !== undefined ? new TextEncoder().encode(stdin) : undefined, { own: true });
    let err = "";
    const td = new TextDecoder();
    let resolveDone: (v: { exitCode: number; stderr: string }) => void = () => {};
    const done = new Promise<{ exitCode: number; stderr: string }>((r) => (resolveDone = r));
    const stdout = new ReadableStream<Uint8Array>({
      start(c) {
        void readExecStream(frames, { stdout: (b) => c.enqueue(b), stderr: (b) => void (err += td.decode(b, { stream: true })) }, AbortSignal.timeout(timeoutMs)).then((end) => {
          try {
            c.close();
          } catch {
            /* the reader went away */
          }
          if ("code" in end) resolveDone({ exitCode: end.code, stderr: err });
          else resolveDone({ exitCode: end.cancelled ? 124 : 255, stderr: `${err}${end.cancelled ? `timed out after ${timeoutMs} ms` : end.failed}\n` });
        });
      },
    });
    return { stdout, done };
  }
}

/**
 * Serves the agent socket (`<socket dir>/agent.sock`, /run/sbx/agent.sock inside). A connection counts
 * once it said hello with a known protocol version; a newer connection replaces the older one. Always healthy: the
 * agent is a fast path, its absence costs speed, never safety. A kind without an exec agent (DriverCaps.execAgent) gets a no-op.
 */
export function execAgentGuard(agents: ExecAgents): SandboxGuard {
  return {
    name: "exec-agent",
    async start(ctx): Promise<GuardHandle> {
      if (!ctx.driver.caps.execAgent) return { health: () => ({ ok: true, detail: "not used" }), stop: async () => {} };
      const path = join(ctx.sockets.dir, AGENT_SOCKET);
      rmSync(path, { force: true });
      const sandboxId = ctx.sandbox.id;
      const socks = new Set<Socket>();
      // Connections that have not said hello yet, oldest first: a sandbox may open AGENT_MAX_CONNECTIONS in all; past
      // that the oldest of these makes room (so its own agent always gets in), or the new one is closed.
      const waiting = new Set<Socket>();
      const server: Server = createServer((sock) => {
        if (socks.size >= AGENT_MAX_CONNECTIONS) {
          const oldest = waiting.values().next().value as Socket | undefined;
          if (oldest === undefined) return void sock.destroy();
          oldest.destroy();
          waiting.delete(oldest);
          socks.delete(oldest);
        }
        socks.add(sock);
        waiting.add(sock);
        const decoder = new FrameDecoder();
        let link: AgentLink | null = null;
        let before = 0;
        const helloTimer = setTimeout(() => {
          if (!link) sock.destroy();
        }, AGENT_HELLO_MS);
        sock.on("data", (chunk: Buffer) => {
          // Before its hello a connection may send only a hello's worth: a frame claimed longer is not waited for.
          if (!link && (before += chunk.length) > AGENT_HELLO_MAX) {
            ctx.log.warn("exec agent connection sent more than a hello before saying one: dropped");
            sock.destroy();
            return;
          }
          let frames: Frame[];
          try {
            frames = decoder.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          } catch {
            ctx.log.warn("exec agent sent an oversized frame: connection dropped");
            sock.destroy();
            return;
          }
          for (const f of frames) {
            if (link) link.onFrame(f);
            else if (f.type === FrameType.hello && (parseJson(f.payload) as { v?: unknown } | undefined)?.v === AGENT_PROTOCOL) {
              link = new AgentLink(sock, () => agents.channel(sandboxId));
              waiting.delete(sock);
              clearTimeout(helloTimer);
              agents.attach(sandboxId, link);
            }
          }
        });
        sock.on("error", () => {
          /* close follows */
        });
        sock.on("close", () => {
          clearTimeout(helloTimer);
          waiting.delete(sock);
          socks.delete(sock);
          if (link) {
            link.close();
            agents.detach(sandboxId, link);
          }
        });
      });
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(path, () => {
          server.off("error", reject);
          resolve();
        });
      });
      const dial = serveDialChannel(join(ctx.sockets.dir, DIAL_SOCKET), sandboxId, agents);
      agents.listening(sandboxId);
      return {
        health: () => ({
          ok: true,
          detail: agents.get(sandboxId) ? `agent connected${agents.channel(sandboxId) ? "; forwarded ports handed over (dial.sock)" : "; forwarded ports as frames"}` : `listening on ${path} (no agent: engine exec)`,
        }),
        async stop() {
          dial?.close();
          agents.detach(sandboxId);
          for (const s of socks) s.destroy();
          await new Promise<void>((resolve) => server.close(() => resolve()));
          rmSync(path, { force: true });
        },
      };
    },
  };
}

/** Connections a sandbox may hold open on its dial.sock at once; a newer one replaces the oldest. */
const DIAL_CHANNELS = 2;

/**
 * Serves a sandbox's dial.sock (/run/sbx/dial.sock inside), where its agent hands over the connections `sbx port` asks
 * it to dial. The socket is the sandbox's own (per-sandbox path, 0600), so whatever arrives on it speaks for that
 * sandbox only; nothing is read from it but with recvmsg, one descriptor per `dialed` frame (AgentLink.takeDialed).
 * Null where descriptors cannot be passed here (then the agent cannot connect and carries dials as frames).
 */
function serveDialChannel(path: string, sandboxId: number, agents: ExecAgents): { close(): void } | null {
  const lib = fdPassing();
  if (!lib) return null;
  rmSync(path, { force: true });
  const conns: BunSocket<undefined>[] = [];
  const old = process.umask(0o177); // the socket is 0600 from the start
  let server;
  try {
    server = Bun.listen<undefined>({
      unix: path,
      socket: {
        open(sock) {
          // Bun must never read this socket: a read without room for ancillary data would drop the descriptors.
          sock.pause();
          conns.push(sock);
          if (conns.length > DIAL_CHANNELS) conns.shift()!.terminate();
          agents.setChannel(sandboxId, { lib, fd: (sock as unknown as { fd: number }).fd });
        },
        data() {},
        close(sock) {
          const i = conns.indexOf(sock);
          if (i >= 0) conns.splice(i, 1);
          const last = conns.at(-1);
          agents.setChannel(sandboxId, last ? { lib, fd: (last as unknown as { fd: number }).fd } : null);
        },
        error() {},
      },
    });
  } finally {
    process.umask(old);
  }
  const srv = server;
  return {
    close() {
      for (const c of conns.splice(0)) c.terminate();
      agents.setChannel(sandboxId, null);
      srv.stop(true);
      rmSync(path, { force: true });
    },
  };
}
