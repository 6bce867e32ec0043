// Live ref sync for one sandbox: watches the host repo and the clone, and fetches each way only when refs changed.
// The two directions are here; their schedulers are lane.ts, their triggers ref-watchers.ts.
import { join } from "node:path";
import { SbxError } from "../core/errors";
import type { Exec, ExecResult } from "../sys/exec";
import { validateRemoteName } from "./git-argv";
import { exportHostRefs, importSandbox } from "./import";
import type { SandboxGit, SandboxGitMode } from "./sandbox-git";
import { hostRefs, promoteStores } from "./store";
import { isUserRef } from "../core/user-refs";
import { Lane } from "./lane";
import { RefWatchers } from "./ref-watchers";

export type Direction = "clone-to-host" | "host-to-clone";

/** One audit record; the daemon maps it onto `ctx.audit(action, detail)`. */
export interface RefSyncEvent {
  action:
    | "ref-sync.start"
    | "ref-sync.stop"
    | "ref-sync.synced"
    | "ref-sync.error"
    | "ref-sync.refused"
    | "ref-sync.skipped-refs"
    | "ref-sync.watch-error";
  detail: Record<string, unknown>;
}

export interface RefSyncOptions {
  /** Real path of the host repo (the working tree; `.git` is a directory in it). */
  hostRepo: string;
  /** The sandbox's name: the host sees its branches as `refs/remotes/sandbox-<name>/*`. */
  name: string;
  /**
   * git as the sandbox, in its clone: "read" whenever anything can run as it (Docker: also a one-off container while
   * it is stopped), "write" only while it runs. Null: not now (host → clone is then owed until it runs).
   */
  sandboxGit: (mode: SandboxGitMode) => Promise<SandboxGit | null>;
  /** Host-side work before host → clone (macOS: the mirror the guest's clone borrows from). */
  beforeHostRefs?: () => Promise<ExecResult | undefined>;
  /** The clone's `.git` as the host sees it: watched (never read) so a commit inside syncs at once; the poll covers the rest. */
  watchDir?: string;
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
   * with the first sync still running; its outcome shows in health and audit, and stop() waits for it.
   */
  initialSync?: "wait" | "background";
  /** Per-command timeout (default 60 s). */
  timeoutMs?: number;
}

export type RefSyncState = "starting" | "ok" | "degraded" | "stopped";

export interface RefSyncHealth {
  ok: boolean;
  state: RefSyncState;
  /** One line for `sbx status`. */
  detail: string;
  lastError?: { direction: Direction | "watch"; message: string; at: string };
  lastSync: Partial<Record<Direction, string>>;
  syncs: Record<Direction, number>;
  /** Watchers currently open (4 when healthy: the host's .git and refs, the clone's .git and refs/heads). */
  watchers: number;
}

export interface SyncResult {
  direction: Direction;
  /** True when a sync ran to its end and something moved, or it was forced; false when nothing changed or it failed. */
  fetched: boolean;
  error?: string;
}

export interface RefSync {
  /** Stops watchers and timers and waits for a sync in flight. Idempotent. */
  stop(): Promise<void>;
  /** Syncs both ways now, even if no ref looks changed. */
  syncNow(): Promise<SyncResult[]>;
  /** Whether host → clone was skipped because nothing could run as the sandbox (it was stopped); reading clears it. */
  takeOwed(): boolean;
  health(): RefSyncHealth;
}

/** A stable text for a ref snapshot: equal snapshots, equal keys. */
function snapshotKey(refs: ReadonlyMap<string, string>): string {
  return [...refs].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([r, o]) => `${o} ${r}`).join("\n");
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** What `health()` says of one ref sync: the last error of each direction (audited once each), syncs and their times. */
class SyncStatus {
  readonly h: RefSyncHealth = {
    ok: false,
    state: "starting",
    detail: "starting",
    lastSync: {},
    syncs: { "clone-to-host": 0, "host-to-clone": 0 },
    watchers: 0,
  };
  /** Set as stop begins: what a sync in flight reports then leaves the state "stopped". */
  stopped = false;
  private readonly errors: Partial<Record<Direction | "watch", string>> = {};

  constructor(
    private readonly remote: string,
    private readonly audit: (event: RefSyncEvent) => void,
  ) {}

  /** Whether the last try of this direction (or the watchers) failed. */
  failing(d: Direction | "watch"): boolean {
    return this.errors[d] !== undefined;
  }

  /** The watchers are all open again. */
  watching(): void {
    delete this.errors.watch;
  }

  refresh(): void {
    const h = this.h;
    if (this.stopped) {
      Object.assign(h, { ok: false, state: "stopped", detail: "stopped" });
      return;
    }
    const errs = Object.entries(this.errors).filter(([, m]) => m !== undefined);
    if (errs.length > 0) {
      Object.assign(h, { ok: false, state: "degraded", detail: errs.map(([d, m]) => `${d}: ${m}`).join("; ") });
      return;
    }
    const at = [h.lastSync["clone-to-host"], h.lastSync["host-to-clone"]].filter(Boolean).sort().pop();
    Object.assign(h, { ok: true, state: "ok", detail: `${this.remote} in sync${at ? ` (last sync ${at})` : ""}` });
  }

  fail(direction: Direction | "watch", e: unknown): void {
    const msg = message(e);
    const repeated = this.errors[direction] === msg;
    this.errors[direction] = msg;
    this.h.lastError = { direction, message: msg, at: new Date().toISOString() };
    // The same failure again (each poll retries it) is audited once, not every few seconds.
    if (!repeated) {
      this.audit({ action: direction === "watch" ? "ref-sync.watch-error" : "ref-sync.error", detail: { remote: this.remote, direction, error: msg } });
    }
    this.refresh();
  }

