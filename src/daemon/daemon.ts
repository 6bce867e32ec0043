// Runs the daemon: lock, store, the sandbox service with the daemon as its host, reconcile, control socket, and a clean stop (guards closed, sandboxes left as they are).
import type { SessionSecretSource } from "../sandboxes/secret-env";
import { join } from "node:path";
import type { Hono } from "hono";
import { Store } from "../store/store";
import type { BackendKind, Sandbox } from "../core/schemas";
import type { Driver, WatchContext } from "../drivers/driver";
import { stateOfView, type SandboxState } from "../core/sandbox-state";
import type { Env } from "../sys/env";
import type { Exec } from "../sys/exec";
import type { Paths } from "../sys/paths";
import { agentService } from "../agents/service";
import { createApp } from "./app";
import { GuardHost } from "./guard-host";
import { ExecAgents, execAgentGuard } from "./exec-agents";
import { PortForwards } from "./port-forwards";
import { LimitWatch } from "./limit-watch";
import { LAPSE_SWEEP_MS, startLapseSweep } from "../policy/lapse";
import type { SandboxGuard } from "../guards/guards";
import type { Hosted } from "./hosted";
import { acquireLock, type DaemonLock } from "./lock";
import type { Logger } from "../sys/log";
import { API_VERSION, type Health } from "./protocol";
import { sandboxView } from "./views";
import { clearStaleSocket, ensurePrivateDir, serveControl, type ControlServer } from "./server";
import { SessionManager } from "./sessions";
import { daemonHost } from "./host";
import type { HostCapacity } from "../core/limits";
import type { PolicyService } from "../policy/service";
import { SandboxService } from "../sandboxes/service";
import type { ReconcileReport } from "../sandboxes/running";
import { lineSplitter } from "../core/lines";

