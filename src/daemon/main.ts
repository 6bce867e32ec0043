// The daemon's composition root: env → paths → exec → store → backends → guards → servers. Guards and backends are registered here and nowhere else.
import { DockerBackend, engineSocket } from "../backend/docker/docker";
import { SandboxManager } from "../lifecycle/manager";
import { readSecrets, secretsFile } from "../secrets/store";
import { Store } from "../store/store";
import type { Env } from "../sys/env";
import { createExec, type Exec } from "../sys/exec";
import { pathsFor, type Paths } from "../sys/paths";
import { VERSION } from "../version";
import type { Backends, ControllerDeps } from "./controller";
import { bridgeGuard } from "./guard-bridge";
import { proxyGuard } from "./guard-proxy";
import { startDaemon } from "./daemon";
import type { SandboxGuard } from "./guards";
import { createLogger, type LogLevel, type Logger } from "./log";
import type { SpecBuilder } from "./spec";

export interface Components {
  backends: Backends;
  /** Started in this order for every sandbox, stopped in reverse; a sandbox runs only when all are up. */
  guards: SandboxGuard[];
  specFor?: SpecBuilder;
  /** How a guarded sandbox is brought to running (default: backend.apply). */
  bringUp?: ControllerDeps["bringUp"];
}

export interface ComponentDeps {
  env: Env;
  paths: Paths;
  exec: Exec;
  log: Logger;
  store: Store;
}

/**
 * The production registry: each backend and each per-sandbox service is added here, once.
 *   backends: docker (Linux); macos / linux-user join here when they land.
 *   guards:   proxy (egress + LLM keys), bridge (git/gh); ref sync joins here as `refSyncGuard(…)`.
 * A sandbox of a backend that is not registered stays fenced (see Controller).
 */
export function productionComponents(d: ComponentDeps): Components {
  const backends: Backends = {};
  let specFor: Components["specFor"];
  let bringUp: Components["bringUp"];
  if (d.env.platform === "linux") {
    const sock = engineSocket(d.env.vars.DOCKER_HOST);
    const docker = new DockerBackend(d.exec, sock === undefined ? {} : { apiSocket: sock });
    backends.docker = docker;
    // The lifecycle's own spec (image, shell, overlays from the stored identity), so daemon and CLI converge to one spec.
    const manager = new SandboxManager({ exec: d.exec, env: d.env, paths: d.paths, store: d.store, backend: docker, log: (l) => d.log.info(l) });
    specFor = (row) => manager.specFor(row);
    // ensureRunning rebuilds a missing image and resolves the user's shell (fish when theirs is fish).
    bringUp = (row) => manager.ensureRunning(row);
  }
  const secrets = () => {
    const fromEnv: Record<string, string> = {};
    for (const k of ["GH_TOKEN", "GITHUB_TOKEN"]) if (d.env.raw[k]) fromEnv[k] = d.env.raw[k]!;
    return { ...fromEnv, ...readSecrets(secretsFile(d.paths.configDir)) };
  };
  return {
    backends,
    guards: [proxyGuard(), bridgeGuard({ secrets, path: d.env.vars.PATH })],
    ...(specFor ? { specFor } : {}),
    ...(bringUp ? { bringUp } : {}),
  };
}

export interface RunOptions {
  env: Env;
  logLevel?: LogLevel;
  /** Where log lines go (stderr by default). */
  write?: (line: string) => void;
  /** Replaces the production registry (test entry scripts only). */
  components?: (deps: ComponentDeps) => Components;
  exec?: Exec;
}

/** Runs the daemon in the foreground until SIGTERM or SIGINT; returns the exit code. */
export async function runDaemonForeground(opts: RunOptions): Promise<number> {
  const { env } = opts;
  const paths = pathsFor(env);
  const exec = opts.exec ?? createExec(env.raw);
  const log = createLogger(opts.write ?? ((l) => void process.stderr.write(l)), opts.logLevel ?? "info");
  // Opened before the lock is taken: SQLite is safe across processes, and the components need it.
  const store = new Store(paths.dbFile);
  const comps = (opts.components ?? productionComponents)({ env, paths, exec, log, store });
  let daemon;
  try {
    daemon = await startDaemon({
      env,
      paths,
      exec,
      log,
      store,
      version: VERSION,
      backends: comps.backends,
      guards: comps.guards,
      ...(comps.specFor ? { specFor: comps.specFor } : {}),
      ...(comps.bringUp ? { bringUp: comps.bringUp } : {}),
    });
  } catch (e) {
    store.close();
    throw e;
  }
  const onSignal = (sig: NodeJS.Signals) => void daemon.stop(sig);
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  process.on("SIGHUP", onSignal);
  try {
    await daemon.reconciled.catch((e) => log.error("reconcile failed", { err: e }));
    await daemon.stopped;
  } finally {
    store.close();
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
    process.off("SIGHUP", onSignal);
  }
  return 0;
}
