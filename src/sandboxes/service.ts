// The one owner of a sandbox: create, start, session, stop, rm, prune, list and reconcile, for every kind, over the
// store and a driver per kind. Every write of a sandbox's row happens in src/sandboxes/ (and in running.ts, its
// bring-up order). This class is the one entry other code calls; its verbs live in files by concern: create.ts,
// start-stop.ts (start, session, stop, rebuild), settings.ts (limits, ports, publish, bridge), remove.ts (rm, prune),
// list.ts, last-sync.ts; what they share (drivers made, the per-name lock, a caller's output) is context.ts.
//
// Everything that is the same for every kind lives here once (name and repo checks, the per-name lock, the row, the
// order of teardown, the unsynced-work refusal, the last sync, prune's dir scan); what differs is behind `Driver`. The
// daemon hosts the guards and sessions and calls in; the service reaches them only through `SandboxHost` (host.ts).
import type { SandboxSpec } from "../core/spec";
import type { BackendKind, Sandbox } from "../core/schemas";
import type { Driver, DriverCaps, SessionSet, WatchContext, Watcher } from "../drivers/driver";
import type { LimitCounters, LimitsInput } from "../core/limits";
import type { BridgeAllow, BridgeSettings } from "../core/bridge-settings";
import type { PortForward, PortState } from "../core/ports";
import { baseIdentity } from "../drivers/identity";
import { sandboxDir } from "../sys/paths";
import type { Commit } from "../workspace/clone";
import { createProgress } from "../workspace/lock";
import { ServiceContext } from "./context";
import { createSandbox } from "./create";
import { listSandboxes } from "./list";
import { pruneSandboxes, rmSandbox } from "./remove";
import type { CreateRequest, IfSessions, LimitsReport, Named, Output, PruneReport, SandboxInfo, ServiceDeps, SessionRequest } from "./requests";
import type { SandboxQuery } from "./resolve";
import type { PhaseView, ReconcileReport } from "./running";
import { sandboxBridge, sandboxLimits, sandboxPorts, sandboxPublish, sandboxServices } from "./settings";
import type { ServiceStatus, ServiceView } from "../core/services";
import { sandboxLevel, type LevelReport } from "./level";
import type { LevelName } from "../core/levels";
import { rebuildSandbox, sessionArgv, startSandbox, stopSandbox } from "./start-stop";

export type { CreateRequest, DriverTable, IfSessions, LimitsReport, Named, Output, PruneReport, SandboxInfo, ServiceDeps, SessionRequest, Where } from "./requests";

export class SandboxService {
  private readonly c: ServiceContext;

  constructor(d: ServiceDeps) {
    this.c = new ServiceContext(d);
  }

  /** The kinds this process has a driver for. */
  kinds(): BackendKind[] {
    return this.c.kinds();
  }

  /** The driver of a kind; refuses, with what to do, a kind this process cannot run. */
  driver(kind: BackendKind): Promise<Driver> {
    return this.c.driver(kind);
  }

  /** The repo a caller means: the one around its cwd, or --repo (git run as the sudo caller when sbx is root for them). */
  repoOf(w: SandboxQuery & { cwd: string }): Promise<string> {
    return this.c.repoOf(w);
  }

  /** The sandbox a name means for this caller (resolve.ts: its repo's, else the one of that name anywhere), or the one not-found error. */
  resolve(name: string, q: SandboxQuery): Promise<Sandbox> {
    return this.c.resolve(name, q);
  }

  /** The live row of a sandbox and its driver, or a not_found error. */
  locate(name: string, q: SandboxQuery): Promise<{ repo: string; row: Sandbox; driver: Driver }> {
    return this.c.locate(name, q);
  }

  /** The spec a driver converges to, for a stored sandbox. */
  async specFor(row: Sandbox): Promise<SandboxSpec> {
    return (await this.c.driver(row.backend)).spec(row);
  }

  /** `sbx create` (create.ts): made, running, or (`ifExists: "reuse"`) the existing one started. */
  create(req: CreateRequest): Promise<{ sandbox: Sandbox; created: boolean }> {
    return createSandbox(this.c, req);
  }

