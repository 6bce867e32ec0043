// What the webhook and Slack channels share: which feed events announce a new approval, how an approval reads to a
// person, and the one way a decision that came from outside is taken (bound to its approval and its sandbox, through
// the policy service the CLI, the dashboard and the Zulip bot use).
import { basename } from "node:path";
import { describeSubject } from "../core/bridge-settings";
import { patternFor } from "../core/egress";
import { isSbxError } from "../core/errors";
import type { Approval, Sandbox } from "../core/schemas";
import type { FeedEvent } from "../events/feed";
import { PolicyService, type ApprovalDecision } from "../policy/service";
import type { Store } from "../store/store";
import type { LinkTarget } from "./links";

/** What a channel lets a person answer from outside: allowed for its sandbox, or denied (never for every sandbox). */
export type ChannelChoice = "allow-sandbox" | "deny";
export const CHANNEL_CHOICES: readonly ChannelChoice[] = ["allow-sandbox", "deny"];

/**
 * The approval a feed event announces for the first time (the proxy's denial recorded as pending, the bridge's refusal
 * that can be approved), or null: repeats, allowed traffic and decisions announce nothing new.
 */
export function newApprovalOf(e: FeedEvent): LinkTarget | null {
  if (e.kind === "egress" && e.action === "denied" && e.approvalId !== undefined && e.count === 1) return { approvalId: e.approvalId, sandboxId: e.sandbox.id };
  if (e.kind === "bridge" && e.approvalId !== undefined && (e.count ?? 1) === 1) return { approvalId: e.approvalId, sandboxId: e.sandbox.id };
  if (e.kind === "llm" && e.approvalId !== undefined && (e.count ?? 1) === 1) return { approvalId: e.approvalId, sandboxId: e.sandbox.id };
  return null;
}

/** How an approval reads: what was asked (`example.org:443`, `push to main (outside its branch prefix)`) and the pattern allowing it adds. */
export function describeApproval(a: Approval): { subject: string; asks: string } {
  if (a.kind === "bridge") return { subject: a.host, asks: describeSubject(a.host) };
  if (a.kind === "budget") return { subject: a.host, asks: `spend one more budget's worth on model calls (${a.host})` };
  const hostPort = a.host.includes(":") ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
  return { subject: patternFor(a.host, a.port), asks: `reach ${hostPort}` };
}

/** The sandbox as a channel shows it: its id (what a decision names), its name and its repo's directory name (not the host path). */
export function sandboxRef(sb: Sandbox): { id: number; name: string; repoDir: string } {
  return { id: sb.id, name: sb.name, repoDir: basename(sb.repo) };
}

export type ChannelDecision =
  | { ok: true; decision: ApprovalDecision; sandbox: Sandbox }
  | { ok: false; status: 403 | 404 | 409; code: "not_found" | "other-sandbox" | "answered" | "refused"; message: string };

export interface DecideDeps {
  store: Store;
  publish?: (e: FeedEvent) => void;
  now?: () => number;
}

/**
 * Decides approval `target.approvalId`, only if it is still pending and is sandbox `target.sandboxId`'s: a decision that
 * names one sandbox never answers another's approval, whatever the id. Recorded as `by` (webhook:link, slack:U…).
 */
export function decideBound(d: DecideDeps, target: LinkTarget, choice: ChannelChoice, by: string): ChannelDecision {
  const a = d.store.getApproval(target.approvalId);
  if (a === null) return { ok: false, status: 404, code: "not_found", message: `there is no approval ${target.approvalId}` };
  if (a.sandboxId !== target.sandboxId) {
    return { ok: false, status: 403, code: "other-sandbox", message: `approval ${target.approvalId} is not the named sandbox's: nothing changed` };
  }
  if (a.state !== "pending") {
    return { ok: false, status: 409, code: "answered", message: `approval ${a.id} was already answered (${a.state}${a.decidedBy ? ` by ${a.decidedBy}` : ""}): nothing changed` };
  }
  const sandbox = d.store.getSandbox(a.sandboxId);
  if (sandbox === null || sandbox.state === "deleted") return { ok: false, status: 404, code: "not_found", message: `the sandbox of approval ${a.id} is gone` };
  try {
    const policy = new PolicyService({ store: d.store, ...(d.publish ? { publish: d.publish } : {}), ...(d.now ? { now: d.now } : {}) });
    return { ok: true, decision: policy.decide(a.id, choice, by), sandbox };
  } catch (e) {
    if (isSbxError(e)) return { ok: false, status: e.code === "not_found" ? 409 : 403, code: e.code === "not_found" ? "answered" : "refused", message: e.message };
    throw e;
  }
}

/** Pure: the one line a decision reads as, in a channel (`Allowed for demo: example.org`). */
export function decisionLine(r: { action: "allow" | "deny"; pattern: string }, sandboxName: string): string {
  return r.action === "allow" ? `Allowed for ${sandboxName}: ${r.pattern}` : `Denied for ${sandboxName}: ${r.pattern} stays refused`;
}

/**
 * The approvals a channel announced, until each is answered (wherever: the CLI, the dashboard, Zulip, a link): after a
 * decision, `answered` hands back those no longer pending and forgets them. Bounded: the oldest are forgotten first.
 */
export class Announced<T = undefined> {
  private readonly byId = new Map<number, { target: LinkTarget; extra: T }>();
  constructor(private readonly max = 1000) {}

  add(target: LinkTarget, extra: T): void {
    this.byId.delete(target.approvalId);
    this.byId.set(target.approvalId, { target, extra });
    while (this.byId.size > this.max) this.byId.delete(this.byId.keys().next().value!);
  }

  get(approvalId: number): { target: LinkTarget; extra: T } | undefined {
    return this.byId.get(approvalId);
  }

  /** Those now answered (or gone), each with its stored row (null when gone), removed from the set. */
  answered(store: Store): { target: LinkTarget; extra: T; approval: Approval | null }[] {
    const out: { target: LinkTarget; extra: T; approval: Approval | null }[] = [];
    for (const [id, v] of this.byId) {
      const a = store.getApproval(id);
      if (a !== null && a.state === "pending" && a.sandboxId === v.target.sandboxId) continue;
      this.byId.delete(id);
      out.push({ ...v, approval: a !== null && a.sandboxId === v.target.sandboxId ? a : null });
    }
    return out;
  }
}
