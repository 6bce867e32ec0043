// Approvals in Slack, as the Zulip bot does them: each new pending approval posted to one channel with Allow / Deny
// buttons (chat.postMessage), the message updated once it is answered anywhere (chat.update). A click comes back as
// Slack's signed interactivity request (verified as Slack documents it: "v0:<timestamp>:<body>", HMAC-SHA256 with the
// signing secret, five minutes); only the listed members are obeyed, and a click decides only the approval of the
// sandbox its button names.
import { z } from "zod";
import type { DataSource, FeedEvent } from "../events/feed";
import { sandboxRate } from "../events/rate";
import type { Approval, Sandbox } from "../core/schemas";
import type { UiLog } from "../ui/app";
import type { SlackConfig } from "./channels-config";
import { Announced, decideBound, decisionLine, describeApproval, newApprovalOf, type ChannelChoice } from "./decide";
import type { LinkTarget } from "./links";
import { createOutbox, type OutboxStats } from "./outbox";
import { CHECK_TEXT, SeenOnce, SLACK_SIGNATURE, SLACK_TIMESTAMP, verify } from "./signing";
import { SlackClient } from "./slack-api";
import type { Fetch } from "./outbox";

export const ALLOW_ACTION = "sbx_allow";
export const DENY_ACTION = "sbx_deny";

export interface SlackOptions {
  config: SlackConfig;
  source: DataSource;
  log?: UiLog;
  fetch?: Fetch;
  now?: () => number;
  outbox?: { backoff?: { baseMs: number; maxMs: number }; maxQueue?: number; attempts?: number };
}

export interface SlackChannel {
  stats(): OutboxStats & { target: string };
  /** Slack's POST to the interactivity Request URL (the raw body as received): checked, decided, answered at once. */
  interact(body: Uint8Array, headers: Headers): Response;
  idle(): Promise<void>;
  close(): Promise<void>;
}

