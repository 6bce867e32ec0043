// A throwaway normal user (in the docker group) for e2e tests of identity: sbx runs as users, not as root.
import { existsSync, readFileSync } from "node:fs";

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface TestUser {
  name: string;
  uid: number;
  gid: number;
  home: string;
  shell: string;
  /** Runs argv as this user with a clean environment (HOME, USER, LOGNAME, PATH, SHELL, plus `env`). */
  run(argv: string[], opts?: { cwd?: string; env?: Record<string, string>; stdin?: string }): RunResult;
  /** Same, without waiting. */
  spawn(argv: string[], opts?: { cwd?: string; env?: Record<string, string> }): Bun.Subprocess<"ignore", "pipe", "pipe">;
  /** The argv prefix that runs a command as this user (for tmux and the like). */
  prefix(env?: Record<string, string>): string[];
  remove(): void;
}

/** Why user-creating tests cannot run here, or undefined when they can. */
export function cannotCreateUsers(): string | undefined {
  if (process.getuid?.() !== 0) return "not root: cannot create a test user";
  if (!existsSync("/usr/sbin/useradd") || !existsSync("/usr/sbin/runuser")) return "useradd/runuser missing";
  return undefined;
}

function sh(argv: string[]): RunResult {
  const r = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

/** Creates `sbxt-<random>` (or `name`) with a home, in the docker group (when it exists), with the given login shell. */
export function createTestUser(opts: { shell?: string; groups?: string[]; name?: string } = {}): TestUser {
  const name = opts.name ?? `sbxt-${Math.random().toString(36).slice(2, 8)}`;
  // A fixed name left behind by a killed run is ours to replace.
  if (opts.name !== undefined && sh(["id", "-u", name]).code === 0) sh(["userdel", "--remove", "--force", name]);
  const shell = opts.shell ?? "/bin/bash";
  const groups = opts.groups ?? (sh(["getent", "group", "docker"]).code === 0 ? ["docker"] : []);
  const r = sh(["useradd", "--create-home", "--shell", shell, ...(groups.length ? ["--groups", groups.join(",")] : []), name]);
  if (r.code !== 0) throw new Error(`useradd ${name}: ${r.stderr}`);
  const entry = readFileSync("/etc/passwd", "utf8").split("\n").find((l) => l.startsWith(`${name}:`))!.split(":");
  const uid = Number(entry[2]);
  const gid = Number(entry[3]);
  const home = entry[5]!;
  const baseEnv = (env: Record<string, string> = {}) => ({
    HOME: home,
    USER: name,
    LOGNAME: name,
    SHELL: shell,
    PATH: "/usr/local/bin:/usr/bin:/bin",
    LANG: "C.UTF-8",
    ...env,
  });
  const prefix = (env?: Record<string, string>) => [
    "runuser", "-u", name, "--", "env", "-i", ...Object.entries(baseEnv(env)).map(([k, v]) => `${k}=${v}`),
  ];
  return {
    name, uid, gid, home, shell,
    prefix,
    run(argv, o = {}) {
      const p = Bun.spawnSync([...prefix(o.env), ...argv], {
        cwd: o.cwd ?? home,
        stdin: o.stdin === undefined ? "ignore" : Buffer.from(o.stdin),
        stdout: "pipe",
        stderr: "pipe",
      });
      return { code: p.exitCode ?? -1, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
    },
    spawn(argv, o = {}) {
      return Bun.spawn([...prefix(o.env), ...argv], { cwd: o.cwd ?? home, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    },
    remove() {
      sh(["userdel", "--remove", "--force", name]);
    },
  };
}
