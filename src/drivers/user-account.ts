// The user-account driver (`--backend user` on Linux, macOS): an account per sandbox, its loopback proxy port, its spec.
//
// The store row keeps everything the daemon needs to rebuild the spec after a restart (host user, sandbox id, proxy
// port), so the port is chosen once and never moves. Every git in the host repo runs as the host user (`hostExec`):
// sbx runs as root for this backend, and root's git would refuse the host's repo (dubious ownership) or leave
// root-owned files in it. The guest makes its own clone when the backend applies; the host makes nothing but the dir.
import { existsSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { SbxError } from "../core/errors";
import { landlockAbi } from "../sys/landlock";
import type { Sandbox } from "../core/schemas";
import type { LimitCounters } from "../core/limits";
import type { Env } from "../sys/env";
import { streamRun, type Exec, type ExecResult } from "../sys/exec";
import { sha256Hex, type Paths } from "../sys/paths";
import { sandboxLayout } from "../workspace/layout";
import type { UserBackendKind } from "../core/backend-kind";
import { LimitsSchema, sandboxSpec } from "./identity";
import { hostUserExec, safeRepoExec } from "../sys/as-user";
import { accountOf, userDirectory, type UserDirectory } from "../sys/host-user";
import type { Backend } from "./backend";
import type { Change, CleanupReport, HostUser, Observed, SandboxSpec, ShellRequest } from "../core/spec";
import type { AgentPlace, BridgePlace, Driver, DriverCaps, DriverReport, NewSandbox, RefSyncPlan, WatchContext, Watcher } from "./driver";
import type { SandboxGit, SandboxGitMode } from "../sync/sandbox-git";

/** What the user-account driver needs of its backend (linux-user, macos) beyond the Backend interface: its own detail. */
export interface UserAccountBackend extends Backend {
  readonly kind: UserBackendKind;
  /** How the guest's port reaches the proxy, and its transparent path (DriverCaps). */
  readonly reach: Pick<DriverCaps, "handsOverListener" | "transparent">;
  /** The guest's clone of the host repo (a host path; the guest sees the same path). */
  workspace(spec: SandboxSpec): string;
  /** git as the guest in its clone: the argv the daemon runs (as root, or the host user on macOS) to read or sync it. */
  guestGitArgv(spec: SandboxSpec, args: string[]): string[];
  /** Host-side work before that, as the host user (macOS: the mirror the clone borrows objects from). */
  beforeHostRefs?(spec: SandboxSpec, hostExec: Exec): Promise<ExecResult>;
  /** At daemon start: each guest fenced (block-all) until its guards are up; how many changed. */
  restoreBlockAll(specs: readonly SandboxSpec[]): Promise<number>;
  /** The kernel's limit counters of the guest's cgroup; null when it has none (a kind without cgroups). */
  counters?(spec: SandboxSpec): Promise<LimitCounters | null>;
  /** Makes the guest's cgroup (when there is one) hold `spec.limits` now. */
  applyLimits?(spec: SandboxSpec): Promise<void>;
  /** Where guests find the agent cache and sbx's Bun and shims (root-owned, readable by them); null: no agents here. */
  agentPlace?(): AgentPlace | null;
  /** The sandbox id of its guest account with this uid, or null. */
  guestIdOf?(uid: number): Promise<string | null>;
  /** What the daemon watches for these guests (Driver.watch); `paths` maps a guest's id to its row. */
  watch?(ctx: WatchContext, paths: Paths): Watcher[];
}

/** Loopback ports user-account sandboxes get: below Linux's ephemeral range (32768+), above the usual dev servers. */
export const PROXY_PORT_RANGE = { min: 21000, max: 28999 } as const;

const HostUserSchema = z.object({
  name: z.string().min(1),
  uid: z.number().int().min(0),
  gid: z.number().int().min(0),
  home: z.string().startsWith("/"),
  shell: z.string(),
});

/** The `identity` column of a user-account sandbox. */
export const UserIdentitySchema = z.object({
  kind: z.literal("user"),
  /** Sandbox id: account name, nft chain / pf anchor, socket dir. */
  id: z.string().regex(/^[a-z0-9]{1,20}$/),
  /** Host-side dir (the bridge's gate repo, a `repo` link for prune). */
  dir: z.string().startsWith("/"),
  /** 127.0.0.1:<proxyPort> is this sandbox's only way out; chosen once, stable across daemon restarts. */
  proxyPort: z.number().int().min(1024).max(65535),
  /** The person the sandbox belongs to (not root when sbx runs under sudo). */
  hostUser: HostUserSchema,
  /** Memory, CPUs and processes (decided by the service at create; absent on sandboxes made before limits). */
  limits: LimitsSchema.optional(),
  /** The transparent path (Linux: its DNS and its 80/443 to named addresses redirected to its port); absent: off. */
  transparent: z.boolean().optional(),
});
export type UserIdentity = z.infer<typeof UserIdentitySchema>;

export function userIdentity(row: Sandbox): UserIdentity {
  const r = UserIdentitySchema.safeParse(row.identity);
  if (!r.success) {
    throw new SbxError("internal", `sandbox ${row.name}: its stored record is not a user-account sandbox's`, {
      hint: `Remove it with \`sbx rm --force ${row.name}\`, then create it again.`,
    });
  }
  return r.data;
}




/**
 * Pure: a free loopback port for a new sandbox. Starts at a point derived from its id (so two creates at once rarely
 * race for one port), skips ports other sandboxes hold and any `isFree` says is bound now.
 */
export function pickProxyPort(id: string, taken: ReadonlySet<number>, isFree: (port: number) => boolean): number {
  const size = PROXY_PORT_RANGE.max - PROXY_PORT_RANGE.min + 1;
  const start = Number.parseInt(sha256Hex(id).slice(0, 8), 16) % size;
  for (let i = 0; i < size; i++) {
    const p = PROXY_PORT_RANGE.min + ((start + i) % size);
    if (!taken.has(p) && isFree(p)) return p;
  }
  throw new SbxError("unavailable", `no free loopback port in ${PROXY_PORT_RANGE.min}-${PROXY_PORT_RANGE.max} for a sandbox proxy`, {
    hint: "Remove sandboxes you no longer need (`sbx rm`, `sbx prune`).",
  });
}

/** Whether 127.0.0.1:<port> can be bound right now (binds and releases it). */
export function loopbackPortFree(port: number): boolean {
  try {
    const l = Bun.listen({ hostname: "127.0.0.1", port, socket: { data() {} } });
    l.stop(true);
    return true;
  } catch {
    return false;
  }
}

/** Pure: the spec of a stored user-account sandbox (what the daemon hands to the backend and the guards). */
export function userSpec(paths: Paths, row: Sandbox): SandboxSpec {
  const ident = userIdentity(row);
  // A guest reaches the proxy on its loopback port and the bridge at its socket's host path; its rc files set PATH.
  return sandboxSpec(paths, {
    id: ident.id,
    name: row.name,
    repo: row.repo,
    dir: ident.dir,
    hostUser: ident.hostUser,
    place: { proxyPort: ident.proxyPort },
    options: { driver: "user", proxyPort: ident.proxyPort, ...(ident.transparent ? { transparent: true } : {}) },
    limits: ident.limits,
  });
}


/** A guest account's capabilities: its proxy port on the host's loopback, no exec agent, no forwards, no staged clone. */
export function userAccountCaps(reach: UserAccountBackend["reach"]): DriverCaps {
  return { proxyPort: "loopback", ...reach, execAgent: false, portForwards: false, stagesClone: false, seedsHome: false };
}

export interface UserAccountDriverDeps {
  exec: Exec;
  env: Env;
  paths: Paths;
  backend: UserAccountBackend;
  /** The person this process works for (host-user.ts `hostUserOf`, decided once by the daemon). */
  hostUser: HostUser;
  /** Where the person a root daemon is asked to work for (`asUid`) is looked up; default: this platform's directory. */
  users?: UserDirectory;
  /** Port probe seam (tests). */
  portFree?: (port: number) => boolean;
  /** Landlock's ABI on this kernel (tests; default: asked of the kernel). Linux guests need 6 for their scopes. */
  landlockAbi?: () => number | null;
}

export class UserAccountDriver implements Driver {
  readonly hostUser: HostUser;
  readonly caps: DriverCaps;

  constructor(private readonly d: UserAccountDriverDeps) {
    this.hostUser = d.hostUser;
    this.caps = userAccountCaps(d.backend.reach);
  }

  agentPlace(): AgentPlace | null {
    return this.d.backend.agentPlace?.() ?? null;
  }

  /** git as the sandbox's own host user (setpriv from root), never root's in their repo. */
  hostExec(spec: SandboxSpec): Exec {
    return hostUserExec(this.d.exec, spec.hostUser, this.d.env.uid);
  }

  get kind(): UserBackendKind {
    return this.d.backend.kind;
  }

  get backend(): UserAccountBackend {
    return this.d.backend;
  }

  /** Probed when the backend was made (userBackendFor): nothing more to check per create. */
  async ready(): Promise<void> {}

  /** A loopback port no other live sandbox holds and nothing has bound, chosen once for the sandbox's life. */
  async newIdentity(n: NewSandbox, others: readonly Sandbox[], r?: DriverReport): Promise<UserIdentity> {
    if (this.kind === "linux-user" && n.allowWeaker !== true) {
      // A guest's abstract unix sockets and signals are kept apart only by Landlock's scopes (ABI 6, Linux 6.12).
      const abi = (this.d.landlockAbi ?? landlockAbi)();
      if (abi === null || abi < 6) {
        throw new SbxError("unavailable", `this kernel's Landlock (${abi === null ? "none" : `ABI ${abi}`}) cannot keep a guest's abstract unix sockets and signals apart from this machine's (that needs ABI 6, Linux 6.12)`, {
          hint: "Use a Docker sandbox, or accept the weaker confinement: sbx create --backend user --allow-weaker NAME (`sbx doctor` shows what this kernel offers).",
        });
      }
    }
    const taken = new Set<number>();
    for (const r of others) {
      const p = UserIdentitySchema.safeParse(r.identity);
      if (p.success && r.state !== "deleted") taken.add(p.data.proxyPort);
    }
    const proxyPort = pickProxyPort(n.id, taken, this.d.portFree ?? loopbackPortFree);
    // A root daemon works for whoever sudo'd the CLI that asks; any other daemon only for its own person.
    const users = this.d.users ?? userDirectory(this.d.exec, this.d.env.platform);
    const hostUser = n.asUid !== undefined && this.d.env.uid === 0 ? await accountOf(users, n.asUid, "sudo says you are") : this.hostUser;
    // The transparent path is built for Linux guests (nft redirects by uid). pf cannot do it on a Mac (ARCHITECTURE.md):
    // a guest's name lookups are mDNSResponder's traffic, not its own, and pf's translation rules cannot match a user.
    const transparent = this.kind === "linux-user" && (n.transparent ?? n.config.transparent ?? true);
    if (this.kind === "macos" && n.transparent !== false && n.config.transparent !== false) {
      r?.log("note: on macOS only clients that honour the proxy variables get out (no transparent path: pf cannot redirect a guest's name lookups, which go through mDNSResponder); `sbx help egress`");
    }
    return { kind: "user", id: n.id, dir: n.dir, proxyPort, hostUser, ...(transparent ? { transparent: true } : {}) };
  }

  spec(row: Sandbox): SandboxSpec {
    return userSpec(this.d.paths, row);
  }

  /** The `repo` link tells prune whose dir this is; the guest clones when the backend first applies. */
  async provision(row: Sandbox, n: NewSandbox): Promise<UserIdentity> {
    const link = sandboxLayout(n.dir).link;
    if (!existsSync(link)) symlinkSync(n.repo, link);
    return userIdentity(row);
  }

  /** Account, firewall (run mode), clone and rc files: the backend converges them all. */
  async ensureRunning(row: Sandbox): Promise<{ spec: SandboxSpec }> {
    const spec = this.spec(row);
    await this.d.backend.apply(spec);
    return { spec };
  }

  async prepareRun(): Promise<void> {}

  workspace(spec: SandboxSpec): string {
    return this.d.backend.workspace(spec);
  }

  /** The backend maps host repo paths into the guest's clone itself. */
  sessionCwd(_spec: SandboxSpec, callerCwd: string): string {
    return callerCwd;
  }

  async counters(spec: SandboxSpec): Promise<LimitCounters | null> {
    return (await this.d.backend.counters?.(spec)) ?? null;
  }

  /** A guest's processes are killed only by its own limits, which the counters show; sbx stops nothing by itself. */
  async stopReason(): Promise<string | null> {
    return null;
  }

  async applyLimits(spec: SandboxSpec): Promise<void> {
    await this.d.backend.applyLimits?.(spec);
  }

  /**
   * git as the guest: reading its clone whenever its account and clone exist, changing its refs only while it runs
   * (a stopped guest runs nothing that changes its sandbox; host → clone is then owed to the next start).
   */
  async sandboxGit(spec: SandboxSpec, mode: SandboxGitMode): Promise<SandboxGit | null> {
    const backend = this.d.backend;
    const phase = (await backend.inspect(spec)).phase;
    if (phase === "absent" || (mode === "write" && phase !== "running")) return null;
    return (args, stdin) => streamRun(this.d.exec, backend.guestGitArgv(spec, args), stdin === undefined ? { timeoutMs: 600_000 } : { stdin, timeoutMs: 600_000 });
  }

  /**
   * Ref sync: both ways through sandboxGit, after the backend's host-side step before host → clone (macOS: the mirror,
   * as the host user).
   */
  refSyncTarget(spec: SandboxSpec, hostExec: Exec): RefSyncPlan {
    const backend = this.d.backend;
    return {
      hostRepo: spec.repo,
      name: spec.name,
      watchDir: join(backend.workspace(spec), ".git"),
      sandboxGit: (mode) => this.sandboxGit(spec, mode),
      ...(backend.beforeHostRefs ? { beforeHostRefs: () => backend.beforeHostRefs!(spec, hostExec) } : {}),
    };
  }

  restoreBlockAll(specs: readonly SandboxSpec[]): Promise<number> {
    return this.d.backend.restoreBlockAll(specs);
  }

  /**
   * The guest's clone is named by its own path, inside and out. When the daemon is root, the host repo is someone
   * else's: the bridge's git marks exactly that repo safe.
   */
  bridgePlace(spec: SandboxSpec, exec: Exec): BridgePlace {
    const ws = this.d.backend.workspace(spec);
    return { workspace: ws, workspaceView: ws, exec: this.d.env.uid === 0 ? safeRepoExec(exec, spec.repo) : exec };
  }

  inspect(spec: SandboxSpec): Promise<Observed> {
    return this.d.backend.inspect(spec);
  }

  list(): Promise<Observed[]> {
    return this.d.backend.list();
  }

  stop(spec: SandboxSpec): Promise<Change> {
    return this.d.backend.stop(spec);
  }

  remove(spec: SandboxSpec): Promise<Change> {
    return this.d.backend.remove(spec);
  }

  shellArgv(spec: SandboxSpec, req: ShellRequest): string[] {
    return this.d.backend.shellArgv(spec, req);
  }

  /** The sandbox id of the guest account with this uid (its backend knows its own accounts), or null. */
  async guestIdOf(uid: number): Promise<string | null> {
    return (await this.d.backend.guestIdOf?.(uid)) ?? null;
  }

  /** What the daemon watches for this kind's guests (its backend's: a kernel log, pflog and pf). */
  watch(ctx: WatchContext): Watcher[] {
    return this.d.backend.watch?.(ctx, this.d.paths) ?? [];
  }

  /** The loopback port its identity holds (chosen once at create); null when the spec has none (a damaged record). */
  hostProxyPort(spec: SandboxSpec): number | null {
    return spec.options.driver === "user" ? spec.options.proxyPort : null;
  }

  /** Accounts, chains/anchors, homes, mounts and records of no live sandbox of this kind. */
  cleanup(keep: ReadonlySet<string>, opts: { dryRun?: boolean } = {}): Promise<CleanupReport> {
    return this.d.backend.cleanup(keep, opts);
  }

  /** The same for `sbx prune`: an account is this state root's by its name. */
  prune(keep: ReadonlySet<string>, opts: { dryRun?: boolean } = {}): Promise<CleanupReport> {
    return this.d.backend.cleanup(keep, opts);
  }
}


