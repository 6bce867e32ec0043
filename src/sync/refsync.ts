// Live ref sync for one sandbox: watches the host repo and the clone, and fetches each way only when refs changed.
import { watch, type FSWatcher } from "node:fs";
import { join } from "node:path";
import { SbxError } from "../core/errors";
import type { Exec, ExecResult } from "../sys/exec";
import { checkAlternates, cloneGitDir, readCloneBranches, snapshotKey } from "./clone-files";
import { cloneToHostFetchArgv, hostGitEnv, hostRefsArgv, parseHostRefs, validateRemoteName } from "./git-argv";

export type Direction = "clone-to-host" | "host-to-clone";

/** One audit record; the daemon maps it onto `ctx.audit(action, detail)`. */
export interface RefSyncEvent {
  action:
    | "ref-sync.start"
    | "ref-sync.stop"
    | "ref-sync.synced"
    | "ref-sync.error"
    | "ref-sync.refused"
    | "ref-sync.recovered"
    | "ref-sync.skipped-refs"
    | "ref-sync.watch-error";
  detail: Record<string, unknown>;
}

export interface RefSyncOptions {
  /** Real path of the host repo (the working tree; `.git` is a directory in it). */
  hostRepo: string;
  /** The shared clone on the host (sandbox-writable: read only as files here). */
  clonePath: string;
  /** `sandbox-<name>`: the host sees the clone's branches as `refs/remotes/<remoteName>/*`. */
  remoteName: string;
  /** Exactly what sbx wrote into `<clone>/.git/objects/info/alternates`. */
  expectedAlternates: string;
  /** host → clone: runs `git fetch` INSIDE the sandbox (e.g. `docker exec <ctr> git -C <path> fetch --prune host`). */
  insideFetch: () => Promise<ExecResult>;
  exec: Exec;
  audit: (event: RefSyncEvent) => void;
  /** Quiet time after the last file event before a sync (default 100 ms). */
  debounceMs?: number;
  /** A burst of events never delays a sync longer than this (default 500 ms). */
  maxWaitMs?: number;
  /** Backstop poll for events the watchers missed (default 5000 ms; 0 disables). */
  pollMs?: number;
  /** Use fs.watch (default true). False for filesystems with no change events (network mounts): the poll alone syncs. */
  watch?: boolean;
  /**
   * "wait" (default): startRefSync resolves after the first sync each way. "background": it resolves once watching,
   * with the alternates checked (a rewritten file refuses at once, in health) and the first sync still running; its
   * outcome shows in health and audit, and stop() waits for it. The daemon's guard uses it so a start does not wait
   * on two git processes whose result the sandbox does not need to run.
   */
  initialSync?: "wait" | "background";
  /** PATH for host git (default DEFAULT_GIT_PATH). */
  gitPath?: string;
  /** Per-command timeout (default 60 s). */
  timeoutMs?: number;
}

export type RefSyncState = "starting" | "ok" | "degraded" | "refused" | "stopped";

export interface RefSyncHealth {
  ok: boolean;
  state: RefSyncState;
  /** One line for `sbx status`. */
  detail: string;
  /** Why sync is refused (alternates rewritten, …). */
  reason?: string;
  lastError?: { direction: Direction | "watch"; message: string; at: string };
  lastSync: Partial<Record<Direction, string>>;
  syncs: Record<Direction, number>;
  /** Watchers currently open (4 when healthy: host .git and refs, clone .git and refs, plus the clone's objects/info). */
  watchers: number;
}

export interface SyncResult {
  direction: Direction;
  /** False when refs were unchanged (no fetch ran), or when sync is refused / failed. */
  fetched: boolean;
  error?: string;
}

export interface RefSync {
  /** Stops watchers and timers and waits for a sync in flight. Idempotent. */
  stop(): Promise<void>;
  /** Syncs both ways now, fetching even if no ref looks changed. */
  syncNow(): Promise<SyncResult[]>;
  health(): RefSyncHealth;
}

/** Names of `.git` entries whose change can mean a ref changed (the top-level watch is not recursive). */
const RELEVANT_TOP = new Set(["HEAD", "packed-refs", "refs", "objects", "reftable"]);

