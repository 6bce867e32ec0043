// The one word sbx shows for a sandbox's state, everywhere (list, status, --json, the dashboard, chat), and the one
// function that says it from what sbx knows: the store's record (active, stopped, deleted: kept as they are, a
// migration's worth) and the runtime's phase. Pure.

/** The words, in the order a person meets them. README.md ("Sandbox states") says the same. */
export const SANDBOX_STATES = ["creating", "running", "stopped", "failed", "unknown", "deleted"] as const;
export type SandboxState = (typeof SANDBOX_STATES)[number];

/** What each word means, for help text and docs. */
export const STATE_MEANINGS: Record<SandboxState, string> = {
  creating: "its create has not finished",
  running: "it runs: commands and shells go in",
  stopped: "it does not run; `sbx shell` or `sbx run` starts it",
  failed: "it should run and does not: killed at a limit, its guards would not come up, or its create was interrupted",
  unknown: "its state could not be read (the engine does not answer, …)",
  deleted: "removed (`sbx list --all` only)",
};

/** What the state is said from. */
export interface StateFacts {
  /** The store's record: active (sbx means it to run), stopped (stopped on purpose), deleted. */
  state: "active" | "stopped" | "deleted";
  /** The runtime's: running, stopped, absent (no container or account), unknown (could not be read). */
  phase: "running" | "stopped" | "absent" | "unknown";
  /** Its create is under way, or was interrupted (its marker is left, no create holds its lock). */
  creating?: "in-progress" | "interrupted" | undefined;
  /** Why it stopped when sbx did not stop it (the kernel killed it at its memory limit). */
  stopReason?: string | undefined;
  /** Why its guards are down (they failed to come up): it is fenced. */
  guardError?: string | undefined;
}

/** Pure: the one word for a sandbox's state. */
export function sandboxState(f: StateFacts): SandboxState {
  if (f.state === "deleted") return "deleted";
  if (f.creating === "interrupted") return "failed";
  if (f.creating === "in-progress") return "creating";
  if (f.phase === "unknown") return "unknown";
  if (f.phase === "running") return "running";
  if (f.state === "active" && (f.stopReason !== undefined || f.guardError !== undefined)) return "failed";
  return "stopped";
}

type Base = Pick<StateFacts, "state" | "phase" | "creating">;

/** Pure: the word for the daemon's view of a sandbox (`sbx status`, the dashboard, chat): its error is its guards'. */
export function stateOfView(v: Base & { error?: string | undefined }): SandboxState {
  return sandboxState({ state: v.state, phase: v.phase, creating: v.creating, guardError: v.error });
}

/**
 * Pure: the word for a listed sandbox (`sbx list`): a reason beside a stopped runtime is why the kernel stopped it;
 * `guardError` is the daemon's, as in its view.
 */
export function stateOfListed(i: Base & { reason?: string | undefined; guardError?: string | undefined }): SandboxState {
  return sandboxState({ state: i.state, phase: i.phase, creating: i.creating, stopReason: i.phase === "stopped" ? i.reason : undefined, guardError: i.guardError });
}
