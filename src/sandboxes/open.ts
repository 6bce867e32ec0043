// Composition of store + Docker backend + manager, for the daemon and for CLI verbs (which pass the daemon as supervisor).
import { DockerBackend, engineSocket } from "../backend/docker/docker";
import { Store } from "../store/store";
import type { Env } from "../sys/env";
import type { Exec } from "../sys/exec";
import type { Paths } from "../sys/paths";
import { SandboxManager, type ManagerDeps, type Supervisor } from "./manager";

export interface OpenDeps {
  exec: Exec;
  env: Env;
  paths: Paths;
  log: (line: string) => void;
  progress?: (chunk: string) => void;
  checkEngine?: ManagerDeps["checkEngine"];
  /** The daemon (CLI callers): guards up before a container starts. */
  supervisor?: Supervisor;
}

export interface OpenManager {
  manager: SandboxManager;
  store: Store;
  backend: DockerBackend;
  close(): void;
}

/** Opens the store and the Docker backend and returns a manager over them; call close() when done. */
export function openManager(d: OpenDeps): OpenManager {
  const store = new Store(d.paths.dbFile);
  const sock = engineSocket(d.env.vars.DOCKER_HOST);
  const backend = new DockerBackend(d.exec, { sandboxRoot: d.paths.sandboxRoot, ...(sock === undefined ? {} : { apiSocket: sock }) });
  const manager = new SandboxManager({
    exec: d.exec,
    env: d.env,
    paths: d.paths,
    store,
    backend,
    log: d.log,
    ...(d.progress ? { progress: d.progress } : {}),
    ...(d.checkEngine ? { checkEngine: d.checkEngine } : {}),
    ...(d.supervisor ? { supervisor: d.supervisor } : {}),
  });
  return { manager, store, backend, close: () => store.close() };
}

/** Runs fn with a manager and closes the store afterwards. */
export async function withManager<T>(d: OpenDeps, fn: (m: SandboxManager) => Promise<T>): Promise<T> {
  const o = openManager(d);
  try {
    return await fn(o.manager);
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
