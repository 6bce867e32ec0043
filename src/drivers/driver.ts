// The Driver: everything sbx needs of one kind of sandbox, and what that kind offers (its capabilities). Kind checks end here.
import type { Change, CleanupReport, HostUser, Observed, SandboxSpec, ShellRequest } from "../core/spec";
import type { Config } from "../core/config";
import type { LimitCounters, LimitsInput } from "../core/limits";
import type { BackendKind, Sandbox } from "../core/schemas";
import type { AgentPlatform } from "../core/agents";
import type { ImageFlags } from "../core/image-source";
import type { ServiceSpec, ServiceView } from "../core/services";
import type { Exec, StreamedRun } from "../sys/exec";
import type { Logger } from "../sys/log";
import type { Store } from "../store/store";
import type { RefSyncOptions } from "../sync/refsync";
import type { SandboxGit, SandboxGitMode } from "../sync/sandbox-git";
import type { StagedClone } from "../workspace/staged-clone";

/** Terminal sessions of one sandbox, by the daemon's ids: these only, or all but these. */
export type SessionSet = { only: readonly string[] } | { except: readonly string[] };

/** What a new sandbox is asked for, beyond its name and repo (flags of `create`/`run`; a driver refuses what it cannot honour). */
export interface CreateOptions {
  /** Build the image again even when its tag exists (Docker). */
  rebuild?: boolean;
  /** More host dirs overlaid copy-on-write (Docker). */
  overlays?: string[];
  /** How the host's Claude login reaches the sandbox (Docker). */
  claudeAuth?: "inject" | "overlay";
  /** A clone the caller started ahead (Docker): moved into place if it is of this repo, else removed. */
  staged?: StagedClone;
  /** The caller's login shell (default: sbx's own $SHELL). */
  shell?: string;
  /** Overlays of credential locations (~/.ssh, ~/.config/gh, …) are refused unless this is set (`--expose-credentials`). */
  exposeCredentials?: boolean;
  /** `--memory`, `--cpus`, `--pids` as typed (over the config file's `limits`, over the defaults). */
  limits?: LimitsInput;
  /** `--dockerfile`, `--context`, `--image` (Docker; paths absolute): else devcontainer.json, else the repo's Dockerfile. */
  image?: ImageFlags;
  /** `--with-changes`: the host repo's uncommitted and untracked (not ignored) files carried in as uncommitted changes. */
  withChanges?: boolean;
  /** `--port PORT|HOST:PORT` (Docker): the sandbox's ports reachable from the host's 127.0.0.1 (`sbx port`). */
  ports?: string[];
  /** `--allow-weaker` (Linux user accounts): create one on a kernel without Landlock's scopes (ABI < 6). */
  allowWeaker?: boolean;
  /** `--no-transparent`: no DNS stub and no transparent 80/443, the proxy variables only (over the config's `transparent`). */
  transparent?: boolean;
  /** `--service NAME=IMAGE|DOCKERFILE` (Docker): containers in the sandbox's network namespace (core/services.ts). */
  services?: ServiceSpec[];
  /** `--service-env SERVICE:NAME=VALUE` (Docker): variables of a service (given by --service or devcontainer compose). */
  serviceEnv?: Record<string, Record<string, string>>;
  /** `--pull` (Docker): a service's missing image, and its Dockerfile's bases, may come from a registry. */
  pull?: boolean;
}

/** A sandbox being made: where it lives and what was asked. */
export interface NewSandbox extends CreateOptions {
  name: string;
  /** Real path of the host repo. */
  repo: string;
  /** The sandbox dir (already made, 0700). */
  dir: string;
  /** The sandbox id (`drivers/identity.ts`): container, account and socket-dir names. */
  id: string;
  /** The caller's working directory (relative `--overlay` paths). */
  cwd: string;
  /** The person sbx runs as root for (sudo's SUDO_UID), when it does: a user-account sandbox belongs to them. */
  asUid?: number | undefined;
  /** The config file as this create read it (once: a bad one refused before anything was made). */
  config: Config;
  /**
   * Settles once this create's own writes into the host repo's `.git` (its store, promotion) are done: a build whose
   * context holds the repo waits for it, since a file removed under the engine's tar of the context fails the build.
   */
  repoQuiet?: Promise<unknown>;
  /**
   * Called by provision, at most once and before it returns, when what the sandbox's guards use of the host is made
   * (Docker: the clone, and the image's tag known) while the rest goes on (the container made and seeded), with the
   * identity as it stands then: the create raises the guards beside that rest. Nothing may run in the sandbox until
   * provision has returned and the guards are up. A kind that never calls it has its guards raised after provision.
   */
  hostReady?: (identity: Record<string, unknown>) => void;
}

