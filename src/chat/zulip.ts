// A minimal Zulip REST client (register an event queue, long-poll /events, send a stream message) over fetch with HTTP Basic auth.
import { z } from "zod";
import type { ZulipConfig } from "./config";

export type Fetch = (input: string, init: RequestInit) => Promise<Response>;

/**
 * A Zulip error reply (`{"result":"error","code":…}`), a transport failure (code "NETWORK", the fetch error as `cause`),
 * an answer that is not JSON or not ok ("HTTP"), or JSON that is not what Zulip answers ("SHAPE").
 */
export class ZulipError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number | null,
    /** What went wrong without the request: the server's `msg`, or the transport's reason. */
    readonly detail: string = message,
    cause?: unknown,
  ) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "ZulipError";
  }
}

const ErrorReply = z.object({ result: z.literal("error"), msg: z.string().default(""), code: z.string().default("BAD_REQUEST") });

const RegisterReply = z.object({
  result: z.literal("success"),
  queue_id: z.string(),
  last_event_id: z.number().int(),
  event_queue_longpoll_timeout_seconds: z.number().positive().optional(),
});
export type Registration = { queueId: string; lastEventId: number; longPollTimeoutMs: number };

export const ZulipMessageSchema = z.object({
  id: z.number().int(),
  sender_email: z.string(),
  sender_full_name: z.string().default(""),
  type: z.string(),
  display_recipient: z.union([z.string(), z.array(z.unknown())]),
  subject: z.string().optional(),
  topic: z.string().optional(),
  content: z.string(),
});
export type ZulipMessage = z.infer<typeof ZulipMessageSchema>;

const EventSchema = z.looseObject({ id: z.number().int(), type: z.string(), message: z.unknown().optional() });
const EventsReply = z.object({ result: z.literal("success"), events: z.array(EventSchema) });
export type ZulipEvent = z.infer<typeof EventSchema>;

const SendReply = z.object({ result: z.literal("success"), id: z.number().int() });

const MeReply = z.object({
  result: z.literal("success"),
  user_id: z.number().int(),
  email: z.string(),
  delivery_email: z.string().nullish(),
  full_name: z.string().default(""),
  is_bot: z.boolean().default(false),
});
/** Who a key belongs to, as the server says (`email` is the API email; `deliveryEmail` the login's, when shown). */
export type ZulipMe = { userId: number; email: string; deliveryEmail: string | null; fullName: string; isBot: boolean };

export interface ZulipClientOptions {
  fetch?: Fetch;
  /** Timeout of ordinary (non-long-poll) requests. */
  requestTimeoutMs?: number;
}

export class ZulipClient {
  private readonly auth: string;
  private readonly fetch: Fetch;
  private readonly requestTimeoutMs: number;

  constructor(
    private readonly config: Pick<ZulipConfig, "site" | "email" | "apiKey">,
    opts: ZulipClientOptions = {},
  ) {
    this.auth = `Basic ${Buffer.from(`${config.email}:${config.apiKey}`).toString("base64")}`;
    this.fetch = opts.fetch ?? ((input, init) => fetch(input, init));
    this.requestTimeoutMs = opts.requestTimeoutMs ?? 15_000;
  }

  private async call(method: "GET" | "POST", path: string, params: Record<string, string>, timeoutMs: number, signal?: AbortSignal): Promise<unknown> {
    const query = new URLSearchParams(params).toString();
    const url = `${this.config.site}/api/v1/${path}${method === "GET" && query ? `?${query}` : ""}`;
    const timeout = AbortSignal.timeout(timeoutMs);
    const init: RequestInit = {
      method,
      headers: { Authorization: this.auth, ...(method === "POST" ? { "Content-Type": "application/x-www-form-urlencoded" } : {}), "User-Agent": "sbx-zulip-bot" },
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      redirect: "error",
      ...(method === "POST" ? { body: query } : {}),
    };
    let res: Response;
    try {
      res = await this.fetch(url, init);
    } catch (e) {
      // The path only: never the auth header (fetch errors do not carry it, but keep the message plain).
      const why = (e as Error).name === "TimeoutError" ? "timed out" : (e as Error).message;
      throw new ZulipError("NETWORK", `${method} /api/v1/${path}: ${why}`, null, why, e);
    }
    let body: unknown;
    try {
      body = await res.json();
    } catch {
      throw new ZulipError("HTTP", `${method} /api/v1/${path}: HTTP ${res.status} with a body that is not JSON`, res.status);
    }
    const err = ErrorReply.safeParse(body);
    if (err.success) throw new ZulipError(err.data.code, `${method} /api/v1/${path}: ${err.data.msg}`, res.status, err.data.msg);
    if (!res.ok) throw new ZulipError("HTTP", `${method} /api/v1/${path}: HTTP ${res.status}`, res.status);
    return body;
  }

  /** POST /api/v1/register: a queue of message events in one stream, with raw Markdown content. */
  async register(stream: string): Promise<Registration> {
    const body = await this.call(
      "POST",
      "register",
      {
        event_types: JSON.stringify(["message"]),
        narrow: JSON.stringify([["stream", stream]]),
        apply_markdown: "false",
        all_public_streams: "false",
      },
      this.requestTimeoutMs,
    );
    const r = RegisterReply.parse(body);
    return { queueId: r.queue_id, lastEventId: r.last_event_id, longPollTimeoutMs: (r.event_queue_longpoll_timeout_seconds ?? 90) * 1000 };
  }

  /** GET /api/v1/events: blocks until events arrive or the server sends a heartbeat. */
  async events(queueId: string, lastEventId: number, longPollTimeoutMs: number, signal?: AbortSignal): Promise<ZulipEvent[]> {
    const body = await this.call("GET", "events", { queue_id: queueId, last_event_id: String(lastEventId) }, longPollTimeoutMs + 10_000, signal);
    return EventsReply.parse(body).events;
  }

  /** GET /api/v1/users/me: who the key belongs to (the server checks the email, the key and the organisation). */
  async me(): Promise<ZulipMe> {
    const r = MeReply.safeParse(await this.call("GET", "users/me", {}, this.requestTimeoutMs));
    if (!r.success) throw new ZulipError("SHAPE", "GET /api/v1/users/me: the answer is JSON but not Zulip's (no user_id and email)", 200);
    const m = r.data;
    return { userId: m.user_id, email: m.email, deliveryEmail: m.delivery_email ?? null, fullName: m.full_name, isBot: m.is_bot };
  }

  /** POST /api/v1/messages to a stream topic; returns the message id. */
  async sendStream(stream: string, topic: string, content: string): Promise<number> {
    const body = await this.call("POST", "messages", { type: "stream", to: stream, topic, content }, this.requestTimeoutMs);
    return SendReply.parse(body).id;
  }
}
