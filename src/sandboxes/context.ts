// What every verb of the sandbox service shares (service.ts is the entry; create.ts, start-stop.ts, settings.ts,
// remove.ts, list.ts hold the verbs): its deps, the drivers made, the bring-up order (running.ts), the per-name lock,
// where a caller's lines go, and the identity writes every verb makes the same way.
import { SbxError, sandboxNotFound, sessionsAttached } from "../core/errors";
import type { BackendKind, Sandbox } from "../core/schemas";
import type { SandboxSpec } from "../core/spec";
import type { Driver, DriverReport } from "../drivers/driver";
import { LimitsSchema } from "../drivers/identity";
import type { HostCapacity, Limits } from "../core/limits";
import { kindUnavailableHint } from "../core/backend-kind";
import { acquireLock, lockPath, type Lock } from "../workspace/lock";
import { findRepoRoot } from "../workspace/repo";
import { hostUserExec } from "../sys/as-user";
import { accountOf, userDirectory } from "../sys/host-user";
import { hostCapacity } from "../sys/capacity";
import { silentLogger } from "../sys/log";
import type { IfSessions, Output, ServiceDeps } from "./requests";
import { resolveSandbox, type SandboxQuery } from "./resolve";
import { SandboxRunner } from "./running";
import { mirrorsOf } from "./mirrors";
import { secretSessionEnv } from "./secret-env";

export class ServiceContext {
  private readonly made = new Map<BackendKind, Promise<Driver>>();
  /** The start in flight of each sandbox (by row id), which a start asked for meanwhile joins. */
  readonly starting = new Map<number, Promise<void>>();
  readonly running: SandboxRunner;

  constructor(readonly d: ServiceDeps) {
    this.running = new SandboxRunner({
      store: d.store,
      paths: d.paths,
      host: d.host,
      logger: d.logger ?? silentLogger,
      driver: (k) => this.driver(k),
      kinds: () => this.kinds(),
      keepIdentity: (id, identity) => this.driverIdentity(id, identity),
      report: (id) => this.report(id),
    });
  }

  /** The kinds this process has a driver for. */
  kinds(): BackendKind[] {
    return Object.keys(this.d.drivers) as BackendKind[];
  }

  /** The driver of a kind; refuses, with what to do, a kind this process cannot run. */
  driver(kind: BackendKind): Promise<Driver> {
    let p = this.made.get(kind);
    if (!p) {
      const make = this.d.drivers[kind];
      p = make
        ? Promise.resolve().then(make)
        : Promise.reject(
            new SbxError("not_available", `${kind} sandboxes cannot be run from here`, { hint: kindUnavailableHint(kind) }),
          );
      this.made.set(kind, p);
    }
    return p;
  }

  outOf(out: Output | undefined): Output {
    return out ?? { log: (l) => this.d.log(l), progress: (c) => this.d.progress?.(c) };
  }

  report(rowId: number | null, out?: Output): DriverReport {
    const o = this.outOf(out);
    return {
      log: (l) => o.log(l),
      progress: (c) => o.progress?.(c),
      audit: (action, detail) => {
        if (rowId !== null) this.d.store.audit({ sandboxId: rowId, kind: "lifecycle", action, detail });
      },
    };
  }

  /**
   * The per-name lock every verb that changes a sandbox holds (create, start, stop, rm, rebuild, limits, …): first this
   * process's queue for the name (requests of this daemon wait their turn without polling), then the lock file, which
   * also tells `sbx list` and prune that a create is under way.
   */
  lock(repo: string, name: string, out?: Output): Promise<Lock> {
    const key = `${repo}\0${name}`;
    const wait = () => this.outOf(out).log(`waiting for another command on sandbox ${name} to finish…`);
    if (this.running.serial.busy(key)) wait();
    return new Promise<Lock>((resolve, reject) => {
      void this.running.serial
        .run(key, async () => {
          const file = await acquireLock(lockPath(this.d.paths.stateDir, repo, name), {
            onWait: (h) => (h.pid === process.pid ? wait() : this.outOf(out).log(`waiting for another sbx (pid ${h.pid}) working on sandbox ${name}…`)),
          });
          // The queue moves on once the holder releases the file lock.
          await new Promise<void>((released) => resolve({ path: file.path, release: () => (file.release(), released()) }));
        })
        .catch(reject);
    });
  }

