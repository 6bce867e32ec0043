// The clone started first: `sbx create`'s slowest step (git clone) begins while the CLI still loads the lifecycle, in a private staging dir that createClone moves into the sandbox dir, or removes.
//
// The staging dir is `<cache>/sandbox-staging/<pid>-<random>`, beside the sandbox root (the same filesystem, so the
// move is a rename). Nothing in it is used until the create, under its per-name lock, has decided to make that
// sandbox; every other outcome removes it. `sbx prune` removes the dirs of processes that died.
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Exec } from "../sys/exec";
import type { Paths } from "../sys/paths";
import { pidAlive } from "../sys/proc";
import { HOST_GIT_SAFE, HOST_REMOTE } from "./clone";

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

/** `<cache>/sandbox-staging`: beside the sandbox root, on the same filesystem. */
export function stagingRoot(paths: Pick<Paths, "cacheDir">): string {
  return join(paths.cacheDir, "sandbox-staging");
}

/**
 * Starts the shared clone of `repo` in a new staging dir and returns at once.
 * runs: git -c core.fsmonitor=false -c core.hooksPath=/dev/null clone --shared --quiet --origin host <repo> <staging>/clone
 */
export function stageClone(exec: Exec, paths: Pick<Paths, "cacheDir">, repo: string): StagedClone {
  const root = stagingRoot(paths);
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const dir = join(root, `${process.pid}-${Math.random().toString(36).slice(2, 10)}`);
  mkdirSync(dir, { mode: 0o700 });
  const path = join(dir, "clone");
  const done = exec
    .run(["git", ...HOST_GIT_SAFE, "clone", "--shared", "--quiet", "--origin", HOST_REMOTE, repo, path], {
      env: { GIT_CONFIG_NOSYSTEM: "1", GIT_OPTIONAL_LOCKS: "0", GIT_TERMINAL_PROMPT: "0" },
      check: false,
    })
    .then(
      (r) => r.exitCode === 0,
      () => false,
    );
  let gone = false;
  return {
    repo,
    path,
    done,
    async discard() {
      if (gone) return;
      gone = true;
      await done;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Staging dirs whose process is gone (a create killed before it used or removed its clone). */
export function deadStagingDirs(paths: Pick<Paths, "cacheDir">, alive: (pid: number) => boolean = pidAlive): string[] {
  let names: string[] = [];
  try {
    names = readdirSync(stagingRoot(paths));
  } catch {
    return [];
  }
  return names
    .filter((n) => {
      const pid = Number(/^(\d+)-/.exec(n)?.[1] ?? NaN);
      return !Number.isInteger(pid) || !alive(pid);
    })
    .map((n) => join(stagingRoot(paths), n));
}
