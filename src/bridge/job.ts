// What one bridge request is while it runs: its wire (the request the shims send, the frames they read), the bridge's
// dependencies, and the job an operation is given (the gate, the request, where its frames go, how it refuses). Shared
// by the server and the operations it runs (push.ts, gh-run.ts), so none of them imports another's.
import { z } from "zod";
import type { BridgeAllow, BridgeSettings, BridgeSubject } from "../core/bridge-settings";
import type { Exec } from "../sys/exec";
import type { Gate, GateSsh, HostToolParent, TlsEnv } from "./gate-git";
import type { Verdict } from "./gate-hook";
import type { PolicyOptions } from "./policy";

const Sha = z.string().regex(/^[0-9a-f]{40}(?:[0-9a-f]{24})?$/);

/** The first line of a request body; for a push, the pack follows the newline. */
export const BridgeRequest = z.object({
  tool: z.enum(["git", "gh"]),
  args: z.array(z.string().max(4096)).max(256),
  cwd: z.string().min(1).max(4096),
  /** The sandbox's current branch, when on one (default push, gh pr create --head). */
  branch: z.string().max(255).optional(),
  /** Push: what each source the sandbox named resolves to in its clone. */
  resolved: z.record(z.string().max(255), z.object({ sha: Sha, ref: z.string().max(255).optional() })).optional(),
  /** Fetch: object ids the sandbox has (its remote-tracking tips), so only the rest is sent. */
  haves: z.array(Sha).max(20000).optional(),
  /**
   * The caller hangs up once it is done with the reply (the git shim's push, after its tracking refs): the bridge's
   * bookkeeping after the reply waits for that, briefly (server.ts), so it does not run beside the caller's tail.
   */
  hangsUp: z.literal(true).optional(),
});
export type BridgeRequest = z.infer<typeof BridgeRequest>;

/** Frames of the newline-delimited JSON response. */
export type Frame =
  | { t: "out"; d: string }
  | { t: "err"; d: string }
  | { t: "refs"; remote: string; url: string; refs: Record<string, string>; prune: boolean }
  | { t: "bundle"; d: string }
  | { t: "pushed"; remote: string; updates: Array<{ dst: string; sha: string | null }> }
  | { t: "exit"; code: number };

export interface AuditEvent {
  sandbox: string;
  /** `bridge`: a request refused before its header was read (too many at once). */
  tool: "git" | "gh" | "bridge";
  args: string[];
  cwd: string;
  decision: "allowed" | "refused" | "failed";
  reason?: string;
  exitCode?: number;
  durationMs: number;
  /** The pending approval a refusal was recorded as (the first, when several), and how often it has been asked. */
  approval?: { id: number; count: number };
  /** What the person should know of an allowed command (a first push: the CI workflows its branches start). */
  note?: string;
}

export interface BridgeSandbox {
  id: string;
  name: string;
  /** The sandbox's clone, as a host path. */
  workspace: string;
  /** The same workspace as the sandbox sees it (Docker: the host repo's path). Defaults to `workspace`. */
  workspaceView?: string;
  /** The host repo the sandbox was made from: host-owned, the only source of remote URLs. */
  repo: string;
}

export interface BridgeDeps {
  sandbox: BridgeSandbox;
  gateDir: string;
  /** Host secrets by name (GH_TOKEN, GIT_TOKEN, …), read at request time so rotation needs no restart. */
  secrets: () => Record<string, string>;
  /**
   * This sandbox's placeholders for its bound secrets (issue 37): shaped like keys, meaningless elsewhere, so its push
   * scan passes them over (a real key beside one is still found).
   */
  placeholders?: () => readonly string[];
  audit: (e: AuditEvent) => void;
  exec: Exec;
  /** PATH for host git/gh (default: /usr/local/bin:/usr/bin:/bin). */
  path?: string;
  /** The host's CA settings for gh (SSL_CERT_FILE, SSL_CERT_DIR): a private CA in front of a forge works as on the host. */
  tlsEnv?: TlsEnv;
  /** How the bridge's git reaches the host repo's ssh remotes (the host's ssh command and agent); none: ssh is off. */
  ssh?: GateSsh;
  /** The host's parent proxy, lent to each git or gh call to the forge (sys/parent-relay.ts); none: straight out. */
  parent?: HostToolParent;
  /** This sandbox's switches (`sbx bridge NAME --allow …`), read at request time; none: the defaults. */
  settings?: () => BridgeSettings;
  /**
   * Records what policy refused as a pending approval (the approvals queue egress uses: `sbx approvals`, the dashboard);
   * its id, or null where there is no queue. Allowing it changes this sandbox's settings for its next request.
   */
  ask?: (subject: BridgeSubject, reason: string) => { id: number; count: number } | null;
  policy?: Partial<PolicyOptions>;
  /** Test seam: called at points of a push where a failure must leave nothing that goes out. */
  faults?: PushFaults;
  /** Benchmark seam: told when each stage of a request starts or ends (bench/bridge-push.bench.ts TRACE=1). */
  trace?: (stage: string) => void;
}

/** Where tests make a push fail (or the bridge die) to prove it fails closed. */
export interface PushFaults {
  /** Right after the gate's `git push` started, before the scan: its hook has not opened the FIFO yet. */
  afterPushStarted?: (verdict: Verdict) => void | Promise<void>;
}

/** How a request ended, for the audit and the shim's exit code. */
export interface Outcome {
  decision: "allowed" | "refused" | "failed";
  reason?: string;
  exitCode: number;
  approval?: { id: number; count: number };
  /** Kept in the audit row (AuditEvent.note). */
  note?: string;
  /** Runs after the "exit" frame, still inside this sandbox's queue. */
  after?: () => Promise<void>;
}

/** The refusal of something a switch would allow, saying which. */
export function notAllowed(what: string, allow: BridgeAllow, name: string): string {
  return `${what}; to allow it for this sandbox: sbx bridge ${name} --allow ${allow}`;
}

/** The exit code of a refused request (EX_NOPERM). */
export const REFUSED_EXIT = 77;

/** One request under way, as each operation (push, fetch, clone, ls-remote, gh) is given it. */
export interface Job {
  deps: BridgeDeps;
  gate: Gate;
  req: BridgeRequest;
  /** A frame to the shim (out and err text is redacted on its way). */
  send: (f: Frame) => void;
  /** Refuses the request: the reason goes to the shim's stderr; the outcome is the request's. */
  refuse: (reason: string) => Outcome;
  /** Refuses what the user could lift for this sandbox, and records it as a pending approval. */
  refuseOrAsk: (d: { reason: string; ask?: BridgeSubject }) => Outcome;
  /** This request's switches (`sbx bridge NAME`), read once. */
  settings: BridgeSettings;
}
