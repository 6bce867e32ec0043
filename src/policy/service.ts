// The one allowlist and approvals service: the CLI (through the daemon), the dashboard and the chat bot all decide here.
//
// Every decision is the same three things wherever it is made: the store changed (in one transaction, with the pending
// approvals it answers), an audit row, and a decision event on the live feed (dashboard, chat, notifications).
import { formatIp, parseIp } from "../core/addresses";
import { matchesAddress, matchesName, pairAllows, parsePattern, validatePattern } from "../core/allowlist";
import type { IpBytes } from "../core/addresses";
import { BUILTIN_ALLOWLIST, parsePublished, patternFor, publishedOf, type PolicyLists } from "../core/egress";
import { FOR_GOOD, termText, type AllowTerm } from "../core/allow-term";
import { levelAgents, levelLists, levelMirrors, levelOf } from "../core/levels";
import { consumeOnce, grant, liveAt, takeLapsed } from "./lapse";
import { bridgeSettingsOf, parseSubject, subjectText, withApproval } from "../core/bridge-settings";
import { SbxError } from "../core/errors";
import { budgetOf, formatBudget, periodOf, withGrant } from "../core/llm-budget";
import type { AllowEntry, Approval, Sandbox } from "../core/schemas";
import type { Store } from "../store/store";
import { canonicalRule, EgressRules, type StoredRule } from "../store/egress-rules";
import { ruleProblem, ruleText, type RuleSpec } from "../core/rules";
import { checkPolicy, type CheckRequest, type CheckResult } from "../core/policy-check";
import { compilePolicy } from "../core/egress";
import type { FeedEvent, SandboxRef } from "../events/feed";

/** Which list a change is for. */
export type Scope = { kind: "sandbox"; sandbox: Sandbox } | { kind: "global" };

export function scopeLabel(scope: Scope): string {
  return scope.kind === "global" ? "every sandbox (global)" : `sandbox '${scope.sandbox.name}'`;
}

/** How a pending approval is answered: allowed for its sandbox, for every sandbox, or denied. */
export type Choice = "allow-sandbox" | "allow-global" | "deny";

export interface PatternResult {
  pattern: string;
  /** Whether the list changed (added for allow, removed for deny). */
  changed: boolean;
  /** Pending approvals this answered. */
  resolved: Approval[];
}

export interface ApprovalDecision {
  approval: Approval;
  sandbox: SandboxRef;
  pattern: string;
  scope: "sandbox" | "global";
  action: "allow" | "deny";
  /** false when the pattern was already on that list (or for deny). */
  added: boolean;
}

export interface AllowlistView {
  sandbox: { name: string; entries: AllowEntry[]; rules: StoredRule[] } | null;
  global: AllowEntry[];
  globalRules: StoredRule[];
  builtin: readonly string[];
}

export type PendingView = Approval & { sandbox: string };

export interface PolicyDeps {
  store: Store;
  /** The live feed; a listener that throws never undoes a stored decision. */
  publish?: (e: FeedEvent) => void;
  now?: () => number;
}

/**
 * What the proxy reads on every request (and `sbx policy check` judges with): the lists as they are at `now` (an entry
 * past its expiry allows nothing from that moment, whether or not the sweep took it yet), the rules, the sandbox's
 * level, and its one-time approvals apart.
 */
export function policyFor(store: Store, sandboxId: number, now: number = Date.now()): PolicyLists {
  const rules = new EgressRules(store);
  const own = store.listAllow(sandboxId).filter((e) => liveAt(e, now));
  const identity = store.getSandbox(sandboxId)?.identity ?? {};
  const setting = levelOf(identity);
  const level = setting && levelLists(setting, levelAgents(identity), levelMirrors(identity));
  return {
    sandbox: own.filter((e) => !e.once).map((e) => e.pattern),
    global: store.listAllow(null).filter((e) => liveAt(e, now) && !e.once).map((e) => e.pattern),
    published: publishedOf(identity),
    rules: [...rules.list(sandboxId).map((r) => ({ ...r.spec, source: "sandbox" as const })), ...rules.list(null).map((r) => ({ ...r.spec, source: "global" as const }))],
    level: level && { name: level.name, patterns: level.parts.map((p) => p.pattern), open: level.open },
    once: own.filter((e) => e.once).map((e) => e.pattern),
  };
}