/** Pure: text as Slack's mrkdwn shows it literally (its three control characters escaped, as Slack documents). */
export function slackText(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** Pure: a code span that nothing inside can close. */
function code(s: string): string {
  return "`" + slackText(s.replace(/`/g, "'")) + "`";
}

/** Pure: who decided, as a Slack message says it (a Slack member as a mention; anyone else by sbx's record). */
function byText(by: string | null): string {
  if (!by) return "someone";
  const m = /^slack:([UW][A-Z0-9]+)$/.exec(by);
  return m ? `<@${m[1]}>` : code(by);
}

/** Pure: the notice for one pending approval: what was asked, why, and the two buttons (their value names approval and sandbox). */
export function pendingMessage(a: Approval, sb: Pick<Sandbox, "id" | "name" | "repo">) {
  const { subject, asks } = describeApproval(a);
  const repoDir = sb.repo.split("/").filter(Boolean).pop() ?? sb.repo;
  const value = JSON.stringify({ a: a.id, s: sb.id });
  const head = `✋ *${slackText(sb.name)}* (${slackText(repoDir)}) asks to ${a.kind === "egress" ? code(asks.replace(/^reach /, "")) : slackText(asks)}`;
  return {
    text: `${sb.name} asks to ${asks}`,
    blocks: [
      { type: "section", text: { type: "mrkdwn", text: `${head}\n_${slackText(a.reason.slice(0, 300))}_` } },
      {
        type: "actions",
        block_id: `sbx_approval_${a.id}`,
        elements: [
          { type: "button", action_id: ALLOW_ACTION, style: "primary", text: { type: "plain_text", text: `Allow for ${sb.name}`.slice(0, 75) }, value },
          { type: "button", action_id: DENY_ACTION, style: "danger", text: { type: "plain_text", text: "Deny" }, value },
        ],
      },
      { type: "context", elements: [{ type: "mrkdwn", text: `approval ${a.id} · ${code(subject)} · on the host: ${code(`sbx approvals allow ${a.id}`)}` }] },
    ],
  };
}

/** Pure: the notice once answered: the same head, the answer instead of the buttons. */
export function decidedMessage(a: Approval | null, target: LinkTarget, sb: Pick<Sandbox, "name"> | null) {
  const name = sb?.name ?? `#${target.sandboxId}`;
  const what = a ? describeApproval(a).asks : `approval ${target.approvalId}`;
  const said =
    a === null
      ? `approval ${target.approvalId} is gone (its sandbox was removed)`
      : a.state === "allowed"
        ? `✅ allowed for *${slackText(name)}* by ${byText(a.decidedBy)}`
        : `🚫 denied for *${slackText(name)}* by ${byText(a.decidedBy)}`;
  return {
    text: `${name}: ${what}: ${a?.state ?? "gone"}`,
    blocks: [{ type: "section", text: { type: "mrkdwn", text: `*${slackText(name)}* asked to ${slackText(what)}\n${said}` } }],
  };
}

function jsonOrNull(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

const ButtonValue = z.object({ a: z.number().int().positive(), s: z.number().int().positive() }).strict();

const InteractionSchema = z
  .object({
    type: z.string(),
    user: z.object({ id: z.string() }).passthrough(),
    channel: z.object({ id: z.string() }).passthrough().optional(),
    container: z.object({ channel_id: z.string().optional(), message_ts: z.string().optional() }).passthrough().optional(),
    message: z.object({ ts: z.string() }).passthrough().optional(),
    actions: z.array(z.object({ action_id: z.string(), value: z.string().optional() }).passthrough()).default([]),
  })
  .passthrough();

export function startSlack(o: SlackOptions): SlackChannel {
  const { config, source } = o;
  const { store } = source;
  const now = o.now ?? Date.now;
  const client = new SlackClient(config, o.fetch ? { fetch: o.fetch } : {});
  const outbox = createOutbox({
    name: "slack",
    timeoutMs: config.timeoutMs,
    now,
    ...(o.log ? { log: o.log } : {}),
    ...(o.outbox?.backoff ? { backoff: o.outbox.backoff } : {}),
    ...(o.outbox?.maxQueue !== undefined ? { maxQueue: o.outbox.maxQueue } : {}),
    ...(o.outbox?.attempts !== undefined ? { attempts: o.outbox.attempts } : {}),
  });
  /** Each posted notice's message (channel and ts), to update once it is answered. */
  const posted = new Announced<{ channel: string; ts: string }>();
  const seen = new SeenOnce();
  const rate = sandboxRate();
  const publish = (e: FeedEvent) => source.events.publish?.(e);

  const post = (t: LinkTarget, name: string) => {
    const b = rate.take(t.sandboxId, now());
    if (b === "drop") return;
    if (b === "held-back") {
      outbox.push({ what: "held back", send: async (signal) => void (await client.call("chat.postMessage", { channel: config.channel, text: `… and more from ${name}: further notices are held back for a minute. \`sbx approvals\` lists everything that waits.` }, signal)) });
      return;
    }
    outbox.push({
      what: `approval ${t.approvalId}`,
      async send(signal) {
        const a = store.getApproval(t.approvalId);
        const sb = store.getSandbox(t.sandboxId);
        if (a === null || sb === null || a.state !== "pending" || a.sandboxId !== t.sandboxId) return "skipped";
        const r = await client.call("chat.postMessage", { channel: config.channel, unfurl_links: false, unfurl_media: false, ...pendingMessage(a, sb) }, signal);
        if (typeof r.channel === "string" && typeof r.ts === "string") posted.add(t, { channel: r.channel, ts: r.ts });
      },
    });
  };

  const update = (channel: string, ts: string, target: LinkTarget) =>
    outbox.push({
      what: `approval ${target.approvalId} answered`,
      send: async (signal) => {
        const a = store.getApproval(target.approvalId);
        const mine = a !== null && a.sandboxId === target.sandboxId ? a : null;
        await client.call("chat.update", { channel, ts, ...decidedMessage(mine, target, store.getSandbox(target.sandboxId)) }, signal);
      },
    });

  const ephemeral = (channel: string, user: string, text: string) =>
    outbox.push({ what: "a reply to a click", send: async (signal) => void (await client.call("chat.postEphemeral", { channel, user, text }, signal)) });

  let sweep: ReturnType<typeof setTimeout> | null = null;
  const unsubscribe = source.events.subscribe((e) => {
    const t = newApprovalOf(e);
    if (t !== null) post(t, e.sandbox?.name ?? `#${t.sandboxId}`);
    else if (e.kind === "decision")
      sweep ??= setTimeout(() => {
        sweep = null;
        for (const { target, extra } of posted.answered(store)) update(extra.channel, extra.ts, target);
      }, 0);
  });

  const refuse = (status: number, message: string, why: Record<string, unknown> = {}) => {
    o.log?.warn("slack: refused an interactivity request", { status, message, ...why });
    return new Response(`${message}\n`, { status, headers: { "content-type": "text/plain; charset=utf-8" } });
  };

  const interact = (body: Uint8Array, headers: Headers): Response => {
    const signature = headers.get(SLACK_SIGNATURE);
    const check = verify(config.signingSecret, "v0", { timestamp: headers.get(SLACK_TIMESTAMP), signature, body }, now());
    if (!check.ok) return refuse(401, `refused: ${CHECK_TEXT[check.why]}`);
    const once = seen.take(signature!, now());
    if (once !== "new") return once === "seen" ? refuse(409, "refused: this request was received before (a replay)") : refuse(429, "refused: too many requests at once");
    let payload: z.infer<typeof InteractionSchema>;
    try {
      payload = InteractionSchema.parse(JSON.parse(new URLSearchParams(new TextDecoder().decode(body)).get("payload") ?? ""));
    } catch {
      return refuse(400, "refused: no interaction payload");
    }
    if (payload.type !== "block_actions") return new Response(null, { status: 200 });
    const channel = payload.channel?.id ?? payload.container?.channel_id ?? "";
    const ts = payload.container?.message_ts ?? payload.message?.ts ?? "";
    if (channel !== config.channel) return refuse(403, "refused: a click from another channel than sbx posts to", { channel });
    const action = payload.actions.find((x) => x.action_id === ALLOW_ACTION || x.action_id === DENY_ACTION);
    if (!action) return new Response(null, { status: 200 });
    const value = ButtonValue.safeParse(jsonOrNull(action.value ?? ""));
    if (!value.success) return refuse(400, "refused: the button names no approval");
    const target = { approvalId: value.data.a, sandboxId: value.data.s };
    const user = payload.user.id;
    if (!config.allowUsers.includes(user)) {
      o.log?.warn("slack: a click from a member not allowed to answer", { user, approval: target.approvalId });
      ephemeral(channel, user, "Sorry, sbx takes answers only from the members its owner listed; nothing changed. The owner can add you with `sbx chat setup slack … --allow-user <your member ID>`.");
      return new Response(null, { status: 200 });
    }
    const choice: ChannelChoice = action.action_id === ALLOW_ACTION ? "allow-sandbox" : "deny";
    const r = decideBound({ store, publish, now }, target, choice, `slack:${user}`);
    if (r.ok) {
      o.log?.info("slack: decided", { user, approval: target.approvalId, action: r.decision.action });
      if (ts) update(channel, ts, target);
      ephemeral(channel, user, `${decisionLine(r.decision, r.sandbox.name)}.`);
    } else {
      o.log?.warn("slack: a click decided nothing", { user, approval: target.approvalId, why: r.code });
      if (r.code === "answered" && ts) update(channel, ts, target);
      ephemeral(channel, user, `Nothing changed: ${r.message}.`);
    }
    // Slack wants its 200 within 3 s: the decision is made, the message is updated off this path.
    return new Response(null, { status: 200 });
  };

  return {
    stats: () => ({ ...outbox.stats(), target: config.channel }),
    interact,
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
