// Interactive sessions: a PTY sbx owns per shell (never the user's terminal: invariant 11), shared by any number of attached clients.
import { randomBytes } from "node:crypto";
import { SbxError } from "../core/errors";
import type { Store } from "../store/store";
import type { Exec, TerminalProcess } from "../sys/exec";
import type { SandboxService } from "../sandboxes/service";
import type { GuardHost } from "./guard-host";
import type { LimitWatch } from "./limit-watch";
import type { Logger } from "../sys/log";
import { SessionCreateSchema, type ServerFrame, type SessionCreate, type SessionView } from "./protocol";

/** What the session manager needs from an attached client (a WebSocket in the daemon, a fake in tests). */
export interface SessionClient {
  sendData(data: Uint8Array): void;
  sendFrame(frame: ServerFrame): void;
  close(): void;
}

/** Output kept so a client that attaches late (or joins) sees the recent screen. */
const REPLAY_BYTES = 64 * 1024;
/** How long an ended session stays listed so its creator can still read the exit code. */
const KEEP_EXITED_MS = 60_000;
/** Output can trail the exit by a moment: wait this long before telling clients it ended. */
const EXIT_SETTLE_MS = 50;

class Session {
  readonly clients = new Set<SessionClient>();
  private replay: Uint8Array[] = [];
  private replayBytes = 0;
  exitCode: number | null = null;
  /** sbx ended it (stop, rm, guards down) and its process is on its way out. */
  ending = false;
  proc!: TerminalProcess;

  constructor(
    readonly id: string,
    readonly sandboxId: number,
    readonly sandbox: string,
    readonly repo: string,
    readonly argv: string[],
    readonly command: string[],
    public cols: number,
    public rows: number,
    readonly startedAt: number,
  ) {}

  output(data: Uint8Array): void {
    const copy = new Uint8Array(data);
    this.replay.push(copy);
    this.replayBytes += copy.byteLength;
    while (this.replayBytes > REPLAY_BYTES && this.replay.length > 1) this.replayBytes -= this.replay.shift()!.byteLength;
    for (const c of this.clients) c.sendData(copy);
  }

  replayed(): Uint8Array {
    return Buffer.concat(this.replay);
  }

  view(): SessionView {
    return {
      id: this.id,
      sandbox: this.sandbox,
      repo: this.repo,
      argv: this.argv,
      command: this.command,
      pid: this.proc.pid,
      clients: this.clients.size,
      startedAt: this.startedAt,
      cols: this.cols,
      rows: this.rows,
      exitCode: this.exitCode,
    };
  }
}

export interface SessionManagerDeps {
  /**
   * Which sandbox a session's name means, the argv of its shell, and (for kinds whose session process outlives its
   * client) how its sessions are hung up from inside (the sandbox service).
   */
  sandboxes: Pick<SandboxService, "resolve" | "terminalArgv"> & Partial<Pick<SandboxService, "hangUpSessions">>;
  /** Whether its guards are all up (a fenced sandbox runs nothing). */
  guards: Pick<GuardHost, "requireGuarded">;
  exec: Exec;
  store: Store;
  log: Logger;
  now?: () => number;
  /** Notices limits a sandbox runs into: a session that ran into one says so on its terminal as it ends. */
  limits?: Pick<LimitWatch, "span" | "notes">;
}

export class SessionManager {
  private readonly sessions = new Map<string, Session>();
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();
  /** Sandboxes whose sessions left by an earlier daemon were hung up (once each, at their first session here). */
  private readonly swept = new Set<number>();

  constructor(private readonly deps: SessionManagerDeps) {}

  /** Starts a shell or command in a sandbox under a new PTY. Refused unless the sandbox's guards are all up. */
  async create(input: SessionCreate): Promise<SessionView> {
    const req = SessionCreateSchema.parse(input);
    const sb = await this.deps.sandboxes.resolve(req.name, { ...(req.repo ? { repo: req.repo } : {}) });
    this.deps.guards.requireGuarded(sb);
    const id = `${sb.name.slice(0, 40)}-${randomBytes(3).toString("hex")}`;
    const argv = await this.deps.sandboxes.terminalArgv(sb, { argv: req.argv, cwd: req.cwd, env: req.env, session: id });
    const s = new Session(id, sb.id, sb.name, sb.repo, req.argv, req.command ?? req.argv, req.cols, req.rows, (this.deps.now ?? Date.now)());
    s.proc = this.deps.exec.terminal(argv, { cols: req.cols, rows: req.rows, onData: (d) => s.output(d) });
    this.sessions.set(id, s);
    if (!this.swept.has(sb.id)) {
      // Sessions an earlier daemon ran here (it stopped, or died) can never be joined again, yet their processes may
      // still run inside (a resumed agent would then run twice): hung up now, beside this one's start, never before it.
      this.swept.add(sb.id);
      const mine = [...this.sessions.values()].filter((x) => x.sandboxId === sb.id).map((x) => x.id);
      void this.deps.sandboxes.hangUpSessions?.(sb, { except: mine }).catch((e) => this.deps.log.warn("hanging up earlier sessions failed", { sandbox: sb.name, error: String(e) }));
    }
    this.audit(s, "session.start", { argv: req.argv, pid: s.proc.pid });
    this.deps.log.info("session started", { session: id, sandbox: sb.name, pid: s.proc.pid });
    const watch = this.deps.limits;
    const span = watch?.span(sb).catch(() => null); // the counters as the session starts
    void s.proc.exited.then((code) => {
      const t = setTimeout(async () => {
        this.timers.delete(t);
        const ended = await span;
        const note = watch && ended ? watch.notes(sb, await ended().catch(() => [])) : "";
        if (note !== "") s.output(new TextEncoder().encode(`\r\n${note.replace(/\n/g, "\r\n")}`));
        s.exitCode = code;
        this.audit(s, "session.exit", { code });
        this.deps.log.info("session ended", { session: id, code });
        for (const c of s.clients) {
          c.sendFrame({ type: "exit", code });
          c.close();
        }
        s.clients.clear();
        const gc = setTimeout(() => {
          this.timers.delete(gc);
          this.sessions.delete(id);
        }, KEEP_EXITED_MS);
        this.timers.add(gc);
      }, EXIT_SETTLE_MS);
      this.timers.add(t);
    });
    return s.view();
  }