/** The global lists alone: what a sandbox with nothing of its own gets. */
function globalPolicy(store: Store): PolicyLists {
  return { sandbox: [], global: store.listAllow(null).filter((e) => liveAt(e, Date.now()) && !e.once).map((e) => e.pattern), rules: new EgressRules(store).list(null).map((r) => ({ ...r.spec, source: "global" as const })) };
}

/** A pending approval's host as a pattern sees it: a name, an address, or a name paired with its address. */
function pendingTarget(host: string): { name: string; address: IpBytes | null } | null {
  if (!host.includes("@")) return null;
  const q = parsePattern(host);
  return q.ok && q.pattern.kind === "pair" ? { name: q.pattern.host, address: q.pattern.address } : null;
}

/** Whether a pattern covers a pending approval's host and port (a `name@address` one only by that same pairing). */
function covers(pattern: string, host: string, port: number): boolean {
  const { pattern: p } = validatePattern(pattern);
  const pair = pendingTarget(host);
  if (pair) return pairAllows(p, pair.name, pair.address!, port);
  const ip = parseIp(host);
  return ip ? matchesAddress(p, ip, port) : matchesName(p, host, port);
}

/** The host part of a suggested pattern, as the approvals table keys it (the proxy's decision sink uses it). */
export function approvalHost(suggest: string): string | null {
  // A service of the host (loopback address:port): its approval, allowed, publishes it.
  const service = parsePublished(suggest);
  if (service.ok) return service.endpoint.slice(0, service.endpoint.lastIndexOf(":")).replace(/^\[(.*)\]$/, "$1");
  const r = parsePattern(suggest);
  if (!r.ok) return null;
  const p = r.pattern;
  if (p.kind === "exact") return p.host;
  if (p.kind === "pair") return r.canonical.replace(/:\d+$/, "");
  if (p.kind === "cidr") return formatIp(p.cidr.network);
  return null;
}

export class PolicyService {
  private readonly rules: EgressRules;

  constructor(private readonly d: PolicyDeps) {
    this.rules = new EgressRules(d.store, d.now);
  }

  private ref(id: number): SandboxRef {
    return { id, name: this.d.store.getSandbox(id)?.name ?? `#${id}` };
  }

  /** The audit row and the feed event of one decision (the store change is already made). */
  private announce(e: Extract<FeedEvent, { kind: "decision" }>, auditKind: "allowlist" | "bridge" | "llm" = "allowlist"): void {
    this.d.store.audit({
      sandboxId: e.sandbox?.id ?? null,
      kind: auditKind,
      action: e.action,
      detail: { pattern: e.pattern, scope: e.scope, by: e.by, approvalId: e.approvalId ?? null, ...(e.term ? { term: e.term } : {}) },
    });
    try {
      this.d.publish?.(e);
    } catch {
      // The feed is best effort; the decision is stored and audited.
    }
  }

  private now(): number {
    return (this.d.now ?? Date.now)();
  }

  /** Marks the pending approvals a pattern covers (in one sandbox, or every sandbox) as decided. */
  private resolvePending(sandboxId: number | null, pattern: string, state: "allowed" | "denied", by: string): Approval[] {
    const { store } = this.d;
    const pending = store.listApprovals(sandboxId === null ? { state: "pending" } : { state: "pending", sandboxId });
    return pending.filter((a) => a.kind === "egress" && covers(pattern, a.host, a.port)).map((a) => store.decideApproval(a.id, state, by));
  }

