// Finding the host repo a command is about: the git toplevel around a dir, as an absolute real path.
import { realpathSync } from "node:fs";
import { resolve } from "node:path";
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