/** Runs a command inside a running sandbox through its exec agent (Docker), stdout as bytes; null when none is connected. */
export type AgentRun = (argv: string[], env: Record<string, string>, stdin?: string) => StreamedRun | null;

/**
 * What ref sync needs of one sandbox: the host repo, its name, how git runs as the sandbox in its clone, the host-side
 * step before host → clone (macOS), and the clone's `.git` to watch as a trigger.
 */
export type RefSyncPlan = Pick<RefSyncOptions, "hostRepo" | "name" | "sandboxGit" | "beforeHostRefs" | "watchDir">;

/** Where the bridge finds a sandbox's clone (as the host sees it, and as the sandbox names it), and the git it runs in the host repo. */
export interface BridgePlace {
  workspace: string;
  workspaceView: string;
  exec: Exec;
}

/** Progress and notes for the person, and audit rows, while a driver works. */
export interface DriverReport {
  log(line: string): void;
  /** Raw build output as it arrives. */
  progress(chunk: string): void;
  audit(action: string, detail: Record<string, unknown>): void;
}

/** The agent cache (a host dir, and where a sandbox sees it) and the Bun and shims dir as a sandbox sees them. */
export interface AgentPlace {
  /** The OS the sandbox's processes run on (Docker: linux, also on a Mac), so the cache holds that OS's packages. */
  os: AgentPlatform["os"];
  cacheDir: string;
  inside: string;
  bun: string;
  shims: string;
}

/**
 * What a kind offers, which callers ask instead of its kind (guards, the daemon, the service). What the CLI must know
 * before any driver is loaded (which options a new sandbox takes, whether its clone can be staged ahead) is
 * `core/backend-kind.ts`'s table, which a test holds to these.
 */
export interface DriverCaps {
  /**
   * How its processes reach their proxy: "forwarder": a forwarder inside listens on the sandbox's own loopback (a
   * container's); "loopback": a port of the host's 127.0.0.1 that only its guest may reach, which the daemon's
   * loopback guard listens on.
   */
  readonly proxyPort: "forwarder" | "loopback";
  /** That listener can be handed to the proxy over `listen.sock` (fd passing), so the proxy accepts on it itself; else it is relayed. */
  readonly handsOverListener: boolean;
  /**
   * How its transparent path (when its spec turns it on) reaches the proxy: "listeners": 0.0.0.0 listeners on the
   * transparent ports handed over `listen.sock` (inside a container with no network, its own loopback); "redirect":
   * the firewall sends its connections to named addresses, and its DNS (UDP), to its proxy port; null: none.
   */
  readonly transparent: "listeners" | "redirect" | null;
  /** An exec agent inside dials the daemon's `agent.sock`: commands without a terminal and ref sync's git run through it. */
  readonly execAgent: boolean;
  /** Host ports can be forwarded to its own loopback (through its exec agent); a guest on the host's loopback needs none. */
  readonly portForwards: boolean;
  /** The CLI may start a new sandbox's clone before it reaches the daemon (the host makes its clone). */
  readonly stagesClone: boolean;
  /** Its home is seeded when it is made (a Docker container's, from the copy-in door's tar): a cargo mirror's config goes there. */
  readonly seedsHome: boolean;
}

/** What a kind's watchers get from the daemon (Driver.watch). */
export interface WatchContext {
  /** The sandboxes a watcher maps what it sees to, and the audit log it writes to. */
  store: Pick<Store, "listSandboxes" | "getSandbox" | "audit">;
  log: Logger;
  /** A raw connection its firewall dropped, just audited: the daemon publishes it on its live feed. */
  blocked(sandboxId: number, auditId: number, audit: { kind: string; action: string; detail: Record<string, unknown> }): void;
  /** Stops a sandbox as `sbx stop` does; its state is stopped afterwards even when part of that failed. */
  stopSandbox(row: Sandbox, why: string): Promise<void>;
  /** Tells the person, on their desktop. */
  notify(n: { title: string; body: string }): void;
}

