// What the sandbox service needs of the process that hosts sandboxes' guards and sessions (the daemon). Injected: the
// service calls these, and never reaches into the daemon; the daemon calls the service and implements this.
import type { PortForward, PortState } from "../core/ports";
import type { Sandbox } from "../core/schemas";
import type { SandboxSpec } from "../core/spec";
import type { Driver } from "../drivers/driver";

export interface SandboxHost {
  /** Whether the sandbox's guards are up now (a start that finds them up has nothing to overlap with them). */
  guardsUp(row: Sandbox): boolean;
  /**
   * Brings every guard of the sandbox up for this spec (idempotent). Throws when one cannot come up: the sandbox stays
   * fenced and the error is kept for `sbx status`. `driver` is its kind's: guards ask it what they need (its
   * capabilities, ref sync's plan, the bridge's place), never its kind. `hostWork`: a new sandbox's host-side work
   * still under way (GuardContext.hostWork).
   */
  raiseGuards(row: Sandbox, spec: SandboxSpec, driver: Driver, hostWork?: Promise<unknown>): Promise<void>;
  /** Tells its guards the sandbox runs now (ref sync's first pass); a failure is logged, never thrown. */
  started(row: Sandbox): Promise<void>;
  /** Every guard up and healthy: the only state in which anything runs in the sandbox. */
  guarded(row: Sandbox): boolean;
  /** Its guards down (the sandbox has stopped): their sockets gone, the socket dir kept for its next start. */
  lowerGuards(row: Sandbox): Promise<void>;
  /** Its guards down and its socket dir gone: the sandbox is being removed. */
  release(row: Sandbox): Promise<void>;
  /** Terminal sessions and commands running in it through the host. */
  sessions(row: Sandbox): number;
  /** Ends them, each told `why` on its screen or its caller's stderr; how many were ended. */
  endSessions(row: Sandbox, why?: string): number;
  /** Socket dirs whose sandbox id is not in `keep` (what a crash left): removed, one line each. */
  sweepSocketDirs(keep: ReadonlySet<string>): string[];
  /** Makes a running sandbox's port forwards these (null: its guards are down, they apply at its next start). */
  ports?(row: Sandbox, list: PortForward[]): Promise<PortState[] | null>;
  /** What a running sandbox forwards now (null: not running). */
  portStates?(row: Sandbox): PortState[] | null;
}
