// Running and stopping a stored sandbox, and reconcile: the one bring-up order (guards up, the driver's prepare beside
// them, then the driver runs it, then the guards are told) and every write of a sandbox's state that comes with it.
import { trace } from "../sys/trace";
import type { ServiceStatus } from "../core/services";
import { existsSync, statSync } from "node:fs";
import { SbxError, toSbxError } from "../core/errors";
import type { BackendKind, Sandbox, SandboxState } from "../core/schemas";
import type { Observed, Phase, SandboxSpec } from "../core/spec";
import type { Driver, DriverReport } from "../drivers/driver";
import { baseIdentity, sandboxId } from "../drivers/identity";
import type { Store } from "../store/store";
import type { Logger } from "../sys/log";
import type { Paths } from "../sys/paths";
import type { SandboxHost } from "./host";

/** What the service last saw of a sandbox on the system ("unknown" until it looked). */
export type PhaseView = Phase | "unknown";

export interface ReconcileReport {
  guarded: string[];
  failed: string[];
  vanished: string[];
  adopted: string[];
  removed: string[];
  skipped: string[];
}

/** Whether an observed sandbox lives under another sandbox root (its driver reports its dir). */
export function isForeign(o: Observed, sandboxRoot: string): boolean {
  const dir = o.detail.dir;
  if (dir === undefined || dir === "") return false;
  return !(dir === sandboxRoot || dir.startsWith(sandboxRoot.endsWith("/") ? sandboxRoot : `${sandboxRoot}/`));
}

/** Serializes work per key in this process, so two requests on one sandbox never interleave (no polling between them). */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<unknown>>();

  /** Whether work on `key` is under way or queued. */
  busy(key: string): boolean {
    return this.tails.has(key);
  }

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => {});
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return next;
  }
}

export interface RunnerDeps {
  store: Store;
  paths: Paths;
  host?: SandboxHost | undefined;
  logger: Logger;
  /** The driver of a kind; refuses a kind this process cannot run. */
  driver(kind: BackendKind): Promise<Driver>;
  /** The kinds this process has a driver for. */
  kinds(): BackendKind[];
  /** Keeps what a driver learnt (image, shell) over the stored identity. */
  keepIdentity(id: number, identity: Record<string, unknown>): void;
  /** Progress and notes for the caller, and lifecycle audit rows, while a driver works. */
  report(rowId: number): DriverReport;
}

export class SandboxRunner {
  private readonly phases = new Map<number, PhaseView>();
  /** What the last look at the system found of each sandbox's services (a kind with services). */
  private readonly services = new Map<number, ServiceStatus[]>();
  /** The per-sandbox queue every lifecycle verb and reconcile go through (keyed by repo and name). */
  readonly serial = new KeyedMutex();

  constructor(private readonly d: RunnerDeps) {}

  phaseOf(row: Sandbox): PhaseView {
    return this.phases.get(row.id) ?? "unknown";
  }

  /** Its services as the last look at the system found them (refreshPhases); none when its kind has none. */
  servicesOf(row: Sandbox): ServiceStatus[] {
    return this.services.get(row.id) ?? [];
  }

  /** The socket-dir id of a row, also when its identity is unreadable (then as its kind would have made it). */
  sidOf(row: Sandbox): string {
    return baseIdentity(row)?.id ?? sandboxId(this.d.paths.sandboxRoot, row.repo, row.name);
  }

  private audit(row: Sandbox | null, action: string, detail: Record<string, unknown> = {}): void {
    try {
      this.d.store.audit({ sandboxId: row?.id ?? null, kind: "daemon", action, detail });
    } catch (e) {
      this.d.logger.error("audit write failed", { action, err: e });
    }
  }

  private setState(row: Sandbox, state: SandboxState): void {
    if (row.state !== state) this.d.store.setSandboxState(row.id, state);
  }

