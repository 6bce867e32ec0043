// The generic outgoing webhook: each new pending approval (what the Zulip bot and the dashboard show) POSTed as JSON,
// signed "v1=" HMAC-SHA256 over "v1:<timestamp>:<body>" (signing.ts), with a one-time link to answer it and the signed
// decision API's address; an `approval.decided` follows once it is answered anywhere. Deliveries go through an outbox
// (outbox.ts): a dead or hanging receiver never holds up the proxy, the CLI or the dashboard.
import type { DataSource, FeedEvent } from "../events/feed";
import type { UiLog } from "../ui/app";
import type { WebhookConfig } from "./channels-config";
import { shownUrl } from "./channels-config";
import { Announced, CHANNEL_CHOICES, describeApproval, newApprovalOf, sandboxRef } from "./decide";
import type { DecisionLinks, LinkTarget } from "./links";
import { createOutbox, type Fetch, type Outbox, type OutboxStats } from "./outbox";
import { postSigned } from "./post";

/** The paths the daemon's approvals listener serves (hooks-app.ts), under the public URL. */
export const LINK_PATH = "/a/";
export const DECIDE_PATH = "/hooks/v1/decide";
export const SLACK_PATH = "/hooks/slack/interact";

export interface WebhookOptions {
  config: WebhookConfig;
  source: DataSource;
  /** The one-time links, and the base URL they (and the decision API) are served at; null: the listener is not up. */
  answers: { links: DecisionLinks; base: string } | null;
  log?: UiLog;
  fetch?: Fetch;
  now?: () => number;
  /** Seams for tests: the outbox's retry timing and queue bound. */
  outbox?: { backoff?: { baseMs: number; maxMs: number }; maxQueue?: number; attempts?: number };
}

export interface WebhookChannel {
  stats(): OutboxStats & { target: string };
  idle(): Promise<void>;
  close(): Promise<void>;
}

export function startWebhook(o: WebhookOptions): WebhookChannel {
  const { config, source } = o;
  const { store } = source;
  const fetcher = o.fetch ?? ((u, i) => fetch(u, i));
  const now = o.now ?? Date.now;
  const outbox: Outbox = createOutbox({
    name: "webhook",
    timeoutMs: config.timeoutMs,
    now,
    ...(o.log ? { log: o.log } : {}),
    ...(o.outbox?.backoff ? { backoff: o.outbox.backoff } : {}),
    ...(o.outbox?.maxQueue !== undefined ? { maxQueue: o.outbox.maxQueue } : {}),
    ...(o.outbox?.attempts !== undefined ? { attempts: o.outbox.attempts } : {}),
  });
  const announced = new Announced();

  const deliver = (event: string, what: string, payload: (delivery: string) => Record<string, unknown> | null) => {
    const delivery = crypto.randomUUID();
    let body: string | null | undefined;
    outbox.push({
      what,
      async send(signal) {
        // Built when first sent, not when announced: the announcing listener runs on the proxy's path.
        if (body === undefined) {
          const p = payload(delivery);
          body = p === null ? null : JSON.stringify(p);
        }
        if (body === null) return "skipped";
        await postSigned(fetcher, config.url, config.secret, event, delivery, body, signal, now());
      },
    });
  };

  const pending = (t: LinkTarget) =>
    deliver("approval.pending", `approval ${t.approvalId}`, (delivery) => {
      const a = store.getApproval(t.approvalId);
      const sb = store.getSandbox(t.sandboxId);
      // Answered (or gone) before it could be sent: there is nothing to ask.
      if (a === null || sb === null || a.state !== "pending" || a.sandboxId !== t.sandboxId) return null;
      announced.add(t, undefined);
      const link = o.answers ? o.answers.links.issue(t) : null;
      const { subject, asks } = describeApproval(a);
      return {
        type: "approval.pending",
        delivery,
        at: now(),
        approval: { id: a.id, kind: a.kind, subject, asks, host: a.host, port: a.port, reason: a.reason, firstSeen: a.firstSeen },
        sandbox: sandboxRef(sb),
        choices: CHANNEL_CHOICES,
        link: link && o.answers ? { url: `${o.answers.base}${LINK_PATH}${link.token}`, expiresAt: link.expiresAt } : null,
        decideUrl: o.answers ? `${o.answers.base}${DECIDE_PATH}` : null,
      };
    });

  // After any decision, the announced approvals now answered are told as decided (coalesced; off the bus's path).
  let sweep: ReturnType<typeof setTimeout> | null = null;
  const sweepSoon = () => {
    sweep ??= setTimeout(() => {
      sweep = null;
      for (const { target, approval } of announced.answered(store)) {
        deliver("approval.decided", `approval ${target.approvalId} decided`, (delivery) => ({
          type: "approval.decided",
          delivery,
          at: now(),
          approval: { id: target.approvalId, state: approval?.state ?? "gone", decidedBy: approval?.decidedBy ?? null, decidedAt: approval?.decidedAt ?? null },
          sandbox: { id: target.sandboxId, name: store.getSandbox(target.sandboxId)?.name ?? null },
        }));
      }
    }, 0);
  };

  const unsubscribe = source.events.subscribe((e: FeedEvent) => {
    const t = newApprovalOf(e);
    if (t !== null) pending(t);
    else if (e.kind === "decision") sweepSoon();
  });

  return {
    stats: () => ({ ...outbox.stats(), target: shownUrl(config.url) }),
    async idle() {
      while (sweep !== null) await Bun.sleep(1);
      await outbox.idle();
    },
    async close() {
      unsubscribe();
      if (sweep) clearTimeout(sweep);
      sweep = null;
      await outbox.close();
    },
  };
}
