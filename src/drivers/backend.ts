// The Backend: what each driver converges the system with (a container, an account); a detail of its driver, never called from outside src/drivers/.
import type { BackendKind } from "../core/schemas";
import type { Change, CleanupReport, Observed, SandboxSpec, ShellRequest } from "../core/spec";

export interface Backend {
  readonly kind: BackendKind;
  /** Converge the sandbox to running: identity, workspace, guards. Applying twice changes nothing. */
  apply(spec: SandboxSpec): Promise<Change>;
  /** Stop running things but keep the workspace. Stopping a stopped or gone sandbox succeeds. */
  stop(spec: SandboxSpec): Promise<Change>;
  /** Remove everything the backend made for the sandbox. Removing what is gone succeeds. */
  remove(spec: SandboxSpec): Promise<Change>;
  inspect(spec: SandboxSpec): Promise<Observed>;
  /** Every sandbox of sbx's this backend finds on the system (by label or naming), known or not. */
  list(): Promise<Observed[]>;
  /** Remove what a crash left behind: anything of sbx's whose id is not in `keep`. */
  cleanup(keep: ReadonlySet<string>, opts?: { dryRun?: boolean }): Promise<CleanupReport>;
  /** The host argv that runs a command or shell inside the sandbox (pure; spawned under sbx's PTY). */
  shellArgv(spec: SandboxSpec, req: ShellRequest): string[];
}
