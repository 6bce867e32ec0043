// Approval and allowlist operations shared by the dashboard and the chat bot: store changes, an audit row, and a feed event each.
import { parseIp } from "../core/addresses";
import { matchesAddress, matchesName, validatePattern } from "../core/allowlist";
import { patternFor } from "../core/egress";
import { SbxError } from "../core/errors";
import type { Approval, Sandbox } from "../core/schemas";
import type { Store } from "../store/store";
import type { FeedEvent, SandboxRef } from "./feed";

export type DashboardChoice = "allow-global" | "allow-sandbox" | "deny";

export interface OpsContext {
  store: Store;
  /** Who decided, as recorded in the store and audit log (`ui`, `zulip:alice@example.com`). */
  by: string;
  publish?: (e: FeedEvent) => void;
  now?: () => number;
}

function ref(store: Store, id: number): SandboxRef {
  return { id, name: store.getSandbox(id)?.name ?? `#${id}` };
}

function announce(ctx: OpsContext, e: FeedEvent): void {
  ctx.store.audit({
    sandboxId: e.kind === "decision" ? (e.sandbox?.id ?? null) : null,
    kind: "allowlist",
    action: e.kind === "decision" ? e.action : "other",
    detail: e.kind === "decision" ? { pattern: e.pattern, scope: e.scope, by: e.by, approvalId: e.approvalId ?? null } : {},
  });
  try {
    ctx.publish?.(e);
  } catch {
    // The feed is best effort; the decision is already stored.
  }
}

export interface ApprovalDecision {
  approval: Approval;
  sandbox: SandboxRef;
  pattern: string;
  scope: "sandbox" | "global";
  action: "allow" | "deny";
  /** false when the pattern was already on that list. */
  added: boolean;
}

/**
 * Decides one pending approval from a button: allow everywhere (global list), allow for its sandbox only,
 * or deny. Allowing adds the host (with its port when not 80/443) in canonical form.
 */
export function decideApproval(ctx: OpsContext, approvalId: number, choice: DashboardChoice): ApprovalDecision {
  const { store } = ctx;
  const result = store.write(() => {
    const approval = store.decideApproval(approvalId, choice === "deny" ? "denied" : "allowed", ctx.by);
    const pattern = validatePattern(patternFor(approval.host, approval.port)).canonical;
    const scope: "sandbox" | "global" = choice === "allow-global" ? "global" : "sandbox";
    let added = false;
    if (choice !== "deny") {
      added = store.addAllow(scope === "global" ? null : approval.sandboxId, pattern, ctx.by);
      if (scope === "global") resolvePending(store, null, pattern, "allowed", ctx.by);
    }
    return { approval, sandbox: ref(store, approval.sandboxId), pattern, scope, action: choice === "deny" ? ("deny" as const) : ("allow" as const), added };
  });
  announce(ctx, {
    kind: "decision",
    at: (ctx.now ?? Date.now)(),
    sandbox: result.sandbox,
    action: result.action,
    pattern: result.pattern,
    scope: result.scope,
    by: ctx.by,
    approvalId,
  });
  return result;
}

/** Whether a pattern covers a pending approval's host and port. */
function covers(pattern: string, host: string, port: number): boolean {
  const { pattern: p } = validatePattern(pattern);
  const ip = parseIp(host);
  return ip ? matchesAddress(p, ip, port) : matchesName(p, host, port);
}

/** Marks the pending approvals a pattern covers (in one sandbox, or every sandbox) as decided. */
function resolvePending(store: Store, sandboxId: number | null, pattern: string, state: "allowed" | "denied", by: string): Approval[] {
  const pending = store.listApprovals(sandboxId === null ? { state: "pending" } : { state: "pending", sandboxId });
  return pending.filter((a) => covers(pattern, a.host, a.port)).map((a) => store.decideApproval(a.id, state, by));
}

/** For deny: the pending approvals for the pattern's host, on any port when the pattern names none. */
function resolvePendingHost(store: Store, sandboxId: number | null, pattern: string, by: string): Approval[] {
  const { pattern: p } = validatePattern(pattern);
  const pending = store.listApprovals(sandboxId === null ? { state: "pending" } : { state: "pending", sandboxId });
  return pending
    .filter((a) => {
      const q = p.port === null ? { ...p, port: a.port } : p;
      const ip = parseIp(a.host);
      return ip ? matchesAddress(q, ip, a.port) : matchesName(q, a.host, a.port);
    })
    .map((a) => store.decideApproval(a.id, "denied", by));
}

export interface PatternResult {
  pattern: string;
  /** Whether the list changed (added for allow, removed for deny). */
  changed: boolean;
  /** Pending approvals this answered. */
  resolved: Approval[];
}

/**
 * Adds patterns to a sandbox's list (or the global one when sandbox is null) and marks the pending approvals
 * they cover as allowed. Every pattern is validated first; a too-broad one refuses the whole call.
 */
export function allowPatterns(ctx: OpsContext, sandbox: Sandbox | null, patterns: readonly string[]): PatternResult[] {
  const canon = [...new Set(patterns.map((p) => validatePattern(p).canonical))];
  if (canon.length === 0) throw new SbxError("usage", "nothing to allow", { hint: "Name a host, e.g. example.org." });
  const results = ctx.store.write(() =>
    canon.map((pattern) => ({
      pattern,
      changed: ctx.store.addAllow(sandbox?.id ?? null, pattern, ctx.by),
      resolved: resolvePending(ctx.store, sandbox?.id ?? null, pattern, "allowed", ctx.by),
    })),
  );
  const at = (ctx.now ?? Date.now)();
  for (const r of results) {
    announce(ctx, {
      kind: "decision",
      at,
      sandbox: sandbox ? { id: sandbox.id, name: sandbox.name } : null,
      action: "allow",
      pattern: r.pattern,
      scope: sandbox ? "sandbox" : "global",
      by: ctx.by,
    });
  }
  return results;
}

/** Removes patterns from a list and marks pending approvals for those hosts as denied. */
export function denyPatterns(ctx: OpsContext, sandbox: Sandbox | null, patterns: readonly string[]): PatternResult[] {
  const canon = [...new Set(patterns.map((p) => validatePattern(p).canonical))];
  if (canon.length === 0) throw new SbxError("usage", "nothing to deny", { hint: "Name a host, e.g. example.org." });
  const results = ctx.store.write(() =>
    canon.map((pattern) => ({
      pattern,
      changed: ctx.store.removeAllow(sandbox?.id ?? null, pattern),
      resolved: resolvePendingHost(ctx.store, sandbox?.id ?? null, pattern, ctx.by),
    })),
  );
  const at = (ctx.now ?? Date.now)();
  for (const r of results) {
    announce(ctx, {
      kind: "decision",
      at,
      sandbox: sandbox ? { id: sandbox.id, name: sandbox.name } : null,
      action: r.changed ? "remove" : "deny",
      pattern: r.pattern,
      scope: sandbox ? "sandbox" : "global",
      by: ctx.by,
    });
  }
  return results;
}

/** Removes one entry from a list (the dashboard's remove button); removing what is gone is not an error. */
export function removeEntry(ctx: OpsContext, sandboxId: number | null, pattern: string): boolean {
  const changed = ctx.store.removeAllow(sandboxId, pattern);
  if (changed) {
    announce(ctx, {
      kind: "decision",
      at: (ctx.now ?? Date.now)(),
      sandbox: sandboxId === null ? null : ref(ctx.store, sandboxId),
      action: "remove",
      pattern,
      scope: sandboxId === null ? "global" : "sandbox",
      by: ctx.by,
    });
  }
  return changed;
}
