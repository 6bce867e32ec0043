// The Zulip bot: posts blocked requests to a topic per sandbox and answers /allow, /deny, /allowlist, /status there; long-polls with re-register and jittered backoff.
import type { DataSource, FeedEvent } from "../events/feed";
import type { UiLog } from "../ui/app";
import { sandboxRate } from "../events/rate";
import { blockedNotice, bridgeNotice, budgetNotice, handleChat, topicFor } from "./commands";
import type { ZulipConfig } from "./config";
import { ZulipClient, ZulipError, ZulipMessageSchema, type Fetch, type Registration } from "./zulip";

export interface ZulipBotOptions {
  config: ZulipConfig;
  source: DataSource;
  log?: UiLog;
  fetch?: Fetch;
  /** Backoff after an error: full jitter over min(maxMs, baseMs·2^n). */
  backoff?: { baseMs: number; maxMs: number };
  random?: () => number;
  /** The same sandbox and host are notified at most once per this interval (the store also dedups pending approvals). */
  renotifyMs?: number;
  now?: () => number;
}

export interface ZulipBot {
  /** Resolves once the first event queue is registered. */
  readonly ready: Promise<void>;
  stats(): { registrations: number; errors: number; handled: number };
  /** Connected: an event queue is registered and the last call to Zulip succeeded. */
  state(): { connected: boolean; lastError: string | null };
  close(): Promise<void>;
}

