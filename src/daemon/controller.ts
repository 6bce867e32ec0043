// The supervisor: one record per sandbox (guards, observed phase); reconcile on start; guards go up before a sandbox runs and it is fenced when they are down.
import { existsSync, lstatSync, mkdirSync, readdirSync, rmSync, statSync, chmodSync } from "node:fs";
import { join } from "node:path";
import type { Backend, Observed, SandboxSpec } from "../drivers/backend";
import { SbxError, toSbxError } from "../core/errors";
import type { BackendKind, Sandbox } from "../core/schemas";
import type { Store } from "../store/store";
import type { Exec } from "../sys/exec";
import type { Paths } from "../sys/paths";
import { notifyStarted, startGuards, stopGuards, type SandboxGuard, type StartedGuard } from "../guards/guards";
import { createProgress } from "../lifecycle/lock";
import { SandboxLogBudget, type Logger } from "./log";
import type { SandboxRef, SandboxView } from "./protocol";
import type { SpecBuilder } from "./spec";

export type Backends = Partial<Record<BackendKind, Backend>>;

type GuardState = "down" | "up" | "failed";

interface Record_ {
  sandbox: Sandbox;
  spec: SandboxSpec;
  started: StartedGuard[];
  state: GuardState;
  phase: SandboxView["phase"];
  error?: string;
}

export interface ControllerDeps {
  store: Store;
  backends: Backends;
  guards: readonly SandboxGuard[];
  exec: Exec;
  paths: Paths;
  log: Logger;
  specFor: SpecBuilder;
  /**
   * Brings a guarded sandbox to running and returns the spec it now runs with (default: `backend.apply(spec)`).
   * The lifecycle supplies its own (rebuild a missing image, resolve the shell) so daemon and CLI converge alike.
   */
  bringUp?: (sandbox: Sandbox, spec: SandboxSpec, backend: Backend) => Promise<SandboxSpec>;
  /**
   * Work that may run WHILE the guards come up because nothing runs in the sandbox by it (Docker: make the container,
   * not start it). Its failure is logged and left to bringUp, which does the same work and reports it.
   */
  prepareRun?: (sandbox: Sandbox) => Promise<void>;
}

export interface ReconcileReport {
  guarded: string[];
  failed: string[];
  vanished: string[];
  adopted: string[];
  removed: string[];
  skipped: string[];
}

/** Whether an observed sandbox lives under another sandbox root (its backend reports its dir). */
export function isForeign(o: Observed, sandboxRoot: string): boolean {
  const dir = o.detail.dir;
  if (dir === undefined || dir === "") return false;
  return !(dir === sandboxRoot || dir.startsWith(sandboxRoot.endsWith("/") ? sandboxRoot : `${sandboxRoot}/`));
}

/** Serializes operations per key so two requests on one sandbox never interleave. */
class KeyedMutex {
  private readonly tails = new Map<string, Promise<unknown>>();
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

export class Controller {
  private readonly records = new Map<number, Record_>();
  private readonly mutex = new KeyedMutex();
  /** What each sandbox's guards may write to the daemon's log (a burst, then a line a second). */
  private readonly logBudget = new SandboxLogBudget();
  private closed = false;

  constructor(private readonly deps: ControllerDeps) {}

  private async bringUp(sb: Sandbox, spec: SandboxSpec, backend: Backend): Promise<SandboxSpec> {
    if (this.deps.bringUp) return this.deps.bringUp(sb, spec, backend);
    await backend.apply(spec);
    return spec;
  }

  get guardNames(): string[] {
    return this.deps.guards.map((g) => g.name);
  }

  // ── lookups ────────────────────────────────────────────────────────────

  /** The one live sandbox a name (and optional repo) refers to. */
  resolve(ref: SandboxRef): Sandbox {
    const matches = this.deps.store.listSandboxes(ref.repo ? { repo: ref.repo } : {}).filter((s) => s.name === ref.name);
    if (matches.length === 0) {
      throw new SbxError("not_found", `no sandbox named '${ref.name}'${ref.repo ? ` for ${ref.repo}` : ""}`, {
        hint: "Run `sbx list` to see your sandboxes, or `sbx create <name>` to make one.",
      });
    }
    if (matches.length > 1) {
      throw new SbxError("conflict", `${matches.length} sandboxes are named '${ref.name}' (${matches.map((m) => m.repo).join(", ")})`, {
        hint: "Run the command from inside the repo, or pass --repo <path>.",
      });
    }
    return matches[0]!;
  }

