// A fake Slack on 127.0.0.1, written from Slack's docs: the Web API (auth.test, chat.postMessage, chat.update,
// chat.postEphemeral: Bearer token, JSON bodies, {"ok": false, "error": …} refusals, 429 with Retry-After) and a person's
// click on a posted button, sent to the app's Request URL as Slack sends it: a form body `payload=<block_actions JSON>`,
// X-Slack-Request-Timestamp, and X-Slack-Signature = "v0=" + hex HMAC-SHA256(signing secret, "v0:<ts>:<body>"),
// computed here with node:crypto (not sbx's signer), so a test checks the documented scheme rather than sbx against itself.
import { createHmac } from "node:crypto";

export interface SlackMessage {
  channel: string;
  ts: string;
  text: string;
  blocks: { type: string; elements?: { action_id?: string; value?: string }[]; text?: { text: string } }[];
  /** Each chat.update, in order (the last is what the channel shows). */
  updates: { text: string; blocks: unknown[] }[];
}

export interface FakeSlackOptions {
  token: string;
  signingSecret: string;
  /** Channels that exist, and whether the app was invited (not_in_channel otherwise). */
  channels: Record<string, { member: boolean }>;
  team?: { id: string; name: string };
}

export interface ClickOptions {
  user: string;
  message: SlackMessage;
  action: "sbx_allow" | "sbx_deny";
  /** Tampering, as an attacker without the secret (or with a stale capture) would. */
  value?: string;
  channel?: string;
  timestamp?: number;
  signature?: string;
  secret?: string;
}

export interface SentRequest {
  body: string;
  headers: Record<string, string>;
}

export interface FakeSlack {
  readonly api: string;
  readonly messages: SlackMessage[];
  readonly ephemerals: { channel: string; user: string; text: string }[];
  readonly calls: { method: string; ok: boolean; error?: string }[];
  /** The next n Web API calls answer 429 with Retry-After: 1. */
  rateLimit(n: number): void;
  /** Web API calls never answer (a Slack that hangs) until set false. */
  hang(on: boolean): void;
  /** Calls held unanswered so far while hanging. */
  held(): number;
  /** A person clicks a button of a posted message; Slack POSTs the signed interaction to `requestUrl`. */
  click(requestUrl: string, o: ClickOptions): Promise<{ status: number; text: string; sent: SentRequest }>;
  /** Sends a captured request again, byte for byte (a replay). */
  resend(requestUrl: string, sent: SentRequest): Promise<{ status: number; text: string }>;
  waitFor<T>(pred: () => T | undefined | false, timeoutMs?: number): Promise<T>;
  stop(): Promise<void>;
}

export function slackSign(secret: string, ts: string, body: string): string {
  return `v0=${createHmac("sha256", secret).update(`v0:${ts}:${body}`).digest("hex")}`;
}

