// The live feed: event shapes (proxy decisions, bridge commands, approvals decided), the in-memory bus every part of the daemon publishes on, and the converters from audit rows and proxy decisions.
import { z } from "zod";
import { sandboxState, type SandboxState } from "../core/sandbox-state";
import type { SpendView } from "../core/llm-budget";
import type { AuditEntry, Sandbox } from "../core/schemas";
import type { Store } from "../store/store";
import { Budget, cutText, FEED_COMMAND_MAX, FEED_EVENTS_BURST, FEED_EVENTS_PER_SECOND, FEED_TEXT_MAX } from "../core/bounds";

const SandboxRef = z.object({ id: z.number().int(), name: z.string() });
export type SandboxRef = z.infer<typeof SandboxRef>;

export const FeedEventSchema = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("egress"),
    at: z.number(),
    sandbox: SandboxRef,
    action: z.enum(["denied", "allowed", "error"]),
    method: z.string(),
    host: z.string(),
    port: z.number().int(),
    /** Why it was refused (denied) or what failed (error). */
    reason: z.string().optional(),
    detail: z.string().optional(),
    /** The pattern that would allow it, when the proxy knows one. */
    suggest: z.string().nullable().optional(),
    /** The pending approval this denial was recorded as, and how often it has been seen. */
    approvalId: z.number().int().optional(),
    count: z.number().int().optional(),
    /** Caught by the transparent path (a client that ignored the proxy variables); absent: the proxy path. */
    path: z.literal("transparent").optional(),
  }),
  z.object({
    kind: z.literal("bridge"),
    at: z.number(),
    sandbox: SandboxRef,
    command: z.array(z.string()),
    outcome: z.enum(["ok", "refused", "failed"]),
    exitCode: z.number().int().nullable().optional(),
    detail: z.string().optional(),
    /** A refusal the user can lift: the pending approval it was recorded as, and how often it has been asked. */
    approvalId: z.number().int().optional(),
    count: z.number().int().optional(),
  }),
  z.object({
    kind: z.literal("llm"),
    at: z.number(),
    sandbox: SandboxRef,
    /** A sandbox reached its LLM budget: its calls are refused, and a pending approval asks to raise it. */
    action: z.enum(["budget-reached"]),
    detail: z.string().optional(),
    approvalId: z.number().int().optional(),
    count: z.number().int().optional(),
  }),
  z.object({
    kind: z.literal("decision"),
    at: z.number(),
    sandbox: SandboxRef.nullable(),
    /** `lapsed`: an entry made for a time or once reached its expiry (by: sbx). */
    action: z.enum(["allow", "deny", "remove", "lapsed"]),
    pattern: z.string(),
    scope: z.enum(["sandbox", "global"]),
    by: z.string(),
    approvalId: z.number().int().optional(),
    /** How long an allow lasts when not for good (`for 30m`, `once (one connection)`), or what lapsed. */
    term: z.string().optional(),
  }),
]);
export type FeedEvent = z.infer<typeof FeedEventSchema>;

export type FeedListener = (e: FeedEvent) => void;

/** What the daemon hands the dashboard and the chat bot. `publish` lets them announce their own decisions. */
export interface FeedSource {
  subscribe(fn: FeedListener): () => void;
  publish?(e: FeedEvent): void;
}

export interface DataSource {
  store: Store;
  events: FeedSource;
  /** A sandbox's state in sbx's one word (the daemon's view of it); without it, what the store alone tells. */
  stateOf?: (sb: Sandbox) => SandboxState;
  /** A sandbox's LLM spend and budget (the daemon's ledger, priced at the table in force). */
  spendOf?: (sb: Sandbox) => SpendView;
}

/** A sandbox's state from a source: its own view, or else the store's record alone (the runtime unread: unknown). */
export function stateFrom(source: Pick<DataSource, "stateOf">, sb: Sandbox): SandboxState {
  return source.stateOf?.(sb) ?? sandboxState({ state: sb.state, phase: "unknown" });
}

