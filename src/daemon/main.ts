// The daemon's composition root: env → paths → exec → store → backends → guards → servers. Guards and backends are registered here and nowhere else.
import type { Backend } from "../backend/backend";
import type { Env } from "../sys/env";
import { createExec, type Exec } from "../sys/exec";
import { pathsFor, type Paths } from "../sys/paths";
import { VERSION } from "../version";
import type { Backends } from "./controller";
import { startDaemon } from "./daemon";
import type { SandboxGuard } from "./guards";
import { createLogger, type LogLevel, type Logger } from "./log";
import type { SpecBuilder } from "./spec";

export interface Components {
  backends: Backends;
  /** Started in this order for every sandbox, stopped in reverse; a sandbox runs only when all are up. */
  guards: SandboxGuard[];
  specFor?: SpecBuilder;
}

export interface ComponentDeps {
  env: Env;
  paths: Paths;
  exec: Exec;
  log: Logger;
}

/**
 * The production registry. Each backend and each per-sandbox service is added here, once:
 *   backends: { docker: new DockerBackend(exec, …) }           (src/backend/docker)
 *   guards:   [proxyGuard(…), bridgeGuard(…), refSyncGuard(…)] (src/proxy, src/bridge, ref sync)
 * Until a piece lands it is simply absent: a sandbox of a missing backend stays fenced (see Controller).
 */
export function productionComponents(_deps: ComponentDeps): Components {
  const backends: Partial<Record<Backend["kind"], Backend>> = {};
  return { backends, guards: [] };
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
  const comps = (opts.components ?? productionComponents)({ env, paths, exec, log });
  const daemon = await startDaemon({
    env,
    paths,
    exec,
    log,
    version: VERSION,
    backends: comps.backends,
    guards: comps.guards,
    ...(comps.specFor ? { specFor: comps.specFor } : {}),
  });
  const onSignal = (sig: NodeJS.Signals) => void daemon.stop(sig);
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  process.on("SIGHUP", onSignal);
  try {
    await daemon.reconciled.catch((e) => log.error("reconcile failed", { err: e }));
    await daemon.stopped;
  } finally {
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
    process.off("SIGHUP", onSignal);
  }
  return 0;
}