  /**
   * Brings a stored sandbox to running (the caller holds its lock): its guards up first, with the driver's prepare
   * beside them when they were down (Docker: make a missing container, not start it); then the driver runs it; then
   * the guards are told. A sandbox whose guards cannot come up stays fenced and does not run. A start (not reconcile,
   * which brings back what ran) counts as a use, is audited when it started something, and refuses to answer while a
   * guard is unhealthy.
   */
  async run(row: Sandbox, driver: Driver, report: DriverReport = this.d.report(row.id), why: "start" | "reconcile" = "start"): Promise<void> {
    const host = this.d.host;
    const spec = driver.spec(row);
    const up = host?.guardsUp(row) ?? false;
    const wasRunning = up && this.phases.get(row.id) === "running";
    // With guards up already (every command in a running sandbox starts it) there is nothing to overlap.
    trace(`d run guards+prepare up=${up}`);
    const [guarded, prepared] = await Promise.allSettled([host && Promise.resolve(host.raiseGuards(row, spec, driver)).finally(() => trace("d run guards up")), up ? undefined : Promise.resolve(driver.prepareRun(row)).finally(() => trace("d run prepared"))]);
    if (prepared.status === "rejected") this.d.logger.warn("preparing the sandbox beside its guards failed; starting it does it again", { sandbox: row.name, err: prepared.reason });
    if (guarded.status === "rejected") throw guarded.reason;
    trace("d run ensureRunning");
    const { identity } = await driver.ensureRunning(row, report);
    if (identity) this.d.keepIdentity(row.id, identity);
    this.phases.set(row.id, "running");
    await host?.started(row);
    trace("d run done");
    this.setState(row, "active");
    if (why === "reconcile") return;
    this.d.store.touchSandbox(row.id);
    // Every command in a running sandbox asks for a start (it converges); only one that started something is audited.
    if (!wasRunning) this.audit(row, "sandbox.started");
    if (host && !host.guarded(row)) {
      throw new SbxError("unavailable", `sandbox '${row.name}' started but its guards are not all up`, {
        hint: "See `sbx status` and the daemon log; nothing runs in a sandbox whose proxy and bridge are down.",
      });
    }
  }

  /**
   * Raises a new sandbox's guards ahead of its run (the caller holds its lock): a create does it beside the making of
   * its container. Nothing runs in it until `run`, which finds them up (or raises them, when this was never called).
   * `hostWork`: its host-side work still under way, which a guard that touches the host repo's sandbox refs waits for.
   */
  async raiseGuards(row: Sandbox, driver: Driver, hostWork?: Promise<unknown>): Promise<void> {
    await this.d.host?.raiseGuards(row, driver.spec(row), driver, hostWork);
  }

  /**
   * Stops a sandbox (the caller holds its lock): its sessions ended, each told `why`; the driver stops it; then its
   * guards go down (the other order would leave it running unguarded for a moment). Whether it was running, and how
   * many sessions ended.
   */
  async halt(row: Sandbox, driver: Driver, why?: string): Promise<{ running: boolean; sessions: number }> {
    const host = this.d.host;
    const was = this.phases.get(row.id) === "running";
    const sessions = host?.endSessions(row, why) ?? 0;
    const { changed } = await driver.stop(driver.spec(row));
    await host?.lowerGuards(row);
    this.phases.set(row.id, "stopped");
    this.setState(row, "stopped");
    this.audit(row, "sandbox.stopped");
    return { running: was || changed, sessions };
  }

  /** Stops a sandbox because something outside sbx made it unsafe (a watcher saw its firewall go); it is stopped even when part of that fails. */
  async stopBecause(row: Sandbox, why: string): Promise<void> {
    const key = `${row.repo}\0${row.name}`;
    await this.serial.run(key, async () => {
      try {
        await this.halt(row, await this.d.driver(row.backend), why);
      } finally {
        this.setState(row, "stopped");
      }
    });
  }