function relevantTop(filename: string | null | Buffer): boolean {
  if (filename === null) return true;
  const f = String(filename);
  return RELEVANT_TOP.has(f) || f === "packed-refs.lock" || f === "HEAD.lock";
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** One direction's scheduler: debounced triggers, one run at a time, and a re-run when something changed meanwhile. */
class Lane {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private firstEventAt = 0;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(
    private readonly work: () => Promise<void>,
    private readonly debounceMs: number,
    private readonly maxWaitMs: number,
  ) {}

  /** A file event: (re)arm the debounce timer, never later than maxWait after the first event of a burst. */
  poke(): void {
    if (this.stopped) return;
    const now = Date.now();
    if (this.timer === null) this.firstEventAt = now;
    else clearTimeout(this.timer);
    const delay = Math.max(0, Math.min(this.debounceMs, this.firstEventAt + this.maxWaitMs - now));
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.runNow();
    }, delay);
  }

  /** Runs the work now, or once more right after the run in flight. Resolves when a run that saw this call ended. */
  async runNow(): Promise<void> {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      await this.running;
      // The run we waited for may itself have started the re-run; wait for that one too.
      if (this.running) await this.running;
      return;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          await this.work();
        } while (this.again && !this.stopped);
      } finally {
        this.running = null;
      }
    })();
    await this.running;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.running) await this.running;
  }
}

/**
 * Starts syncing one sandbox's clone with the host repo. Validates inputs, takes one sync each way, then watches.
 * runs (host repo only): git for-each-ref (host snapshot); git fetch … <clone> +refs/heads/*:refs/remotes/sandbox-<name>/*
 * (see cloneToHostFetchArgv). Never runs git in the clone; host → clone is the caller's `insideFetch`.
 */
