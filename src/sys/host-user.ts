// Who the host user is (the person sbx works for), decided here and nowhere else: CLI, daemon, backends and lifecycle.
//
// Two answers, one rule. `selfUser` is the account this process runs as, as its environment says (a Docker container
// runs with exactly this uid). `hostUserOf` is the person: that same account, except when the process is root under
// sudo (SUDO_UID set and not 0), where it is sudo's caller, looked up in this platform's user directory. On a Mac
// that directory is Directory Services: /etc/passwd there lists only system accounts, never the people.
import { SbxError } from "../core/errors";
import type { Env } from "./env";
import type { Exec } from "./exec";

import type { HostUser } from "../core/spec";

export type { HostUser };

/** An account of this machine by uid or name, as its user directory knows it; null when there is none. */
export interface UserDirectory {
  byUid(uid: number): Promise<HostUser | null>;
  byName(name: string): Promise<HostUser | null>;
  /** Where it looks, for messages ("the name service (getent)", "Directory Services (dscl)"). */
  readonly source: string;
}

/** Names a user directory may be asked about: an account name, never an option or a path. */
const ACCOUNT_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}$/;

/** The process's own account, from its environment (USER/LOGNAME, HOME, SHELL): who sbx is when sudo is not involved. */
export function selfUser(env: Env): HostUser {
  return { name: env.userName, uid: env.uid, gid: env.gid, home: env.vars.HOME, shell: env.vars.SHELL ?? "/bin/sh" };
}

/**
 * sudo's caller when this process is root under sudo (SUDO_UID, set by sudo, not 0); undefined otherwise: not root,
 * root's own login, or a sudo from root to root. The CLI sends it to the daemon (`asUid`); `hostUserOf` looks it up.
 */
export function sudoCallerUid(env: Pick<Env, "uid" | "raw">): number | undefined {
  const s = env.raw.SUDO_UID;
  return env.uid === 0 && s !== undefined && /^[1-9]\d{0,9}$/.test(s) ? Number(s) : undefined;
}

/** The account behind `uid`, or a config error that says where sbx looked. */
export async function accountOf(users: UserDirectory, uid: number, why: string): Promise<HostUser> {
  const u = await users.byUid(uid);
  if (u === null) {
    throw new SbxError("config", `${why} uid ${uid}, but ${users.source} has no account with that uid`, {
      hint: "Run sbx as yourself, or with sudo from an account of this machine.",
    });
  }
  return u;
}

/**
 * The person sbx works for: sudo's caller (from the user directory) when this process is root under sudo, else this
 * process's own account. A SUDO_UID that names no account is refused, never taken as root.
 * runs: getent passwd <uid> (Linux) | dscl /Search -search /Users UniqueID <uid>, then -read (macOS); only under sudo
 */
export async function hostUserOf(env: Env, users: UserDirectory): Promise<HostUser> {
  const sudo = sudoCallerUid(env);
  return sudo === undefined ? selfUser(env) : accountOf(users, sudo, "sudo says you are");
}

/** This platform's user directory: Directory Services on macOS, the name service (passwd, LDAP, SSSD) elsewhere. */
export function userDirectory(exec: Exec, platform: NodeJS.Platform): UserDirectory {
  return platform === "darwin" ? directoryServices(exec) : nameService(exec);
}

/** Pure: a passwd line (`name:x:uid:gid:gecos:home:shell`) as an account; null when it is not one. */
export function parsePasswdLine(line: string): HostUser | null {
  const f = line.trim().split(":");
  if (f.length < 7 || !/^\d+$/.test(f[2]!) || !/^\d+$/.test(f[3]!) || !f[0] || !f[5]?.startsWith("/")) return null;
  return { name: f[0], uid: Number(f[2]), gid: Number(f[3]), home: f[5], shell: f[6] || "/bin/sh" };
}