export interface EventBus extends FeedSource {
  publish(e: FeedEvent): void;
  /** Listeners currently subscribed (for tests and leak checks). */
  size(): number;
}

/** Pure: an event with its text within bounds (each string FEED_TEXT_MAX, a command FEED_COMMAND_MAX words of 64). */
export function boundFeedEvent(e: FeedEvent): FeedEvent {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(e)) {
    if (typeof v === "string") out[k] = cutText(v, FEED_TEXT_MAX);
    else if (k === "command" && Array.isArray(v)) {
      const words = (v as string[]).slice(0, FEED_COMMAND_MAX).map((w) => cutText(w, 64));
      if (v.length > FEED_COMMAND_MAX) words.push(`…[+${v.length - FEED_COMMAND_MAX} more]`);
      out[k] = words;
    } else if (k === "sandbox" && v !== null && typeof v === "object") {
      const sb = v as SandboxRef;
      out[k] = { id: sb.id, name: cutText(sb.name, 64) };
    } else out[k] = v;
  }
  return out as FeedEvent;
}

/**
 * Whether an event is one of a sandbox's own traffic (a proxy decision, a bridge command): those take a per-sandbox
 * budget on the bus. One that asks the person something new (a new pending approval) always goes; so does every
 * decision a person made.
 */
function budgeted(e: FeedEvent): number | null {
  if (e.kind === "decision" || e.sandbox === null) return null;
  if (e.approvalId !== undefined && e.count === 1) return null;
  return e.sandbox.id;
}

export interface EventBusOptions {
  /** Clock seam (ms). */
  now?: () => number;
}

/**
 * A synchronous in-process bus; a throwing listener is isolated from the others and from the publisher. Bounded
 * (invariant 14): every event's text is cut to size, and a sandbox's own traffic reaches listeners (the dashboard, the
 * chat bot, the desktop notifier) at most FEED_EVENTS_BURST at once, then FEED_EVENTS_PER_SECOND; the rest is dropped
 * here (the audit log keeps what happened, within its own budget).
 */
export function createEventBus(onListenerError?: (e: unknown) => void, opts: EventBusOptions = {}): EventBus {
  const listeners = new Set<FeedListener>();
  const now = opts.now ?? Date.now;
  const budget = new Budget(FEED_EVENTS_BURST, FEED_EVENTS_PER_SECOND);
  return {
    subscribe(fn) {
      listeners.add(fn);
      return () => void listeners.delete(fn);
    },
    publish(raw) {
      const id = budgeted(raw);
      if (id !== null && !budget.take(id, now())) return;
      const e = boundFeedEvent(raw);
      for (const fn of [...listeners]) {
        try {
          fn(e);
        } catch (err) {
          onListenerError?.(err);
        }
      }
    },
    size: () => listeners.size,
  };
}

/** The shape of the egress proxy's `denied`/`closed`/`error` decisions, structurally (no import of the proxy). */
export type EgressDecisionLike =
  | { type: "denied"; sandbox: SandboxRef; path?: string; method: string; host: string; port: number; reason: string; detail: string; suggest: string | null; at: number }
  | { type: "closed"; sandbox: SandboxRef; path?: string; method: string; host: string; port: number; at: number }
  | { type: "error"; sandbox: SandboxRef; path?: string; method: string; host: string; port: number; message: string; at: number };

/** Maps one proxy decision (and the pending approval the sink recorded for it, if any) to a feed event. */
export function feedFromEgress(e: EgressDecisionLike, approval?: { id: number; count: number } | null): FeedEvent {
  const base = {
    kind: "egress" as const,
    at: e.at,
    sandbox: { id: e.sandbox.id, name: e.sandbox.name },
    method: e.method,
    host: e.host,
    port: e.port,
    ...(e.path === "transparent" ? { path: "transparent" as const } : {}),
  };
  if (e.type === "denied") {
    return {
      ...base,
      action: "denied",
      reason: e.reason,
      detail: e.detail,
      suggest: e.suggest,
      ...(approval ? { approvalId: approval.id, count: approval.count } : {}),
    };
  }
  if (e.type === "error") return { ...base, action: "error", reason: "error", detail: e.message };
  return { ...base, action: "allowed" };
}

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);

