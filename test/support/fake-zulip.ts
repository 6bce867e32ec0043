// A fake Zulip server on 127.0.0.1, written from the REST API docs: Basic auth (with Zulip's refusals), GET /users/me, POST /register, long-poll GET /events (heartbeats, BAD_EVENT_QUEUE_ID), POST /messages.
import { randomUUID } from "node:crypto";

export interface FakeMessage {
  id: number;
  sender_email: string;
  sender_full_name: string;
  type: "stream";
  display_recipient: string;
  subject: string;
  content: string;
  timestamp: number;
}

interface Queue {
  id: string;
  owner: string;
  stream: string | null;
  events: { id: number; type: string; message?: FakeMessage; flags?: string[] }[];
  nextId: number;
  waiters: Set<() => void>;
}

export interface FakeZulipOptions {
  /** email → API key of the accounts that may call the API. */
  accounts: Record<string, string>;
  /** Display names for senders (Zulip's sender_full_name). */
  names?: Record<string, string>;
  /** How long GET /events blocks before a heartbeat (the real server: about a minute). */
  heartbeatMs?: number;
  /** email → API key of accounts in another organisation of the same server (Zulip: "not associated with this subdomain"). */
  otherRealm?: Record<string, string>;
  /** Accounts that are people, not bots (GET /users/me's is_bot). Default: none. */
  people?: string[];
  /** Accounts that are deactivated (401 USER_DEACTIVATED). */
  deactivated?: string[];
}

export interface FakeZulip {
  readonly site: string;
  /** Every message posted, by anyone, in order. */
  readonly messages: FakeMessage[];
  /** Each API call: method, path, the authenticated email (or null), status. */
  readonly calls: { method: string; path: string; who: string | null; status: number }[];
  registrations(): number;
  /** A person posts in a stream topic (delivered to matching queues like a real message). */
  say(sender: string, stream: string, topic: string, content: string): FakeMessage;
  /** Drops every queue, as the server does after a restart or idle timeout. */
  expireQueues(): void;
  /** Resolves when pred holds for the posted messages (polls). */
  waitFor(pred: (ms: FakeMessage[]) => boolean, timeoutMs?: number): Promise<FakeMessage[]>;
  stop(): Promise<void>;
}

function fail(status: number, code: string, msg: string, extra: Record<string, unknown> = {}): Response {
  return Response.json({ result: "error", msg, code, ...extra }, { status });
}

