// The kernel's cgroup counters of a sandbox (OOM kills, refused forks), on cgroup v1 and v2 alike.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { LimitCounters } from "../core/limits";

/** Where the cgroup filesystems are mounted (v2 unified: here; v1: one dir per controller under it). */
export const CGROUP_ROOT = "/sys/fs/cgroup";

/** Pure: a process's cgroup paths by controller, from /proc/<pid>/cgroup (`""` is v2's unified hierarchy). */
export function parseProcCgroup(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split("\n")) {
    const m = /^\d+:([^:]*):(\/.*)$/.exec(line.trim());
    if (!m) continue;
    for (const c of m[1]!.split(",")) out.set(c, m[2]!);
  }
  return out;
}

/** Pure: the value of `key` in a flat-keyed cgroup file (`oom_kill 3\n…`), or 0. */
export function keyedValue(text: string, key: string): number {
  for (const line of text.split("\n")) {
    const [k, v] = line.trim().split(/\s+/);
    if (k === key && v !== undefined && /^\d+$/.test(v)) return Number(v);
  }
  return 0;
}

function read(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

/**
 * The counters of the cgroup(s) a process is in, or null when none can be read (the process is gone, or the
 * controllers are not there). v1: memory/<path>/memory.oom_control and pids/<path>/pids.events; v2: the unified
 * path's memory.events and pids.events.
 */
export function countersOfPid(pid: number, root = CGROUP_ROOT, proc = "/proc"): LimitCounters | null {
  const text = read(join(proc, String(pid), "cgroup"));
  if (text === null) return null;
  const paths = parseProcCgroup(text);
  const mem = paths.get("memory");
  const pids = paths.get("pids");
  if (mem !== undefined || pids !== undefined) {
    const v1 = countersOfV1(mem === undefined ? null : join(root, "memory", mem), pids === undefined ? null : join(root, "pids", pids));
    if (v1 !== null) return v1;
  }
  const unified = paths.get("");
  return unified === undefined ? null : countersOfDir(join(root, unified));
}

/** The counters of a v1 memory dir and pids dir (either may be absent), or null when neither file can be read. */
export function countersOfV1(memDir: string | null, pidsDir: string | null): LimitCounters | null {
  const oom = memDir === null ? null : read(join(memDir, "memory.oom_control"));
  const pev = pidsDir === null ? null : read(join(pidsDir, "pids.events"));
  if (oom === null && pev === null) return null;
  return { oomKills: oom === null ? 0 : keyedValue(oom, "oom_kill"), pidsRefused: pev === null ? 0 : keyedValue(pev, "max") };
}

/** The counters of one v2 cgroup dir (what the linux-user driver makes), or null when it has neither file. */
export function countersOfDir(dir: string): LimitCounters | null {
  const mev = read(join(dir, "memory.events"));
  const pev = read(join(dir, "pids.events"));
  if (mev === null && pev === null) return null;
  return { oomKills: mev === null ? 0 : keyedValue(mev, "oom_kill"), pidsRefused: pev === null ? 0 : keyedValue(pev, "max") };
}