  /** Throws unless every guard of this sandbox is up: nothing runs in a sandbox without its proxy and bridge. */
  requireGuarded(sb: Sandbox): Record_ {
    const r = this.records.get(sb.id);
    if (!r || r.state !== "up") {
      throw new SbxError("unavailable", `sandbox '${sb.name}' is fenced: its guards (${this.guardNames.join(", ") || "none"}) are not up`, {
        hint: r?.error
          ? `The daemon could not start them: ${r.error}. Fix that, then \`sbx run ${sb.name}\` (see \`sbx status\` and the daemon log).`
          : `Start it with \`sbx run ${sb.name}\`; \`sbx status\` shows its guards.`,
      });
    }
    const failing = r.started.map((s) => ({ name: s.name, h: s.handle.health() })).filter((x) => !x.h.ok);
    if (failing.length > 0) {
      throw new SbxError("unavailable", `sandbox '${sb.name}' is fenced: guard ${failing.map((f) => `${f.name} (${f.h.detail})`).join(", ")} is unhealthy`, {
        hint: "See `sbx status` and the daemon log; restarting the daemon re-creates the guards.",
      });
    }
    return r;
  }

  specOf(sb: Sandbox): SandboxSpec {
    return this.records.get(sb.id)?.spec ?? this.deps.specFor(sb);
  }

  backendFor(sb: Sandbox): Backend {
    const b = this.deps.backends[sb.backend];
    if (!b) {
      throw new SbxError("not_available", `this daemon has no '${sb.backend}' backend for sandbox '${sb.name}'`, {
        hint: "Run `sbx doctor` to see which backends work on this host.",
      });
    }
    return b;
  }

  // ── views ──────────────────────────────────────────────────────────────

  view(sb: Sandbox): SandboxView {
    const r = this.records.get(sb.id);
    const guards = this.deps.guards.map((g) => {
      const s = r?.started.find((x) => x.name === g.name);
      if (!s) return { name: g.name, ok: false, detail: r?.state === "failed" ? "not started" : "down" };
      const h = s.handle.health();
      return { name: g.name, ok: h.ok, detail: h.detail };
    });
    const spec = r?.spec ?? this.deps.specFor(sb);
    const creating = createProgress(this.deps.paths.stateDir, sb.repo, sb.name, spec.dir);
    return {
      id: sb.id,
      sid: spec.id,
      name: sb.name,
      repo: sb.repo,
      backend: sb.backend,
      state: sb.state,
      phase: r?.phase ?? "unknown",
      guarded: r?.state === "up" && guards.every((g) => g.ok),
      guards,
      ...(r?.error ? { error: r.error } : {}),
      ...(creating ? { creating } : {}),
    };
  }

  views(): SandboxView[] {
    return this.deps.store.listSandboxes().map((sb) => this.view(sb));
  }

  /** Re-reads what every backend holds, so `status` shows the system, not the last reconcile. */
  async refreshPhases(): Promise<void> {
    for (const [kind, backend] of Object.entries(this.deps.backends)) {
      let observed: Observed[];
      try {
        observed = await backend!.list();
      } catch (e) {
        this.deps.log.warn("backend list failed", { backend: kind, err: e });
        continue;
      }
      const byId = new Map(observed.map((o) => [o.id, o]));
      for (const r of this.records.values()) {
        if (r.sandbox.backend !== kind) continue;
        r.phase = byId.get(r.spec.id)?.phase ?? "absent";
      }
    }
  }

  // ── guards ─────────────────────────────────────────────────────────────

  private audit(sb: Sandbox | null, kind: string, action: string, detail: Record<string, unknown> = {}): void {
    try {
      this.deps.store.audit({ sandboxId: sb?.id ?? null, kind, action, detail });
    } catch (e) {
      this.deps.log.error("audit write failed", { kind, action, err: e });
    }
  }