  /** The host lets go of a sandbox being removed: its sessions ended, guards down, socket dir gone. */
  async release(row: Sandbox, why?: string): Promise<void> {
    this.d.host?.endSessions(row, why);
    await this.d.host?.release(row);
    this.phases.delete(row.id);
    this.audit(row, "sandbox.released");
  }

  /** Re-reads what every driver holds, so `sbx status` shows the system, not the last reconcile. */
  async refreshPhases(): Promise<void> {
    const rows = this.d.store.listSandboxes();
    for (const kind of this.d.kinds()) {
      const mine = rows.filter((r) => r.backend === kind);
      if (mine.length === 0) continue;
      let observed: Observed[];
      try {
        observed = await (await this.d.driver(kind)).list();
      } catch (e) {
        this.d.logger.warn("backend list failed", { backend: kind, err: e });
        continue;
      }
      const byId = new Map(observed.map((o) => [o.id, o]));
      for (const r of mine) {
        const o = byId.get(this.sidOf(r));
        if (this.phases.has(r.id)) this.phases.set(r.id, o?.phase ?? "absent");
        if (o?.services?.length) this.services.set(r.id, o.services);
        else this.services.delete(r.id);
      }
    }
  }

  /**
   * Fail closed at daemon start, before any guard: every stored sandbox gets its fence back from its driver (user
   * accounts: block-all rules; Docker: nothing to do). Reconcile then brings active ones to run mode AFTER their guards
   * are up. A failure is logged and audited; that sandbox's start fails the same way later, so it stays fenced.
   */
  async fenceAll(): Promise<void> {
    const rows = this.d.store.listSandboxes();
    for (const kind of this.d.kinds()) {
      const driver = await this.d.driver(kind).catch(() => null);
      if (!driver) continue;
      const list = rows.filter((r) => r.backend === kind).flatMap((r) => {
        try {
          return [{ row: r, spec: driver.spec(r) }];
        } catch (e) {
          this.d.logger.error("unreadable sandbox record: left fenced", { sandbox: r.name, err: e });
          return [];
        }
      });
      if (list.length === 0) continue;
      try {
        const n = await driver.restoreBlockAll(list.map((l) => l.spec));
        this.d.logger.info("fences restored (block-all until guards are up)", { backend: kind, sandboxes: list.length, changed: n });
      } catch (e) {
        this.d.logger.error("could not restore the fences of sandboxes", { backend: kind, err: e });
        for (const { row } of list) this.d.store.audit({ sandboxId: row.id, kind: "daemon", action: "firewall.restore-failed", detail: { error: (e as Error).message } });
      }
    }
  }