  /**
   * Changes one field of a sandbox's stored identity from what it holds now (read and written in one transaction): how
   * another owner's setting that lives with the sandbox is kept (the agents `sbx run AGENT` installed there).
   */
  setIdentityField(row: Sandbox, field: string, next: (current: unknown) => unknown): void {
    const store = this.c.d.store;
    store.write(() => {
      const cur = store.getSandbox(row.id)?.identity ?? row.identity;
      store.updateIdentity(row.id, { ...cur, [field]: next(cur[field]) });
    });
  }

  /** The kernel's limit counters of a stored sandbox, or null (not running, no counters for its kind, unreadable). */
  async counters(row: Sandbox): Promise<LimitCounters | null> {
    const driver = await this.c.driver(row.backend);
    return driver.counters(driver.spec(row)).catch(() => null);
  }

  /** `sbx limits NAME [--memory …] [--cpus …] [--pids …]` (settings.ts). */
  limits(name: string, w: Named & { set?: LimitsInput }): Promise<LimitsReport> {
    return sandboxLimits(this.c, name, w);
  }

  /** `sbx port NAME [SPEC…] [--rm PORT…]` (settings.ts). */
  ports(name: string, w: Named & { add?: string[]; remove?: number[] }): Promise<{ name: string; ports: (PortState | (PortForward & { state: "stopped" }))[]; running: boolean; changed: boolean }> {
    return sandboxPorts(this.c, name, w);
  }

  /** `sbx services NAME [logs SVC | restart SVC]` (settings.ts). */
  services(name: string, w: Named & { action: "list" | "logs" | "restart"; service?: string; tail?: number }): Promise<{ name: string; services: ServiceView[]; logs?: string; restarted?: string }> {
    return sandboxServices(this.c, name, w);
  }

  /** `sbx publish NAME [ENDPOINT…]` (settings.ts). */
  publish(name: string, w: Named & { add?: string[]; remove?: string[] }): Promise<{ name: string; published: string[]; changed: boolean; answered: number }> {
    return sandboxPublish(this.c, name, w);
  }

  /** `sbx policy show|set NAME [--level L]` (level.ts). */
  level(name: string, w: Named & { level?: LevelName }): Promise<LevelReport> {
    return sandboxLevel(this.c, name, w);
  }

  /** `sbx bridge NAME` (settings.ts). */
  bridge(
    name: string,
    w: Named & { allow?: BridgeAllow[]; disallow?: BridgeAllow[]; protect?: string[]; unprotect?: string[]; addRepos?: string[]; dropRepos?: string[]; pushTo?: string[]; unpushTo?: string[]; prefix?: string; pushRemote?: string },
  ): Promise<{ name: string; settings: BridgeSettings; changed: boolean }> {
    return sandboxBridge(this.c, name, w);
  }

  /** Starts a stored sandbox under its lock (start-stop.ts); a start asked for meanwhile joins it. */
  start(name: string, q: Named): Promise<Sandbox> {
    return startSandbox(this.c, name, q);
  }

  /** `sbx rebuild NAME` (start-stop.ts). */
  rebuild(name: string, w: Named & { ifSessions?: IfSessions }): Promise<{ image: string; sessions: number }> {
    return rebuildSandbox(this.c, name, w);
  }

  /**
   * The variables a new session or command gets for the secrets bound to hosts (placeholders, sbx's CA to trust); what
   * could not be given is said to `out` (or the log), never silently left out.
   */
  secretEnv(row: Sandbox, spec?: SandboxSpec, out?: Output): Promise<Record<string, string>> {
    return this.c.secretEnv(row, spec, out);
  }

  /** Where a session of a caller in `callerCwd` starts inside the sandbox. */
  async sessionCwd(row: Sandbox, callerCwd: string): Promise<string> {
    const driver = await this.c.driver(row.backend);
    return driver.sessionCwd(driver.spec(row), callerCwd);
  }

  /** What the kind of a stored sandbox offers (its driver's capabilities). */
  async capsOf(row: Sandbox): Promise<DriverCaps> {
    return (await this.c.driver(row.backend)).caps;
  }

