// A sandbox's resource limits (memory, CPUs, processes): parsed from flags and config, defaulted from the host, shown to people. Pure.
import { SbxError } from "./errors";

/** What one sandbox may use. null: no limit of that kind (the person said `none`). */
export interface Limits {
  /** Bytes of memory (RAM; no swap beyond it). */
  memory: number | null;
  /** CPUs' worth of time (1.5 = one and a half cores). */
  cpus: number | null;
  /** Processes and threads at once. */
  pids: number | null;
}

/** What a person may write for each limit (a flag's text, a config value); absent keys take the default. */
export interface LimitsInput {
  memory?: string | number | undefined;
  cpus?: string | number | undefined;
  pids?: string | number | undefined;
  /** The LLM budget as typed (`5usd/day`; core/llm-budget.ts reads it): kept in the identity beside the limits. */
  llmBudget?: string | undefined;
}

/** The host facts the defaults and the bounds come from. */
export interface HostCapacity {
  memoryBytes: number;
  cpus: number;
}

const MIB = 1024 * 1024;
/** Below this the sandbox's own forwarder (Bun) and a shell do not fit. */
export const MIN_MEMORY = 128 * MIB;
/** Bun alone runs a dozen threads, and every thread counts. */
export const MIN_PIDS = 64;
export const MAX_PIDS = 4_194_304;
export const DEFAULT_PIDS = 4096;

const UNITS: Record<string, number> = { "": 1, b: 1, k: 1024, kb: 1024, kib: 1024, m: MIB, mb: MIB, mib: MIB, g: 1024 * MIB, gb: 1024 * MIB, gib: 1024 * MIB, t: 1024 * 1024 * MIB, tb: 1024 * 1024 * MIB, tib: 1024 * 1024 * MIB };

/**
 * The defaults: half the host's memory, every CPU but one (at least one), 4096 processes. A runaway build or a fork
 * bomb inside then leaves the host a core and half its memory.
 */
export function defaultLimits(host: HostCapacity): Limits {
  return {
    memory: Math.max(MIN_MEMORY, Math.floor(host.memoryBytes / 2 / MIB) * MIB),
    cpus: Math.max(1, host.cpus - 1),
    pids: DEFAULT_PIDS,
  };
}

function bad(what: string, value: unknown, why: string, example: string): SbxError {
  return new SbxError("usage", `${what} '${String(value)}' ${why}`, { hint: `For example ${example}, or none for no limit.` });
}

const isNone = (v: string | number) => typeof v === "string" && v.trim().toLowerCase() === "none";

/** `4g`, `512m`, `1.5GiB`, a byte count, or `none`. Throws SbxError(usage) saying what was wrong. */
export function parseMemory(v: string | number, host: HostCapacity, what = "--memory"): number | null {
  if (isNone(v)) return null;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(String(v));
  const unit = m ? UNITS[m[2]!.toLowerCase()] : undefined;
  if (!m || unit === undefined) throw bad(what, v, "is not a size", "--memory 4g or --memory 512m");
  const bytes = Math.floor(Number(m[1]) * unit);
  if (bytes < MIN_MEMORY) throw bad(what, v, `is below the ${formatBytes(MIN_MEMORY)} a sandbox needs to run at all`, "--memory 1g");
  if (bytes > host.memoryBytes) throw bad(what, v, `is more than this machine has (${formatBytes(host.memoryBytes)})`, `--memory ${Math.floor(host.memoryBytes / 2 / (1024 * MIB))}g`);
  return bytes;
}

/** `2`, `0.5`, or `none`: at most the host's CPUs. */
export function parseCpus(v: string | number, host: HostCapacity, what = "--cpus"): number | null {
  if (isNone(v)) return null;
  const n = typeof v === "number" ? v : /^\s*\d+(?:\.\d+)?\s*$/.test(v) ? Number(v) : NaN;
  if (!Number.isFinite(n) || n < 0.1) throw bad(what, v, "is not a number of CPUs of at least 0.1", "--cpus 2 or --cpus 0.5");
  if (n > host.cpus) throw bad(what, v, `is more than this machine's ${host.cpus} CPUs`, `--cpus ${host.cpus}`);
  return Math.round(n * 100) / 100;
}

