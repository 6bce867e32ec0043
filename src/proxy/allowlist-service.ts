// Allowlist and approval operations over the Store (shared by CLI verbs, chat commands and the daemon), and the proxy's decision sink.
import { formatIp } from "../core/addresses";
import { parsePattern, validatePattern } from "../core/allowlist";
import { BUILTIN_ALLOWLIST, patternFor, type PolicyLists } from "../core/egress";
import { SbxError } from "../core/errors";
import type { AllowEntry, Approval, Sandbox } from "../core/schemas";
import type { Store } from "../store/store";
import type { Exec } from "../sys/exec";
import { findRepoRoot } from "../workspace/repo";
import type { EgressEvent } from "./egress-proxy";

export type Scope = { kind: "sandbox"; sandbox: Sandbox } | { kind: "global" };

function scopeId(scope: Scope): number | null {
  return scope.kind === "global" ? null : scope.sandbox.id;
}

export function scopeLabel(scope: Scope): string {
  return scope.kind === "global" ? "every sandbox (global)" : `sandbox '${scope.sandbox.name}'`;
}

/**
 * The sandbox called `name` in the repo around cwd.
 * runs: git -C <cwd> rev-parse --show-toplevel
 */
export async function findSandboxByName(store: Store, exec: Exec, cwd: string, name: string): Promise<Sandbox> {
  const repo = await findRepoRoot(exec, cwd);
  const sb = store.findSandbox(repo, name);
  if (!sb) {
    throw new SbxError("not_found", `no sandbox '${name}' in ${repo}`, {
      hint: "Run `sbx list` to see this repo's sandboxes, or run sbx from inside the repo the sandbox was created from.",
    });
  }
  return sb;
}

/** `--sandbox NAME` or `--global`, exactly one (allow and deny share it). */
export async function resolveScope(
  store: Store,
  exec: Exec,
  cwd: string,
  opts: { sandbox?: unknown; global?: unknown },
  verb: string,
): Promise<Scope> {
  const name = typeof opts.sandbox === "string" ? opts.sandbox : undefined;
  if (name !== undefined && opts.global) {
    throw new SbxError("usage", "--sandbox and --global cannot be used together", { hint: `Run \`sbx ${verb}\` once for each scope.` });
  }
  if (opts.global) return { kind: "global" };
  if (name === undefined) {
    throw new SbxError("usage", "say which list: --sandbox NAME or --global", {
      hint: `e.g. \`sbx ${verb} example.com --sandbox demo\`; \`sbx list\` shows the sandboxes.`,
    });
  }
  return { kind: "sandbox", sandbox: await findSandboxByName(store, exec, cwd, name) };
}

export interface PatternChange {
  pattern: string;
  changed: boolean;
}

/** Validates every pattern first (a too-broad one refuses the whole call, exit 64), then adds them in canonical form. */
export function addPatterns(store: Store, scope: Scope, patterns: readonly string[], addedBy: string): PatternChange[] {
  if (patterns.length === 0) {
    throw new SbxError("usage", "nothing to allow", { hint: "Name a host (example.com), a wildcard (*.example.com), an IP or CIDR, or --preset NAME." });
  }
  const canon = patterns.map((p) => validatePattern(p).canonical);
  const unique = [...new Set(canon)];
  const changes = unique.map((pattern) => ({ pattern, changed: store.addAllow(scopeId(scope), pattern, addedBy) }));
  for (const c of changes) if (c.changed) auditDecision(store, scopeId(scope), "allow", c.pattern, addedBy, null);
  return changes;
}

/** Removes patterns (matched in canonical form, or verbatim for entries stored before a rule changed). */
export function removePatterns(store: Store, scope: Scope, patterns: readonly string[], removedBy: string): PatternChange[] {
  return patterns.map((raw) => {
    const r = parsePattern(raw);
    const canonical = r.ok ? r.canonical : raw.trim();
    const changed = store.removeAllow(scopeId(scope), canonical) || (canonical !== raw && store.removeAllow(scopeId(scope), raw));
    if (changed) auditDecision(store, scopeId(scope), "remove", canonical, removedBy, null);
    return { pattern: canonical, changed };
  });
}

/**
 * The audit row of an allowlist change made here (the CLI), in the shape the dashboard's feed reads back
 * (ui/feed.ts feedFromAudit: kind "allowlist"); the daemon tails rows by `cli:` deciders onto its live feed.
 */
function auditDecision(store: Store, sandboxId: number | null, action: "allow" | "deny" | "remove", pattern: string, by: string, approvalId: number | null): void {
  store.audit({
    sandboxId,
    kind: "allowlist",
    action,
    detail: { pattern, scope: sandboxId === null ? "global" : "sandbox", by, approvalId },
  });
}

/** What the proxy reads on every request. */
export function policyFor(store: Store, sandboxId: number): PolicyLists {
  return {
    sandbox: store.listAllow(sandboxId).map((e) => e.pattern),
    global: store.listAllow(null).map((e) => e.pattern),
  };
}