/** runs: getent passwd <uid|name> (exit 2: no such account) */
function nameService(exec: Exec): UserDirectory {
  const get = async (key: string, match: (u: HostUser) => boolean) => {
    const r = await exec.run(["getent", "passwd", key], { check: false });
    if (r.exitCode === 2) return null;
    if (r.exitCode !== 0) {
      throw new SbxError("exec_failed", `\`getent passwd ${key}\` exited ${r.exitCode}: ${r.stderr.trim()}`, { hint: "Check this machine's name service (/etc/nsswitch.conf)." });
    }
    return r.stdout.split("\n").map(parsePasswdLine).find((u): u is HostUser => u !== null && match(u)) ?? null;
  };
  return {
    source: "the name service (getent passwd)",
    byUid: (uid) => get(String(uid), (u) => u.uid === uid),
    byName: async (name) => (ACCOUNT_NAME.test(name) && !/^\d+$/.test(name) ? get(name, (u) => u.name === name) : null),
  };
}

/** Pure: the account names in `dscl … -search /Users UniqueID <uid>` output (`alice\t\tUniqueID = (\n    501\n)`). */
export function parseDsclSearch(out: string): string[] {
  return out.split("\n").flatMap((l) => {
    const m = /^(\S+)\s+UniqueID = \(/.exec(l);
    return m ? [m[1]!] : [];
  });
}

/** Pure: `dscl … -read /Users/<name> UniqueID PrimaryGroupID NFSHomeDirectory UserShell` as an account; null if incomplete. */
export function parseDsclAccount(name: string, out: string): HostUser | null {
  const a = new Map<string, string>();
  let last: string | null = null;
  for (const line of out.split("\n")) {
    const m = /^(\w+):(?: (.*))?$/.exec(line);
    if (m) a.set((last = m[1]!), (m[2] ?? "").trim());
    else if (last !== null && line.startsWith(" ") && a.get(last) === "") a.set(last, line.trim());
  }
  const uid = a.get("UniqueID") ?? "";
  const gid = a.get("PrimaryGroupID") ?? "";
  const home = a.get("NFSHomeDirectory") ?? "";
  if (!/^\d+$/.test(uid) || !/^\d+$/.test(gid) || !home.startsWith("/")) return null;
  return { name, uid: Number(uid), gid: Number(gid), home, shell: a.get("UserShell") || "/bin/sh" };
}

/**
 * Directory Services through its search policy (`/Search`: the local node, then any directory the Mac is bound to),
 * the same accounts getpwuid(3) sees there.
 * runs: dscl /Search -search /Users UniqueID <uid>; dscl /Search -read /Users/<name> UniqueID PrimaryGroupID NFSHomeDirectory UserShell
 */
function directoryServices(exec: Exec): UserDirectory {
  const DSCL = "/usr/bin/dscl";
  const read = async (name: string): Promise<HostUser | null> => {
    if (!ACCOUNT_NAME.test(name)) return null;
    const r = await exec.run([DSCL, "/Search", "-read", `/Users/${name}`, "UniqueID", "PrimaryGroupID", "NFSHomeDirectory", "UserShell"], { check: false });
    return r.exitCode === 0 ? parseDsclAccount(name, r.stdout) : null;
  };
  return {
    source: "Directory Services (dscl)",
    byName: read,
    byUid: async (uid) => {
      const r = await exec.run([DSCL, "/Search", "-search", "/Users", "UniqueID", String(uid)], { check: false });
      for (const name of r.exitCode === 0 ? parseDsclSearch(r.stdout) : []) {
        const u = await read(name);
        if (u?.uid === uid) return u;
      }
      return null;
    },
  };
}

/**
 * Who sbx running as root on a Mac works for. A macOS sandbox belongs to a person: its account is `sbx_<person>_<id>`,
 * the sudoers rule lets that person (SUDO_USER in the root helper) run the helper, the daemon is their LaunchAgent and
 * reads their Keychain. So sbx never works as root there: `sudo sbx …` hands the whole command to sudo's caller
 * (cli/as-person.ts), and root with no caller (root's own login, a sudo from root to root) is refused.
 */
export async function macosPersonForRoot(env: Env, users: UserDirectory): Promise<HostUser> {
  const person = await hostUserOf(env, users);
  if (person.uid === 0) {
    throw new SbxError("permission", "on macOS sbx works for a person, not root: its sandboxes, its daemon and its sudo rule are theirs", {
      hint: "Run sbx from your own account (with or without sudo; sbx asks sudo itself for the steps that need root).",
    });
  }
  return person;
}
