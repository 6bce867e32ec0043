// The process environment, read once at start-up, validated, and passed down; nothing else reads process.env.
import { readFileSync } from "node:fs";
import { userInfo } from "node:os";
/*
 * Validated by hand, not with zod: every CLI call reads the environment, and loading zod costs ≈40 ms of
 * start-up (measured on the attach path). The rules are few: optional strings where empty means unset,
 * XDG paths that count only when absolute (the XDG spec), and HOME required.
 */

const OPTIONAL = [
  "USER", "LOGNAME", "SHELL", "NO_COLOR", "FORCE_COLOR", "TERM", "DOCKER_HOST", "SBX_DEBUG",
] as const;
const XDG = ["XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"] as const;
const DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin";

export type EnvVars = { HOME: string; PATH: string } & {
  [K in (typeof OPTIONAL)[number] | (typeof XDG)[number]]: string | undefined;
};

/** Parses the variables sbx uses; throws when HOME is missing. */
export function parseEnvVars(vars: Record<string, string | undefined>): EnvVars {
  const home = vars.HOME;
  if (home === undefined || home === "") throw new Error("HOME is not set; sbx needs it to find its state and config");
  const out: Record<string, string | undefined> = { HOME: home, PATH: vars.PATH || DEFAULT_PATH };
  for (const k of OPTIONAL) out[k] = vars[k] === "" ? undefined : vars[k];
  // Only absolute XDG paths count; the spec says relative ones are to be ignored.
  for (const k of XDG) out[k] = vars[k]?.startsWith("/") ? vars[k] : undefined;
  return out as EnvVars;
}

export interface Env {
  readonly vars: EnvVars;
  /** The raw environment, kept only so host commands (docker, git) inherit PATH, DOCKER_HOST, … */
  readonly raw: Readonly<Record<string, string>>;
  readonly uid: number;
  readonly gid: number;
  readonly userName: string;
  readonly platform: NodeJS.Platform;
}

export interface EnvSource {
  vars: Record<string, string | undefined>;
  uid: number;
  gid: number;
  platform: NodeJS.Platform;
  /** Fallback for the user name when neither USER nor LOGNAME is set. */
  osUserName?: () => string;
}

export function readEnv(source: EnvSource): Env {
  const vars = parseEnvVars(source.vars);
  const raw: Record<string, string> = {};
  for (const [k, v] of Object.entries(source.vars)) if (v !== undefined) raw[k] = v;
  const userName = vars.USER ?? vars.LOGNAME ?? source.osUserName?.() ?? `uid${source.uid}`;
  return { vars, raw, uid: source.uid, gid: source.gid, userName, platform: source.platform };
}

/** The login name of `uid` from /etc/passwd (os.userInfo() answers "unknown" under Bun when HOME is changed). */
export function passwdName(uid: number, passwd = "/etc/passwd"): string | undefined {
  try {
    for (const line of readFileSync(passwd, "utf8").split("\n")) {
      const f = line.split(":");
      if (f.length >= 3 && f[2] === String(uid) && f[0]) return f[0];
    }
  } catch {
    /* no passwd file */
  }
  return undefined;
}

/** The real environment of this process. Call once, in main or the daemon's composition root. */
export function processEnv(): Env {
  return readEnv({
    vars: process.env,
    uid: process.getuid?.() ?? 0,
    gid: process.getgid?.() ?? 0,
    platform: process.platform,
    osUserName: () => passwdName(process.getuid?.() ?? 0) ?? userInfo().username,
  });
}
