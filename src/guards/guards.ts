// The one place per-sandbox services plug into the daemon: a guard (proxy, bridge, ref sync, …) is started per sandbox and must be up before it runs.
import { trace } from "../sys/trace";
import type { SandboxSpec } from "../core/spec";
import type { Driver } from "../drivers/driver";
import type { Sandbox } from "../core/schemas";
import type { Store } from "../store/store";
import type { Exec } from "../sys/exec";
import type { Paths, SandboxSockets } from "../sys/paths";
import type { Logger } from "../sys/log";

export interface GuardHealth {
  ok: boolean;
  /** One line for `sbx status` (the socket it serves, the last error, …). */
  detail: string;
}

/** What a started guard gives back: the daemon polls `health()` and calls `stop()` on removal or shutdown. */
export interface GuardHandle {
  stop(): Promise<void>;
  health(): GuardHealth;
  /** Called after the backend brought the sandbox to running (guards start before it runs; some have work once it does). */
  sandboxStarted?(): Promise<void>;
}

/** Everything a guard may use; guards never read env or open their own store. */
export interface GuardContext {
  /** The store row (database id, name, repo, backend, identity). */
  sandbox: Sandbox;
  /** The spec the driver converges the sandbox to (socket-dir id, host user, env, options). */
  spec: SandboxSpec;
  /** What a guard may ask of the sandbox's kind: its capabilities, ref sync's plan, the bridge's place. Never its kind. */
  driver: GuardDriver;
  /** This sandbox's own sockets: the proxy serves `proxy`, the bridge serves `bridge`. The dir exists, mode 0700, with no stale sockets. */
  sockets: SandboxSockets;
  store: Store;
  exec: Exec;
  paths: Paths;
  log: Logger;
  /** Appends to the audit log with this sandbox's id and the guard's name as the kind. */
  audit(action: string, detail?: Record<string, unknown>): void;
  /**
   * A new sandbox's host-side work still under way while its guards come up (its store, an earlier sandbox's refs set
   * aside): a guard that reads or writes the host repo's sandbox refs waits for it. Rejects when that work failed.
   */
  hostWork?: Promise<unknown>;
}

/** The part of a sandbox's driver its guards use. */
export type GuardDriver = Pick<Driver, "caps" | "hostExec" | "hostProxyPort" | "refSyncTarget" | "bridgePlace">;

export interface SandboxGuard {
  /** Short and stable: "proxy", "bridge", "ref-sync". Shown in `sbx status`. */
  readonly name: string;
  /** Starts serving for one sandbox; throws (SbxError preferred) if it cannot: the sandbox then stays fenced. */
  start(ctx: GuardContext): Promise<GuardHandle>;
}

export interface StartedGuard {
  name: string;
  handle: GuardHandle;
}

/**
 * Starts guards in order; if one fails, stops the ones already started (in reverse) and rethrows,
 * so a sandbox is either fully guarded or not guarded at all.
 */
export async function startGuards(guards: readonly SandboxGuard[], ctx: GuardContext): Promise<StartedGuard[]> {
  const started: StartedGuard[] = [];
  for (const g of guards) {
    try {
      const handle = await g.start({ ...ctx, log: ctx.log.with({ guard: g.name }), audit: ctx.audit });
      started.push({ name: g.name, handle });
      trace(`d guard ${g.name}`);
    } catch (e) {
      await stopGuards(started, ctx.log);
      throw new GuardStartError(g.name, e);
    }
  }
  return started;
}

/** Stops guards in reverse start order; a failing stop is logged, never thrown (shutdown must finish). */
export async function stopGuards(started: readonly StartedGuard[], log: Logger): Promise<void> {
  for (const s of [...started].reverse()) {
    try {
      await s.handle.stop();
    } catch (e) {
      log.warn("guard stop failed", { guard: s.name, err: e });
    }
  }
}

/** Tells each started guard the sandbox runs now; a failure is logged (health reports it), never thrown. */
export async function notifyStarted(started: readonly StartedGuard[], log: Logger): Promise<void> {
  for (const s of started) {
    try {
      await s.handle.sandboxStarted?.();
    } catch (e) {
      log.warn("guard start-up work failed", { guard: s.name, err: e });
    }
  }
}

export class GuardStartError extends Error {
  constructor(
    readonly guard: string,
    cause: unknown,
  ) {
    super(`guard '${guard}' failed to start: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = "GuardStartError";
  }
}
