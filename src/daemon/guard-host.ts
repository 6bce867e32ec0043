// The guards' bookkeeping: one record per sandbox (its started guards, up, down or failed, and why), its socket dir,
// and whether it is fenced. The sandbox service says when guards go up and down (through the daemon's SandboxHost);
// this file never starts, stops or writes a sandbox itself.
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { SbxError } from "../core/errors";
import type { Sandbox } from "../core/schemas";
import type { SandboxSpec } from "../core/spec";
import type { Driver } from "../drivers/driver";
import { notifyStarted, startGuards, stopGuards, type SandboxGuard, type StartedGuard } from "../guards/guards";
import type { Store } from "../store/store";
import type { Exec } from "../sys/exec";
import { SandboxLogBudget, type Logger } from "../sys/log";
import type { Paths } from "../sys/paths";
import type { GuardStatus } from "./protocol";

type GuardState = "down" | "up" | "failed";

interface GuardRecord {
  name: string;
  spec: SandboxSpec;
  started: StartedGuard[];
  state: GuardState;
  error?: string;
}

export interface GuardHostDeps {
  store: Store;
  guards: readonly SandboxGuard[];
  exec: Exec;
  paths: Paths;
  log: Logger;
}

/** A sandbox's guards as `sbx status` shows them. */
export interface GuardsView {
  guarded: boolean;
  guards: GuardStatus[];
  error?: string;
}

export class GuardHost {
  private readonly records = new Map<number, GuardRecord>();
  /**
   * Each sandbox's raise under way: a second raise joins it (never a second proxy on the same socket), and lowering or
   * releasing waits for it to settle first, so a guard that comes up after its sandbox was let go is never left serving.
   */
  private readonly raising = new Map<number, Promise<void>>();
  /** What each sandbox's guards may write to the daemon's log (a burst, then a line a second). */
  private readonly logBudget = new SandboxLogBudget();
  private closed = false;

  constructor(private readonly deps: GuardHostDeps) {}

  get guardNames(): string[] {
    return this.deps.guards.map((g) => g.name);
  }

  isUp(sb: Sandbox): boolean {
    return this.records.get(sb.id)?.state === "up";
  }

  /** Throws unless every guard of this sandbox is up and healthy: nothing runs in a sandbox without its proxy and bridge. */
  requireGuarded(sb: Sandbox): void {
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
  }

  /** Every guard's health, whether the sandbox is guarded (all up and healthy), and why they failed to come up. */
  view(sb: Sandbox): GuardsView {
    const r = this.records.get(sb.id);
    const guards = this.deps.guards.map((g) => {
      const s = r?.started.find((x) => x.name === g.name);
      if (!s) return { name: g.name, ok: false, detail: r?.state === "failed" ? "not started" : "down" };
      const h = s.handle.health();
      return { name: g.name, ok: h.ok, detail: h.detail };
    });
    return { guarded: r?.state === "up" && guards.every((g) => g.ok), guards, ...(r?.error ? { error: r.error } : {}) };
  }

