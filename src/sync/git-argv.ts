// Pure builders for the git ref sync runs on the host (only ever in the host repo and its stores): argv and environment.
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

/** Options every host git gets: never run the repo's fsmonitor or hooks (the host repo's and its stores'). */
export const HOST_GIT_SAFE: readonly string[] = ["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"];

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
