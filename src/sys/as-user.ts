// Running as the person sbx works for (who that is: host-user.ts): Execs that drop to them, or mark their repo safe.
import type { HostUser } from "../core/spec";
import { streamRun, type Exec, type ExecOptions } from "./exec";

/**
 * An Exec whose commands run as the host user: `setpriv` drops root to its uid, gid and groups (nothing when sbx is
 * not root or the host user is root). HOME/USER/LOGNAME are the host user's unless the caller set them (ref sync's
 * git gets HOME=/nonexistent). runs: setpriv --reuid=<uid> --regid=<gid> --init-groups -- <argv>
 */
export function hostUserExec(exec: Exec, host: HostUser, selfUid: number): Exec {
  if (selfUid !== 0 || host.uid === 0) return exec;
  const wrap = (argv: readonly string[]) => ["setpriv", `--reuid=${host.uid}`, `--regid=${host.gid}`, "--init-groups", "--", ...argv];
  const envOf = (o: { env?: Record<string, string> | undefined }) => ({ HOME: host.home, USER: host.name, LOGNAME: host.name, ...o.env });
  return {
    run: (argv, opts: ExecOptions = {}) => exec.run(wrap(argv), { ...opts, env: envOf(opts) }),
    stream: (argv, opts: ExecOptions = {}) => streamRun(exec, wrap(argv), { ...opts, env: envOf(opts) }),
    terminal: (argv, opts) => exec.terminal(wrap(argv), { ...opts, env: envOf(opts) }),
  } as Exec;
}

/**
 * An Exec for the host repo's git when the daemon is root and the repo belongs to someone else: git refuses such a repo
 * ("dubious ownership") unless told it is safe, and only protected config may say so. The bridge only reads the host
 * repo (remotes, refs, objects through its gate's alternates), so it keeps running as the daemon with exactly that
 * repo marked safe. runs: <argv> with GIT_CONFIG_COUNT/KEY/VALUE = safe.directory=<repo>
 */
export function safeRepoExec(exec: Exec, repo: string): Exec {
  const add = (env: Record<string, string> | undefined) => {
    const n = Number(env?.GIT_CONFIG_COUNT ?? "0");
    return { ...env, GIT_CONFIG_COUNT: String(n + 1), [`GIT_CONFIG_KEY_${n}`]: "safe.directory", [`GIT_CONFIG_VALUE_${n}`]: repo };
  };
  return {
    ...exec,
    run: (argv, opts = {}) => exec.run(argv, { ...opts, env: add(opts.env) }),
    stream: (argv, opts = {}) => streamRun(exec, argv, { ...opts, env: add(opts.env) }),
    terminal: (argv, opts) => exec.terminal(argv, { ...opts, env: add(opts.env) }),
  } as Exec;
}