/** The host's end of what a running kind must watch while the daemon runs (a kernel log, a firewall that can be switched off). */
export interface Watcher {
  stop(): Promise<void>;
  /** Reads what it watches now (tests read a log at a chosen moment); how many events it wrote. */
  poll?(): Promise<number>;
}

/** A kind's services beside its sandboxes (Docker: containers in the sandbox's network namespace). */
export interface SandboxServices {
  /** Each of the sandbox's services as the system holds it now. */
  list(spec: SandboxSpec): Promise<ServiceView[]>;
  /** A service's last `tail` lines of output (both streams), control characters taken out. */
  logs(spec: SandboxSpec, service: ServiceView, tail: number): Promise<string>;
  restart(spec: SandboxSpec, service: ServiceView): Promise<void>;
}

export interface Driver {
  readonly kind: BackendKind;
  /** What this kind offers (see DriverCaps). */
  readonly caps: DriverCaps;
  /** The person a new sandbox belongs to (a stored one names its own in its spec). */
  readonly hostUser: HostUser;
  /** Runs git in a sandbox's host repo: as the person it belongs to, also when sbx runs as root for them. */
  hostExec(spec: SandboxSpec): Exec;
  /** Refuses before anything is made when this kind cannot run here now (Docker: the engine). */
  ready(): Promise<void>;
  /**
   * The `identity` column of a new sandbox: everything later specs are built from (stable across daemon restarts).
   * `others` are the live rows of every kind (what they hold, e.g. loopback ports, is taken). Makes nothing.
   */
  newIdentity(n: NewSandbox, others: readonly Sandbox[], r: DriverReport): Promise<Record<string, unknown>>;
  /** The spec of a stored sandbox; a row this driver cannot read is an error that says how to recover. */
  spec(row: Sandbox): SandboxSpec;
  /**
   * Makes the host-side parts of a new sandbox before its first start (Docker: clone ‖ image ‖ container, not
   * started). Returns the identity to store (e.g. with the image tag).
   */
  provision(row: Sandbox, n: NewSandbox, r: DriverReport): Promise<Record<string, unknown>>;
  /** Brings a sandbox to running once its guards are up; returns the identity to store when it changed. */
  ensureRunning(row: Sandbox, r: DriverReport): Promise<{ spec: SandboxSpec; identity?: Record<string, unknown> }>;
  /** What may be made while the guards come up, without running anything inside (Docker: the container). */
  prepareRun(row: Sandbox): Promise<void>;
  /** The sandbox's clone as a host path. */
  workspace(spec: SandboxSpec): string;
  /** Where a session starts inside, for a caller in `callerCwd` on the host. */
  sessionCwd(spec: SandboxSpec, callerCwd: string): string;
  /** The kernel's counters of a running sandbox's limits (OOM kills, refused forks); null when it does not run or this kind keeps none. */
  counters(spec: SandboxSpec): Promise<LimitCounters | null>;
  /** Why a stopped sandbox stopped when it was not sbx that stopped it (Docker: killed for memory); else null. */
  stopReason(spec: SandboxSpec): Promise<string | null>;
  /** Makes a sandbox that exists now keep `spec.limits` (a stopped one keeps them when it starts); a kind that cannot change them live says so. */
  applyLimits(spec: SandboxSpec): Promise<void>;
  /**
   * git as the sandbox in its clone, the only way the host reads a clone: "read" whenever something can run as the
   * sandbox (Docker: a one-off container of its image, the clone read-only, while it is stopped), "write" only while it
   * runs. Null when not now. `agent` is its exec agent when one is connected.
   */
  sandboxGit(spec: SandboxSpec, mode: SandboxGitMode, agent: AgentRun | null): Promise<SandboxGit | null>;
  /** Ref sync's plan for a sandbox; `hostExec` is `hostExec(spec)`, `agent` its exec agent while it runs. */
  refSyncTarget(spec: SandboxSpec, hostExec: Exec, agent: AgentRun): RefSyncPlan | null;
  /**
   * At daemon start, before any guard: every stored sandbox of this kind fenced (nothing out but what a running
   * guard allows: user accounts get their block-all rules back); a start brings each to run mode after its guards.
   * How many it changed. Docker needs nothing: a container has no network of its own.
   */
  restoreBlockAll(specs: readonly SandboxSpec[]): Promise<number>;
  /**
   * `sbx rebuild`: builds the image again from the repo's Dockerfile as it is now, changing nothing else yet, and
   * returns the identity that names it; `dropRuntime` then removes what runs the old image (Docker: the container;
   * the clone, home overlays and volumes stay) so the next start makes it anew. Kinds without an image have neither.
   */
  buildImage?(row: Sandbox, r: DriverReport): Promise<{ identity: Record<string, unknown>; image: string }>;
  dropRuntime?(row: Sandbox): Promise<void>;
  /** Where `sbx run AGENT` finds things for this kind: the agent cache and sbx's Bun and shims as a sandbox sees them; null: none. */
  agentPlace?(): AgentPlace | null;
  /** Says (and audits) what the last build of the sandbox's runtime left out of what it copied in (a secret), once. */
  sayCopyIn?(spec: SandboxSpec, r: DriverReport): void;
  /** What the person should know each time this sandbox starts (an older layout it still has), as warning lines. */
  notes?(spec: SandboxSpec): string[];
  /**
   * What this kind must watch while the daemon runs (Linux accounts: the kernel log of dropped packets; macOS: pflog
   * and a pf that can be switched off), started once the fences are back and stopped at shutdown. None: nothing.
   */
  watch?(ctx: WatchContext): Watcher[];
  /** Its sandboxes' services (`sbx services`); absent: this kind has none. */
  readonly services?: SandboxServices;
  /** Where the bridge works for this sandbox. `exec` is the daemon's. */
  bridgePlace(spec: SandboxSpec, exec: Exec): BridgePlace;
  /** What the system holds of one sandbox, whatever the store says. */
  inspect(spec: SandboxSpec): Promise<Observed>;
  /** Every sandbox of sbx's this kind finds on the system (by label or naming), known or not; `detail.dir` where it knows it. */
  list(): Promise<Observed[]>;
  /** Stops what runs and keeps the workspace; stopping a stopped or gone sandbox succeeds. */
  stop(spec: SandboxSpec): Promise<Change>;
  /** Removes everything this kind made for the sandbox; removing what is gone succeeds. */
  remove(spec: SandboxSpec): Promise<Change>;
  /** The sandbox id whose guest account has this uid, or null (none of this kind's; kinds without guest accounts have none). */
  guestIdOf?(uid: number): Promise<string | null>;
  /** The port of the host's 127.0.0.1 its guest reaches its proxy on (caps.proxyPort "loopback"), from its spec; null for a kind with a forwarder inside. */
  hostProxyPort(spec: SandboxSpec): number | null;
  /** The host argv that runs a command or shell inside the sandbox (pure; a session runs it under sbx's PTY). */
  shellArgv(spec: SandboxSpec, req: ShellRequest): string[];
  /**
   * Ends terminal sessions whose process can outlive the client the daemon's PTY holds (Docker: the engine keeps a
   * `docker exec` process running when its client goes), as a closing terminal would: `only` those ids, or every one
   * recorded `except` those. Kinds whose session process is the PTY's own child have none (their hang-up is the
   * kernel's). Best effort: what cannot be reached (a stopped container) is left to its stop.
   */
  hangUpSessions?(spec: SandboxSpec, which: SessionSet): Promise<void>;
  /** What a crash left: anything of sbx's of this kind whose id is not in `keep` (the daemon's reconcile, when no other state root's sandbox is in sight). */
  cleanup(keep: ReadonlySet<string>, opts?: { dryRun?: boolean }): Promise<CleanupReport>;
  /** What `sbx prune` removes of this kind: what no live sandbox holds (Docker: only what no sandbox dir owns any more, since other state roots share the engine). */
  prune(keep: ReadonlySet<string>, opts?: { dryRun?: boolean }): Promise<CleanupReport>;
}