export function startFakeZulip(opts: FakeZulipOptions): FakeZulip {
  const heartbeatMs = opts.heartbeatMs ?? 1000;
  const queues = new Map<string, Queue>();
  const messages: FakeMessage[] = [];
  const calls: FakeZulip["calls"] = [];
  let messageId = 100;
  let registrations = 0;

  const deliver = (m: FakeMessage) => {
    for (const q of queues.values()) {
      if (q.stream !== null && q.stream.toLowerCase() !== m.display_recipient.toLowerCase()) continue;
      q.events.push({ id: q.nextId++, type: "message", message: m, flags: [] });
      for (const w of [...q.waiters]) w();
    }
  };

  const post = (sender: string, stream: string, topic: string, content: string): FakeMessage => {
    const m: FakeMessage = {
      id: messageId++,
      sender_email: sender,
      sender_full_name: opts.names?.[sender] ?? sender.split("@")[0]!,
      type: "stream",
      display_recipient: stream,
      subject: topic,
      content,
      timestamp: Math.floor(Date.now() / 1000),
    };
    messages.push(m);
    deliver(m);
    return m;
  };

  /** The Basic auth credentials, if any. */
  const credentials = (req: Request): { email: string; key: string } | null => {
    const h = req.headers.get("authorization") ?? "";
    if (!h.startsWith("Basic ")) return null;
    const decoded = Buffer.from(h.slice(6), "base64").toString("utf8");
    const i = decoded.indexOf(":");
    return i < 0 ? null : { email: decoded.slice(0, i), key: decoded.slice(i + 1) };
  };

  const authenticate = (req: Request): string | null => {
    const c = credentials(req);
    return c && opts.accounts[c.email] !== undefined && opts.accounts[c.email] === c.key ? c.email : null;
  };

  /** Zulip's refusal of a request it cannot authenticate, as the real server words it. */
  const refusal = (req: Request): Response => {
    const c = credentials(req);
    if (!c) return fail(401, "UNAUTHORIZED", "Missing 'Authorization' header.");
    if (opts.otherRealm?.[c.email] === c.key) return fail(400, "BAD_REQUEST", "Account is not associated with this subdomain");
    return fail(401, "INVALID_API_KEY", "Invalid API key");
  };

  const params = async (req: Request, url: URL): Promise<URLSearchParams> =>
    req.method === "GET" ? url.searchParams : new URLSearchParams(await req.text());

  const handle = async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    const who = authenticate(req);
    if (who === null) return refusal(req);
    if (opts.deactivated?.includes(who)) return fail(401, "USER_DEACTIVATED", "Account is deactivated");
    const p = await params(req, url);

    if (req.method === "GET" && url.pathname === "/api/v1/users/me") {
      const isBot = !(opts.people ?? []).includes(who);
      return Response.json({
        result: "success",
        msg: "",
        user_id: Object.keys(opts.accounts).indexOf(who) + 8,
        email: who,
        delivery_email: isBot ? null : who,
        full_name: opts.names?.[who] ?? who.split("@")[0]!,
        is_bot: isBot,
        is_active: true,
        role: 400,
      });
    }

    if (req.method === "POST" && url.pathname === "/api/v1/register") {
      const types = JSON.parse(p.get("event_types") ?? "null") as unknown;
      if (!Array.isArray(types) || !types.includes("message")) return fail(400, "BAD_REQUEST", "this fake serves message events only");
      const narrow = JSON.parse(p.get("narrow") ?? "[]") as [string, string][];
      const streamTerm = narrow.find(([op]) => op === "stream" || op === "channel");
      const q: Queue = { id: randomUUID(), owner: who, stream: streamTerm ? streamTerm[1] : null, events: [], nextId: 0, waiters: new Set() };
      queues.set(q.id, q);
      registrations++;
      return Response.json({ result: "success", msg: "", queue_id: q.id, last_event_id: -1, event_queue_longpoll_timeout_seconds: 90 });
    }

    if (req.method === "GET" && url.pathname === "/api/v1/events") {
      const qid = p.get("queue_id") ?? "";
      const last = Number(p.get("last_event_id") ?? "-1");
      const q = queues.get(qid);
      if (!q || q.owner !== who) return fail(400, "BAD_EVENT_QUEUE_ID", `Bad event queue ID: ${qid}`, { queue_id: qid });
      q.events = q.events.filter((e) => e.id > last);
      if (q.events.length === 0 && p.get("dont_block") !== "true") {
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(t);
            q.waiters.delete(done);
            resolve();
          };
          const t = setTimeout(done, heartbeatMs);
          q.waiters.add(done);
          req.signal.addEventListener("abort", done, { once: true });
        });
        if (!queues.has(qid)) return fail(400, "BAD_EVENT_QUEUE_ID", `Bad event queue ID: ${qid}`, { queue_id: qid });
        if (q.events.length === 0) q.events.push({ id: q.nextId++, type: "heartbeat" });
      }
      return Response.json({ result: "success", msg: "", events: q.events, queue_id: q.id });
    }

    if (req.method === "POST" && url.pathname === "/api/v1/messages") {
      const type = p.get("type");
      const to = p.get("to");
      const topic = p.get("topic") ?? p.get("subject");
      const content = p.get("content");
      if ((type !== "stream" && type !== "channel") || !to || !content) return fail(400, "BAD_REQUEST", "type, to and content are required");
      if (!topic) return fail(400, "BAD_REQUEST", "Missing topic");
      if (topic.length > 60) return fail(400, "BAD_REQUEST", "Topic too long");
      const m = post(who, to, topic, content);
      return Response.json({ result: "success", msg: "", id: m.id });
    }

    return fail(404, "BAD_REQUEST", "Endpoint does not exist.");
  };

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const res = await handle(req);
      calls.push({ method: req.method, path: new URL(req.url).pathname, who: authenticate(req), status: res.status });
      return res;
    },
  });

  return {
    site: `http://127.0.0.1:${server.port}`,
    messages,
    calls,
    registrations: () => registrations,
    say: post,
    expireQueues() {
      const all = [...queues.values()];
      queues.clear();
      for (const q of all) for (const w of [...q.waiters]) w();
    },
    async waitFor(pred, timeoutMs = 5000) {
      const until = Date.now() + timeoutMs;
      while (!pred(messages)) {
        if (Date.now() > until) throw new Error(`fake zulip: timed out; messages so far:\n${messages.map((m) => `[${m.subject}] ${m.sender_email}: ${m.content}`).join("\n")}`);
        await Bun.sleep(10);
      }
      return messages;
    },
    async stop() {
      for (const q of queues.values()) for (const w of [...q.waiters]) w();
      await server.stop(true);
    },
  };
}