export async function startRefSync(opts: RefSyncOptions): Promise<RefSync> {
  const remote = validateRemoteName(opts.remoteName);
  const debounceMs = opts.debounceMs ?? 100;
  const maxWaitMs = opts.maxWaitMs ?? 500;
  const pollMs = opts.pollMs ?? 5000;
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const env = hostGitEnv(opts.gitPath);
  const hostGit = join(opts.hostRepo, ".git");
  const cloneGit = cloneGitDir(opts.clonePath);
  if ("problem" in cloneGit) {
    throw new SbxError("not_found", `ref sync for ${remote}: the clone's ${cloneGit.problem}`, {
      hint: "The sandbox's clone is missing or was tampered with; `sbx rm` it (its host refs stay) and create it again.",
    });
  }

  const h: RefSyncHealth = {
    ok: false,
    state: "starting",
    detail: "starting",
    lastSync: {},
    syncs: { "clone-to-host": 0, "host-to-clone": 0 },
    watchers: 0,
  };
  let refusedReason: string | null = null;
  let lastCloneKey: string | null = null;
  let lastHostKey: string | null = null;
  let lastSkippedKey = "";
  let stopped = false;
  const errors: Partial<Record<Direction | "watch", string>> = {};

  const refresh = () => {
    if (stopped) {
      Object.assign(h, { ok: false, state: "stopped", detail: "stopped" });
      return;
    }
    if (refusedReason !== null) {
      Object.assign(h, { ok: false, state: "refused", reason: refusedReason, detail: `sync refused: ${refusedReason}` });
      return;
    }
    delete h.reason;
    const errs = Object.entries(errors).filter(([, m]) => m !== undefined);
    if (errs.length > 0) {
      Object.assign(h, { ok: false, state: "degraded", detail: errs.map(([d, m]) => `${d}: ${m}`).join("; ") });
      return;
    }
    const at = [h.lastSync["clone-to-host"], h.lastSync["host-to-clone"]].filter(Boolean).sort().pop();
    Object.assign(h, { ok: true, state: "ok", detail: `${remote} in sync${at ? ` (last fetch ${at})` : ""}` });
  };

  const fail = (direction: Direction | "watch", e: unknown) => {
    const msg = message(e);
    const repeated = errors[direction] === msg;
    errors[direction] = msg;
    h.lastError = { direction, message: msg, at: new Date().toISOString() };
    // The same failure again (each poll retries it) is audited once, not every few seconds.
    if (!repeated) {
      opts.audit({ action: direction === "watch" ? "ref-sync.watch-error" : "ref-sync.error", detail: { remote, direction, error: msg } });
    }
    refresh();
  };

  const succeed = (direction: Direction, detail: Record<string, unknown>) => {
    delete errors[direction];
    h.syncs[direction]++;
    h.lastSync[direction] = new Date().toISOString();
    opts.audit({ action: "ref-sync.synced", detail: { remote, direction, ...detail } });
    refresh();
  };

  /** Re-checks the alternates; refuses (once per distinct reason) or recovers. Returns whether sync may run. */
  const gate = (): boolean => {
    const c = checkAlternates(opts.clonePath, opts.expectedAlternates);
    if (!c.ok) {
      if (refusedReason !== c.reason) {
        refusedReason = c.reason;
        opts.audit({ action: "ref-sync.refused", detail: { remote, reason: c.reason } });
      }
      refresh();
      return false;
    }
    if (refusedReason !== null) {
      opts.audit({ action: "ref-sync.recovered", detail: { remote, was: refusedReason } });
      refusedReason = null;
      // Whatever happened meanwhile, fetch again rather than trust old snapshots.
      lastCloneKey = null;
      lastHostKey = null;
      refresh();
    }
    return true;
  };

  const cloneToHost = async (force: boolean): Promise<SyncResult> => {
    const direction: Direction = "clone-to-host";
    if (!gate()) return { direction, fetched: false, error: refusedReason ?? "refused" };
    try {
      const snap = readCloneBranches(opts.clonePath);
      const skippedKey = snap.skipped.join("\n");
      if (skippedKey !== lastSkippedKey) {
        lastSkippedKey = skippedKey;
        if (snap.skipped.length > 0) opts.audit({ action: "ref-sync.skipped-refs", detail: { remote, skipped: snap.skipped.slice(0, 20) } });
      }
      // Unreadable as files (reftable, a missing refs dir): fetch every time rather than miss a change.
      const key = snap.unreadable === undefined ? snapshotKey(snap.refs) : null;
      if (!force && key !== null && key === lastCloneKey && errors[direction] === undefined) return { direction, fetched: false };
      const t = performance.now();
      const r = await opts.exec.run(cloneToHostFetchArgv({ hostRepo: opts.hostRepo, clonePath: opts.clonePath, remote }), {
        env,
        replaceEnv: true,
        check: false,
        timeoutMs,
      });
      if (r.exitCode !== 0) throw new Error(`git fetch from the clone exited ${r.exitCode}: ${r.stderr.trim().split("\n").slice(-3).join(" | ")}`);
      lastCloneKey = key;
      succeed(direction, { refs: snap.refs.size, ms: Math.round(performance.now() - t), ...(snap.unreadable ? { unreadable: snap.unreadable } : {}) });
      return { direction, fetched: true };
    } catch (e) {
      fail(direction, e);
      return { direction, fetched: false, error: message(e) };
    }
  };

  const hostToClone = async (force: boolean): Promise<SyncResult> => {
    const direction: Direction = "host-to-clone";
    if (!gate()) return { direction, fetched: false, error: refusedReason ?? "refused" };
    try {
      const r = await opts.exec.run(hostRefsArgv(opts.hostRepo), { env, replaceEnv: true, check: false, timeoutMs });
      if (r.exitCode !== 0) throw new Error(`git for-each-ref in the host repo exited ${r.exitCode}: ${r.stderr.trim()}`);
      const key = snapshotKey(parseHostRefs(r.stdout));
      if (!force && key === lastHostKey && errors[direction] === undefined) return { direction, fetched: false };
      const t = performance.now();
      const f = await opts.insideFetch();
      if (f.exitCode !== 0) {
        throw new Error(`fetch inside the sandbox (${f.argv.join(" ")}) exited ${f.exitCode}: ${f.stderr.trim().split("\n").slice(-3).join(" | ")}`);
      }
      lastHostKey = key;
      succeed(direction, { ms: Math.round(performance.now() - t) });
      return { direction, fetched: true };
    } catch (e) {
      fail(direction, e);
      return { direction, fetched: false, error: message(e) };
    }
  };

  let forceNext = { c: false, h: false };
  // Results of forced runs only: a watcher-triggered run finishing later must not overwrite what syncNow reports.
  const forced: Partial<Record<Direction, SyncResult>> = {};
  const cloneLane = new Lane(async () => {
    const force = forceNext.c;
    forceNext.c = false;
    const r = await cloneToHost(force);
    if (force) forced["clone-to-host"] = r;
  }, debounceMs, maxWaitMs);
  const hostLane = new Lane(async () => {
    const force = forceNext.h;
    forceNext.h = false;
    const r = await hostToClone(force);
    if (force) forced["host-to-clone"] = r;
  }, debounceMs, maxWaitMs);

  // ---- watchers -------------------------------------------------------------------------------------------------
  type Slot = { path: string; recursive: boolean; lane: Lane; filter: (f: string | null | Buffer) => boolean; w: FSWatcher | null };
  const slots: Slot[] = [
    { path: hostGit, recursive: false, lane: hostLane, filter: relevantTop, w: null },
    { path: join(hostGit, "refs"), recursive: true, lane: hostLane, filter: () => true, w: null },
    { path: cloneGit.dir, recursive: false, lane: cloneLane, filter: relevantTop, w: null },
    { path: join(cloneGit.dir, "refs"), recursive: true, lane: cloneLane, filter: () => true, w: null },
    // A rewritten alternates file shows up in health at once, not only at the next ref change.
    { path: join(cloneGit.dir, "objects", "info"), recursive: false, lane: cloneLane, filter: () => true, w: null },
  ];
  const countWatchers = () => {
    h.watchers = slots.filter((s) => s.w !== null).length;
  };
  /** Opens the watchers that are not open (at start, and from the poll after one died: a dir removed and re-made). */
  const arm = () => {
    if (opts.watch === false) return refresh();
    for (const s of slots) {
      if (s.w !== null || stopped) continue;
      try {
        const w = watch(s.path, { recursive: s.recursive }, (_ev, f) => {
          if (s.filter(f)) s.lane.poke();
        });
        w.on("error", (e) => {
          try {
            w.close();
          } catch {
            /* already closed: nothing else to release */
          }
          if (s.w === w) s.w = null;
          countWatchers();
          fail("watch", new Error(`watching ${s.path} failed: ${message(e)}; the ${pollMs} ms poll covers it until it is re-armed`));
        });
        s.w = w;
      } catch (e) {
        // Typically ENOENT for a refs dir removed by the sandbox; recorded, and retried at each poll.
        fail("watch", new Error(`cannot watch ${s.path}: ${message(e)}; the ${pollMs} ms poll covers it until it is re-armed`));
      }
    }
    if (slots.every((s) => s.w !== null)) delete errors.watch;
    countWatchers();
    refresh();
  };

  opts.audit({ action: "ref-sync.start", detail: { remote, hostRepo: opts.hostRepo, clonePath: opts.clonePath, debounceMs, pollMs } });
  // Watch first, then sync: a change during the first sync is then seen by a watcher rather than lost.
  arm();
  forceNext = { c: true, h: true };
  if (opts.initialSync === "background") {
    gate();
    void Promise.all([cloneLane.runNow(), hostLane.runNow()]);
  } else await Promise.all([cloneLane.runNow(), hostLane.runNow()]);

  const poll =
    pollMs > 0
      ? setInterval(() => {
          arm();
          cloneLane.poke();
          hostLane.poke();
        }, pollMs)
      : null;

  return {
    async stop() {
      if (stopped) return;
      stopped = true;
      if (poll !== null) clearInterval(poll);
      for (const s of slots) {
        s.w?.close();
        s.w = null;
      }
      countWatchers();
      await Promise.all([cloneLane.stop(), hostLane.stop()]);
      refresh();
      opts.audit({ action: "ref-sync.stop", detail: { remote, syncs: { ...h.syncs } } });
    },
    async syncNow() {
      if (stopped) throw new SbxError("unavailable", `ref sync for ${remote} is stopped`, { hint: "Start the sandbox again." });
      delete forced["clone-to-host"];
      delete forced["host-to-clone"];
      forceNext = { c: true, h: true };
      await Promise.all([cloneLane.runNow(), hostLane.runNow()]);
      return [forced["clone-to-host"], forced["host-to-clone"]].filter((r): r is SyncResult => r !== undefined);
    },
    health() {
      return { ...h, lastSync: { ...h.lastSync }, syncs: { ...h.syncs } };
    },
  };
}