  /**
   * Makes the picture match store and system: guards for every sandbox that is (or should be) running, up BEFORE its
   * driver is asked to start it; vanished sandboxes marked; leftovers cleaned; socket dirs a crash left removed.
   */
  async reconcile(): Promise<ReconcileReport> {
    const report: ReconcileReport = { guarded: [], failed: [], vanished: [], adopted: [], removed: [], skipped: [] };
    const log = this.d.logger.with({ phase: "reconcile" });
    const rows = this.d.store.listSandboxes();
    const keepSids = new Set<string>();
    const kinds = this.d.kinds();
    for (const kind of kinds) {
      const mine = rows.filter((r) => r.backend === kind);
      let driver: Driver;
      let observed: Observed[];
      try {
        driver = await this.d.driver(kind);
        observed = await driver.list();
      } catch (e) {
        // Without a view of the system nothing is started and nothing removed: fail closed.
        log.error("backend list failed: its sandboxes stay fenced", { backend: kind, err: e });
        for (const sb of mine) {
          report.failed.push(sb.name);
          keepSids.add(this.sidOf(sb));
        }
        continue;
      }
      const byId = new Map(observed.map((o) => [o.id, o]));
      const keep = new Set<string>();
      // Another state root's sandboxes (another user on a shared engine, another sbx home) are not this daemon's.
      // cleanup(keep) removes everything of sbx's outside `keep`, volumes included, so with any foreign sandbox in
      // sight it is skipped rather than risk removing someone else's (prune can still be run by hand).
      const foreign = observed.filter((o) => isForeign(o, this.d.paths.sandboxRoot));
      for (const sb of mine) {
        const sid = this.sidOf(sb);
        keep.add(sid);
        keepSids.add(sid);
        try {
          const spec = driver.spec(sb);
          const phase = byId.get(spec.id)?.phase ?? "absent";
          await this.serial.run(`${sb.repo}\0${sb.name}`, () => this.reconcileOne(sb, spec, phase, driver, report));
        } catch (e) {
          report.failed.push(sb.name);
          log.error("reconcile failed", { sandbox: sb.name, err: toSbxError(e).message });
        }
      }
      if (foreign.length > 0) {
        log.warn("cleanup skipped: the system holds sandboxes of another sbx state root", { backend: kind, foreign: foreign.length, example: foreign[0]!.detail.dir });
        continue;
      }
      try {
        for (const line of (await driver.cleanup(keep)).removed) {
          report.removed.push(line);
          log.info("removed leftover", { backend: kind, what: line });
          this.audit(null, "cleanup.removed", { backend: kind, what: line });
        }
      } catch (e) {
        log.error("cleanup failed", { backend: kind, err: e });
      }
    }
    for (const sb of rows) {
      if (kinds.includes(sb.backend)) continue;
      report.skipped.push(sb.name);
      keepSids.add(this.sidOf(sb));
      log.warn("no driver for sandbox: it stays fenced", { sandbox: sb.name, backend: sb.backend });
    }
    report.removed.push(...(this.d.host?.sweepSocketDirs(keepSids) ?? []));
    log.info("reconciled", { guarded: report.guarded.length, failed: report.failed.length, vanished: report.vanished.length, adopted: report.adopted.length, removed: report.removed.length });
    return report;
  }

  private async reconcileOne(sb: Sandbox, spec: SandboxSpec, phase: Phase, driver: Driver, report: ReconcileReport): Promise<void> {
    const log = this.d.logger.with({ phase: "reconcile", sandbox: sb.name });
    if (sb.state === "active" && phase === "absent") {
      // The system lost it. Its workspace decides: still there → stopped (`sbx run` re-creates it); gone → deleted.
      const next = existsSync(spec.dir) && statSync(spec.dir).isDirectory() ? "stopped" : "deleted";
      this.d.store.setSandboxState(sb.id, next);
      report.vanished.push(sb.name);
      log.warn("sandbox vanished from the system", { marked: next });
      this.audit(sb, "reconcile.vanished", { marked: next });
      this.phases.set(sb.id, "absent");
      return;
    }
    if (sb.state !== "active" && phase !== "running") {
      this.phases.set(sb.id, phase);
      return;
    }
    if (sb.state !== "active") {
      // Running although the store says otherwise: it gets its guards (never left running unguarded) and is active again.
      this.d.store.setSandboxState(sb.id, "active");
      report.adopted.push(sb.name);
      log.warn("sandbox running although the store says it is not: adopted", { was: sb.state });
      this.audit(sb, "reconcile.adopted", { was: sb.state });
    }
    const live = this.d.store.getSandbox(sb.id) ?? sb;
    this.phases.set(sb.id, phase);
    try {
      // Guards first: only once they are up may the driver start it and put its rules back in run mode.
      await this.run(live, driver, this.d.report(live.id), "reconcile");
      report.guarded.push(sb.name);
      this.audit(live, "reconcile.guarded", { was: phase });
    } catch (e) {
      if (phase === "running") {
        // Fail closed: a sandbox whose guards could not come back must not keep running.
        try {
          await driver.stop(spec);
          log.warn("stopped sandbox whose guards failed", {});
        } catch (e2) {
          log.error("could not stop unguarded sandbox", { err: e2 });
        }
        this.phases.set(sb.id, "stopped");
      }
      throw e;
    }
  }
}