  /** Makes the sandbox's socket dir (0700) and clears sockets a crashed daemon left (the lock says none is live). */
  private prepareSocketDir(spec: SandboxSpec): void {
    mkdirSync(join(this.deps.paths.runtimeDir, "sb"), { recursive: true, mode: 0o700 });
    mkdirSync(spec.sockets.dir, { recursive: true, mode: 0o700 });
    chmodSync(spec.sockets.dir, 0o700);
    for (const f of readdirSync(spec.sockets.dir)) {
      const p = join(spec.sockets.dir, f);
      if (lstatSync(p).isSocket()) rmSync(p, { force: true });
    }
  }

  /** Brings up every guard of one sandbox (idempotent); on failure the sandbox is left fenced and the error recorded. */
  private async guardUp(sb: Sandbox): Promise<Record_> {
    const existing = this.records.get(sb.id);
    if (existing?.state === "up") {
      existing.sandbox = sb;
      return existing;
    }
    if (this.closed) throw new SbxError("unavailable", "the daemon is shutting down", { hint: "Run the command again in a moment." });
    const spec = this.deps.specFor(sb);
    const rec: Record_ = existing ?? { sandbox: sb, spec, started: [], state: "down", phase: "unknown" };
    rec.sandbox = sb;
    rec.spec = spec;
    this.records.set(sb.id, rec);
    // The daemon's own lines go as they are; what the guards write (often at the sandbox's doing) takes its budget.
    const log = this.deps.log.with({ sandbox: sb.name, sid: spec.id });
    try {
      this.prepareSocketDir(spec);
      rec.started = await startGuards(this.deps.guards, {
        sandbox: sb,
        spec,
        sockets: spec.sockets,
        store: this.deps.store,
        exec: this.deps.exec,
        paths: this.deps.paths,
        log: this.logBudget.logger(log, sb.id),
        audit: (action, detail) => this.audit(sb, "guard", action, detail ?? {}),
      });
      rec.state = "up";
      delete rec.error;
      log.info("guards up", { guards: this.guardNames.join(",") || "none" });
      return rec;
    } catch (e) {
      rec.state = "failed";
      rec.started = [];
      rec.error = e instanceof Error ? e.message : String(e);
      log.error("guards failed: sandbox fenced", { err: rec.error });
      this.audit(sb, "daemon", "guards.failed", { error: rec.error });
      // A guard that knows what to do about it (a port held by another process) says so; else the general word.
      const cause = e instanceof Error ? e.cause : undefined;
      const own = cause instanceof SbxError ? cause.hint : undefined;
      throw new SbxError("unavailable", `sandbox '${sb.name}' cannot run: ${rec.error}`, {
        hint: own ?? "Nothing runs in a sandbox whose proxy and bridge are not up. See the daemon log, fix the cause, then `sbx run` it again.",
      });
    }
  }

  private async guardDown(id: number): Promise<void> {
    const rec = this.records.get(id);
    if (!rec) return;
    const started = rec.started;
    rec.started = [];
    rec.state = "down";
    const log = this.deps.log.with({ sandbox: rec.sandbox.name });
    await stopGuards(started, this.logBudget.logger(log, id));
    this.logBudget.flush(log, id);
    try {
      this.prepareSocketDir(rec.spec);
    } catch {
      /* best effort: the dir may be gone already */
    }
  }

  // ── lifecycle requests ────────────────────────────────────────────────

  /** Guards first, then the backend: a sandbox never runs before its proxy and bridge are up. */
  async start(ref: SandboxRef): Promise<SandboxView> {
    const sb0 = this.resolve(ref);
    return this.mutex.run(String(sb0.id), async () => {
      const sb = this.resolve(ref);
      const backend = this.backendFor(sb);
      // Only a start that brings guards up has time to spare beside them; with guards up already (every command in a
      // running sandbox) there is nothing to overlap, and bringUp does what is missing.
      const was = this.records.get(sb.id);
      const wasRunning = was?.state === "up" && was.phase === "running";
      const prepare = was?.state === "up" ? undefined : this.deps.prepareRun?.(sb);
      const [guarded, prepared] = await Promise.allSettled([this.guardUp(sb), prepare]);
      if (prepared.status === "rejected") this.deps.log.warn("preparing the sandbox beside its guards failed; starting it does it again", { sandbox: sb.name, err: prepared.reason });
      if (guarded.status === "rejected") throw guarded.reason;
      const rec = guarded.value;
      rec.spec = await this.bringUp(sb, rec.spec, backend);
      rec.phase = "running";
      await notifyStarted(rec.started, this.logBudget.logger(this.deps.log.with({ sandbox: sb.name }), sb.id));
      if (sb.state !== "active") this.deps.store.setSandboxState(sb.id, "active");
      this.deps.store.touchSandbox(sb.id);
      // Every command in a running sandbox asks for a start (it converges); only one that started something is audited.
      if (!wasRunning) this.audit(sb, "daemon", "sandbox.started");
      return this.view(this.deps.store.getSandbox(sb.id)!);
    });
  }

