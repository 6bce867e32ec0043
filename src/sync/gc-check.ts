// The `sbx doctor` check for host `git gc` settings that could prune objects a sandbox's clone borrows through alternates.
import type { Exec } from "../sys/exec";
import { gcConfigArgv } from "./git-argv";

/** Same shape as doctor's `Check`, kept structural so this module does not import the doctor. */
export interface GcCheck {
  name: string;
  status: "ok" | "warn" | "fail";
  detail: string;
  fix?: string;
}

export interface GcSettings {
  /** `gc.auto` as git printed it, if set. */
  auto?: string;
  /** `gc.pruneExpire` as git printed it, if set (git's default is 2.weeks.ago). */
  pruneExpire?: string;
}

const UNIT_SECONDS: Record<string, number> = {
  second: 1,
  minute: 60,
  hour: 3600,
  day: 86400,
  week: 7 * 86400,
  month: 30 * 86400,
  year: 365 * 86400,
};

/** Below this, a clone's borrowed objects that the host stopped referencing can vanish under a running sandbox. */
export const SAFE_PRUNE_SECONDS = 86400;

/**
 * Seconds of grace an approxidate-style `gc.pruneExpire` gives unreachable objects: `now` → 0, `never` → Infinity,
 * `2.weeks.ago` / `3 days ago` → seconds; null for what this does not understand (absolute dates and the like).
 */
export function pruneGraceSeconds(v: string): number | null {
  const s = v.trim().toLowerCase();
  if (s === "now") return 0;
  if (s === "never" || s === "false") return Infinity;
  const m = /^(\d+)[.\s]+(second|minute|hour|day|week|month|year)s?[.\s]+ago$/.exec(s);
  if (m) return Number(m[1]) * UNIT_SECONDS[m[2]!]!;
  return null;
}

/** Parses `git config --get-regexp` output (keys come lowercased). */
export function parseGcConfig(stdout: string): GcSettings {
  const out: GcSettings = {};
  for (const line of stdout.split("\n")) {
    const i = line.indexOf(" ");
    const key = (i < 0 ? line : line.slice(0, i)).toLowerCase();
    const value = i < 0 ? "" : line.slice(i + 1);
    if (key === "gc.auto") out.auto = value;
    if (key === "gc.pruneexpire") out.pruneExpire = value;
  }
  return out;
}

/** Pure: judges one repo's gc settings. */
export function judgeGc(repo: string, s: GcSettings): GcCheck {
  const name = "git gc";
  const prune = s.pruneExpire ?? "2.weeks.ago";
  const grace = pruneGraceSeconds(prune);
  const autoOff = s.auto !== undefined && Number.parseInt(s.auto, 10) === 0;
  const fix = `git -C ${repo} config gc.pruneExpire 2.weeks.ago   (or: never)`;
  const why = "sandbox clones borrow this repo's objects through alternates; sbx keeps sandbox-<name>/* refs so their commits stay reachable, but objects only a clone still uses (its index, stash, reflog) are lost once gc prunes them";
  if (grace === null) {
    return { name, status: "warn", detail: `${repo}: gc.pruneExpire=${prune} is not a relative age sbx can judge; ${why}`, fix };
  }
  if (grace === Infinity) return { name, status: "ok", detail: `${repo}: git gc never prunes unreachable objects` };
  if (grace < SAFE_PRUNE_SECONDS) {
    const when = autoOff ? "a manual `git gc`" : "`git gc` (including the automatic one, gc.auto)";
    return { name, status: "warn", detail: `${repo}: gc.pruneExpire=${prune}: ${when} prunes unreachable objects at once; ${why}`, fix };
  }
  return {
    name,
    status: "ok",
    detail: `${repo}: unreachable objects are pruned after ${prune}${autoOff ? " and only by a manual git gc (gc.auto=0)" : ""}`,
  };
}

/**
 * The doctor check for one host repo. Reads the config the user's own `git gc` would use (system, global, repo: all
 * host-owned; reading config runs nothing), so it runs with the executor's normal environment.
 * runs: git -c core.fsmonitor=false -c core.hooksPath=/dev/null -C <repo> config --get-regexp ^gc\.(auto|pruneexpire)$
 */
export async function checkHostGc(exec: Exec, hostRepo: string): Promise<GcCheck> {
  const r = await exec.run(gcConfigArgv(hostRepo), { check: false, env: { GIT_OPTIONAL_LOCKS: "0" } });
  // Exit 1 means no such keys: git's defaults apply.
  if (r.exitCode !== 0 && r.exitCode !== 1) {
    return { name: "git gc", status: "warn", detail: `cannot read ${hostRepo}'s gc settings: ${r.stderr.trim()}`, fix: `git -C ${hostRepo} config --list` };
  }
  return judgeGc(hostRepo, parseGcConfig(r.exitCode === 0 ? r.stdout : ""));
}
