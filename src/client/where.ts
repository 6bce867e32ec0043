// Where a CLI call comes from, as the daemon needs it to find the repo. Light: the zod-free paths load it too.
import type { Env } from "../sys/env";

/**
 * Where the caller is, as the daemon needs it to find the repo: the directory, `--repo`, and when this CLI runs as root
 * under sudo, the person it runs for (their repo is found with git run as them).
 */
export function whereOf(ctx: { cwd: string; env: Pick<Env, "uid" | "raw"> }, repoFlag: string | undefined): { cwd: string; repoFlag?: string; asUid?: number } {
  const sudo = ctx.env.raw.SUDO_UID;
  const asUid = ctx.env.uid === 0 && sudo !== undefined && /^[1-9]\d*$/.test(sudo) ? Number(sudo) : undefined;
  return { cwd: ctx.cwd, ...(repoFlag !== undefined ? { repoFlag } : {}), ...(asUid !== undefined ? { asUid } : {}) };
}