  /**
   * The host argv of a terminal session in a running sandbox (the daemon runs it under its own PTY, after checking the
   * guards); counts as a use of it.
   */
  async terminalArgv(row: Sandbox, req: { argv: string[]; cwd: string; env: Record<string, string>; session?: string }): Promise<string[]> {
    const driver = await this.c.driver(row.backend);
    const spec = driver.spec(row);
    const argv = driver.shellArgv(spec, {
      argv: req.argv,
      cwd: req.cwd,
      tty: true,
      env: { ...req.env, ...(await this.c.secretEnv(row, spec)) },
      ...(req.session !== undefined ? { session: req.session } : {}),
    });
    this.c.d.store.touchSandbox(row.id);
    return argv;
  }

  /** Hangs up terminal sessions whose process outlives its client (Driver.hangUpSessions); nothing for other kinds. */
  async hangUpSessions(row: Sandbox, which: SessionSet): Promise<void> {
    const driver = await this.c.driver(row.backend);
    await driver.hangUpSessions?.(driver.spec(row), which);
  }

  /** What the service last saw of a sandbox: its socket-dir id, its phase on the system, and a create under way or interrupted. */
  observed(row: Sandbox): { sid: string; phase: PhaseView; creating?: "in-progress" | "interrupted"; services?: ServiceStatus[] } {
    const paths = this.c.d.paths;
    const dir = baseIdentity(row)?.dir ?? sandboxDir(paths, row.repo, row.name);
    const creating = createProgress(paths.stateDir, row.repo, row.name, dir);
    const services = this.c.running.servicesOf(row);
    return { sid: this.c.running.sidOf(row), phase: this.c.running.phaseOf(row), ...(creating ? { creating } : {}), ...(services.length ? { services } : {}) };
  }

  /** Re-reads what every driver holds (`sbx status` shows the system, not the last reconcile). */
  refreshPhases(): Promise<void> {
    return this.c.running.refreshPhases();
  }

  /** At daemon start, before any guard: every stored sandbox fenced as its driver says (user accounts: block-all). */
  fence(): Promise<void> {
    return this.c.running.fenceAll();
  }

  /** Store and system made to agree (running.ts): run by the daemon at start, after `fence`, and on request. */
  reconcile(): Promise<ReconcileReport> {
    return this.c.running.reconcile();
  }

  /**
   * Starts what each kind must watch while the daemon runs (Driver.watch), with the store, and stops as `sbx stop` does
   * for a sandbox a watcher finds unsafe.
   */
  async watch(ctx: Pick<WatchContext, "log" | "blocked" | "notify">): Promise<Watcher[]> {
    const out: Watcher[] = [];
    for (const kind of this.c.kinds()) {
      const driver = await this.c.driver(kind).catch(() => null);
      out.push(...(driver?.watch?.({ ...ctx, store: this.c.d.store, stopSandbox: (row, why) => this.stopBecause(row, why) }) ?? []));
    }
    return out;
  }

  /** Stops a sandbox because something outside sbx made it unsafe (a watcher saw its firewall go), as `sbx stop` would. */
  stopBecause(row: Sandbox, why: string): Promise<void> {
    return this.c.running.stopBecause(row, why);
  }

  /** The host argv of a session (shell or command), starting the sandbox if it is stopped (start-stop.ts). */
  session(req: SessionRequest): Promise<string[]> {
    return sessionArgv(this.c, req);
  }

  /** `sbx stop` (start-stop.ts): sessions ended, the sandbox, then its guards, then one last sync. */
  stop(name: string, q: Named & { ifSessions?: IfSessions }): Promise<{ changed: boolean; sessions: number }> {
    return stopSandbox(this.c, name, q);
  }

  /** `sbx rm` (remove.ts): refused while it holds commits found nowhere else on the host, unless `force`. */
  rm(name: string, w: Named & { force?: boolean; ifSessions?: IfSessions }): Promise<{ lost: Commit[]; sessions: number }> {
    return rmSandbox(this.c, name, w);
  }

  /** `sbx prune` (remove.ts): what no live sandbox owns. */
  prune(opts: { dryRun?: boolean; out?: Output } = {}): Promise<PruneReport> {
    return pruneSandboxes(this.c, opts);
  }

  /** Sandboxes of every kind with their observed phase and unsynced commits (list.ts). */
  list(opts: { all?: boolean; repo?: string } = {}): Promise<SandboxInfo[]> {
    return listSandboxes(this.c, opts);
  }
}
