// Runs the controller: lock, store, reconcile, control socket, and a clean stop (guards closed, sandboxes left as they are).
import { join } from "node:path";
import type { Hono } from "hono";
import { Store } from "../store/store";
import type { BackendKind, Sandbox } from "../core/schemas";
import { stateOfView, type SandboxState } from "../core/sandbox-state";
import type { Env } from "../sys/env";
import type { Exec } from "../sys/exec";
import type { Paths } from "../sys/paths";
import { agentService } from "../agents/service";
import { createApp } from "./app";
import { Controller, type Backends, type ControllerDeps, type ReconcileReport } from "./controller";
import { ExecAgents, execAgentGuard } from "./exec-agents";
import { PortForwards } from "./port-forwards";
import { LimitWatch } from "./limit-watch";
import type { SandboxGuard } from "../guards/guards";
import type { Hosted } from "./hosted";
import { acquireLock, type DaemonLock } from "./lock";
import type { Logger } from "./log";
import { API_VERSION, type Health } from "./protocol";
import { clearStaleSocket, ensurePrivateDir, serveControl, type ControlServer } from "./server";
import { SessionManager } from "./sessions";
import { defaultSpecBuilder, type SpecBuilder } from "./spec";
import { controllerSupervisor } from "./supervisor";
import type { PolicyService } from "../policy/service";
import type { SandboxService } from "../sandboxes/service";

export interface DaemonDeps {
  env: Env;
  paths: Paths;
  exec: Exec;
  log: Logger;
  version: string;
  backends: Backends;
  guards: readonly SandboxGuard[];
  specFor?: SpecBuilder;
  bringUp?: ControllerDeps["bringUp"];
  prepareRun?: ControllerDeps["prepareRun"];
  /** Defaults to the store at paths.dbFile. */
  store?: Store;
  /** Starts the dashboard, chat bot and notifier: called once the lock is held, so a second daemon never starts them. */
  /** What the daemon hosts (dashboard, chat), given the store and each sandbox's state as the daemon sees it. */
  host?: (store: Store, stateOf: (sb: Sandbox) => SandboxState) => Hosted;
  /**
   * Runs once the lock is held and BEFORE reconcile starts any guard or sandbox: the user-account backends restore
   * their firewall rules here (fail closed after a reboot). A second daemon that lost the lock never runs it.
   */
  prepare?: (store: Store) => Promise<void>;
  /** The in-sandbox exec agents, when the components made them (a guard runs commands through them); else the daemon's own. */
  agents?: ExecAgents;
  /**
   * Daemon-wide background services (the kernel-log audit, the pf watchdog), started after prepare and stopped at
   * shutdown; `stopSandbox` stops one as `sbx stop` does (sessions told, guards down).
   */
  services?: (store: Store, stopSandbox: (row: Sandbox, why: string) => Promise<void>) => { stop(): Promise<void> };
  /** The sandbox service behind /v1/lifecycle/* (the daemon makes itself its supervisor). */
  service?: SandboxService;
  /** The allowlist and approvals behind /v1/policy/* (the dashboard and chat decide through the same one). */
  policy?: PolicyService;
  /** The sandbox whose guest account has a uid (named where a port it holds stops a forward). */
  guestOf?: (uid: number) => Promise<string | null>;
}

export interface RunningDaemon {
  readonly health: Health;
  /** Resolves when the first reconcile is done (routes other than /health wait for it). */
  readonly reconciled: Promise<ReconcileReport>;
  /** Stops accepting, ends sessions, stops guards, closes the store, releases the lock. Sandboxes keep running. */
  stop(reason: string): Promise<void>;
  readonly stopped: Promise<void>;
}

/** How often the daemon reads every active sandbox's limit counters (a file read or an engine inspect each). */
const LIMIT_WATCH_MS = 5000;

/** The lock file lives next to the control socket: one daemon per user and runtime dir. */
export function lockPath(paths: Paths): string {
  return join(paths.runtimeDir, "daemon.pid");
}

