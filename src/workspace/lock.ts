// Per-sandbox lock files (O_EXCL) in the state dir, with recovery of locks whose owner died.
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, statSync, unlinkSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { SbxError } from "../core/errors";
import { sha256Hex } from "../sys/paths";
import { pidAlive } from "../sys/proc";
import { sandboxLayout } from "./layout";

const LockBodySchema = z.object({ pid: z.number().int(), host: z.string(), token: z.string(), at: z.number() });
type LockBody = z.infer<typeof LockBodySchema>;

export interface LockOptions {
  /** Give up after this long (default 10 minutes: a first create may be building an image). */
  timeoutMs?: number;
  pollMs?: number;
  /** Called once when the lock is busy, so the caller can say it is waiting. */
  onWait?: (holder: LockBody) => void;
  /** Liveness seam for tests. */
  isAlive?: (pid: number) => boolean;
}

export interface Lock {
  readonly path: string;
  release(): void;
}

export function lockDir(stateDir: string): string {
  return join(stateDir, "locks");
}

export function lockPath(stateDir: string, repo: string, name: string): string {
  return join(lockDir(stateDir), `${sha256Hex(`${repo}\0${name}`).slice(0, 32)}.lock`);
}

function readBody(path: string): LockBody | null {
  try {
    return LockBodySchema.parse(JSON.parse(readFileSync(path, "utf8")));
  } catch {
    return null;
  }
}

/** Whether the lock file is held by a live process on this host (a half-written one counts as held briefly). */
export function lockHeld(path: string, isAlive: (pid: number) => boolean = pidAlive): boolean {
  const body = readBody(path);
  if (body === null) {
    try {
      return Date.now() - statSync(path).mtimeMs < 5_000;
    } catch {
      return false;
    }
  }
  return body.host !== hostname() || isAlive(body.pid);
}

/**
 * A create of the sandbox in `dir` under way (its `.creating` marker, its lock held), interrupted (the marker, no
 * lock: its daemon died; the next create of the name or a prune clears it), or neither.
 */
export function createProgress(stateDir: string, repo: string, name: string, dir: string): "in-progress" | "interrupted" | undefined {
  if (dir === "" || !existsSync(sandboxLayout(dir).creating)) return undefined;
  return lockHeld(lockPath(stateDir, repo, name)) ? "in-progress" : "interrupted";
}

function tryCreate(path: string, body: LockBody): boolean {
  let fd: number;
  try {
    fd = openSync(path, "wx", 0o600);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw e;
  }
  try {
    writeSync(fd, JSON.stringify(body));
  } finally {
    closeSync(fd);
  }
  return true;
}

/**
 * Breaks a stale lock. A guard file (itself O_EXCL) makes sure two breakers cannot both unlink, one of them
 * deleting the fresh lock the other just took.
 */
function breakStale(path: string, isAlive: (pid: number) => boolean): void {
  const guard = `${path}.break`;
  try {
    if (Date.now() - statSync(guard).mtimeMs > 10_000) unlinkSync(guard);
  } catch {
    /* no guard */
  }
  if (!tryCreate(guard, { pid: process.pid, host: hostname(), token: "break", at: Date.now() })) return;
  try {
    if (!lockHeld(path, isAlive)) unlinkSync(path);
  } catch {
    /* gone already */
  } finally {
    try {
      unlinkSync(guard);
    } catch {
      /* ignore */
    }
  }
}

/** Takes the lock at `path`, waiting while a live process holds it. */
export async function acquireLock(path: string, opts: LockOptions = {}): Promise<Lock> {
  const isAlive = opts.isAlive ?? pidAlive;
  const deadline = Date.now() + (opts.timeoutMs ?? 600_000);
  mkdirSync(join(path, ".."), { recursive: true, mode: 0o700 });
  const body: LockBody = { pid: process.pid, host: hostname(), token: crypto.randomUUID(), at: Date.now() };
  let told = false;
  for (;;) {
    if (tryCreate(path, body)) break;
    if (!lockHeld(path, isAlive)) {
      breakStale(path, isAlive);
      continue;
    }
    if (!told) {
      const holder = readBody(path);
      if (holder) opts.onWait?.(holder);
      told = true;
    }
    if (Date.now() > deadline) {
      throw new SbxError("conflict", `another sbx process is still working on this sandbox (lock ${path})`, {
        hint: "Wait for it to finish, then retry; if no sbx is running, `sbx prune` clears stale locks.",
      });
    }
    await Bun.sleep(opts.pollMs ?? 50);
  }
  return {
    path,
    release() {
      // Only remove our own lock: a breaker may have replaced it if we were wrongly judged dead.
      if (readBody(path)?.token === body.token) {
        try {
          unlinkSync(path);
        } catch {
          /* gone */
        }
      }
    },
  };
}

/** Removes lock files whose owner is dead; returns their paths (or would, with dryRun). */
export function staleLocks(stateDir: string, isAlive: (pid: number) => boolean = pidAlive): string[] {
  const dir = lockDir(stateDir);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.filter((n) => n.endsWith(".lock")).map((n) => join(dir, n)).filter((p) => !lockHeld(p, isAlive));
}
