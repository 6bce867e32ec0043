// Running as the person sbx works for: who that is (sudo's caller, or sbx's own user) and an Exec that drops to them.
import { readFileSync } from "node:fs";
import type { HostUser } from "../drivers/backend";
import { SbxError } from "../core/errors";
import type { Env } from "./env";
import { streamRun, type Exec, type ExecOptions } from "./exec";

/**
 * The host user a user-account sandbox belongs to. Under `sudo` (root, with SUDO_UID) that is the invoking user, read
 * from the passwd file; otherwise the process's own user. Pure given the passwd text.
 */
export function hostUserFor(env: Env, passwd: string): HostUser {
  const entry = (pred: (f: string[]) => boolean) => passwd.split("\n").map((l) => l.split(":")).find((f) => f.length >= 7 && pred(f));
  const sudoUid = env.raw.SUDO_UID;
  if (env.uid === 0 && sudoUid !== undefined && /^\d+$/.test(sudoUid) && sudoUid !== "0") {
    const f = entry((f) => f[2] === sudoUid);
    if (!f) throw new SbxError("config", `sudo says you are uid ${sudoUid}, but that uid has no passwd entry`, { hint: "Run sbx as a user with a passwd entry." });
    return { name: f[0]!, uid: Number(f[2]), gid: Number(f[3]), home: f[5]!, shell: f[6]! };
  }
  const f = entry((f) => f[2] === String(env.uid));
  return {
    name: f?.[0] ?? env.userName,
    uid: env.uid,
    gid: env.gid,
    home: env.vars.HOME,
    shell: env.vars.SHELL ?? f?.[6] ?? "/bin/sh",
  };
}

/** Pure: the passwd entry of `uid` as a HostUser; refused when there is none. */
export function userByUid(passwd: string, uid: number): HostUser {
  const f = passwd.split("\n").map((l) => l.split(":")).find((f) => f.length >= 7 && f[2] === String(uid));
  if (!f) throw new SbxError("config", `uid ${uid} has no passwd entry`, { hint: "Run sbx as a user with a passwd entry." });
  return { name: f[0]!, uid, gid: Number(f[3]), home: f[5]!, shell: f[6]! };
}

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

/** An Exec whose commands run as `uid` (from root), for git in that person's repo. */
export function asUidExec(exec: Exec, uid: number, passwdFile = "/etc/passwd"): Exec {
  return hostUserExec(exec, userByUid(readFileSync(passwdFile, "utf8"), uid), 0);
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
