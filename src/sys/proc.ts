// Process facts and the one way to stop a process: whether one is alive (the daemon lock, the per-sandbox locks and staged clones share it), stopping one sbx started, and whether a file is held open.
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/**
 * Signal 0 probes without sending anything; EPERM means it exists but is someone else's. A killed process nobody
 * reaped yet (common when pid 1 does not reap) still answers signal 0: on Linux /proc says it is a zombie, which
 * counts as dead.
 */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    // No /proc (macOS): signal 0 said it exists. On Linux it has just gone.
    return process.platform !== "linux";
  }
}

/**
 * Whether any process this user can see has the file open, from /proc/<pid>/fd (Linux); null where there is no
 * /proc to ask. Other users' processes are not visible, so false means "none of ours".
 */
export function heldOpen(path: string): boolean | null {
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((p) => /^\d+$/.test(p));
  } catch {
    return null;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone, or not ours
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === path) return true;
      } catch {
        /* closed meanwhile */
      }
    }
  }
  return false;
}

/**
 * Stops a process this program started: sends `signal`, waits up to `waitMs` for it to go, then SIGKILLs it. True
 * when it went on its own (or was gone already), false when it had to be killed.
 */
export async function stopProcess(pid: number, o: { signal?: NodeJS.Signals; waitMs: number; pollMs?: number }): Promise<boolean> {
  try {
    process.kill(pid, o.signal ?? "SIGTERM");
  } catch {
    return true; // already gone
  }
  const until = Date.now() + o.waitMs;
  while (pidAlive(pid) && Date.now() < until) await Bun.sleep(o.pollMs ?? 50);
  if (!pidAlive(pid)) return true;
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    /* gone meanwhile */
  }
  return false;
}