/** A whole number of processes (threads count), or `none`. */
export function parsePids(v: string | number, what = "--pids"): number | null {
  if (isNone(v)) return null;
  const n = typeof v === "number" ? v : /^\s*\d+\s*$/.test(v) ? Number(v) : NaN;
  if (!Number.isInteger(n) || n < MIN_PIDS || n > MAX_PIDS) throw bad(what, v, `is not a whole number from ${MIN_PIDS} to ${MAX_PIDS}`, "--pids 4096");
  return n;
}

/** The limits of a new sandbox: each flag over the config file's value over the default. */
export function resolveLimits(host: HostCapacity, config: LimitsInput = {}, flags: LimitsInput = {}): Limits {
  const d = defaultLimits(host);
  const pick = <T>(key: keyof LimitsInput, parse: (v: string | number, what: string) => T, dflt: T): T => {
    const f = flags[key];
    if (f !== undefined) return parse(f, `--${key}`);
    const c = config[key];
    if (c === undefined) return dflt;
    try {
      return parse(c, `limits.${key}`);
    } catch (e) {
      // The config file's value: a config error (what to fix is the file, not the command line).
      throw e instanceof SbxError ? new SbxError("config", `your config file's ${e.message}`, { hint: `Fix limits.${key} in your config file ($XDG_CONFIG_HOME/sbx/config.json), or give --${key}.` }) : e;
    }
  };
  return {
    memory: pick("memory", (v, w) => parseMemory(v, host, w), d.memory),
    cpus: pick("cpus", (v, w) => parseCpus(v, host, w), d.cpus),
    pids: pick("pids", (v, w) => parsePids(v, w), d.pids),
  };
}

/** `512 MiB`, `12 GiB`, `1.5 GiB`. */
export function formatBytes(b: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  let v = b;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${Number.isInteger(v) ? v : v.toFixed(1)} ${units[i]}`;
}

/** `memory 12 GiB, cpus 1, pids 4096` (a limit that is off reads `none`). */
export function formatLimits(l: Limits): string {
  return [
    `memory ${l.memory === null ? "none" : formatBytes(l.memory)}`,
    `cpus ${l.cpus === null ? "none" : l.cpus}`,
    `pids ${l.pids === null ? "none" : l.pids}`,
  ].join(", ");
}

/** Which limit a sandbox ran into, and how often since its counters began (its container or cgroup was made). */
export interface LimitHit {
  limit: "memory" | "pids";
  /** Times the kernel acted: processes killed for memory, forks refused for pids. */
  count: number;
}

/** Counters the kernel keeps for a sandbox's cgroup. */
export interface LimitCounters {
  /** Processes the OOM killer killed (memory.events / memory.oom_control `oom_kill`). */
  oomKills: number;
  /** Forks refused at the pids limit (pids.events `max`). */
  pidsRefused: number;
}

/** Pure: the limits hit between two readings of the counters (a counter that went down was reset: all of it is new). */
export function limitHits(before: LimitCounters | null, after: LimitCounters): LimitHit[] {
  const delta = (a: number, b: number | undefined) => (b === undefined || a < b ? a : a - b);
  const out: LimitHit[] = [];
  const mem = delta(after.oomKills, before?.oomKills);
  if (mem > 0) out.push({ limit: "memory", count: mem });
  const pids = delta(after.pidsRefused, before?.pidsRefused);
  if (pids > 0) out.push({ limit: "pids", count: pids });
  return out;
}

/** A person's sentence for a hit: what happened, which limit, how to raise it. */
export function describeHit(name: string, hit: LimitHit, limits: Limits | null): string {
  if (hit.limit === "memory") {
    const at = limits?.memory ? ` (${formatBytes(limits.memory)})` : "";
    return `sandbox ${name} hit its memory limit${at}: the kernel killed ${hit.count} process${hit.count === 1 ? "" : "es"} in it. Raise it with \`sbx limits ${name} --memory SIZE\`.`;
  }
  const at = limits?.pids ? ` (${limits.pids})` : "";
  return `sandbox ${name} hit its process limit${at}: ${hit.count} fork${hit.count === 1 ? " was" : "s were"} refused. Raise it with \`sbx limits ${name} --pids N\`.`;
}