  private audit(s: Session, action: string, detail: Record<string, unknown>): void {
    try {
      this.deps.store.audit({ sandboxId: s.sandboxId, kind: "session", action, detail: { session: s.id, ...detail } });
    } catch (e) {
      this.deps.log.error("audit write failed", { err: e });
    }
  }

  list(): SessionView[] {
    return [...this.sessions.values()].map((s) => s.view());
  }

  get size(): number {
    return [...this.sessions.values()].filter((s) => s.exitCode === null).length;
  }

  private get(id: string): Session {
    const s = this.sessions.get(id);
    if (!s) {
      throw new SbxError("not_found", `no session '${id}'`, { hint: "Run `sbx ps` to list the sessions." });
    }
    return s;
  }

  /** Checks a session exists before a WebSocket upgrade, so a bad id gets a JSON error, not a dead socket. */
  check(id: string): SessionView {
    return this.get(id).view();
  }

  /** Joins a client (read-write): it gets the recent output first, then everything live; an ended session sends its exit code. */
  attach(id: string, client: SessionClient): void {
    const s = this.get(id);
    const replay = s.replayed();
    if (s.exitCode !== null) {
      if (replay.byteLength) client.sendData(replay);
      client.sendFrame({ type: "exit", code: s.exitCode });
      client.close();
      return;
    }
    // Fenced since it started (guards died)? Then the client gets an error, not a shell.
    const sb = this.deps.store.getSandbox(s.sandboxId);
    if (!sb) throw new SbxError("not_found", `the sandbox of session '${id}' is gone`, { hint: "Run `sbx ps`." });
    this.deps.guards.requireGuarded(sb);
    s.clients.add(client);
    client.sendFrame({ type: "attached", session: s.id, clients: s.clients.size });
    if (replay.byteLength) client.sendData(replay);
  }

  input(id: string, data: Uint8Array | string): void {
    const s = this.sessions.get(id);
    if (!s || s.exitCode !== null) return;
    s.proc.write(data);
  }

  resize(id: string, cols: number, rows: number): void {
    const s = this.sessions.get(id);
    if (!s || s.exitCode !== null) return;
    s.cols = cols;
    s.rows = rows;
    s.proc.resize(cols, rows);
  }

  detach(id: string, client: SessionClient): void {
    this.sessions.get(id)?.clients.delete(client);
  }

  /**
   * Ends every session's process (SIGHUP, as a closing terminal would) and tells clients: the client process under
   * the PTY, and where that is not enough (a `docker exec`, whose process inside the engine keeps), the process inside.
   */
  async closeAll(): Promise<void> {
    const live = [...this.sessions.values()].filter((s) => s.exitCode === null);
    const inside = this.hangUp(live);
    for (const s of live) {
      try {
        s.proc.kill("SIGHUP");
      } catch {
        /* already gone */
      }
    }
    await Promise.race([Promise.all([...live.map((s) => s.proc.exited), inside]), Bun.sleep(3000)]);
    for (const s of live) for (const c of s.clients) c.close();
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  /** How many sessions of one sandbox still run. */
  liveFor(sandboxId: number): number {
    return [...this.sessions.values()].filter((s) => s.sandboxId === sandboxId && s.exitCode === null && !s.ending).length;
  }

  /**
   * Ends the sessions of one sandbox (it is being stopped or removed, or its guards went down: nothing may keep
   * running there through sbx). Each terminal is told why first. How many were ended.
   */
  endFor(sandboxId: number, why?: string): number {
    const ended: Session[] = [];
    for (const s of this.sessions.values()) {
      if (s.sandboxId !== sandboxId || s.exitCode !== null || s.ending) continue;
      s.ending = true;
      if (why) s.output(new TextEncoder().encode(`\r\nsbx: ${why}; this session ends.\r\n`));
      s.proc.kill("SIGHUP");
      ended.push(s);
    }
    void this.hangUp(ended);
    return ended.length;
  }

  /** Hangs up the processes of `sessions` inside their sandboxes (Driver.hangUpSessions), each sandbox once; never throws. */
  private async hangUp(sessions: readonly Session[]): Promise<void> {
    const bySandbox = new Map<number, string[]>();
    for (const s of sessions) bySandbox.set(s.sandboxId, [...(bySandbox.get(s.sandboxId) ?? []), s.id]);
    await Promise.all(
      [...bySandbox].map(async ([sandboxId, ids]) => {
        try {
          const row = this.deps.store.getSandbox(sandboxId);
          if (row) await this.deps.sandboxes.hangUpSessions?.(row, { only: ids });
        } catch (e) {
          this.deps.log.warn("hanging up sessions failed", { sandbox: sandboxId, error: String(e) });
        }
      }),
    );
  }
}