/**
 * Rebuilds a feed event from an audit row (what the proxy sink and the bridge write), so the feed has history
 * and a dashboard in another process than the daemon can tail the log. Rows of unknown kinds give null.
 */
export function feedFromAudit(row: AuditEntry, sandboxName: (id: number) => string): FeedEvent | null {
  const d = row.detail;
  if (row.kind === "allowlist" && (row.action === "allow" || row.action === "deny" || row.action === "remove" || row.action === "lapsed")) {
    const pattern = str(d.pattern);
    const scope = d.scope === "global" ? "global" : "sandbox";
    if (pattern === undefined) return null;
    const approvalId = num(d.approvalId);
    return {
      kind: "decision",
      at: row.ts,
      sandbox: row.sandboxId === null ? null : { id: row.sandboxId, name: sandboxName(row.sandboxId) },
      action: row.action,
      pattern,
      scope,
      by: str(d.by) ?? "",
      ...(approvalId !== undefined ? { approvalId } : {}),
      ...(str(d.term) !== undefined ? { term: str(d.term)! } : {}),
    };
  }
  if (row.sandboxId === null) return null;
  const sandbox = { id: row.sandboxId, name: sandboxName(row.sandboxId) };
  if (row.kind === "egress" && row.action === "blocked-raw") {
    // A raw connection around the proxy that the kernel firewall dropped (linux-user nft log, macOS pflog): shown as
    // a denial with reason `blocked-raw`; there is nothing to approve (allowing a host never opens the firewall).
    const dst = str(d.dst);
    if (dst === undefined) return null;
    const summary = str(d.summary) ?? dst;
    return {
      kind: "egress",
      at: row.ts,
      sandbox,
      action: "denied",
      method: (str(d.proto) ?? "ip").toUpperCase(),
      host: dst,
      port: num(d.dport) ?? 0,
      reason: "blocked-raw",
      detail: `${summary}: sent around the sbx proxy, dropped by the firewall`,
      suggest: null,
    };
  }
  if (row.kind === "egress" && (row.action === "denied" || row.action === "allowed" || row.action === "error")) {
    const host = str(d.host);
    const port = num(d.port);
    if (host === undefined || port === undefined) return null;
    const reason = str(d.reason);
    const detail = str(d.detail) ?? str(d.message);
    return {
      kind: "egress",
      at: row.ts,
      sandbox,
      action: row.action,
      method: str(d.method) ?? "",
      host,
      port,
      ...(reason !== undefined ? { reason } : {}),
      ...(detail !== undefined ? { detail } : {}),
      ...(d.path === "transparent" ? { path: "transparent" as const } : {}),
    };
  }
  if (row.kind === "bridge") {
    // The bridge guard writes {tool, args, decision} with action `<tool>.<decision>`; older rows carry argv/command.
    const argv = Array.isArray(d.argv) ? d.argv : Array.isArray(d.command) ? d.command : Array.isArray(d.args) && typeof d.tool === "string" ? [d.tool, ...d.args] : null;
    const command = argv ? argv.filter((a): a is string => typeof a === "string") : [str(d.command) ?? row.action];
    const said = str(d.decision) ?? row.action.split(".").pop()!;
    const outcome = said === "refused" || said === "denied" ? "refused" : said === "failed" || said === "error" ? "failed" : "ok";
    const exitCode = num(d.exitCode);
    return { kind: "bridge", at: row.ts, sandbox, command, outcome, ...(exitCode !== undefined ? { exitCode } : {}) };
  }
  return null;
}
