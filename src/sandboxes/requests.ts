// What callers hand the sandbox service and what it answers (service.ts and its verbs' files share these).
import type { BackendKind, SandboxState } from "../core/schemas";
import type { LevelName } from "../core/levels";
import type { HostCapacity, LimitHit, Limits } from "../core/limits";
import type { SpendView } from "../core/llm-budget";
import type { CreateOptions, Driver } from "../drivers/driver";
import type { Env } from "../sys/env";
import type { Exec } from "../sys/exec";
import type { Logger } from "../sys/log";
import type { Paths } from "../sys/paths";
import type { UserDirectory } from "../sys/host-user";
import type { Store } from "../store/store";
import type { Commit } from "../workspace/clone";
import type { SandboxHost } from "./host";
import type { SandboxQuery } from "./resolve";
import type { SessionSecretSource } from "./secret-env";

/** What a stop or rm does to sessions attached to the sandbox: end them (each told why), or refuse while there are any. */
export type IfSessions = "end" | "refuse";

/** The drivers a process may use, made when first needed (a user-account driver needs root and its tools). */
export type DriverTable = Partial<Record<BackendKind, () => Driver | Promise<Driver>>>;

export interface ServiceDeps {
  exec: Exec;
  env: Env;
  paths: Paths;
  store: Store;
  drivers: DriverTable;
  /** The kind of a new sandbox when the caller names none (docker on Linux, macos on a Mac). */
  defaultKind: BackendKind;
  /** Finds the repo root (git as the host user when sbx runs as root for them); default: `exec`. */
  repoExec?: Exec;
  /** Where a caller's `asUid` is looked up (host-user.ts); default: this platform's user directory. */
  users?: UserDirectory;
  /** Progress and notes for the person (stderr). */
  log: (line: string) => void;
  /** Raw build output as it arrives (stderr). */
  progress?: (chunk: string) => void;
  /**
   * The daemon, which hosts the sandboxes' guards and sessions: a sandbox runs only once its guards are up, and its
   * sessions end before it stops. Without one (the service's own tests) the service converges the driver alone.
   */
  host?: SandboxHost;
  /** The daemon's log (reconcile, guards that failed beside a start); default: none. */
  logger?: Logger;
  /** This machine's memory and CPUs (limits' defaults and bounds; tests give their own). */
  capacity?: HostCapacity;
  /** The secrets bound to hosts: what a new session or command gets of them (sandboxes/secret-env.ts). */
  secrets?: SessionSecretSource;
}

/** Where a caller's lines go: notes for the person, and raw build output. */
export interface Output {
  log(line: string): void;
  progress?(chunk: string): void;
}

/** Where a caller stands, to find its repo: cwd, --repo, sudo's caller (honoured only as root). */
export interface Where extends SandboxQuery {
  cwd: string;
  /** This call's progress and notes (default: the service's log). */
  out?: Output | undefined;
}

/** Which sandbox a verb is about: where the caller stands, or the repo itself (resolve.ts), and where its lines go. */
export interface Named extends SandboxQuery {
  /** This call's progress and notes (default: the service's log). */
  out?: Output | undefined;
}

export interface CreateRequest extends Where, CreateOptions {
  name: string;
  /** The kind of a new sandbox (default: `defaultKind`); an existing one of another kind is refused. */
  backend?: BackendKind;
  /** `run` reuses an existing sandbox; `create` refuses one. */
  ifExists?: "error" | "reuse";
  /** `--policy LEVEL` (core/levels.ts), over the config's `policy`; neither: no level (the built-in list). */
  policy?: LevelName;
  /**
   * Aborted when the caller gave up (Ctrl-C, its process killed): the create stops at the next step and removes what
   * it made. A step under way (a clone, an image build) runs to its end first.
   */
  signal?: AbortSignal;
}

export interface SessionRequest extends Where {
  name: string;
  argv: string[];
  tty: boolean;
  /** Whether stdin data will be forwarded (non-interactive). */
  stdin?: boolean;
  /** The caller's terminal variables (default: this process's). */
  env?: Record<string, string>;
}

export interface SandboxInfo {
  name: string;
  repo: string;
  backend: BackendKind;
  state: SandboxState;
  phase: "running" | "stopped" | "absent" | "unknown";
  /** Its create is under way, or was interrupted (core/sandbox-state.ts says the word). */
  creating?: "in-progress" | "interrupted";
  createdAt: number;
  lastUsedAt: number | null;
  /** Commits the clone holds that no other host ref has; null when they could not be counted. */
  unsynced: Commit[] | null;
  dir: string;
  id: string;
  /**
   * Why the phase is unknown (the engine does not answer, the driver cannot run here, the record is unreadable), why
   * a stopped sandbox stopped when sbx did not stop it (killed for memory), or that its create was interrupted.
   */
  reason?: string;
  /** What it may use (absent on sandboxes made before limits). */
  limits?: Limits;
  /** The limits it ran into since it last started (running sandboxes whose kind keeps counters). */
  hits?: LimitHit[];
  /** What the person should know of it (its Dockerfile changed since its image, an older layout), as said at start. */
  notes?: string[];
  /** Its LLM spend and budget. */
  llm?: SpendView;
  /** Its policy level (core/levels.ts); null: none, the built-in list. */
  level?: LevelName | null;
}

/** A sandbox's limits and what it ran into (`sbx limits NAME`). */
export interface LimitsReport {
  name: string;
  limits: Limits | null;
  /** Limits the sandbox hit since it last started; null when it does not run or its kind keeps no counters. */
  hits: LimitHit[] | null;
  /** When limits changed: whether the running sandbox has them now or gets them at its next start. */
  applied?: "now" | "next-start";
  /** Its LLM spend and budget (the budget as changed, when it was). */
  llm?: SpendView;
}

export interface PruneReport {
  removed: string[];
  kept: string[];
}