  /** For deny: the pending approvals for the pattern's host, on any port when the pattern names none. */
  private resolvePendingHost(sandboxId: number | null, pattern: string, by: string): Approval[] {
    const { store } = this.d;
    const { pattern: p } = validatePattern(pattern);
    const pending = store.listApprovals(sandboxId === null ? { state: "pending" } : { state: "pending", sandboxId });
    return pending
      .filter((a) => {
        if (a.kind !== "egress") return false;
        const q = p.port === null ? { ...p, port: a.port } : p;
        // `sbx deny NAME` answers the name's pending pairings too.
        const host = pendingTarget(a.host)?.name ?? a.host;
        const ip = parseIp(host);
        return ip ? matchesAddress(q, ip, a.port) : matchesName(q, host, a.port);
      })
      .map((a) => store.decideApproval(a.id, "denied", by));
  }

  /**
   * Adds patterns to a list and answers the pending approvals they cover. Every pattern is validated first: one the
   * core refuses (too broad, malformed) refuses the whole call, and nothing changes.
   */
  allow(scope: Scope, patterns: readonly string[], by: string, term: AllowTerm = FOR_GOOD): PatternResult[] {
    const canon = [...new Set(patterns.map((p) => validatePattern(p).canonical))];
    if (canon.length === 0) {
      throw new SbxError("usage", "nothing to allow", { hint: "Name a host (example.com), a wildcard (*.example.com), an IP or CIDR, or --preset NAME." });
    }
    if (term.kind === "once" && scope.kind === "global") {
      throw new SbxError("usage", "--once is one connection of one sandbox: it is not for every sandbox", { hint: "Name the sandbox (--sandbox NAME), or give every sandbox a time (--global --for 30m)." });
    }
    const id = scope.kind === "global" ? null : scope.sandbox.id;
    const at = this.now();
    const results = this.d.store.write(() =>
      canon.map((pattern) => ({
        pattern,
        changed: grant(this.d.store, id, pattern, by, term, at),
        resolved: this.resolvePending(id, pattern, "allowed", by),
      })),
    );
    const sandbox = scope.kind === "global" ? null : { id: scope.sandbox.id, name: scope.sandbox.name };
    // Only what changed something is a decision: allowing what was allowed already is no news. One that answered a
    // pending request names it, as deciding that request would (a refused name is then paired with its private
    // address: policy/private-pairing.ts; `sbx allow NAME` is what the 403 itself advises).
    for (const r of results) {
      const answered = r.resolved[0]?.id;
      if (r.changed || r.resolved.length > 0) this.announce({ kind: "decision", at, sandbox, action: "allow", pattern: r.pattern, scope: scope.kind, by, ...(answered !== undefined ? { approvalId: answered } : {}), ...termField(term) });
    }
    return results;
  }

  /**
   * Removes patterns from a list (matched in canonical form, or verbatim for an entry stored before a rule changed)
   * and answers the pending approvals for those hosts as denied.
   */
  deny(scope: Scope, patterns: readonly string[], by: string): PatternResult[] {
    if (patterns.length === 0) throw new SbxError("usage", "nothing to deny", { hint: "Name a host, e.g. example.org." });
    const id = scope.kind === "global" ? null : scope.sandbox.id;
    const { store } = this.d;
    const results = store.write(() =>
      patterns.map((raw) => {
        const r = parsePattern(raw);
        const pattern = r.ok ? r.canonical : raw.trim();
        // Nothing allows the host any more: its whole-host entry and every allow rule for it go.
        const rulesGone = r.ok ? this.rules.removeAllowsOf(id, pattern).length > 0 : false;
        const changed = store.removeAllow(id, pattern) || (pattern !== raw && store.removeAllow(id, raw)) || rulesGone;
        return { pattern, changed, resolved: r.ok ? this.resolvePendingHost(id, pattern, by) : [] };
      }),
    );
    const at = this.now();
    const sandbox = scope.kind === "global" ? null : { id: scope.sandbox.id, name: scope.sandbox.name };
    for (const r of results) {
      if (r.changed || r.resolved.length > 0) this.announce({ kind: "decision", at, sandbox, action: r.changed ? "remove" : "deny", pattern: r.pattern, scope: scope.kind, by });
    }
    return results;
  }