  /** Stops the sandbox, then its guards (the other order would leave it running unguarded for a moment). */
  async stop(ref: SandboxRef): Promise<SandboxView> {
    const sb0 = this.resolve(ref);
    return this.mutex.run(String(sb0.id), async () => {
      const sb = this.resolve(ref);
      const backend = this.backendFor(sb);
      const spec = this.specOf(sb);
      await backend.stop(spec);
      await this.guardDown(sb.id);
      const rec = this.records.get(sb.id);
      if (rec) rec.phase = "stopped";
      this.deps.store.setSandboxState(sb.id, "stopped");
      this.audit(sb, "daemon", "sandbox.stopped");
      return this.view(this.deps.store.getSandbox(sb.id)!);
    });
  }

  /** Drops the daemon's hold on a sandbox being removed (its guards stop; the backend's remove is the caller's). */
  async release(ref: SandboxRef): Promise<void> {
    const sb = this.resolve(ref);
    await this.mutex.run(String(sb.id), async () => {
      await this.guardDown(sb.id);
      const rec = this.records.get(sb.id);
      this.records.delete(sb.id);
      if (rec) rmSync(rec.spec.sockets.dir, { recursive: true, force: true });
      this.audit(sb, "daemon", "sandbox.released");
    });
  }

  // ── reconcile ─────────────────────────────────────────────────────────

  /**
   * Makes the daemon's picture match store and system: guards for every sandbox that is (or should be)
   * running, applied BEFORE the backend is asked to start it; vanished sandboxes marked; leftovers cleaned.
   */
  async reconcile(): Promise<ReconcileReport> {
    const report: ReconcileReport = { guarded: [], failed: [], vanished: [], adopted: [], removed: [], skipped: [] };
    const log = this.deps.log.with({ phase: "reconcile" });
    const rows = this.deps.store.listSandboxes();
    const keepSids = new Set<string>();
    for (const kind of Object.keys(this.deps.backends) as BackendKind[]) {
      const backend = this.deps.backends[kind]!;
      const mine = rows.filter((r) => r.backend === kind);
      let observed: Observed[];
      try {
        observed = await backend.list();
      } catch (e) {
        // Without a view of the system nothing is started and nothing removed: fail closed.
        log.error("backend list failed: its sandboxes stay fenced", { backend: kind, err: e });
        for (const sb of mine) report.failed.push(sb.name);
        for (const sb of mine) keepSids.add(this.deps.specFor(sb).id);
        continue;
      }
      const byId = new Map(observed.map((o) => [o.id, o]));
      const keep = new Set<string>();
      // Another state root's sandboxes (another user on a shared engine, another sbx home) are not this daemon's.
      // Backend.cleanup(keep) removes everything of sbx's outside `keep`, volumes included, so with any foreign
      // sandbox in sight it is skipped rather than risk removing someone else's (prune can still be run by hand).
      const foreign = observed.filter((o) => isForeign(o, this.deps.paths.sandboxRoot));
      for (const sb of mine) {
        const spec = this.deps.specFor(sb);
        keep.add(spec.id);
        keepSids.add(spec.id);
        const obs = byId.get(spec.id);
        const phase = obs?.phase ?? "absent";
        try {
          await this.mutex.run(String(sb.id), () => this.reconcileOne(sb, spec, phase, backend, report));
        } catch (e) {
          report.failed.push(sb.name);
          log.error("reconcile failed", { sandbox: sb.name, err: toSbxError(e).message });
        }
      }
      if (foreign.length > 0) {
        log.warn("cleanup skipped: the backend holds sandboxes of another sbx state root", {
          backend: kind,
          foreign: foreign.length,
          example: foreign[0]!.detail.dir,
        });
        continue;
      }
      try {
        const cleaned = await backend.cleanup(keep);
        for (const line of cleaned.removed) {
          report.removed.push(line);
          log.info("removed leftover", { backend: kind, what: line });
          this.audit(null, "daemon", "cleanup.removed", { backend: kind, what: line });
        }
      } catch (e) {
        log.error("backend cleanup failed", { backend: kind, err: e });
      }
    }
    for (const sb of rows) {
      if (!this.deps.backends[sb.backend]) {
        report.skipped.push(sb.name);
        keepSids.add(this.deps.specFor(sb).id);
        log.warn("no backend for sandbox: it stays fenced", { sandbox: sb.name, backend: sb.backend });
      }
    }
    this.removeStaleSocketDirs(keepSids, report);
    log.info("reconciled", {
      guarded: report.guarded.length,
      failed: report.failed.length,
      vanished: report.vanished.length,
      adopted: report.adopted.length,
      removed: report.removed.length,
    });
    return report;
  }