  succeed(direction: Direction, detail: Record<string, unknown>): void {
    delete this.errors[direction];
    this.h.syncs[direction]++;
    this.h.lastSync[direction] = new Date().toISOString();
    this.audit({ action: "ref-sync.synced", detail: { remote: this.remote, direction, ...detail } });
    this.refresh();
  }
}

/**
 * Starts syncing one sandbox's clone with the host repo. Takes one sync each way, then watches.
 * clone → host: importSandbox (the sandbox's own git lists and packs; the host verifies into the sandbox's store).
 * host → clone: promotion of what the person's branches now reach, then exportHostRefs as the sandbox.
 * Never runs git in the clone, and never reads a file there.
 */
export async function startRefSync(opts: RefSyncOptions): Promise<RefSync> {
  const remote = validateRemoteName(`sandbox-${opts.name}`);
  const debounceMs = opts.debounceMs ?? 100;
  const maxWaitMs = opts.maxWaitMs ?? 500;
  const pollMs = opts.pollMs ?? 5000;
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const hg = { exec: opts.exec, repo: opts.hostRepo, timeoutMs };
  const st = new SyncStatus(remote, opts.audit);
  let lastHostKey: string | null = null;
  let lastSkippedKey = "";

  const cloneToHost = async (force: boolean): Promise<SyncResult> => {
    const direction: Direction = "clone-to-host";
    try {
      const git = await opts.sandboxGit("read");
      if (!git) return { direction, fetched: false };
      const t = performance.now();
      const r = await importSandbox({ repo: opts.hostRepo, name: opts.name, sandboxGit: git, exec: opts.exec, timeoutMs });
      const skippedKey = r.skipped.join("\n");
      if (skippedKey !== lastSkippedKey) {
        lastSkippedKey = skippedKey;
        if (r.skipped.length > 0) opts.audit({ action: "ref-sync.skipped-refs", detail: { remote, skipped: r.skipped.slice(0, 20) } });
      }
      if (!r.changed && !force && !st.failing(direction)) return { direction, fetched: false };
      st.succeed(direction, { refs: r.refs.size, packBytes: r.packBytes, ms: Math.round(performance.now() - t) });
      return { direction, fetched: r.changed || force };
    } catch (e) {
      st.fail(direction, e);
      return { direction, fetched: false, error: message(e) };
    }
  };

  const hostToClone = async (force: boolean): Promise<SyncResult> => {
    const direction: Direction = "host-to-clone";
    try {
      const refs = await hostRefs(hg);
      const mine = new Map([...refs].filter(([r]) => isUserRef(r)));
      const key = snapshotKey(mine);
      if (!force && key === lastHostKey && !st.failing(direction)) return { direction, fetched: false };
      const t = performance.now();
      // What the person's branches now reach of any sandbox's store becomes the host's own, before a sandbox is told.
      const promoted = await promoteStores(hg);
      const before = await opts.beforeHostRefs?.();
      if (before && before.exitCode !== 0) throw new Error(`${before.argv.join(" ")} exited ${before.exitCode}: ${before.stderr.trim().split("\n").slice(-3).join(" | ")}`);
      const git = await opts.sandboxGit("write");
      if (!git) {
        owedHost = true;
        return { direction, fetched: false };
      }
      const n = await exportHostRefs(git, opts.name, mine);
      lastHostKey = key;
      st.succeed(direction, { refs: n, ...(promoted > 0 ? { promoted } : {}), ms: Math.round(performance.now() - t) });
      // The sandbox answers again: the other way, failing until now, is tried at once rather than at its next change.
      if (st.failing("clone-to-host")) cloneLane.poke();
      return { direction, fetched: true };
    } catch (e) {
      st.fail(direction, e);
      return { direction, fetched: false, error: message(e) };
    }
  };
  let owedHost = false;

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

  const watchers = new RefWatchers(join(opts.hostRepo, ".git"), opts.watchDir, { host: hostLane, clone: cloneLane }, pollMs, {
    count: (n) => (st.h.watchers = n),
    fail: (e) => st.fail("watch", e),
  });
  /** Opens the watchers that are not open (at start, and from the poll after one died: a dir removed and re-made). */
  const arm = () => {
    if (opts.watch === false) return st.refresh();
    if (!st.stopped) watchers.openMissing();
    if (watchers.allOpen) st.watching();
    st.h.watchers = watchers.open;
    st.refresh();
  };

  opts.audit({ action: "ref-sync.start", detail: { remote, hostRepo: opts.hostRepo, debounceMs, pollMs } });
  // Watch first, then sync: a change during the first sync is then seen by a watcher rather than lost.
  arm();
  forceNext = { c: true, h: true };
  if (opts.initialSync === "background") {
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
      if (st.stopped) return;
      st.stopped = true;
      if (poll !== null) clearInterval(poll);
      watchers.close();
      st.h.watchers = watchers.open;
      await Promise.all([cloneLane.stop(), hostLane.stop()]);
      st.refresh();
      opts.audit({ action: "ref-sync.stop", detail: { remote, syncs: { ...st.h.syncs } } });
    },
    async syncNow() {
      if (st.stopped) throw new SbxError("unavailable", `ref sync for ${remote} is stopped`, { hint: "Start the sandbox again." });
      delete forced["clone-to-host"];
      delete forced["host-to-clone"];
      forceNext = { c: true, h: true };
      await Promise.all([cloneLane.runNow(), hostLane.runNow()]);
      return [forced["clone-to-host"], forced["host-to-clone"]].filter((r): r is SyncResult => r !== undefined);
    },
    takeOwed() {
      const o = owedHost;
      owedHost = false;
      return o;
    },
    health() {
      const h = st.h;
      return { ...h, lastSync: { ...h.lastSync }, syncs: { ...h.syncs } };
    },
  };
}
