// Pure builders for every git command ref sync runs on the host: argv, environment and the pinned upload-pack string.
import { NAME_PATTERN } from "../core/names";
import { SbxError } from "../core/errors";

/** The only remote names ref sync accepts: `sandbox-<valid sandbox name>`. */
export const REMOTE_PATTERN = /^sandbox-[a-z0-9][a-z0-9-]*$/;

export function validateRemoteName(remote: string): string {
  if (!REMOTE_PATTERN.test(remote) || !NAME_PATTERN.test(remote.slice("sandbox-".length))) {
    throw new SbxError("usage", `ref sync: '${remote}' is not a sandbox remote name (sandbox-<name>)`, {
      hint: "Pass remoteName as `sandbox-<sandbox name>`.",
    });
  }
  return remote;
}

/** Default PATH for host git when the caller gives none: where git lives on Debian, Fedora, macOS (Homebrew, Xcode). */
export const DEFAULT_GIT_PATH = "/usr/local/bin:/usr/bin:/bin:/opt/homebrew/bin";

/**
 * The whole environment of every host git ref sync runs (used with `replaceEnv`): no system or global config,
 * no GIT_DIR / GIT_ALTERNATE_OBJECT_DIRECTORIES / GIT_CONFIG_* leaking in from the daemon, no prompts, no locks
 * taken only to refresh an index. HOME points at an empty, non-existent place so no ~/.gitconfig is found either.
 */
export function hostGitEnv(path: string = DEFAULT_GIT_PATH): Record<string, string> {
  return {
    PATH: path,
    HOME: "/nonexistent",
    LANG: "C",
    LC_ALL: "C",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_TERMINAL_PROMPT: "0",
    GIT_OPTIONAL_LOCKS: "0",
    GIT_ASKPASS: "/bin/false",
  };
}

/** Options every host git gets: never run the repo's fsmonitor or hooks (the HOST repo's, here: the sandbox has none). */
export const HOST_GIT_SAFE: readonly string[] = ["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"];

/** POSIX-shell single-quoting: git runs `uploadpack` through `sh -c`. */
export function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/**
 * The upload-pack command the host runs against the clone. Upload-pack reads the CLONE's config (sandbox-writable),
 * so everything there that could run a program is overridden on its command line, which beats repo config:
 * - core.fsmonitor / core.hooksPath: never run the clone's fsmonitor or hooks;
 * - core.alternateRefsCommand=true: if anything ever asks for the alternates' refs, `true` prints none (an empty
 *   value would make git try to run "" instead);
 * - safe.directory=<clone>/.git: the clone may belong to another uid (the macOS sandbox user), which upload-pack
 *   otherwise refuses as "dubious ownership"; this admits exactly that one repository.
 * uploadpack.packObjectsHook is honoured only from protected (system, global, command-line) config, and the host
 * env has neither system nor global config, so the clone cannot set it; it is not overridden because an empty
 * value breaks upload-pack ("cannot run : No such file"), measured on git 2.39.
 */
export function uploadPackCommand(cloneGitDir: string): string {
  return [
    "git",
    "-c", "core.fsmonitor=false",
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.alternateRefsCommand=true",
    "-c", shellQuote(`safe.directory=${cloneGitDir}`),
    "upload-pack",
  ].join(" ");
}

/** Where the clone's branches land on the host. */
export function trackingRefspec(remote: string): string {
  return `+refs/heads/*:refs/remotes/${remote}/*`;
}

/**
 * clone → host. Runs in the HOST repo and fetches straight from the clone's path (the input the caller validated),
 * so nothing in the host's `remote.sandbox-<name>.*` config is needed, and the refs land where
 * `git fetch sandbox-<name>` would put them. Only the file transport is allowed; no tags (the sandbox must not
 * create host tags); no submodules; no auto gc or maintenance started by the daemon; no FETCH_HEAD.
 * runs: git -c core.fsmonitor=false -c core.hooksPath=/dev/null -c protocol.allow=never -c protocol.file.allow=always
 *       -C <host> fetch --quiet --prune --no-tags --no-recurse-submodules --no-auto-gc --no-auto-maintenance
 *       --no-write-fetch-head --upload-pack=<pinned> <clone> +refs/heads/*:refs/remotes/sandbox-<name>/*
 */
export function cloneToHostFetchArgv(args: { hostRepo: string; clonePath: string; remote: string }): string[] {
  const remote = validateRemoteName(args.remote);
  return [
    "git",
    ...HOST_GIT_SAFE,
    "-c", "protocol.allow=never",
    "-c", "protocol.file.allow=always",
    "-c", "fetch.writeCommitGraph=false",
    "-c", "fetch.recurseSubmodules=false",
    "-C", args.hostRepo,
    "fetch",
    "--quiet",
    "--prune",
    "--no-tags",
    "--no-recurse-submodules",
    "--no-auto-gc",
    "--no-auto-maintenance",
    "--no-write-fetch-head",
    `--upload-pack=${uploadPackCommand(`${args.clonePath}/.git`)}`,
    "--",
    args.clonePath,
    trackingRefspec(remote),
  ];
}

/**
 * The host refs a clone can see, one `<oid> <refname>` per line (refs/remotes/sandbox-* left out: sync writes them,
 * and another sandbox's refs are not this one's business). Runs only in the host repo.
 * runs: git -c core.fsmonitor=false -c core.hooksPath=/dev/null -C <host> for-each-ref --format=%(objectname) %(refname)
 */
export function hostRefsArgv(hostRepo: string): string[] {
  return [...["git", ...HOST_GIT_SAFE], "-C", hostRepo, "for-each-ref", "--format=%(objectname) %(refname)"];
}

/** Parses `for-each-ref` output into a snapshot, without refs/remotes/sandbox-* and with a stable order. */
export function parseHostRefs(stdout: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of stdout.split("\n")) {
    const i = line.indexOf(" ");
    if (i < 0) continue;
    const ref = line.slice(i + 1);
    if (ref.startsWith("refs/remotes/sandbox-")) continue;
    out.set(ref, line.slice(0, i));
  }
  return out;
}

/** runs: git -C <host> config --get-regexp ^gc\.(auto|pruneexpire)$ */
export function gcConfigArgv(hostRepo: string): string[] {
  return ["git", ...HOST_GIT_SAFE, "-C", hostRepo, "config", "--get-regexp", "^gc\\.(auto|pruneexpire)$"];
}

/**
 * Forgets the host's `sandbox-<name>` remote but keeps its `refs/remotes/sandbox-<name>/*` (which
 * `git remote remove` would delete), so `git log sandbox-<name>/<branch>` still works after `sbx rm`.
 * runs: git -C <host> config --remove-section remote.sandbox-<name>
 */
export function retireRemoteArgv(hostRepo: string, remote: string): string[] {
  return ["git", ...HOST_GIT_SAFE, "-C", hostRepo, "config", "--remove-section", `remote.${validateRemoteName(remote)}`];
}
