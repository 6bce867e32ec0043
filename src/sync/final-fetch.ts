// Before `sbx stop` / `sbx rm`: one last clone → host fetch so `sandbox-<name>/*` on the host holds every commit made inside.
import { existsSync } from "node:fs";
import { SbxError } from "../core/errors";
import type { Exec } from "../sys/exec";
import { checkAlternates } from "./clone-files";
import { cloneToHostFetchArgv, hostGitEnv, HOST_GIT_SAFE, retireRemoteArgv, validateRemoteName } from "./git-argv";
import type { RefSyncEvent } from "./refsync";

export interface FinalFetchOptions {
  hostRepo: string;
  clonePath: string;
  remoteName: string;
  expectedAlternates: string;
  exec: Exec;
  audit?: (event: RefSyncEvent) => void;
  gitPath?: string;
  timeoutMs?: number;
}

export interface FinalFetchResult {
  /** False when there was no clone left to fetch from (a second `rm`, a crash mid-removal). */
  fetched: boolean;
  /** The host's `refs/remotes/sandbox-<name>/*` after the fetch: branch → object id. */
  refs: Record<string, string>;
}

/**
 * Fetches the clone's branches into the host as `refs/remotes/sandbox-<name>/*` (same pinned, config-free fetch as
 * the live sync) and lists what the host now holds. Throws, and fetches nothing, when the alternates were rewritten:
 * then `rm` must stop and say so rather than lose or trust anything.
 * runs: git … -C <host> fetch … <clone> +refs/heads/*:refs/remotes/sandbox-<name>/*;
 *       git -C <host> for-each-ref --format=%(objectname) %(refname) refs/remotes/sandbox-<name>/
 */
export async function finalFetch(o: FinalFetchOptions): Promise<FinalFetchResult> {
  const remote = validateRemoteName(o.remoteName);
  const env = hostGitEnv(o.gitPath);
  const run = (argv: string[]) => o.exec.run(argv, { env, replaceEnv: true, check: false, timeoutMs: o.timeoutMs ?? 120_000 });
  let fetched = false;
  if (existsSync(o.clonePath)) {
    const alt = checkAlternates(o.clonePath, o.expectedAlternates);
    if (!alt.ok) {
      o.audit?.({ action: "ref-sync.refused", detail: { remote, reason: alt.reason, final: true } });
      throw new SbxError("conflict", `cannot take the last commits out of ${remote}: ${alt.reason}`, {
        hint: "Something inside the sandbox rewrote its alternates. Inspect the clone by hand (do not run git in it on the host), or pass --force to remove it without fetching.",
      });
    }
    const r = await run(cloneToHostFetchArgv({ hostRepo: o.hostRepo, clonePath: o.clonePath, remote }));
    if (r.exitCode !== 0) {
      const err = r.stderr.trim().split("\n").slice(-3).join(" | ");
      o.audit?.({ action: "ref-sync.error", detail: { remote, direction: "clone-to-host", error: err, final: true } });
      throw new SbxError("exec_failed", `the last fetch from ${remote} failed: ${err}`, {
        hint: "Fix the clone (see the error) and retry, or pass --force to remove the sandbox without its last commits.",
      });
    }
    fetched = true;
    o.audit?.({ action: "ref-sync.synced", detail: { remote, direction: "clone-to-host", final: true } });
  }
  const refs: Record<string, string> = {};
  const l = await run(["git", ...HOST_GIT_SAFE, "-C", o.hostRepo, "for-each-ref", "--format=%(objectname) %(refname)", `refs/remotes/${remote}/`]);
  if (l.exitCode !== 0) throw new SbxError("exec_failed", `cannot list ${remote}'s refs in ${o.hostRepo}: ${l.stderr.trim()}`);
  for (const line of l.stdout.split("\n")) {
    const i = line.indexOf(" ");
    if (i > 0) refs[line.slice(i + 1).slice(`refs/remotes/${remote}/`.length)] = line.slice(0, i);
  }
  return { fetched, refs };
}

/**
 * After `rm`: drops the host's `remote.sandbox-<name>` section (its URL points at a deleted clone) but keeps
 * `refs/remotes/sandbox-<name>/*`, so the commits stay reachable (and safe from `git gc`). A missing section is fine.
 * runs: git -C <host> config --remove-section remote.sandbox-<name>
 */
export async function retireSandboxRemote(exec: Exec, hostRepo: string, remoteName: string, gitPath?: string): Promise<boolean> {
  const r = await exec.run(retireRemoteArgv(hostRepo, remoteName), { env: hostGitEnv(gitPath), replaceEnv: true, check: false });
  // exit 128 "no such section" is the already-removed case.
  if (r.exitCode !== 0 && !/no such section/i.test(r.stderr)) {
    throw new SbxError("exec_failed", `cannot remove remote ${remoteName} from ${hostRepo}: ${r.stderr.trim()}`);
  }
  return r.exitCode === 0;
}