  /**
   * Adds (or, `remove`, takes away) a rule that sees requests: an allow for some methods and paths of a host, or a deny
   * that carves requests out of what is allowed. Its host is validated as an allowlist pattern is. An allow rule
   * answers the pending approvals for its host (the host is reachable now, for what the rule allows).
   */
  rule(scope: Scope, raw: RuleSpec, by: string, remove = false): { rule: string; changed: boolean; resolved: Approval[] } {
    const host = validatePattern(raw.host).canonical;
    const spec = canonicalRule({ ...raw, host });
    const why = ruleProblem(spec);
    if (why) throw new SbxError("usage", `refused rule: ${why}`, { hint: "e.g. sbx allow api.github.com --method GET,HEAD --path '/repos/acme/**' (paths: * within a segment, a last ** for any depth)." });
    const id = scope.kind === "global" ? null : scope.sandbox.id;
    const text = ruleText(spec);
    const r = this.d.store.write(() => {
      if (remove) return { changed: this.rules.remove(id, spec), resolved: [] as Approval[] };
      const changed = this.rules.add(id, spec, by);
      return { changed, resolved: spec.effect === "allow" ? this.resolvePending(id, host, "allowed", by) : [] };
    });
    if (r.changed || r.resolved.length > 0) {
      const sandbox = scope.kind === "global" ? null : { id: scope.sandbox.id, name: scope.sandbox.name };
      this.announce({ kind: "decision", at: this.now(), sandbox, action: remove ? "remove" : spec.effect, pattern: text, scope: scope.kind, by });
    }
    return { rule: text, ...r };
  }

  /**
   * A dry run: what the proxy would do with a connection to host:port (and, given a method and path, with that
   * request), for a sandbox (its lists, then the global ones) or for one with nothing of its own.
   */
  check(sandbox: Sandbox | null, req: CheckRequest): CheckResult {
    const lists = sandbox ? policyFor(this.d.store, sandbox.id) : globalPolicy(this.d.store);
    return checkPolicy(compilePolicy(lists), req, sandbox?.name ?? null);
  }

  /** Removes one entry (the dashboard's remove button); removing what is gone is not an error. */
  remove(sandboxId: number | null, pattern: string, by: string): boolean {
    const changed = this.d.store.removeAllow(sandboxId, pattern);
    if (changed) {
      this.announce({
        kind: "decision",
        at: this.now(),
        sandbox: sandboxId === null ? null : this.ref(sandboxId),
        action: "remove",
        pattern,
        scope: sandboxId === null ? "global" : "sandbox",
        by,
      });
    }
    return changed;
  }

