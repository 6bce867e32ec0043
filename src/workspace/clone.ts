// The shared clone: made on the host before the sandbox ever runs; afterwards the host never runs git in it or reads it.
import { existsSync, mkdirSync, readlinkSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync, lstatSync } from "node:fs";
import { join, relative, isAbsolute, sep } from "node:path";
import { statSync } from "node:fs";
import { SbxError } from "../core/errors";
import type { Exec } from "../sys/exec";
import { heldOpen } from "../sys/proc";
import { sandboxLayout } from "./layout";

/** The clone's name for the host repo (its `origin` is the host's `origin` URL when there is one). */
export const HOST_REMOTE = "host";

/** The host repo's name for a sandbox's clone. */
export function sandboxRemote(name: string): string {
  return `sandbox-${name}`;
}

/**
 * Options for every git the host runs near sandbox-writable data: no fsmonitor, no hooks. Used in the HOST repo,
 * whose config the sandbox cannot write (its `.git` is mounted read-only inside).
 */
export const HOST_GIT_SAFE = ["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"] as const;

/** Environment for host git: no system config surprises, no optional locks taken in a repo sbx only reads. */
const GIT_ENV = { GIT_CONFIG_NOSYSTEM: "1", GIT_OPTIONAL_LOCKS: "0", GIT_TERMINAL_PROMPT: "0" };

function git(exec: Exec, cwd: string, args: readonly string[], check = true) {
  return exec.run(["git", ...HOST_GIT_SAFE, "-C", cwd, ...args], { env: GIT_ENV, check });
}

export interface CloneRequest {
  /** Real path of the host repo. */
  repo: string;
  /** The sandbox dir. */
  dir: string;
  name: string;
}

/** Points `<dir>/repo` at the host repo (replacing a stale link). */
function ensureLink(link: string, repo: string): void {
  try {
    if (lstatSync(link).isSymbolicLink() && readlinkSync(link) === repo) return;
    unlinkSync(link);
  } catch {
    /* absent */
  }
  symlinkSync(repo, link);
}

/** The host repo's `origin` URL, if it has one. runs: git -C <repo> config --get remote.origin.url */
/** What a new clone takes over from the host repo's config: its remotes (by name) and who commits. */
export interface HostGitSetup {
  remotes: Record<string, string>;
  name?: string;
  email?: string;
}

/**
 * Pure: the host's remotes and identity from `git config --get-regexp` lines. Remote names sbx uses itself (`host`,
 * `sandbox-*`) and names git would not take are left out; a value with a line break is dropped.
 */
export function parseHostGitSetup(text: string): HostGitSetup {
  const out: HostGitSetup = { remotes: {} };
  for (const line of text.split("\n")) {
    const m = /^(remote\.(.+)\.url|user\.name|user\.email) (.*)$/.exec(line);
    if (!m || m[3] === undefined || m[3].trim() === "") continue;
    if (m[1] === "user.name") out.name = m[3];
    else if (m[1] === "user.email") out.email = m[3];
    else {
      const name = m[2]!;
      if (name === HOST_REMOTE || name.startsWith("sandbox-") || !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name)) continue;
      out.remotes[name] = m[3];
    }
  }
  return out;
}

/**
 * The host repo's remotes and identity (its own config, the user's global one included: who commits is theirs).
 * runs: git -C <repo> config --get-regexp ^(remote\..*\.url|user\.(name|email))$
 */
export async function hostGitSetup(exec: Exec, repo: string): Promise<HostGitSetup> {
  const r = await git(exec, repo, ["config", "--get-regexp", "^(remote\\..*\\.url|user\\.(name|email))$"], false);
  return parseHostGitSetup(r.exitCode === 0 ? r.stdout : "");
}

/** A clone started ahead of a create (workspace/staged-clone.ts makes it). */
export interface StagedClone {
  /** The host repo it clones (real path). */
  readonly repo: string;
  /** Where the clone is made: `<staging dir>/clone`. */
  readonly path: string;
  /** Resolves true once the clone is complete, false when it failed (the create then clones as usual). */
  readonly done: Promise<boolean>;
  /** Waits for the clone to end, then removes the staging dir (idempotent). */
  discard(): Promise<void>;
}

/**
 * Makes the shared clone. Runs before the sandbox has ever run, so the clone's config is still sbx's own.
 * A clone started ahead by stageClone is moved into place instead. The host repo's config is only read: no remote
 * there ever points at a clone. `<dir>/clone` exists (empty until the clone takes its place) from the moment this is called.
 * runs, the two at once: git clone --shared --origin host <dir>/repo <dir>/clone; git -C <repo> config --get-regexp
 *       <remotes and identity>; then (in the new clone) git config user.name/user.email; git remote add <each host
 *       remote>; git fetch <dir>/repo +refs/remotes/<r>/*:…; git config --remove-section remote.host
 */
