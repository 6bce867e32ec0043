// The process environment, read once at start-up, validated, and passed down; nothing else reads process.env.
import { readFileSync } from "node:fs";
import { userInfo } from "node:os";
import { z } from "zod";

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v === "" ? undefined : v));

/** Only absolute XDG paths count; the spec says relative ones are to be ignored. */
const xdgPath = optionalString.transform((v) => (v !== undefined && v.startsWith("/") ? v : undefined));

export const EnvSchema = z.object({
  HOME: z.string().min(1, "HOME is not set; sbx needs it to find its state and config"),
  USER: optionalString,
  LOGNAME: optionalString,
  SHELL: optionalString,
  PATH: z.string().default("/usr/local/bin:/usr/bin:/bin"),
  XDG_STATE_HOME: xdgPath,
  XDG_CONFIG_HOME: xdgPath,
  XDG_CACHE_HOME: xdgPath,
  XDG_RUNTIME_DIR: xdgPath,
  NO_COLOR: optionalString,
  FORCE_COLOR: optionalString,
  TERM: optionalString,
  DOCKER_HOST: optionalString,
  SBX_DEBUG: optionalString,
});

export interface Env {
  readonly vars: z.infer<typeof EnvSchema>;
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
  const parsed = EnvSchema.safeParse(source.vars);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw new Error(`bad environment: ${first?.path.join(".")}: ${first?.message}`);
  }
  const raw: Record<string, string> = {};
  for (const [k, v] of Object.entries(source.vars)) if (v !== undefined) raw[k] = v;
  const vars = parsed.data;
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
