// Finding the host repo a command is about: the git toplevel around a dir, as an absolute real path.
import { realpathSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { SbxError } from "../core/errors";
import type { Exec } from "../sys/exec";

/**
 * The real path of the repo root around `dir` (or of `repoFlag` when given).
 * runs: git -C <dir> rev-parse --show-toplevel
 */
export async function findRepoRoot(exec: Exec, cwd: string, repoFlag?: string): Promise<string> {
  const dir = resolve(cwd, repoFlag ?? ".");
  const r = await exec.run(["git", "-C", dir, "rev-parse", "--show-toplevel"], {
    check: false,
    // The host never lets a repo's config run anything while sbx inspects it.
    env: { GIT_CONFIG_NOSYSTEM: "1", GIT_OPTIONAL_LOCKS: "0" },
  });
  if (r.exitCode !== 0 || r.stdout.trim() === "") {
    throw new SbxError("usage", repoFlag ? `${dir} is not inside a git repository` : `not inside a git repository (${dir})`, {
      hint: "Run sbx from inside the repo you want to sandbox, or pass --repo PATH.",
    });
  }
  return realpathSync(r.stdout.trim());
}

/**
 * The repo root around `dir` without running git (the attach path saves a process): the nearest ancestor whose `.git`
 * is a directory holding HEAD. Null whenever git could answer differently (GIT_DIR, GIT_WORK_TREE or
 * GIT_CEILING_DIRECTORIES set; a `.git` file of a worktree or submodule; nothing found): then ask git.
 */
export function findRepoRootQuick(cwd: string, repoFlag: string | undefined, vars: Readonly<Record<string, string | undefined>>): string | null {
  if (vars.GIT_DIR || vars.GIT_WORK_TREE || vars.GIT_CEILING_DIRECTORIES || vars.GIT_DISCOVERY_ACROSS_FILESYSTEM) return null;
  let d: string;
  try {
    d = realpathSync(resolve(cwd, repoFlag ?? "."));
  } catch {
    return null;
  }
  for (;;) {
    try {
      const st = statSync(join(d, ".git"));
      if (!st.isDirectory()) return null;
      return statSync(join(d, ".git", "HEAD")).isFile() ? d : null;
    } catch {
      /* no .git here: go up */
    }
    const up = dirname(d);
    if (up === d) return null;
    d = up;
  }
}