  /**
   * Decides one pending approval: allow for its sandbox, allow everywhere (the global list, which also answers every
   * other sandbox's pending request it covers), or deny. Allowing adds the host (with its port when not 80/443).
   */
  decide(approvalId: number, choice: Choice, by: string, term: AllowTerm = FOR_GOOD): ApprovalDecision {
    const { store } = this.d;
    const at = this.now();
    const result = store.write(() => {
      const approval = store.decideApproval(approvalId, choice === "deny" ? "denied" : "allowed", by);
      if (term.kind !== "good" && choice !== "deny" && (approval.kind !== "egress" || parsePublished(`[${approval.host}]:${approval.port}`).ok)) {
        const what = approval.kind === "bridge" ? "the bridge's" : approval.kind === "budget" ? "for more LLM budget" : "for a service of the host";
        throw new SbxError("usage", `approval ${approval.id} is ${what}: it is allowed for good or not at all`, {
          hint: `Allow it without --once or --for (\`sbx approvals allow ${approval.id}\`), and take it back when done.`,
        });
      }
      if (term.kind === "once" && choice === "allow-global") {
        throw new SbxError("usage", `--once is one connection of approval ${approval.id}'s sandbox: it is not for every sandbox`, { hint: `\`sbx approvals allow ${approval.id} --once\`` });
      }
      if (approval.kind === "bridge") return this.decideBridge(approval, choice);
      if (approval.kind === "budget") return this.decideBudget(approval, choice);
      const service = parsePublished(`[${approval.host}]:${approval.port}`);
      if (service.ok) return this.decideHostService(approval, service.endpoint, choice);
      const pattern = validatePattern(patternFor(approval.host, approval.port)).canonical;
      const scope: "sandbox" | "global" = choice === "allow-global" ? "global" : "sandbox";
      let added = false;
      if (choice !== "deny") {
        added = grant(store, scope === "global" ? null : approval.sandboxId, pattern, by, term, at);
        this.resolvePending(scope === "global" ? null : approval.sandboxId, pattern, "allowed", by);
      }
      return { approval, sandbox: this.ref(approval.sandboxId), pattern, scope, action: choice === "deny" ? ("deny" as const) : ("allow" as const), added };
    });
    this.announce({ kind: "decision", at, sandbox: result.sandbox, action: result.action, pattern: result.pattern, scope: result.scope, by, approvalId, ...(result.action === "allow" ? termField(term) : {}) }, result.approval.kind === "bridge" ? "bridge" : result.approval.kind === "budget" ? "llm" : "allowlist");
    return result;
  }

  /**
   * Deletes the entries past their expiry and says so for each (an audit row, `sbx logs`, and a `lapsed` decision on
   * the feed). They stopped allowing at their expiry already: policyFor reads none past it.
   */
  sweep(): number {
    const at = this.now();
    const gone = takeLapsed(this.d.store, at);
    for (const e of gone) {
      const sandbox = e.sandboxId === null ? null : this.ref(e.sandboxId);
      this.announce({ kind: "decision", at, sandbox, action: "lapsed", pattern: e.pattern, scope: e.sandboxId === null ? "global" : "sandbox", by: "sbx", term: e.once ? "once, never used" : `until ${new Date(e.expiresAt ?? at).toISOString()}` });
    }
    return gone.length;
  }

  /** The proxy uses up a sandbox's one-time approval (decision.ts): true when this connection took it; audited. */
  useOnce(sandboxId: number, pattern: string): boolean {
    const e = consumeOnce(this.d.store, sandboxId, pattern, this.now());
    if (e) this.d.store.audit({ sandboxId, kind: "allowlist", action: "once-used", detail: { pattern, scope: "sandbox", by: e.addedBy } });
    return e !== null;
  }

  /**
   * A bridge approval (inside decide's transaction): allowing adds its one branch or repository to the sandbox's bridge
   * settings, which the bridge reads at its next request. There is no global bridge list: allow-global is refused.
   */
  private decideBridge(approval: Approval, choice: Choice): ApprovalDecision {
    const { store } = this.d;
    if (choice === "allow-global") {
      throw new SbxError("usage", `approval ${approval.id} is the bridge's, for one sandbox: it cannot be allowed for every sandbox`, {
        hint: `Allow it for its sandbox (\`sbx approvals allow ${approval.id}\`).`,
      });
    }
    const subject = parseSubject(approval.host);
    if (subject === null) throw new SbxError("config", `approval ${approval.id} names nothing the bridge knows (${approval.host})`);
    const sandbox = store.getSandbox(approval.sandboxId);
    let added = false;
    if (choice !== "deny" && sandbox) {
      const cur = bridgeSettingsOf(sandbox.identity);
      const next = withApproval(cur, subject);
      added = next !== cur;
      if (added) store.updateIdentity(sandbox.id, { ...sandbox.identity, bridge: next });
    }
    return { approval, sandbox: this.ref(approval.sandboxId), pattern: subjectText(subject), scope: "sandbox", action: choice === "deny" ? "deny" : "allow", added };
  }