  private audit(sb: Sandbox, action: string, detail: Record<string, unknown> = {}): void {
    try {
      this.deps.store.audit({ sandboxId: sb.id, kind: "guard", action, detail });
    } catch (e) {
      this.deps.log.error("audit write failed", { action, err: e });
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

  /**
   * Brings up every guard of one sandbox (idempotent: one under way is joined); on failure the sandbox is left fenced
   * and the error recorded.
   */
  up(sb: Sandbox, spec: SandboxSpec, driver: Driver, hostWork?: Promise<unknown>): Promise<void> {
    const under = this.raising.get(sb.id);
    if (under) return under;
    const p = this.raise(sb, spec, driver, hostWork).finally(() => {
      if (this.raising.get(sb.id) === p) this.raising.delete(sb.id);
    });
    this.raising.set(sb.id, p);
    return p;
  }

  /** Waits for a raise under way to settle (up or failed), whatever its outcome. */
  private async settled(id: number): Promise<void> {
    await this.raising.get(id)?.catch(() => undefined);
  }

  private async raise(sb: Sandbox, spec: SandboxSpec, driver: Driver, hostWork?: Promise<unknown>): Promise<void> {
    const existing = this.records.get(sb.id);
    if (existing?.state === "up") return;
    if (this.closed) throw new SbxError("unavailable", "the daemon is shutting down", { hint: "Run the command again in a moment." });
    const rec: GuardRecord = existing ?? { name: sb.name, spec, started: [], state: "down" };
    rec.spec = spec;
    this.records.set(sb.id, rec);
    const log = this.deps.log.with({ sandbox: sb.name, sid: spec.id });
    try {
      this.prepareSocketDir(spec);
      rec.started = await startGuards(this.deps.guards, {
        sandbox: sb,
        spec,
        driver,
        sockets: spec.sockets,
        store: this.deps.store,
        exec: this.deps.exec,
        paths: this.deps.paths,
        // The daemon's own lines go as they are; what the guards write (often at the sandbox's doing) takes its budget.
        log: this.logBudget.logger(log, sb.id),
        audit: (action, detail) => this.audit(sb, action, detail ?? {}),
        ...(hostWork ? { hostWork } : {}),
      });
      rec.state = "up";
      delete rec.error;
      log.info("guards up", { guards: this.guardNames.join(",") || "none" });
    } catch (e) {
      rec.state = "failed";
      rec.started = [];
      rec.error = e instanceof Error ? e.message : String(e);
      log.error("guards failed: sandbox fenced", { err: rec.error });
      this.deps.store.audit({ sandboxId: sb.id, kind: "daemon", action: "guards.failed", detail: { error: rec.error } });
      // A guard that knows what to do about it (a port held by another process) says so; else the general word.
      const cause = e instanceof Error ? e.cause : undefined;
      const own = cause instanceof SbxError ? cause.hint : undefined;
      throw new SbxError("unavailable", `sandbox '${sb.name}' cannot run: ${rec.error}`, {
        hint: own ?? "Nothing runs in a sandbox whose proxy and bridge are not up. See the daemon log, fix the cause, then `sbx run` it again.",
      });
    }
  }

  /** Tells each started guard the sandbox runs now. */
  async started(sb: Sandbox): Promise<void> {
    const rec = this.records.get(sb.id);
    if (rec) await notifyStarted(rec.started, this.logBudget.logger(this.deps.log.with({ sandbox: sb.name }), sb.id));
  }

  /** Stops its guards in reverse order and clears their sockets (the dir stays for its next start). */
  async down(sb: Pick<Sandbox, "id">): Promise<void> {
    await this.settled(sb.id);
    const rec = this.records.get(sb.id);
    if (!rec) return;
    const started = rec.started;
    rec.started = [];
    rec.state = "down";
    const log = this.deps.log.with({ sandbox: rec.name });
    await stopGuards(started, this.logBudget.logger(log, sb.id));
    this.logBudget.flush(log, sb.id);
    try {
      this.prepareSocketDir(rec.spec);
    } catch {
      /* best effort: the dir may be gone already */
    }
  }

  /** Drops its record and its socket dir (the sandbox is being removed). */
  async release(sb: Pick<Sandbox, "id">): Promise<void> {
    await this.down(sb);
    const rec = this.records.get(sb.id);
    this.records.delete(sb.id);
    if (rec) rmSync(rec.spec.sockets.dir, { recursive: true, force: true });
  }

  /** Socket dirs of sandboxes not in `keep` are what a crash left: removed, one line each. */
  sweepSocketDirs(keep: ReadonlySet<string>): string[] {
    const root = join(this.deps.paths.runtimeDir, "sb");
    if (!existsSync(root)) return [];
    const removed: string[] = [];
    for (const id of readdirSync(root)) {
      if (keep.has(id)) continue;
      rmSync(join(root, id), { recursive: true, force: true });
      removed.push(`socket dir ${id}`);
    }
    return removed;
  }

  /** Stops every guard; leaves sandboxes as they are (a stopped daemon means no network, not stopped sandboxes). */
  async close(): Promise<void> {
    this.closed = true;
    for (const id of this.records.keys()) await this.down({ id });
  }
}
