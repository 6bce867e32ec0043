// Finds the daemon, or starts one in the background (detached, logging to paths.daemonLog) and waits for /health.
import { mkdirSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { SbxError } from "../core/errors";
import { BUN_NO_CWD_CONFIG } from "../sys/bun-args";
import { spawnDetached } from "../sys/exec";
import { pidAlive } from "../sys/proc";
import type { Paths } from "../sys/paths";
import { DaemonClient } from "./client";

export interface Launched {
  pid: number;
  /** Resolves with the exit code if it ends (a daemon that fails at start ends at once). */
  exited: Promise<number>;
}

/** Starts a long-lived process that outlives the caller. */
export type DetachedLauncher = (argv: readonly string[], opts: { logFile: string; env: Record<string, string> }) => Launched;

/**
 * runs: <argv> (the daemon) in its own session, in /, stdin from /dev/null, stdout+stderr appended to logFile
 * (sys/exec's spawnDetached, the one place detached processes are started).
 */
export const launchDetached: DetachedLauncher = (argv, opts) => {
  mkdirSync(dirname(opts.logFile), { recursive: true, mode: 0o700 });
  // From /, not the caller's directory (often a repo): the daemon holds no directory and reads nothing from it.
  return spawnDetached(argv, { env: opts.env, logFile: opts.logFile, cwd: "/" });
};

/** How to run sbx from this process: the compiled binary itself, or bun with the CLI's entry. */
export function sbxArgv(execPath = process.execPath): string[] {
  const exe = basename(execPath);
  if (exe === "bun" || exe.startsWith("bun-") || exe === "bun.exe") {
    return [execPath, ...BUN_NO_CWD_CONFIG, join(import.meta.dir, "..", "cli", "main.ts")];
  }
  return [execPath];
}

/** How to run `sbx daemon` from this process. */
export function defaultDaemonArgv(execPath = process.execPath): string[] {
  return [...sbxArgv(execPath), "daemon"];
}

export interface ConnectOptions {
  paths: Paths;
  env: Record<string, string>;
  /** Start a daemon when none answers (default true). */
  autoStart?: boolean;
  daemonArgv?: readonly string[];
  launch?: DetachedLauncher;
  timeoutMs?: number;
  /** Told when a daemon is being started (e.g. a line on stderr). */
  onStart?: (pid: number) => void;
}

/** The daemon's exit code when another daemon already holds its lock (SbxError "conflict"). */
const EXIT_ANOTHER_DAEMON = 75;

/** Whether a live process other than `ours` holds the daemon lock (`<runtime>/daemon.pid`, daemon/lock.ts). */
function anotherHolds(paths: Paths, ours: number): boolean {
  try {
    const holder = Number.parseInt(readFileSync(join(paths.runtimeDir, "daemon.pid"), "utf8").trim(), 10);
    return Number.isInteger(holder) && holder > 0 && holder !== ours && pidAlive(holder);
  } catch {
    return false;
  }
}

/** A client of a daemon that answers /health, starting one if needed. */
export async function connectDaemon(opts: ConnectOptions): Promise<DaemonClient> {
  const client = new DaemonClient(opts.paths.controlSocket);
  if (await client.health()) return client;
  if (opts.autoStart === false) {
    throw new SbxError("unavailable", `the sbx daemon is not running (no answer on ${opts.paths.controlSocket})`, {
      hint: "Start it with `sbx daemon`, or install it as a service: `sbx service install`.",
    });
  }
  const argv = opts.daemonArgv ?? defaultDaemonArgv();
  const { pid, exited } = (opts.launch ?? launchDetached)(argv, { logFile: opts.paths.daemonLog, env: opts.env });
  opts.onStart?.(pid);
  let exitCode: number | null = null;
  void exited.then((c) => (exitCode = c));
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const until = Date.now() + timeoutMs;
  let delay = 20;
  while (Date.now() < until) {
    await Bun.sleep(delay);
    delay = Math.min(delay * 2, 250);
    if (await client.health(500)) return client;
    if (exitCode !== null) {
      // It may have lost a race to another daemon that now answers.
      if (await client.health(500)) return client;
      // 75 with the lock held by another live daemon: several sbx commands started one each at once, and the winner
      // is still starting. Wait for it as for our own. (75 is also "a path in the way": then nobody holds the lock.)
      if (exitCode === EXIT_ANOTHER_DAEMON && anotherHolds(opts.paths, pid)) continue;
      throw new SbxError("unavailable", `the sbx daemon exited at start (code ${exitCode})`, {
        hint: `See its log: ${opts.paths.daemonLog}`,
      });
    }
  }
  throw new SbxError("unavailable", `started the sbx daemon (pid ${pid}) but it did not answer within ${Math.round(timeoutMs / 1000)} s`, {
    hint: `See its log: ${opts.paths.daemonLog}`,
  });
}
