// A Driver over the in-memory FakeBackend whose workspace is a real `git clone --shared`: the service's rules (refusals,
// teardown order, nothing left after a failure) are tested with real git and no engine or root.
import { existsSync, mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import type { Backend } from "../../src/drivers/backend";
import type { Change, CleanupReport, HostUser, Observed, SandboxSpec, ShellRequest } from "../../src/core/spec";
import type { BackendKind, Sandbox } from "../../src/core/schemas";
import type { BridgePlace, Driver, DriverCaps, DriverReport, NewSandbox, RefSyncPlan, SandboxServices } from "../../src/drivers/driver";
import type { ServiceView } from "../../src/core/services";
import { BaseIdentitySchema, LimitsSchema, sandboxId, sandboxSpec } from "../../src/drivers/identity";
import type { LimitCounters, Limits } from "../../src/core/limits";
import { streamRun, type Exec } from "../../src/sys/exec";
import type { SandboxGit, SandboxGitMode } from "../../src/sync/sandbox-git";
import { sandboxDir, type Paths } from "../../src/sys/paths";
import { FakeBackend } from "./backend";

/** What a fake kind offers unless a test says otherwise: nothing beyond a forwarder's place (no agent, no forwards). */
export const FAKE_CAPS: DriverCaps = { proxyPort: "forwarder", handsOverListener: false, transparent: null, execAgent: false, portForwards: false, stagesClone: false, seedsHome: false };

export class FakeDriver<B extends Backend = FakeBackend> implements Driver {
  /** The system it converges: the in-memory FakeBackend unless a test gives another (a spy, a file-backed one). */
  readonly backend: B;
  caps: DriverCaps = FAKE_CAPS;
  /** Set to make the next provision fail after it made its clone (a bad Dockerfile, an engine gone mid-create). */
  failProvision: Error | null = null;
  /** When set, provision waits for it first (a slow clone or build a test acts during). */
  provisionGate: Promise<void> | null = null;
  /**
   * As Docker's: once the clone is made, provision says the host is ready (`NewSandbox.hostReady`, the guards come up
   * beside the rest), then makes its container (an entry in the backend, not running) and seeds it. When set, the seed
   * waits for this (a slow archive write a test acts during); `failSeed` makes the next one fail, its container made.
   */
  seedGate: Promise<void> | null = null;
  failSeed: Error | null = null;
  /** Calls in order, for tests that assert which kind did what. */
  readonly calls: string[] = [];
  /** When set, starts are also recorded here (beside a test's guard events, to check their order). */
  trace: string[] | null = null;
  /** A kind with services (Docker's): set by a test (fakeServices) to give its sandboxes some. */
  services?: SandboxServices;

  constructor(
    readonly kind: BackendKind,
    private readonly exec: Exec,
    private readonly paths: Paths,
    readonly hostUser: HostUser,
    backend?: B,
  ) {
    this.backend = backend ?? (new FakeBackend() as unknown as B);
  }

  hostExec(): Exec {
    return this.exec;
  }

  /** Set to make ready() refuse (the engine is down). */
  failReady: Error | null = null;

  async ready(): Promise<void> {
    this.calls.push("ready");
    if (this.failReady) throw this.failReady;
  }

  async newIdentity(n: NewSandbox): Promise<Record<string, unknown>> {
    return { id: n.id, dir: n.dir };
  }

  /**
   * A row a create made holds its id and dir; one a test put in the store by hand has neither, and gets them as a create
   * would have made them (the state root's id of its repo and name, its sandbox dir).
   */
  spec(row: Sandbox): SandboxSpec {
    const ident = BaseIdentitySchema.partial().extend({ limits: LimitsSchema.optional() }).parse(row.identity);
    const id = ident.id ?? sandboxId(this.paths.sandboxRoot, row.repo, row.name);
    const dir = ident.dir ?? sandboxDir(this.paths, row.repo, row.name);
    return sandboxSpec(this.paths, { id, name: row.name, repo: row.repo, dir, hostUser: this.hostUser, place: { proxyPort: 3128 }, options: { driver: "fake" }, limits: ident.limits });
  }

  /** The kernel's counters per sandbox id, as a test sets them (a running sandbox that hit a limit). */
  readonly kernelCounters = new Map<string, LimitCounters>();
  /** The limits each sandbox id holds now (what applyLimits set), and why a sandbox stopped. */
  readonly applied = new Map<string, Limits>();
  stoppedBecause: string | null = null;

  async counters(spec: SandboxSpec): Promise<LimitCounters | null> {
    return (await this.backend.inspect(spec)).phase === "running" ? (this.kernelCounters.get(spec.id) ?? { oomKills: 0, pidsRefused: 0 }) : null;
  }

  async stopReason(): Promise<string | null> {
    return this.stoppedBecause;
  }

  async applyLimits(spec: SandboxSpec): Promise<void> {
    this.calls.push("applyLimits");
    if (spec.limits) this.applied.set(spec.id, spec.limits);
  }

  async provision(row: Sandbox, n: NewSandbox, _r: DriverReport): Promise<Record<string, unknown>> {
    this.calls.push("provision");
    if (this.provisionGate) await this.provisionGate;
    const link = join(n.dir, "repo");
    if (!existsSync(link)) symlinkSync(n.repo, link);
    mkdirSync(n.dir, { recursive: true });
    await this.exec.run(["git", "clone", "-q", "--shared", n.repo, join(n.dir, "clone")], { check: true });
    if (this.failProvision) {
      const e = this.failProvision;
      this.failProvision = null;
      throw e;
    }
    n.hostReady?.(row.identity);
    // Made, not started (nothing runs in it): an entry of the in-memory engine, stopped.
    const spec = this.spec(row);
    if (this.backend instanceof FakeBackend && !this.backend.entries.has(spec.id)) this.backend.entries.set(spec.id, { spec, phase: "stopped" });
    this.trace?.push(`driver.seed ${row.name}`);
    if (this.seedGate) await this.seedGate;
    if (this.failSeed) {
      const e = this.failSeed;
      this.failSeed = null;
      throw e;
    }
    this.trace?.push(`driver.seeded ${row.name}`);
    return row.identity;
  }

  /** Set to make the next start fail (a container that exits at once, an engine gone after the build). */
  failStart: Error | null = null;

  /** What the next starts learn and hand back to be stored (a Docker start learns the image and the shell). */
  learns: Record<string, unknown> | null = null;

  async ensureRunning(row: Sandbox): Promise<{ spec: SandboxSpec; identity?: Record<string, unknown> }> {
    this.calls.push("ensureRunning");
    if (this.failStart) {
      const e = this.failStart;
      this.failStart = null;
      throw e;
    }
    this.trace?.push(`driver.ensureRunning ${row.name}`);
    const spec = this.spec(row);
    await this.backend.apply(spec);
    return this.learns ? { spec, identity: { ...row.identity, ...this.learns } } : { spec };
  }

  /** What a start makes beside the guards (Docker: the container); a test may replace it. */
  async prepareRun(_row: Sandbox): Promise<void> {}

  workspace(spec: SandboxSpec): string {
    return join(spec.dir, "clone");
  }

  sessionCwd(_spec: SandboxSpec, callerCwd: string): string {
    return callerCwd;
  }

  /**
   * git as the fake sandbox: its real git in its real clone, run by the test's executor (a fake sandbox has no identity
   * of its own to run as; the Docker and linux-user suites run it as the sandbox for real). Null without a clone, and
   * for "write" while it is not running, as the real drivers answer.
   */
  async sandboxGit(spec: SandboxSpec, mode: SandboxGitMode): Promise<SandboxGit | null> {
    this.calls.push(`sandboxGit ${spec.name} ${mode}`);
    const clone = this.workspace(spec);
    if (!existsSync(join(clone, ".git"))) return null;
    if (mode === "write" && (await this.backend.inspect(spec)).phase !== "running") return null;
    return (args, stdin) => streamRun(this.exec, ["git", "-C", clone, ...args], stdin === undefined ? {} : { stdin });
  }

  /** No ref sync for a fake sandbox unless a test gives a plan (its clone is real git, its inside is not). */
  refSyncPlan: ((spec: SandboxSpec) => RefSyncPlan) | null = null;

  refSyncTarget(spec: SandboxSpec): RefSyncPlan | null {
    return this.refSyncPlan?.(spec) ?? null;
  }

  async restoreBlockAll(): Promise<number> {
    return 0;
  }

  bridgePlace(spec: SandboxSpec, exec: Exec): BridgePlace {
    return { workspace: join(spec.dir, "clone"), workspaceView: spec.repo, exec };
  }

  inspect(spec: SandboxSpec): Promise<Observed> {
    return this.backend.inspect(spec);
  }

  list(): Promise<Observed[]> {
    return this.backend.list();
  }

  stop(spec: SandboxSpec): Promise<Change> {
    return this.backend.stop(spec);
  }

  remove(spec: SandboxSpec): Promise<Change> {
    return this.backend.remove(spec);
  }

  shellArgv(spec: SandboxSpec, req: ShellRequest): string[] {
    return this.backend.shellArgv(spec, req);
  }

  hostProxyPort(): number | null {
    return null;
  }

  cleanup(keep: ReadonlySet<string>, opts: { dryRun?: boolean } = {}): Promise<CleanupReport> {
    return this.backend.cleanup(keep, opts);
  }

  prune(keep: ReadonlySet<string>, opts: { dryRun?: boolean } = {}): Promise<CleanupReport> {
    return this.backend.cleanup(keep, opts);
  }
}

/**
 * Services beside a fake kind's sandboxes, with the real rules sbx relies on: a service lives in its sandbox's
 * namespace, so one of a sandbox that does not run is not running, and restarting it there fails; its output is what
 * its process wrote (control characters and all). `views` is per sandbox id; `restarts` counts what was restarted.
 */
export function fakeServices(backend: { inspect(spec: SandboxSpec): Promise<Observed> }, views: Map<string, ServiceView[]>, output: Map<string, string> = new Map()): SandboxServices & { restarts: string[] } {
  const restarts: string[] = [];
  return {
    restarts,
    async list(spec) {
      const running = (await backend.inspect(spec)).phase === "running";
      return (views.get(spec.id) ?? []).map((v) => (running ? v : { ...v, state: "exited", health: v.health === "none" ? "none" : "unhealthy", exitCode: 137 }));
    },
    async logs(_spec, v, tail) {
      return (output.get(v.container) ?? "").split("\n").slice(-tail).join("\n");
    },
    async restart(spec, v) {
      if ((await backend.inspect(spec)).phase !== "running") throw new Error(`fake engine: cannot join the network namespace of a stopped container (restart ${v.container})`);
      restarts.push(v.container);
    },
  };
}
