// What the host keeps of a removed sandbox: its `sandbox-<name>/*` refs, set aside when its name is used again, and the
// retired `remote.sandbox-<name>` section of sandboxes made before stores (no remote is added any more).
import { SbxError } from "../core/errors";
import type { Exec } from "../sys/exec";
import { hostGitEnv, HOST_GIT_SAFE, retireRemoteArgv, validateRemoteName } from "./git-argv";

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

export interface SetAside {
  /** Where the refs went: `refs/sbx-retired/<name>/<stamp>`. */
  prefix: string;
  /** Branch names (the part after `refs/remotes/sandbox-<name>/`). */
  branches: string[];
  /** Each moved ref's object id, and each symbolic ref dropped (its target), so a failed create can put them back. */
  moved: { branch: string; oid: string }[];
  symrefs: { branch: string; target: string }[];
}

/** Pure: the namespace a retired sandbox's refs move to when its name is used again. */
export function retiredPrefix(name: string, stamp: string): string {
  return `refs/sbx-retired/${name}/${stamp}`;
}

/** Pure: a ref-safe UTC timestamp, e.g. 20261122T010203Z. */
export function retiredStamp(now: Date): string {
  return now.toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
}

/**
 * Before a new sandbox takes a name: moves the refs an earlier sandbox of that name left on the host
 * (`refs/remotes/sandbox-<name>/*`, kept by `rm`) to `refs/sbx-retired/<name>/<stamp>/*`, in one ref transaction.
 * Otherwise the new sandbox's first sync (which makes `sandbox-<name>/*` what its clone has) would delete them, and
 * with them the only ref holding the old sandbox's commits. Returns null when there was nothing to move.
 * runs: git -C <host> for-each-ref … refs/remotes/sandbox-<name>/; git -C <host> update-ref --stdin (create + delete)
 */
export async function setAsideRetiredRefs(exec: Exec, hostRepo: string, name: string, stamp: string, gitPath?: string): Promise<SetAside | null> {
  const remote = validateRemoteName(`sandbox-${name}`);
  const env = hostGitEnv(gitPath);
  const from = `refs/remotes/${remote}/`;
  const l = await exec.run(["git", ...HOST_GIT_SAFE, "-C", hostRepo, "for-each-ref", "--format=%(objectname) %(symref) %(refname)", from], {
    env,
    replaceEnv: true,
    check: false,
  });
  if (l.exitCode !== 0) throw new SbxError("exec_failed", `cannot list ${remote}'s refs in ${hostRepo}: ${l.stderr.trim()}`);
  const prefix = retiredPrefix(name, stamp);
  const lines: string[] = [];
  const branches: string[] = [];
  const moved: SetAside["moved"] = [];
  const symrefs: SetAside["symrefs"] = [];
  for (const row of l.stdout.split("\n")) {
    const [oid = "", symref = "", ref = ""] = row.split(" ");
    if (!ref.startsWith(from)) continue;
    const branch = ref.slice(from.length);
    if (symref !== "") {
      // A symbolic HEAD names a branch that is moved anyway: drop it, do not copy it.
      lines.push("option no-deref", `delete ${ref}`);
      symrefs.push({ branch, target: symref });
      continue;
    }
    branches.push(branch);
    moved.push({ branch, oid });
    lines.push(`create ${prefix}/${branch} ${oid}`, `delete ${ref} ${oid}`);
  }
  if (branches.length === 0 && lines.length === 0) return null;
  const u = await exec.run(["git", ...HOST_GIT_SAFE, "-C", hostRepo, "update-ref", "--stdin"], {
    env,
    replaceEnv: true,
    check: false,
    stdin: `start\n${lines.join("\n")}\ncommit\n`,
  });
  if (u.exitCode !== 0) {
    throw new SbxError("exec_failed", `cannot set aside the refs of the earlier sandbox '${name}' in ${hostRepo}: ${u.stderr.trim()}`, {
      hint: `Move or delete refs/remotes/${remote}/* by hand (git update-ref), then create the sandbox again.`,
    });
  }
  return { prefix, branches, moved, symrefs };
}

/**
 * Undoes setAsideRetiredRefs (a create that failed after it): each moved ref goes back where it was, in one ref
 * transaction that fails whole if any ref changed meanwhile, then each symbolic ref is made again.
 * runs: git -C <host> update-ref --stdin (create + delete); git -C <host> symbolic-ref <ref> <target>
 */
export async function putBackRetiredRefs(exec: Exec, hostRepo: string, name: string, aside: SetAside, gitPath?: string): Promise<void> {
  const remote = validateRemoteName(`sandbox-${name}`);
  const env = hostGitEnv(gitPath);
  const lines = aside.moved.flatMap((m) => [`create refs/remotes/${remote}/${m.branch} ${m.oid}`, `delete ${aside.prefix}/${m.branch} ${m.oid}`]);
  if (lines.length > 0) {
    const u = await exec.run(["git", ...HOST_GIT_SAFE, "-C", hostRepo, "update-ref", "--stdin"], { env, replaceEnv: true, check: false, stdin: `start\n${lines.join("\n")}\ncommit\n` });
    if (u.exitCode !== 0) throw new SbxError("exec_failed", `cannot put the refs of the earlier sandbox '${name}' back from ${aside.prefix}: ${u.stderr.trim()}`, { hint: `They are safe under ${aside.prefix}/*.` });
  }
  for (const s of aside.symrefs) {
    await exec.run(["git", ...HOST_GIT_SAFE, "-C", hostRepo, "symbolic-ref", `refs/remotes/${remote}/${s.branch}`, s.target], { env, replaceEnv: true, check: false });
  }
}