  /** The repo a caller means: the one around its cwd, or --repo (git run as the sudo caller when sbx is root for them). */
  async repoOf(w: SandboxQuery & { cwd: string }): Promise<string> {
    if (w.foundRepo !== undefined) return w.foundRepo;
    if (w.asUid !== undefined && this.d.env.uid === 0 && w.asUid !== 0) {
      const person = await accountOf(this.d.users ?? userDirectory(this.d.exec, this.d.env.platform), w.asUid, "sudo says you are");
      return findRepoRoot(hostUserExec(this.d.exec, person, 0), w.cwd, w.repoFlag);
    }
    return findRepoRoot(this.d.repoExec ?? this.d.exec, w.cwd, w.repoFlag);
  }

  /** The sandbox a name means for this caller (resolve.ts: its repo's, else the one of that name anywhere), or the one not-found error. */
  resolve(name: string, q: SandboxQuery): Promise<Sandbox> {
    return resolveSandbox(this.d.store, (w) => this.repoOf(w), name, q);
  }

  /** The live row of a sandbox and its driver, or a not_found error. */
  async locate(name: string, q: SandboxQuery): Promise<{ repo: string; row: Sandbox; driver: Driver }> {
    const row = await this.resolve(name, q);
    return { repo: row.repo, row, driver: await this.driver(row.backend) };
  }

  /**
   * The lock of a sandbox a verb found, taken once it is free; by then another verb may have removed the sandbox (an
   * rm it waited behind): then there is nothing to do but say so, never bring back what is gone.
   */
  async lockLive(row: Sandbox, out?: Output): Promise<Lock> {
    const lock = await this.lock(row.repo, row.name, out);
    const now = this.d.store.getSandbox(row.id);
    if (now && now.state !== "deleted") return lock;
    lock.release();
    throw sandboxNotFound(row.name, row.repo, false);
  }

  /** The row as it is now (another request may have changed it while this one waited for the lock). */
  fresh(row: Sandbox): Sandbox {
    return this.d.store.getSandbox(row.id) ?? row;
  }

  /**
   * Keeps what a driver learnt or made (image, shell, its own fields) over the stored identity, never in place of it:
   * what the service keeps there (published services, bridge switches, agents run, ports) stays.
   */
  driverIdentity(id: number, identity: Record<string, unknown>): void {
    this.d.store.write(() => {
      const cur = this.d.store.getSandbox(id)?.identity ?? {};
      this.d.store.updateIdentity(id, { ...cur, ...identity });
    });
  }

  get capacity(): HostCapacity {
    return this.d.capacity ?? hostCapacity();
  }

  /** The limits a stored sandbox holds (null: made before limits existed, it has none). */
  limitsOf(row: Sandbox): Limits | null {
    const r = LimitsSchema.safeParse(row.identity.limits);
    return r.success ? r.data : null;
  }

  /** What the driver says the person should know as a sandbox starts (an older layout it still has). */
  sayNotes(row: Sandbox, driver: Driver, out: Output): void {
    try {
      for (const n of driver.notes?.(driver.spec(row)) ?? []) out.log(n);
    } catch {
      /* a row the driver cannot read fails the start itself, with its own message */
    }
  }

  /** With `refuse`, a sandbox that has sessions running is not stopped or removed: the caller asks its person first. */
  refuseSessions(row: Sandbox, verb: "stop" | "rm" | "rebuild", ifSessions: IfSessions | undefined): void {
    if (ifSessions !== "refuse" || !this.d.host) return;
    const n = this.d.host.sessions(row);
    if (n > 0) throw sessionsAttached(row.name, n, verb);
  }

  /**
   * The variables a new session or command gets for the secrets bound to hosts (placeholders, sbx's CA to trust) and
   * the package mirrors carried at create; what could not be given is said to `out` (or the log), never silently left out.
   */
  async secretEnv(row: Sandbox, spec?: SandboxSpec, out?: Output): Promise<Record<string, string>> {
    const mirrors = mirrorsOf(row);
    if (!this.d.secrets && mirrors === null) return {};
    const s = this.d.secrets ? await this.d.secrets.session(row.id) : { env: {}, caPem: null, extraCas: "", npmrc: [], notes: [] };
    for (const n of s.notes) (out ?? this.outOf(undefined)).log(n);
    return secretSessionEnv(spec ?? (await this.driver(row.backend)).spec(row), s, mirrors);
  }
}