/** Pure: the delay before retry n (1-based), full jitter. */
export function backoffDelay(n: number, base: number, max: number, random: () => number): number {
  const cap = Math.min(max, base * 2 ** Math.min(n - 1, 20));
  return Math.floor(random() * cap);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

export function startZulipBot(opts: ZulipBotOptions): ZulipBot {
  const { config, source } = opts;
  const { store } = source;
  const client = new ZulipClient(config, opts.fetch ? { fetch: opts.fetch } : {});
  const backoff = opts.backoff ?? { baseMs: 1000, maxMs: 60_000 };
  const random = opts.random ?? Math.random;
  const renotifyMs = opts.renotifyMs ?? 10 * 60_000;
  const now = opts.now ?? Date.now;
  const stop = new AbortController();
  const counts = { registrations: 0, errors: 0, handled: 0 };
  const link = { connected: false, lastError: null as string | null };
  const publish = (e: FeedEvent) => source.events.publish?.(e);

  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((r) => (markReady = r));

  // Outgoing messages go one at a time, in order, off the polling loop.
  let outbox: Promise<void> = Promise.resolve();
  const post = (topic: string, content: string) => {
    outbox = outbox.then(async () => {
      if (stop.signal.aborted) return;
      try {
        await client.sendStream(config.stream, topic, content);
      } catch (e) {
        counts.errors++;
        opts.log?.warn("chat: could not post to Zulip", { topic, message: (e as Error).message });
      }
    });
    return outbox;
  };

  const notified = new Map<string, number>();
  // A few notices per sandbox per minute: a flood of blocked names is a line saying so, not a thousand messages.
  const rate = sandboxRate();
  const budgeted = (sb: { id: number; name: string }, topic: string, text: string) => {
    const b = rate.take(sb.id, now());
    if (b === "send") void post(topic, text);
    else if (b === "held-back") void post(topic, `… and more from **${sb.name}**: I hold back further notices for a minute. \`/status\` here lists everything that is waiting.`);
  };
  const unsubscribe = source.events.subscribe((e) => {
    // What the bridge refused and recorded for approval: told once per approval, in the sandbox's topic.
    if (e.kind === "bridge" && e.approvalId !== undefined && (e.count ?? 1) === 1) {
      const a = store.listApprovals({ state: "pending", sandboxId: e.sandbox.id }).find((x) => x.id === e.approvalId);
      const sb = store.getSandbox(e.sandbox.id);
      if (a) budgeted(e.sandbox, sb ? topicFor(sb) : e.sandbox.name, bridgeNotice(e, a.host));
      return;
    }
    // A sandbox at its LLM budget: told once per approval, like the bridge's.
    if (e.kind === "llm" && e.approvalId !== undefined && (e.count ?? 1) === 1) {
      const sb = store.getSandbox(e.sandbox.id);
      budgeted(e.sandbox, sb ? topicFor(sb) : e.sandbox.name, budgetNotice(e));
      return;
    }
    if (e.kind !== "egress" || e.action !== "denied") return;
    if (e.count !== undefined && e.count > 1) return;
    const key = `${e.sandbox.id}\0${e.host}\0${e.port}`;
    const last = notified.get(key);
    if (last !== undefined && now() - last < renotifyMs) return;
    notified.set(key, now());
    const sb = store.getSandbox(e.sandbox.id);
    budgeted(e.sandbox, sb ? topicFor(sb) : e.sandbox.name, blockedNotice(e));
  });

  const onMessage = async (raw: unknown) => {
    const parsed = ZulipMessageSchema.safeParse(raw);
    if (!parsed.success) return;
    const m = parsed.data;
    if (m.type !== "stream" || m.sender_email.toLowerCase() === config.email.toLowerCase()) return;
    if (typeof m.display_recipient === "string" && m.display_recipient.toLowerCase() !== config.stream.toLowerCase()) return;
    const topic = m.subject ?? m.topic ?? "";
    let reply: string | null;
    try {
      reply = handleChat(
        { store, allowSenders: config.allowSenders, source: "zulip", publish, now, ...(source.stateOf ? { stateOf: source.stateOf } : {}) },
        { senderEmail: m.sender_email, senderName: m.sender_full_name, topic, content: m.content },
      );
    } catch (e) {
      opts.log?.warn("chat: command failed", { topic, message: (e as Error).message });
      reply = "Something went wrong on the sbx side; nothing may have changed. Check `sbx status` on the host.";
    }
    if (reply === null) return;
    counts.handled++;
    opts.log?.info("chat: command", { sender: m.sender_email, topic, command: m.content.trim().split(/\s+/, 1)[0] });
    await post(topic, reply);
  };

  const loop = async () => {
    let queue: Registration | null = null;
    let failures = 0;
    while (!stop.signal.aborted) {
      try {
        if (queue === null) {
          queue = await client.register(config.stream);
          counts.registrations++;
          link.connected = true;
          link.lastError = null;
          opts.log?.info("chat: registered a Zulip event queue", { site: config.site, stream: config.stream });
          markReady();
        }
        const events = await client.events(queue.queueId, queue.lastEventId, queue.longPollTimeoutMs, stop.signal);
        failures = 0;
        link.connected = true;
        for (const ev of events) {
          queue.lastEventId = Math.max(queue.lastEventId, ev.id);
          if (ev.type === "message") await onMessage(ev.message);
        }
      } catch (e) {
        if (stop.signal.aborted) break;
        counts.errors++;
        link.connected = false;
        link.lastError = (e as Error).message;
        if (e instanceof ZulipError && e.code === "BAD_EVENT_QUEUE_ID") {
          // The server garbage-collected the queue (idle, restarted): start a new one; events in between are lost.
          // A queue that expires again before any events call succeeded gets the backoff too (no tight loop).
          opts.log?.info("chat: event queue expired; registering a new one", {});
          queue = null;
          if (++failures === 1) continue;
        } else failures++;
        const delay = backoffDelay(failures, backoff.baseMs, backoff.maxMs, random);
        opts.log?.warn("chat: Zulip request failed; retrying", { message: (e as Error).message, retryInMs: delay });
        await sleep(delay, stop.signal);
      }
    }
  };
  const running = loop();

  return {
    ready,
    stats: () => ({ ...counts }),
    state: () => ({ ...link }),
    async close() {
      unsubscribe();
      stop.abort();
      link.connected = false;
      await running;
      await outbox;
    },
  };
}
