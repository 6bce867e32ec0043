// The live ref sync's triggers (refsync.ts): fs watchers on the host's `.git` and the clone's, each poking its
// direction's lane. A watcher that dies (its dir removed) is closed, said, and opened again by the next `arm`.
import { watch, type FSWatcher } from "node:fs";
import { join } from "node:path";
import type { Lane } from "./lane";

/** Names of `.git` entries whose change can mean a ref changed (the top-level watch is not recursive). */
const RELEVANT_TOP = new Set(["HEAD", "packed-refs", "refs", "objects", "reftable"]);

/** Entries of the clone's `.git` that a commit, checkout or branch change writes (not `index`: `git status` rewrites it). */
const RELEVANT_CLONE = new Set(["HEAD", "packed-refs", "refs", "COMMIT_EDITMSG", "ORIG_HEAD", "HEAD.lock", "packed-refs.lock"]);

function relevantClone(filename: string | null | Buffer): boolean {
  return filename === null || RELEVANT_CLONE.has(String(filename));
}

function relevantTop(filename: string | null | Buffer): boolean {
  if (filename === null) return true;
  const f = String(filename);
  return RELEVANT_TOP.has(f) || f === "packed-refs.lock" || f === "HEAD.lock";
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

type Slot = { path: string; recursive: boolean; lane: Lane; filter: (f: string | null | Buffer) => boolean; w: FSWatcher | null };

export interface WatcherEvents {
  /** How many watchers are open now (after one opened or died). */
  count(open: number): void;
  /** A watcher could not be opened, or died. */
  fail(e: Error): void;
}

export class RefWatchers {
  private readonly slots: Slot[];

  /**
   * The host's `.git` (top level) and `.git/refs` (recursive) poke `hostLane`; with `cloneGitDir`, the clone's `.git`
   * and `.git/refs/heads` poke `cloneLane`, as a trigger only (never read, never recursively: its `.git` may be a
   * symlink to anywhere). `pollMs` is named in what a failure says.
   */
  constructor(
    hostGitDir: string,
    cloneGitDir: string | undefined,
    lanes: { host: Lane; clone: Lane },
    private readonly pollMs: number,
    private readonly on: WatcherEvents,
  ) {
    const cloneSlots: Slot[] = cloneGitDir
      ? [
          { path: cloneGitDir, recursive: false, lane: lanes.clone, filter: relevantClone, w: null },
          { path: join(cloneGitDir, "refs", "heads"), recursive: false, lane: lanes.clone, filter: () => true, w: null },
        ]
      : [];
    this.slots = [
      { path: hostGitDir, recursive: false, lane: lanes.host, filter: relevantTop, w: null },
      { path: join(hostGitDir, "refs"), recursive: true, lane: lanes.host, filter: () => true, w: null },
      ...cloneSlots,
    ];
  }

  get open(): number {
    return this.slots.filter((s) => s.w !== null).length;
  }

  get allOpen(): boolean {
    return this.slots.every((s) => s.w !== null);
  }

  /** Opens the watchers that are not open (at start, and from the poll after one died: a dir removed and re-made). */
  openMissing(): void {
    for (const s of this.slots) {
      if (s.w !== null) continue;
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
          this.on.count(this.open);
          this.on.fail(new Error(`watching ${s.path} failed: ${message(e)}; the ${this.pollMs} ms poll covers it until it is re-armed`));
        });
        s.w = w;
      } catch (e) {
        // Typically ENOENT for a refs dir removed by the sandbox; recorded, and retried at each poll.
        this.on.fail(new Error(`cannot watch ${s.path}: ${message(e)}; the ${this.pollMs} ms poll covers it until it is re-armed`));
      }
    }
  }

  close(): void {
    for (const s of this.slots) {
      s.w?.close();
      s.w = null;
    }
  }
}
