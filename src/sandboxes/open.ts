// Opens the sandbox service over the store and the drivers this process may use (the CLI's side; the daemon composes its own).
import { readFileSync } from "node:fs";
import type { BackendKind } from "../core/schemas";
import type { Driver } from "../drivers/driver";
import { Store } from "../store/store";
import type { Env } from "../sys/env";
import type { Exec } from "../sys/exec";
import type { Paths } from "../sys/paths";
import { SandboxService, type DriverTable, type Supervisor } from "./service";

export interface OpenDeps {
  exec: Exec;
  env: Env;
  paths: Paths;
  log: (line: string) => void;
  progress?: (chunk: string) => void;
  /** Engine check seam (tests with a fake executor skip it). */
  checkEngine?: (exec: Exec) => Promise<void>;
  /** The daemon (CLI callers): guards up before a sandbox starts. */
  supervisor?: Supervisor;
}

export interface OpenService {
  service: SandboxService;
  store: Store;
  close(): void;
}

/**
 * The drivers of this platform: docker on Linux; the user-account driver of this OS (linux-user, which needs root, or
 * macos). Each is made (and for user accounts, probed) only when a sandbox of its kind is touched.
 */
export function driverTable(d: Pick<OpenDeps, "exec" | "env" | "paths" | "log" | "checkEngine">): DriverTable {
  const t: DriverTable = {};
  if (d.env.platform === "linux") {
    t.docker = async (): Promise<Driver> => {
      const { DockerDriver } = await import("../drivers/docker");
      return new DockerDriver({ exec: d.exec, env: d.env, paths: d.paths, ...(d.checkEngine ? { checkEngine: d.checkEngine } : {}) });
    };
  }
  // Registered whenever the OS has one: when it cannot run (not root, a tool missing) its probe says what is missing.
  const userKind: BackendKind | null = d.env.platform === "darwin" ? "macos" : d.env.platform === "linux" ? "linux-user" : null;
  if (userKind === "macos" || userKind === "linux-user") {
    t[userKind] = async (): Promise<Driver> => {
      const { UserAccountDriver, userBackendFor } = await import("../drivers/user-account");
      const backend = await userBackendFor(userKind, { ...d, warn: (m) => d.log(`warning: ${m}`) });
      return new UserAccountDriver({ exec: d.exec, env: d.env, paths: d.paths, backend });
    };
  }
  return t;
}

/** git in the host repo as the person sbx works for: the sudo caller when sbx runs as root for them, else sbx itself. */
async function repoExec(d: Pick<OpenDeps, "exec" | "env">): Promise<Exec> {
  if (d.env.uid !== 0 || d.env.raw.SUDO_UID === undefined) return d.exec;
  const { hostUserExec, hostUserFor } = await import("../drivers/user-account");
  return hostUserExec(d.exec, hostUserFor(d.env, readFileSync("/etc/passwd", "utf8")), d.env.uid);
}

/** Opens the store and the service over it; call close() when done. */
export async function openService(d: OpenDeps): Promise<OpenService> {
  const store = new Store(d.paths.dbFile);
  const service = new SandboxService({
    exec: d.exec,
    env: d.env,
    paths: d.paths,
    store,
    drivers: driverTable(d),
    defaultKind: d.env.platform === "darwin" ? "macos" : "docker",
    repoExec: await repoExec(d),
    log: d.log,
    ...(d.progress ? { progress: d.progress } : {}),
    ...(d.supervisor ? { supervisor: d.supervisor } : {}),
  });
  return { service, store, close: () => store.close() };
}

/** Runs fn with the service and closes the store afterwards. */
export async function withService<T>(d: OpenDeps, fn: (s: SandboxService) => Promise<T>): Promise<T> {
  const o = await openService(d);
  try {
    return await fn(o.service);
  } finally {
    o.close();
  }
}

/** Turns a stream of chunks into whole lines (for progress shown through a line-based logger). */
export function lineSplitter(emit: (line: string) => void): (chunk: string) => void {
  let buf = "";
  return (chunk) => {
    buf += chunk.replace(/\r\n/g, "\n");
    let i: number;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i).replace(/\r/g, "");
      buf = buf.slice(i + 1);
      if (line.trim() !== "") emit(line);
    }
  };
}

/** The deps a CLI verb needs from its context: logs and build progress go to stderr. */
export function cliDeps(ctx: { exec: Exec; env: Env; paths: Paths; render: { info(line: string): void } }): OpenDeps {
  return {
    exec: ctx.exec,
    env: ctx.env,
    paths: ctx.paths,
    log: (l) => ctx.render.info(l),
    progress: lineSplitter((l) => ctx.render.info(`  ${l}`)),
  };
}