  /**
   * A sandbox at its LLM budget (inside decide's transaction): allowing grants one more budget's worth for the period
   * it is in (today, for a /day budget: it lapses at midnight), which the LLM handler reads at the next call.
   */
  private decideBudget(approval: Approval, choice: Choice): ApprovalDecision {
    const { store } = this.d;
    if (choice === "allow-global") {
      throw new SbxError("usage", `approval ${approval.id} is one sandbox's LLM budget: it cannot be allowed for every sandbox`, {
        hint: `Allow it for its sandbox (\`sbx approvals allow ${approval.id}\`).`,
      });
    }
    const sandbox = store.getSandbox(approval.sandboxId);
    const budget = sandbox ? budgetOf(sandbox.identity) : null;
    let pattern = approval.host;
    let added = false;
    if (choice !== "deny" && sandbox && budget) {
      const period = periodOf(budget, this.now());
      store.updateIdentity(sandbox.id, { ...sandbox.identity, llmBudget: withGrant(budget, period) });
      pattern = `llm-budget +${formatBudget({ ...budget, per: "total" })} ${period === "total" ? "" : "today"}`.trim();
      added = true;
    }
    return { approval, sandbox: this.ref(approval.sandboxId), pattern, scope: "sandbox", action: choice === "deny" ? "deny" : "allow", added };
  }

  /**
   * A refused request for a service of the host (its loopback): allowing it publishes that one address and port for
   * its sandbox (as `sbx publish` does); never for every sandbox.
   */
  private decideHostService(approval: Approval, endpoint: string, choice: Choice): ApprovalDecision {
    const { store } = this.d;
    if (choice === "allow-global") {
      throw new SbxError("usage", `approval ${approval.id} is for ${endpoint}, a service of the host: it is published for one sandbox, never for every sandbox`, {
        hint: `Allow it for its sandbox (\`sbx approvals allow ${approval.id}\`).`,
      });
    }
    const sandbox = store.getSandbox(approval.sandboxId);
    let added = false;
    if (choice !== "deny" && sandbox) {
      const cur = publishedOf(sandbox.identity);
      added = !cur.includes(endpoint);
      if (added) store.updateIdentity(sandbox.id, { ...sandbox.identity, publish: [...cur, endpoint].sort() });
    }
    return { approval, sandbox: this.ref(approval.sandboxId), pattern: endpoint, scope: "sandbox", action: choice === "deny" ? "deny" : "allow", added };
  }

  /** Pending approvals, newest first, with the sandbox's name. */
  pending(): PendingView[] {
    const { store } = this.d;
    const names = new Map<number, string>();
    return store.listApprovals({ state: "pending" }).map((a) => {
      if (!names.has(a.sandboxId)) names.set(a.sandboxId, store.getSandbox(a.sandboxId)?.name ?? `#${a.sandboxId}`);
      return { ...a, sandbox: names.get(a.sandboxId)! };
    });
  }

  /** A sandbox's list (when given), the global list and the built-in one. */
  show(sandbox: Sandbox | null): AllowlistView {
    const { store } = this.d;
    // What allows now: an entry past its expiry is not shown as allowing (the sweep takes it within seconds).
    const t = this.now();
    return {
      sandbox: sandbox ? { name: sandbox.name, entries: store.listAllow(sandbox.id).filter((e) => liveAt(e, t)), rules: this.rules.list(sandbox.id) } : null,
      global: store.listAllow(null).filter((e) => liveAt(e, t)),
      globalRules: this.rules.list(null),
      builtin: BUILTIN_ALLOWLIST,
    };
  }
}

/** The term of an allow as its decision event and audit row carry it (none for good). */
function termField(t: AllowTerm): { term?: string } {
  return t.kind === "good" ? {} : { term: termText(t) };
}
