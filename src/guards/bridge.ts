// The command bridge as a guard: git/gh for one sandbox on its own socket, with a host-owned gate repo and host secrets read per request.
import { SecretBindings } from "../store/secret-bindings";
import { existsSync } from "node:fs";
import type { BridgeSettings, BridgeSubject } from "../core/bridge-settings";
import { startBridge, type AuditEvent } from "../bridge/server";
import type { GateSsh, HostToolParent, TlsEnv } from "../bridge/gate-git";
import { sandboxLayout } from "../workspace/layout";
import type { FeedEvent } from "../events/feed";
import type { GuardContext, GuardHandle, SandboxGuard } from "./guards";

export interface BridgeGuardOptions {
  /** Host secrets by name (GH_TOKEN, …), read at request time so rotation needs no restart. */
  secrets: () => Record<string, string>;
  /** PATH for the host's git and gh. */
  path?: string;
  /** The host's CA settings (SSL_CERT_FILE, SSL_CERT_DIR) for gh. */
  tlsEnv?: TlsEnv;
  /** The host's ssh command and agent, for the host repo's ssh remotes. */
  ssh?: GateSsh;
  /** The host's parent proxy, lent to each git or gh call to the forge (sys/parent-relay.ts). */
  parent?: HostToolParent;
  /** A sandbox's bridge switches as stored now (`sbx bridge NAME --allow …`), read at each request. */
  settingsOf?: (sandboxId: number) => BridgeSettings;
  /** Records a refused operation as a pending approval of the sandbox's (the egress queue's table); its id. */
  ask?: (sandboxId: number, subject: BridgeSubject, reason: string) => { id: number; count: number } | null;
  /** The live feed: every bridge command, as audited. */
  publish?: (e: FeedEvent) => void;
  /**
   * Where this sandbox's workspace is on the host and by which path the sandbox names it, and the Exec for host git;
   * undefined (or no function) means a Docker sandbox: the clone in the sandbox dir, named by the host repo's path.
   */
  placement?: (ctx: GuardContext) => { workspace: string; workspaceView: string; exec: GuardContext["exec"] } | undefined;
}

/** Pure: a bridge audit event as a feed event. */
export function feedFromBridge(sandbox: { id: number; name: string }, e: AuditEvent, at: number): FeedEvent {
  return {
    kind: "bridge",
    at,
    sandbox,
    command: [e.tool, ...e.args],
    outcome: e.decision === "allowed" ? "ok" : e.decision,
    ...(e.exitCode !== undefined ? { exitCode: e.exitCode } : {}),
    ...(e.reason !== undefined ? { detail: e.reason } : {}),
    ...(e.approval ? { approvalId: e.approval.id, count: e.approval.count } : {}),
  };
}

/** The gate repo lives in the sandbox dir, beside (never inside) what is mounted into the sandbox (workspace/layout.ts). */
export function gateDirOf(ctx: { spec: Pick<GuardContext["spec"], "dir"> }): string {
  return sandboxLayout(ctx.spec.dir).gate;
}

export function bridgeGuard(opts: BridgeGuardOptions): SandboxGuard {
  return {
    name: "bridge",
    async start(ctx): Promise<GuardHandle> {
      const layout = sandboxLayout(ctx.spec.dir);
      // The Docker clone is mounted at the host repo's own path: that is the path the sandbox names.
      const place = opts.placement?.(ctx) ?? { workspace: layout.clone, workspaceView: ctx.spec.repo, exec: ctx.exec };
      const bridge = await startBridge({
        socketPath: ctx.sockets.bridge,
        sandbox: { id: ctx.spec.id, name: ctx.spec.name, workspace: place.workspace, workspaceView: place.workspaceView, repo: ctx.spec.repo },
        gateDir: gateDirOf(ctx),
        secrets: opts.secrets,
        placeholders: () => [...new SecretBindings(ctx.store).placeholders(ctx.sandbox.id).values()],
        exec: place.exec,
        audit: (e: AuditEvent) => {
          ctx.audit(`${e.tool}.${e.decision}`, { ...e });
          try {
            opts.publish?.(feedFromBridge({ id: ctx.sandbox.id, name: ctx.sandbox.name }, e, Date.now()));
          } catch (err) {
            ctx.log.warn("feed publish failed", { err });
          }
        },
        ...(opts.path ? { path: opts.path } : {}),
        ...(opts.tlsEnv ? { tlsEnv: opts.tlsEnv } : {}),
        ...(opts.ssh ? { ssh: opts.ssh } : {}),
        ...(opts.parent ? { parent: opts.parent } : {}),
        ...(opts.settingsOf ? { settings: () => opts.settingsOf!(ctx.sandbox.id) } : {}),
        ...(opts.ask ? { ask: (subject: BridgeSubject, reason: string) => opts.ask!(ctx.sandbox.id, subject, reason) } : {}),
      });
      return {
        health: () => (existsSync(bridge.socketPath) ? { ok: true, detail: "serving" } : { ok: false, detail: `socket ${bridge.socketPath} is gone` }),
        stop: () => bridge.close(),
      };
    },
  };
}