export function startFakeSlack(o: FakeSlackOptions): FakeSlack {
  const team = o.team ?? { id: "T0TEAM0001", name: "Acme" };
  const messages: SlackMessage[] = [];
  const ephemerals: FakeSlack["ephemerals"] = [];
  const calls: FakeSlack["calls"] = [];
  let limited = 0;
  let hanging = false;
  let seq = 100;
  const hung: (() => void)[] = [];

  const answer = (method: string, body: Record<string, unknown>) => {
    const ok = body.ok === true;
    calls.push({ method, ok, ...(ok ? {} : { error: String(body.error) }) });
    return Response.json(body);
  };

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const method = url.pathname.replace(/^\/api\//, "");
      if (hanging) return new Promise<Response>((r) => hung.push(() => r(new Response("", { status: 503 }))));
      if (limited > 0) {
        limited--;
        calls.push({ method, ok: false, error: "ratelimited" });
        return new Response(JSON.stringify({ ok: false, error: "ratelimited" }), { status: 429, headers: { "retry-after": "1" } });
      }
      const auth = req.headers.get("authorization");
      if (auth === null) return answer(method, { ok: false, error: "not_authed" });
      if (auth !== `Bearer ${o.token}`) return answer(method, { ok: false, error: "invalid_auth" });
      if (!(req.headers.get("content-type") ?? "").startsWith("application/json")) return answer(method, { ok: false, error: "invalid_arguments" });
      const b = (await req.json()) as Record<string, unknown>;
      if (method === "auth.test") return answer(method, { ok: true, url: "https://acme.slack.com/", team: team.name, user: "sbx", team_id: team.id, user_id: "U0BOT00001", bot_id: "B0BOT00001" });
      const ch = typeof b.channel === "string" ? o.channels[b.channel] : undefined;
      if (method === "chat.postMessage" || method === "chat.postEphemeral" || method === "chat.update") {
        if (!ch) return answer(method, { ok: false, error: "channel_not_found" });
        if (!ch.member) return answer(method, { ok: false, error: "not_in_channel" });
        if (typeof b.text !== "string" && !Array.isArray(b.blocks)) return answer(method, { ok: false, error: "no_text" });
      }
      if (method === "chat.postMessage") {
        const m: SlackMessage = { channel: b.channel as string, ts: `1700000000.${String(seq++).padStart(6, "0")}`, text: String(b.text ?? ""), blocks: (b.blocks as SlackMessage["blocks"]) ?? [], updates: [] };
        messages.push(m);
        return answer(method, { ok: true, channel: m.channel, ts: m.ts, message: { text: m.text, ts: m.ts } });
      }
      if (method === "chat.update") {
        const m = messages.find((x) => x.channel === b.channel && x.ts === b.ts);
        if (!m) return answer(method, { ok: false, error: "message_not_found" });
        m.updates.push({ text: String(b.text ?? ""), blocks: (b.blocks as unknown[]) ?? [] });
        return answer(method, { ok: true, channel: m.channel, ts: m.ts, text: b.text });
      }
      if (method === "chat.postEphemeral") {
        ephemerals.push({ channel: b.channel as string, user: String(b.user), text: String(b.text ?? "") });
        return answer(method, { ok: true, message_ts: `1700000001.${String(seq++).padStart(6, "0")}` });
      }
      return answer(method, { ok: false, error: "unknown_method" });
    },
  });
  const api = `http://127.0.0.1:${server.port}/api`;

  const send = async (requestUrl: string, sent: SentRequest) => {
    const res = await fetch(requestUrl, { method: "POST", headers: sent.headers, body: sent.body, signal: AbortSignal.timeout(5000) });
    return { status: res.status, text: await res.text() };
  };

  return {
    api,
    messages,
    ephemerals,
    calls,
    rateLimit: (n) => void (limited = n),
    held: () => hung.length,
    hang(on) {
      hanging = on;
      if (!on) hung.splice(0).forEach((r) => r());
    },
    async click(requestUrl, c) {
      const actions = c.message.blocks.find((b) => b.type === "actions");
      const button = actions?.elements?.find((e) => e.action_id === c.action);
      const channel = c.channel ?? c.message.channel;
      const payload = {
        type: "block_actions",
        user: { id: c.user, username: c.user.toLowerCase(), name: c.user.toLowerCase(), team_id: team.id },
        api_app_id: "A0APP00001",
        token: "legacy-verification-token",
        container: { type: "message", message_ts: c.message.ts, channel_id: channel, is_ephemeral: false },
        trigger_id: `${seq++}.${team.id}.abc`,
        team: { id: team.id, domain: "acme" },
        enterprise: null,
        is_enterprise_install: false,
        channel: { id: channel, name: "sandboxes" },
        message: { type: "message", ts: c.message.ts, text: c.message.text, blocks: c.message.blocks },
        state: { values: {} },
        response_url: "https://hooks.slack.com/actions/T0TEAM0001/1/x",
        actions: [{ action_id: c.action, block_id: "sbx", text: { type: "plain_text", text: c.action }, value: c.value ?? button?.value ?? "", type: "button", action_ts: "1700000002.000000" }],
      };
      const body = `payload=${encodeURIComponent(JSON.stringify(payload))}`;
      const ts = String(c.timestamp ?? Math.floor(Date.now() / 1000));
      const sent: SentRequest = {
        body,
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          "x-slack-request-timestamp": ts,
          "x-slack-signature": c.signature ?? slackSign(c.secret ?? o.signingSecret, ts, body),
          "user-agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
        },
      };
      return { ...(await send(requestUrl, sent)), sent };
    },
    resend: send,
    async waitFor(pred, timeoutMs = 5000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const v = pred();
        if (v) return v;
        if (Date.now() > end) throw new Error("fake Slack: timed out waiting");
        await Bun.sleep(10);
      }
    },
    async stop() {
      hanging = false;
      hung.splice(0).forEach((r) => r());
      await server.stop(true);
    },
  };
}