export async function startDaemon(deps: DaemonDeps): Promise<RunningDaemon> {
  const { paths, log } = deps;
  ensurePrivateDir(paths.runtimeDir, deps.env.uid);
  const lock: DaemonLock = acquireLock(lockPath(paths));
  let store: Store | undefined;
  let server: ControlServer | undefined;
  let controller: Controller | undefined;
  let sessions: SessionManager | undefined;
  let hosted: Hosted | null = null;
  let service: { stop(): Promise<void> } | null = null;
  let watch: LimitWatch | undefined;
  try {
    await clearStaleSocket(paths.controlSocket);
    store = deps.store ?? new Store(paths.dbFile);
    // The exec agents are the daemon's own, like sessions: every Docker sandbox's agent socket, last among its guards.
    const agents = deps.agents ?? new ExecAgents();
    // `sbx port`: host listeners carried into Docker sandboxes by their agents, up and down with the guards.
    const forwards = new PortForwards(agents, log, { exec: deps.exec, ...(deps.guestOf ? { guestOf: deps.guestOf } : {}) });
    controller = new Controller({
      store,
      backends: deps.backends,
      guards: [...deps.guards, execAgentGuard(agents), forwards.guard()],
      exec: deps.exec,
      paths,
      log,
      specFor: deps.specFor ?? defaultSpecBuilder(deps.env, paths),
      ...(deps.bringUp ? { bringUp: deps.bringUp } : {}),
      ...(deps.prepareRun ? { prepareRun: deps.prepareRun } : {}),
    });
    // Limits a sandbox runs into: read every 5 s, and when a command or session ends (which is then told).
    const limits = deps.service ? new LimitWatch({ service: deps.service, store, log }) : undefined;
    limits?.start(LIMIT_WATCH_MS);
    watch = limits;
    sessions = new SessionManager({ controller, exec: deps.exec, store, log, ...(limits ? { limits } : {}) });
    const health: Health = {
      ok: true,
      api: API_VERSION,
      pid: process.pid,
      version: deps.version,
      startedAt: Date.now(),
      socket: paths.controlSocket,
    };
    if (deps.prepare) await deps.prepare(store);
    const reconciled = controller.reconcile();
    const supervisor = controllerSupervisor(controller, sessions, agents, forwards);
    const rows = store;
    service = deps.services?.(store, async (row, why) => {
      await supervisor.stop(row, why);
      rows.setSandboxState(row.id, "stopped");
    }) ?? null;
    const ctl = controller;
    hosted = deps.host?.(store, (sb) => stateOfView(ctl.view(sb))) ?? null;
    const h = hosted;
    const lifecycle = deps.service?.withSupervisor(supervisor);
    const app = createApp({
      agents,
      ...(limits ? { limits } : {}),
      ...(lifecycle ? { service: lifecycle } : {}),
      ...(lifecycle && deps.policy ? { agentRuns: agentService(lifecycle, store, deps.policy, paths, deps.exec, deps.env, Object.keys(deps.backends) as BackendKind[]) } : {}),
      ...(deps.policy ? { policy: deps.policy } : {}),
      user: deps.env.userName,
      paths,
      hosted: () => h,
      controller,
      sessions,
      store,
      log,
      health: () => health,
      backends: Object.keys(deps.backends),
    });
    server = serveControl({ path: paths.controlSocket, fetch: gateOnReconcile(app, reconciled), sessions, log });
    log.info("daemon listening", {
      socket: paths.controlSocket,
      pid: process.pid,
      backends: Object.keys(deps.backends).join(",") || "none",
      guards: deps.guards.map((g) => g.name).join(",") || "none",
      ui: h?.uiOrigin() ?? "none",
      chat: h ? (h.chat().configured ? "configured" : "not set up") : "none",
    });

    let resolveStopped!: () => void;
    const stopped = new Promise<void>((r) => (resolveStopped = r));
    let stopping: Promise<void> | null = null;
    const c = controller;
    const s = sessions;
    const st = store;
    const srv = server;
    const ownsStore = deps.store === undefined;
    const svc = service;
    return {
      health,
      reconciled,
      stopped,
      stop(reason) {
        stopping ??= (async () => {
          log.info("daemon stopping", { reason });
          await srv.stop();
          watch?.stop();
          await h?.close();
          await s.closeAll();
          await reconciled.catch(() => {});
          await svc?.stop();
          await c.close();
          if (ownsStore) st.close();
          lock.release();
          log.info("daemon stopped", {});
          resolveStopped();
        })();
        return stopping;
      },
    };
  } catch (e) {
    watch?.stop();
    await server?.stop();
    await service?.stop();
    await hosted?.close();
    await controller?.close();
    if (deps.store === undefined) store?.close();
    lock.release();
    throw e;
  }
}

/** /v1 routes answer only once the first reconcile finished; /health answers at once (the CLI waits on it). */
function gateOnReconcile(app: Hono, reconciled: Promise<unknown>): (req: Request, server: unknown) => Promise<Response> {
  let done = false;
  const settle = () => void (done = true);
  void reconciled.then(settle, settle);
  return async (req, server) => {
    if (!done && new URL(req.url).pathname !== "/health") await reconciled.catch(() => {});
    return app.fetch(req, server);
  };
}