  private async reconcileOne(sb: Sandbox, spec: SandboxSpec, phase: Observed["phase"], backend: Backend, report: ReconcileReport): Promise<void> {
    const log = this.deps.log.with({ phase: "reconcile", sandbox: sb.name });
    const rec = (): Record_ | undefined => this.records.get(sb.id);
    if (sb.state === "active" && phase === "absent") {
      // The system lost it. Its workspace decides: still there → stopped (`sbx run` re-creates it); gone → deleted.
      const next = existsSync(spec.dir) && statSync(spec.dir).isDirectory() ? "stopped" : "deleted";
      this.deps.store.setSandboxState(sb.id, next);
      report.vanished.push(sb.name);
      log.warn("sandbox vanished from the system", { marked: next });
      this.audit(sb, "daemon", "reconcile.vanished", { marked: next });
      this.records.set(sb.id, { sandbox: { ...sb, state: next }, spec, started: [], state: "down", phase: "absent" });
      return;
    }
    if (sb.state === "active" || phase === "running") {
      if (sb.state !== "active") {
        // Running although the store says otherwise: it gets its guards (never left running unguarded) and is active again.
        this.deps.store.setSandboxState(sb.id, "active");
        report.adopted.push(sb.name);
        log.warn("sandbox running although the store says it is not: adopted", { was: sb.state });
        this.audit(sb, "daemon", "reconcile.adopted", { was: sb.state });
      }
      const live = this.deps.store.getSandbox(sb.id) ?? sb;
      try {
        const r = await this.guardUp(live);
        // Guards are up: now (and only now) the backend may start it and re-apply its rules.
        r.spec = await this.bringUp(live, r.spec, backend);
        r.phase = "running";
        await notifyStarted(r.started, log);
        report.guarded.push(sb.name);
        this.audit(live, "daemon", "reconcile.guarded", { was: phase });
      } catch (e) {
        if (phase === "running") {
          // Fail closed: a sandbox whose guards could not come back must not keep running.
          try {
            await backend.stop(spec);
            log.warn("stopped sandbox whose guards failed", {});
          } catch (e2) {
            log.error("could not stop unguarded sandbox", { err: e2 });
          }
        }
        const r = rec();
        if (r) r.phase = phase === "running" ? "stopped" : phase;
        throw e;
      }
      return;
    }
    this.records.set(sb.id, { sandbox: sb, spec, started: [], state: "down", phase });
  }

  /** Socket dirs of sandboxes the store no longer knows are what a crash left: remove them. */
  private removeStaleSocketDirs(keep: ReadonlySet<string>, report: ReconcileReport): void {
    const root = join(this.deps.paths.runtimeDir, "sb");
    if (!existsSync(root)) return;
    for (const id of readdirSync(root)) {
      if (keep.has(id)) continue;
      rmSync(join(root, id), { recursive: true, force: true });
      report.removed.push(`socket dir ${id}`);
    }
  }

  /** Stops every guard; leaves sandboxes as they are (a stopped daemon means no network, not stopped sandboxes). */
  async close(): Promise<void> {
    this.closed = true;
    for (const r of this.records.values()) await this.guardDown(r.sandbox.id);
  }
}
