// A small client of Slack's Web API (auth.test, chat.postMessage, chat.update, chat.postEphemeral): JSON bodies with
// the bot token as a Bearer header; Slack's refusals ({"ok": false, "error": "..."}, HTTP 200) and rate limits (429,
// Retry-After) as SlackError; the token never in a message or a log.
import { z } from "zod";
import { DeliveryError } from "./outbox";
import type { Fetch } from "./outbox";

export class SlackError extends DeliveryError {
  constructor(
    /** Slack's `error` (invalid_auth, channel_not_found, not_in_channel, ratelimited, …), or HTTP / NETWORK. */
    readonly code: string,
    message: string,
    retry: boolean,
    retryAfterMs?: number,
  ) {
    super(message, retry, retryAfterMs);
  }
}

/** Errors that a retry will not cure: the token, the channel or the app's scopes are wrong. */
const FINAL = new Set(["invalid_auth", "not_authed", "account_inactive", "token_revoked", "channel_not_found", "not_in_channel", "is_archived", "missing_scope", "invalid_blocks", "msg_too_long", "message_not_found", "cant_update_message", "user_not_in_channel"]);

const Reply = z.object({ ok: z.boolean(), error: z.string().optional() }).passthrough();

export const AuthTestSchema = z.object({ ok: z.literal(true), team: z.string(), user: z.string(), team_id: z.string(), user_id: z.string(), bot_id: z.string().optional() }).passthrough();

export class SlackClient {
  private readonly fetcher: Fetch;
  constructor(
    private readonly cfg: { apiBase: string; botToken: string },
    opts: { fetch?: Fetch } = {},
  ) {
    this.fetcher = opts.fetch ?? ((u, i) => fetch(u, i));
  }

  /** Calls `method` with a JSON body; resolves with Slack's answer when it says ok, else throws a SlackError. */
  async call(method: string, body: Record<string, unknown>, signal?: AbortSignal): Promise<Record<string, unknown>> {
    const url = `${this.cfg.apiBase}/${method}`;
    let res: Response;
    try {
      res = await this.fetcher(url, {
        method: "POST",
        redirect: "manual",
        ...(signal ? { signal } : {}),
        headers: { authorization: `Bearer ${this.cfg.botToken}`, "content-type": "application/json; charset=utf-8" },
        body: JSON.stringify(body),
      });
    } catch (e) {
      if ((e as Error).name === "TimeoutError" || (e as Error).name === "AbortError") throw e;
      throw new SlackError("NETWORK", `cannot reach ${this.cfg.apiBase}: ${(e as Error).message}`, true);
    }
    if (res.status === 429) {
      await res.body?.cancel().catch(() => undefined);
      const after = Number(res.headers.get("retry-after"));
      throw new SlackError("ratelimited", `Slack rate-limits ${method}`, true, Number.isFinite(after) && after > 0 ? after * 1000 : undefined);
    }
    const text = await res.text();
    if (!res.ok) throw new SlackError("HTTP", `Slack answered ${method} with HTTP ${res.status}`, res.status >= 500);
    let parsed: z.infer<typeof Reply>;
    try {
      parsed = Reply.parse(JSON.parse(text));
    } catch {
      throw new SlackError("SHAPE", `${this.cfg.apiBase}/${method} did not answer as Slack's Web API does`, false);
    }
    if (!parsed.ok) {
      const code = parsed.error ?? "unknown_error";
      throw new SlackError(code, `Slack refused ${method}: ${code}`, !FINAL.has(code));
    }
    return parsed;
  }

  /** Who the token is (auth.test): what `sbx chat setup slack` checks before it saves anything. */
  async authTest(signal?: AbortSignal): Promise<z.infer<typeof AuthTestSchema>> {
    const r = AuthTestSchema.safeParse(await this.call("auth.test", {}, signal));
    if (!r.success) throw new SlackError("SHAPE", "auth.test did not say who the token is", false);
    return r.data;
  }
}
