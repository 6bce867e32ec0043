// The clone started first: `sbx create`'s slowest step (git clone) begins while the CLI still loads the lifecycle, in a private staging dir that createClone moves into the sandbox dir, or removes.
//
// The staging dir is `<cache>/sandbox-staging/<pid>-<random>`, beside the sandbox root (the same filesystem, so the
// move is a rename). Nothing in it is used until the create, under its per-name lock, has decided to make that
// sandbox; every other outcome removes it. `sbx prune` removes the dirs of processes that died.
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { SbxError } from "../core/errors";
import type { Exec } from "../sys/exec";
import type { Paths } from "../sys/paths";
import { pidAlive } from "../sys/proc";
import { HOST_GIT_SAFE, HOST_REMOTE, type StagedClone } from "./clone";

export type { StagedClone };


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
  // For the daemon, which makes the sandbox: which repo this clones, and (below) how the clone ended.
  writeFileSync(join(dir, REPO_FILE), repo);
  const done = exec
    .run(["git", ...HOST_GIT_SAFE, "clone", "--shared", "--quiet", "--origin", HOST_REMOTE, repo, path], {
      env: { GIT_CONFIG_NOSYSTEM: "1", GIT_OPTIONAL_LOCKS: "0", GIT_TERMINAL_PROMPT: "0" },
      check: false,
    })
    .then(
      (r) => r.exitCode === 0,
      () => false,
    )
    .then((ok) => {
      try {
        writeFileSync(join(dir, DONE_FILE), ok ? "ok" : "failed");
      } catch {
        /* discarded already */
      }
      return ok;
    });
  return stagedIn(dir, repo, done);
}

/** The staged clone in `dir` (its clone at `<dir>/clone`); discard waits for the clone to end, then removes the dir. */
function stagedIn(dir: string, repo: string, done: Promise<boolean>): StagedClone {
  let gone = false;
  return {
    repo,
    path: join(dir, "clone"),
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

const REPO_FILE = ".repo";
const DONE_FILE = ".done";
const STAGED_NAME = /^(\d+)-[a-z0-9]{1,16}$/;

/**
 * The daemon's hold on a clone the CLI staged: `dir` must be a directory directly under the staging root, named as
 * stageClone names them, not a link. Its `done` waits for the CLI's clone to end (the `.done` file), and is false when
 * the CLI died first or it takes longer than `waitMs`; discard removes the dir. Anything else is refused.
 */
export function adoptStagedClone(paths: Pick<Paths, "cacheDir">, dir: string, opts: { waitMs?: number; alive?: (pid: number) => boolean } = {}): StagedClone {
  const root = stagingRoot(paths);
  const m = STAGED_NAME.exec(basename(dir));
  let ok = false;
  try {
    ok = m !== null && realpathSync(dirname(dir)) === realpathSync(root) && lstatSync(dir).isDirectory();
  } catch {
    ok = false;
  }
  if (!ok) {
    throw new SbxError("usage", `not a staged clone: ${dir}`, { hint: `A staged clone is a directory directly under ${root}, made by sbx create.` });
  }
  const pid = Number(m![1]);
  const alive = opts.alive ?? pidAlive;
  let repo = "";
  try {
    repo = readFileSync(join(dir, REPO_FILE), "utf8");
  } catch {
    repo = ""; // never matches a repo: the create clones as usual
  }
  const until = Date.now() + (opts.waitMs ?? 120_000);
  const done = (async () => {
    for (;;) {
      try {
        return readFileSync(join(dir, DONE_FILE), "utf8") === "ok";
      } catch {
        /* not yet */
      }
      if (Date.now() > until || !alive(pid) || !existsSync(dir)) return false;
      await Bun.sleep(5);
    }
  })();
  return stagedIn(dir, repo, done);
}