export interface DaemonDeps {
  env: Env;
  paths: Paths;
  exec: Exec;
  log: Logger;
  version: string;
  /** One driver per kind this host runs: the sandbox service's table (a row of another kind stays fenced). */
  drivers: Partial<Record<BackendKind, Driver>>;
  /** The kind of a new sandbox when the caller names none (docker on Linux, macos on a Mac). */
  defaultKind: BackendKind;
  guards: readonly SandboxGuard[];
  /** Defaults to the store at paths.dbFile. */
  store?: Store;
  /** What the daemon hosts (dashboard, chat), given the store and each sandbox's state as the daemon sees it; started once the lock is held. */
  hosted?: (store: Store, stateOf: (sb: Sandbox) => SandboxState) => Hosted;
  /** The in-sandbox exec agents, when the components made them (a guard runs commands through them); else the daemon's own. */
  agents?: ExecAgents;
  /**
   * Where what the drivers' watchers see goes (Driver.watch: the kernel-log and pflog audits, the pf watchdog): the
   * live feed and the person's desktop. Without, the daemon starts no watcher.
   */
  watchers?: Pick<WatchContext, "blocked" | "notify">;
  /** The allowlist and approvals behind /v1/policy/* (the dashboard and chat decide through the same one). */
  policy?: PolicyService;
  /** This machine's memory and CPUs (limits' defaults; tests give their own). */
  capacity?: HostCapacity;
  /** The sandbox whose guest account has a uid (named where a port it holds stops a forward). */
  guestOf?: (uid: number) => Promise<string | null>;
  /** The secrets bound to hosts, as a new session or command gets them (secrets/bound.ts). */
  sessionSecrets?: SessionSecretSource;
  /** How the daemon downloads (agents): through the host's parent proxy where it applies (sys/parent.ts). */
  download?: typeof fetch;
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
  let guards: GuardHost | undefined;
  let sessions: SessionManager | undefined;
  let hosted: Hosted | null = null;
  let background: { stop(): Promise<void> } | null = null;
  let watch: LimitWatch | undefined;
  let lapse: { stop(): void } | undefined;
  try {
    await clearStaleSocket(paths.controlSocket);
    store = deps.store ?? new Store(paths.dbFile);
    // The exec agents are the daemon's own, like sessions: every Docker sandbox's agent socket, last among its guards.
    const agents = deps.agents ?? new ExecAgents();
    // `sbx port`: host listeners carried into Docker sandboxes by their agents, up and down with the guards.
    const forwards = new PortForwards(agents, log, { exec: deps.exec, ...(deps.guestOf ? { guestOf: deps.guestOf } : {}) });
    guards = new GuardHost({ store, guards: [...deps.guards, execAgentGuard(agents), forwards.guard()], exec: deps.exec, paths, log });
    // Sessions and limits ask the service (which sandbox a name means, a shell's argv, a sandbox's counters); the
    // service, made below with the daemon as its host, says when guards go up and down. Neither holds the other.
    let service!: SandboxService;
    // Limits a sandbox runs into: read every 5 s, and when a command or session ends (which is then told).
    const limits = new LimitWatch({ service: { counters: (row) => service.counters(row) }, store, log });
    watch = limits;
    sessions = new SessionManager({
      sandboxes: {
        resolve: (name, q) => service.resolve(name, q),
        terminalArgv: (row, req) => service.terminalArgv(row, req),
        hangUpSessions: (row, which) => service.hangUpSessions(row, which),
      },
      guards,
      exec: deps.exec,
      store,
      log,
      limits,
    });
    service = new SandboxService({
      exec: deps.exec,
      env: deps.env,
      paths,
      store,
      drivers: Object.fromEntries(Object.entries(deps.drivers).map(([k, v]) => [k, () => v])),
      defaultKind: deps.defaultKind,
      log: (l) => log.info(l),
      progress: lineSplitter((l) => log.info(l)),
      host: daemonHost(guards, sessions, agents, forwards),
      logger: log,
      ...(deps.capacity ? { capacity: deps.capacity } : {}),
      ...(deps.sessionSecrets ? { secrets: deps.sessionSecrets } : {}),
    });
    limits.start(LIMIT_WATCH_MS);
    // Entries allowed for a time or once: swept (said lapsed) now, for what lapsed while no daemon ran, and every few s.
    const policy = deps.policy;
    lapse = policy ? startLapseSweep(() => policy.sweep(), LAPSE_SWEEP_MS, (e) => log.warn("lapse sweep failed", { err: e })) : undefined;
    const health: Health = {
      ok: true,
      api: API_VERSION,
      pid: process.pid,
      version: deps.version,
      startedAt: Date.now(),
      socket: paths.controlSocket,
    };
    // Fail closed first: every sandbox fenced as its driver says, before reconcile brings any guard or sandbox up.
    await service.fence();
    const reconciled = service.reconcile();
    const watching = deps.watchers ? await service.watch({ log, ...deps.watchers }) : [];
    background = { stop: async () => void (await Promise.all(watching.map((w) => w.stop()))) };
    const g = guards;
    const views = (sb: Sandbox) => sandboxView(sb, service, g);
    hosted = deps.hosted?.(store, (sb) => stateOfView(views(sb))) ?? null;
    const h = hosted;
    const app = createApp({
      agents,
      limits,
      service,
      ...(deps.policy ? { agentRuns: agentService(service, store, deps.policy, paths, deps.exec, deps.env, Object.keys(deps.drivers) as BackendKind[], deps.download) } : {}),
      ...(deps.policy ? { policy: deps.policy } : {}),
      user: deps.env.userName,
      paths,
      hosted: () => h,
      guards,
      sessions,
      store,
      log,
      health: () => health,
      backends: Object.keys(deps.drivers),
    });
    server = serveControl({ path: paths.controlSocket, fetch: gateOnReconcile(app, reconciled), sessions, log });
    log.info("daemon listening", {
      socket: paths.controlSocket,
      pid: process.pid,
      backends: Object.keys(deps.drivers).join(",") || "none",
      guards: deps.guards.map((gd) => gd.name).join(",") || "none",
      ui: h?.uiOrigin() ?? "none",
      chat: h ? (h.chat().configured ? "configured" : "not set up") : "none",
    });

    let resolveStopped!: () => void;
    const stopped = new Promise<void>((r) => (resolveStopped = r));
    let stopping: Promise<void> | null = null;
    const s = sessions;
    const st = store;
    const srv = server;
    const ownsStore = deps.store === undefined;
    const bg = background;
    return {
      health,
      reconciled,
      stopped,
      stop(reason) {
        stopping ??= (async () => {
          log.info("daemon stopping", { reason });
          await srv.stop();
          watch?.stop();
          lapse?.stop();
          await h?.close();
          await s.closeAll();
          await reconciled.catch(() => {});
          await bg?.stop();
          await g.close();
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
    lapse?.stop();
    await server?.stop();
    await background?.stop();
    await hosted?.close();
    await guards?.close();
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