export interface AllowlistView {
  sandbox: { name: string; entries: AllowEntry[] } | null;
  global: AllowEntry[];
  builtin: readonly string[];
}

export function showAllowlist(store: Store, sandbox: Sandbox | null): AllowlistView {
  return {
    sandbox: sandbox ? { name: sandbox.name, entries: store.listAllow(sandbox.id) } : null,
    global: store.listAllow(null),
    builtin: BUILTIN_ALLOWLIST,
  };
}

export type PendingView = Approval & { sandbox: string };

/** Pending approvals, newest first, with the sandbox's name. */
export function pendingApprovals(store: Store): PendingView[] {
  const names = new Map<number, string>();
  return store.listApprovals({ state: "pending" }).map((a) => {
    if (!names.has(a.sandboxId)) names.set(a.sandboxId, store.getSandbox(a.sandboxId)?.name ?? `#${a.sandboxId}`);
    return { ...a, sandbox: names.get(a.sandboxId)! };
  });
}

export interface ApprovalOutcome {
  approval: Approval;
  /** For `allow`: the pattern added to the sandbox's list. */
  pattern: string | null;
  added: boolean;
}

/** Decides a pending approval; allowing adds its host (with the port when not 80/443) to that sandbox's list. */
export function decidePending(store: Store, id: number, decision: "allow" | "deny", decidedBy: string): ApprovalOutcome {
  return store.write(() => {
    const approval = store.decideApproval(id, decision === "allow" ? "allowed" : "denied", decidedBy);
    const pattern = validatePattern(patternFor(approval.host, approval.port)).canonical;
    const added = decision === "allow" && store.addAllow(approval.sandboxId, pattern, decidedBy);
    auditDecision(store, approval.sandboxId, decision, pattern, decidedBy, approval.id);
    return { approval, pattern: decision === "allow" ? pattern : null, added };
  });
}

/** The host part of a suggested pattern, as the approvals table keys it. */
function approvalHost(suggest: string): string | null {
  const r = parsePattern(suggest);
  if (!r.ok) return null;
  const p = r.pattern;
  if (p.kind === "exact") return p.host;
  if (p.kind === "cidr") return formatIp(p.cidr.network);
  return null;
}

export interface DecisionSinkOptions {
  /** Called once per new pending approval (not on repeats): the desktop/terminal notification hook. */
  notify?: (approval: Approval, event: Extract<EgressEvent, { type: "denied" }>) => void;
  /** Allowed-traffic audit rows are batched and written this often (ms). */
  flushMs?: number;
}

export interface DecisionSink {
  onDecision: (e: EgressEvent) => void;
  /** Writes buffered audit rows now. */
  flush(): void;
  close(): void;
}

/**
 * The proxy's onDecision for the daemon: a denial records a pending approval (deduplicated per sandbox and
 * host) and an audit row at once; allowed tunnels and errors are audited in batches off the hot path.
 */
export function createDecisionSink(store: Store, opts: DecisionSinkOptions = {}): DecisionSink {
  const flushMs = opts.flushMs ?? 250;
  let buffer: { sandboxId: number; action: string; detail: Record<string, unknown> }[] = [];
  let timer: ReturnType<typeof setTimeout> | null = null;

  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    if (buffer.length === 0) return;
    const rows = buffer;
    buffer = [];
    store.write(() => {
      for (const r of rows) store.audit({ sandboxId: r.sandboxId, kind: "egress", action: r.action, detail: r.detail });
    });
  };
  const schedule = () => {
    if (buffer.length >= 500) flush();
    else
      timer ??= setTimeout(() => {
        try {
          flush();
        } catch {
          // The audit is best-effort from a timer: a closed or busy database must not take the daemon down.
        }
      }, flushMs);
  };

  const onDecision = (e: EgressEvent) => {
    if (e.type === "denied") {
      const host = e.suggest === null ? null : approvalHost(e.suggest);
      store.audit({
        sandboxId: e.sandbox.id,
        kind: "egress",
        action: "denied",
        detail: { method: e.method, host: e.host, port: e.port, reason: e.reason, detail: e.detail },
      });
      if (host !== null) {
        const approval = store.recordPending(e.sandbox.id, host, e.port, `${e.reason}: ${e.detail}`);
        if (approval.count === 1) opts.notify?.(approval, e);
      }
      return;
    }
    if (e.type === "closed") {
      buffer.push({
        sandboxId: e.sandbox.id,
        action: "allowed",
        detail: {
          method: e.method,
          host: e.host,
          port: e.port,
          address: e.address,
          pattern: e.pattern,
          source: e.source,
          bytesUp: e.bytesUp,
          bytesDown: e.bytesDown,
          durationMs: e.durationMs,
        },
      });
    } else {
      buffer.push({ sandboxId: e.sandbox.id, action: "error", detail: { method: e.method, host: e.host, port: e.port, address: e.address, message: e.message } });
    }
    schedule();
  };

  let closed = false;
  return {
    onDecision: (e) => {
      if (!closed) onDecision(e);
    },
    flush,
    close() {
      flush();
      closed = true;
    },
  };
}
