// Where a CLI call comes from, as the daemon needs it to find the repo. Light: the zod-free paths load it too.
import type { Env } from "../sys/env";
import { sudoCallerUid } from "../sys/host-user";

/**
 * Where the caller is, as the daemon needs it to find the repo: the directory, `--repo`, and when this CLI runs as root
 * under sudo, the person it runs for (their repo is found with git run as them).
 */
export function whereOf(ctx: { cwd: string; env: Pick<Env, "uid" | "raw"> }, repoFlag: string | undefined): { cwd: string; repoFlag?: string; asUid?: number } {
  const asUid = sudoCallerUid(ctx.env);
  return { cwd: ctx.cwd, ...(repoFlag !== undefined ? { repoFlag } : {}), ...(asUid !== undefined ? { asUid } : {}) };
}