export async function createClone(exec: Exec, req: CloneRequest, staged?: StagedClone): Promise<void> {
  const lay = sandboxLayout(req.dir);
  mkdirSync(req.dir, { recursive: true, mode: 0o700 });
  ensureLink(lay.link, req.repo);
  rmSync(lay.clone, { recursive: true, force: true });
  // An empty dir holds the clone's place from this call on: the container can be made while the clone is (the engine
  // wants a bind mount's source to exist at create, and mounts whatever the path holds at start). The clone replaces it.
  mkdirSync(lay.clone, { mode: 0o700 });
  // The host repo's own config (its remotes, who commits) is read while the clone runs.
  const [setup] = await Promise.all([
    hostGitSetup(exec, req.repo),
    (async () => {
      // A clone started ahead (stageClone) of this very repo is moved into place; else (none, failed, another
      // filesystem) the clone is made here.
      if (staged && staged.repo === req.repo && (await staged.done)) {
        try {
          renameSync(staged.path, lay.clone);
          return;
        } catch {
          rmSync(lay.clone, { recursive: true, force: true });
          mkdirSync(lay.clone, { mode: 0o700 });
        }
      }
      await exec.run(["git", ...HOST_GIT_SAFE, "clone", "--shared", "--quiet", "--origin", HOST_REMOTE, lay.link, lay.clone], { env: GIT_ENV });
    })(),
  ]);
  await staged?.discard();
  // Worktrees record the real common dir, and clone may resolve the link: always go through the link.
  writeFileSync(join(lay.clone, ".git", "objects", "info", "alternates"), `${join(lay.linkGit, "objects")}\n`);
  // Who commits inside is who commits on the host (an agent's first commit must not fail for want of an identity).
  if (setup.name !== undefined) await git(exec, lay.clone, ["config", "user.name", setup.name]);
  if (setup.email !== undefined) await git(exec, lay.clone, ["config", "user.email", setup.email]);
  // Every remote the host repo has, under the same name (the shims send them to the bridge, which uses the host's
  // URL and token), with the host's view of it, so `upstream/main` means inside what it means outside.
  const names = Object.keys(setup.remotes).sort();
  for (const name of names) await git(exec, lay.clone, ["remote", "add", name, setup.remotes[name]!]);
  if (names.length > 0) {
    // Objects are shared: no copy. (The clone is sbx's own until the sandbox first runs: nothing planted yet.)
    await git(exec, lay.clone, ["fetch", "--quiet", "--no-tags", lay.link, ...names.map((n) => `+refs/remotes/${n}/*:refs/remotes/${n}/*`)], false);
  }
  // No remote leads back to the host repo: inside, only its objects are there, and ref sync keeps refs/remotes/host/*.
  await git(exec, lay.clone, ["config", "--remove-section", `remote.${HOST_REMOTE}`], false);
}

/**
 * The host repo's `.git/config.lock` when it is stale: a git that held it was killed (a create killed while adding
 * its remote leaves one, and the repo's config cannot change until it is gone). Stale means no process of this user
 * has it open (git holds it open from creating it to renaming it over the config); without /proc to ask, older than
 * a minute. Null when there is none, or it may be live.
 */
export function staleConfigLock(repo: string): string | null {
  const lock = join(repo, ".git", "config.lock");
  let age: number;
  try {
    age = Date.now() - statSync(lock).mtimeMs;
  } catch {
    return null;
  }
  const held = heldOpen(lock);
  if (held === true) return null;
  if (held === null && age < 60_000) return null;
  return lock;
}

/** The URL the host repo has for remote `sandbox-<name>`, if any. runs: git -C <repo> config --get remote.sandbox-<name>.url */
export async function sandboxRemoteUrl(exec: Exec, repo: string, name: string): Promise<string | null> {
  if (!existsSync(repo)) return null;
  const r = await git(exec, repo, ["config", "--get", `remote.${sandboxRemote(name)}.url`], false);
  return r.exitCode === 0 && r.stdout.trim() !== "" ? r.stdout.trim() : null;
}

export interface Commit {
  sha: string;
  subject: string;
}

/** Parses `git log --format=%H%x09%s` output. */
export function parseCommits(stdout: string): Commit[] {
  return stdout
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => {
      const i = l.indexOf("\t");
      return i < 0 ? { sha: l.trim(), subject: "" } : { sha: l.slice(0, i), subject: l.slice(i + 1) };
    });
}

/**
 * Where a session starts inside: the caller's dir when it lies in the repo and the clone has it, else the repo root.
 * The clone is mounted at the repo's own path, so the path inside equals the path outside.
 */
export function sessionCwd(repo: string, callerCwd: string, clone: string): string {
  const rel = relative(repo, callerCwd);
  if (rel === "" || rel.startsWith("..") || isAbsolute(rel) || rel.split(sep).includes("..")) return repo;
  try {
    if (statSync(join(clone, rel)).isDirectory()) return join(repo, rel);
  } catch {
    /* no counterpart */
  }
  return repo;
}

/** Throws a clear error when the repo's `.git` is not a directory (worktrees and submodules are not supported yet). */
export function requirePlainGitDir(repo: string): void {
  try {
    if (statSync(join(repo, ".git")).isDirectory()) return;
  } catch {
    /* fall through */
  }
  throw new SbxError("usage", `${repo} is a git worktree or submodule; sbx sandboxes need the main checkout`, {
    hint: "Run sbx from the repo's main checkout (where .git is a directory), or pass --repo PATH to it.",
  });
}
