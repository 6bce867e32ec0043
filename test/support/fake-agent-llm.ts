// Test fixture: a fake LLM provider on 127.0.0.1 that answers the real agents' requests in each provider's own wire
// format (Anthropic Messages, OpenAI Responses and Chat Completions, Gemini generateContent, ChatGPT's Codex backend),
// streaming or not, with one fixed answer, and records every request. Its usage fields are where each provider puts
// them (a Chat Completions stream reports usage only when asked with stream_options.include_usage, as OpenAI's does);
// `tokens`, `omitUsage` and `cutAfter` let a budget test set the counts, drop them, or cut an answer short.
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";

export const FAKE_ANSWER = "SBX-FAKE-ANSWER-7f3a";

export interface AgentLlmRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** The counts an answer reports: fresh input, output, cache reads and cache writes (each provider's fields from these). */
export interface FakeTokens {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

export interface FakeAgentLlm {
  url: string;
  requests: AgentLlmRequest[];
  /** What the next answers report (default 10 in, 5 out, no cache). */
  tokens: FakeTokens;
  /** Answers carry no usage field at all (a gateway that strips it). */
  omitUsage: boolean;
  /** Cut each answer after this many SSE events (or, for JSON, half its bytes): the socket is destroyed. */
  cutAfter: number | null;
  /** Wait this long before answering a model call (a slow model; a client may leave meanwhile). */
  delayMs: number;
  /** What POST /oauth/token (OpenAI's token refresh) answers with next: a fresh access token per call. */
  issued: string[];
  stop(): Promise<void>;
}

/** The knobs an answer is made with (the fake's current settings). */
type Knobs = Pick<FakeAgentLlm, "tokens" | "omitUsage" | "cutAfter" | "delayMs">;
let knobs: Knobs = { tokens: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0 }, omitUsage: false, cutAfter: null, delayMs: 0 };

/** Drops every `usage`/`usageMetadata` key (omitUsage), deep. */
function strip(v: unknown): unknown {
  if (!knobs.omitUsage || v === null || typeof v !== "object") return v;
  if (Array.isArray(v)) return v.map(strip);
  return Object.fromEntries(Object.entries(v).filter(([k]) => k !== "usage" && k !== "usageMetadata").map(([k, x]) => [k, strip(x)]));
}

/** Chat Completions' last line, `data: [DONE]` (not JSON). */
const DONE = Symbol("[DONE]");

function sse(res: ServerResponse, events: Array<[string | null, unknown]>): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  let n = 0;
  for (const [event, data] of events) {
    if (knobs.cutAfter !== null && n++ >= knobs.cutAfter) return void res.socket?.destroy();
    res.write(`${event ? `event: ${event}\n` : ""}data: ${data === DONE ? "[DONE]" : JSON.stringify(strip(data))}\n\n`);
  }
  res.end();
}

function json(res: ServerResponse, body: unknown, status = 200): void {
  const text = JSON.stringify(strip(body));
  res.writeHead(status, { "content-type": "application/json" });
  if (knobs.cutAfter !== null) {
    res.write(text.slice(0, text.length >> 1));
    return void setTimeout(() => res.socket?.destroy(), 20);
  }
  res.end(text);
}

function anthropic(res: ServerResponse, stream: boolean, model: string): void {
  const t = knobs.tokens;
  const usage = { input_tokens: t.input, output_tokens: t.output, cache_creation_input_tokens: t.cacheWrite, cache_read_input_tokens: t.cacheRead };
  const message = { id: "msg_fake", type: "message", role: "assistant", model, content: [] as unknown[], stop_reason: null, stop_sequence: null, usage };
  if (!stream) {
    json(res, { ...message, content: [{ type: "text", text: FAKE_ANSWER }], stop_reason: "end_turn" });
    return;
  }
  sse(res, [
    ["message_start", { type: "message_start", message: { ...message, usage: { ...usage, output_tokens: 1 } } }],
    // message_start carries the input counts and the first output token; message_delta the output so far.
    ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
    ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: FAKE_ANSWER } }],
    ["content_block_stop", { type: "content_block_stop", index: 0 }],
    ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: t.output } }],
    ["message_stop", { type: "message_stop" }],
  ]);
}

function responses(res: ServerResponse, stream: boolean, model: string): void {
  const item = { type: "message", id: "msg_fake", status: "completed", role: "assistant", content: [{ type: "output_text", text: FAKE_ANSWER, annotations: [] }] };
  const t = knobs.tokens;
  // OpenAI's input count includes what the cache served.
  const usage = { input_tokens: t.input + t.cacheRead, input_tokens_details: { cached_tokens: t.cacheRead }, output_tokens: t.output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: t.input + t.cacheRead + t.output };
  const done = { id: "resp_fake", object: "response", created_at: 1, status: "completed", model, output: [item], usage };
  if (!stream) {
    json(res, done);
    return;
  }
  sse(res, [
    ["response.created", { type: "response.created", sequence_number: 0, response: { ...done, status: "in_progress", output: [], usage: null } }],
    ["response.output_item.added", { type: "response.output_item.added", sequence_number: 1, output_index: 0, item: { ...item, status: "in_progress", content: [] } }],
    ["response.content_part.added", { type: "response.content_part.added", sequence_number: 2, item_id: "msg_fake", output_index: 0, content_index: 0, part: { type: "output_text", text: "", annotations: [] } }],
    ["response.output_text.delta", { type: "response.output_text.delta", sequence_number: 3, item_id: "msg_fake", output_index: 0, content_index: 0, delta: FAKE_ANSWER }],
    ["response.output_text.done", { type: "response.output_text.done", sequence_number: 4, item_id: "msg_fake", output_index: 0, content_index: 0, text: FAKE_ANSWER }],
    ["response.content_part.done", { type: "response.content_part.done", sequence_number: 5, item_id: "msg_fake", output_index: 0, content_index: 0, part: item.content[0] }],
    ["response.output_item.done", { type: "response.output_item.done", sequence_number: 6, output_index: 0, item }],
    ["response.completed", { type: "response.completed", sequence_number: 7, response: done }],
  ]);
}

function chat(res: ServerResponse, stream: boolean, model: string, includeUsage: boolean): void {
  const base = { id: "chatcmpl-fake", created: 1, model };
  const t = knobs.tokens;
  const usage = { prompt_tokens: t.input + t.cacheRead, completion_tokens: t.output, total_tokens: t.input + t.cacheRead + t.output, prompt_tokens_details: { cached_tokens: t.cacheRead } };
  if (!stream) {
    json(res, { ...base, object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: FAKE_ANSWER }, finish_reason: "stop" }], usage });
    return;
  }
  const chunk = (delta: unknown, finish: string | null) => ({ ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }], ...(includeUsage ? { usage: null } : {}) });
  // As OpenAI streams: usage only when asked, in a last chunk of its own with no choices; then [DONE] (not JSON).
  const events: Array<[string | null, unknown]> = [[null, chunk({ role: "assistant", content: FAKE_ANSWER }, null)], [null, chunk({}, "stop")]];
  if (includeUsage) events.push([null, { ...base, object: "chat.completion.chunk", choices: [], usage }]);
  events.push([null, DONE]);
  sse(res, events);
}

function gemini(res: ServerResponse, stream: boolean, codeAssist: boolean, model: string, sseFraming: boolean): void {
  const t = knobs.tokens;
  // Gemini's prompt count includes what the cache served; each streamed chunk carries the counts so far.
  const meta = (out: number) => ({ promptTokenCount: t.input + t.cacheRead, candidatesTokenCount: out, totalTokenCount: t.input + t.cacheRead + out, ...(t.cacheRead ? { cachedContentTokenCount: t.cacheRead } : {}) });
  const part = (text: string, out: number, done: boolean) => ({ candidates: [{ content: { parts: [{ text }], role: "model" }, ...(done ? { finishReason: "STOP" } : {}), index: 0 }], usageMetadata: meta(out), modelVersion: model });
  // Code Assist (Gemini CLI signed in with Google) wraps the Gemini API's answer.
  const wrap = (b: unknown) => (codeAssist ? { response: b, traceId: "fake" } : b);
  const chunks = [wrap(part(FAKE_ANSWER, 1, false)), wrap(part("", t.output, true))];
  if (stream && sseFraming) sse(res, chunks.map((c) => [null, c]));
  else if (stream) json(res, chunks); // streamGenerateContent without alt=sse: one JSON array of the chunks
  else json(res, wrap(part(FAKE_ANSWER, t.output, true)));
}

function includeUsage(body: string): boolean {
  try {
    return (JSON.parse(body) as { stream_options?: { include_usage?: unknown } }).stream_options?.include_usage === true;
  } catch {
    return false;
  }
}

function modelOf(body: string): string {
  try {
    const m = (JSON.parse(body) as { model?: unknown }).model;
    return typeof m === "string" ? m : "fake-model";
  } catch {
    return "fake-model";
  }
}

/** Starts the fake; every provider is served at the root (point each route's test upstream at `url`). */
export async function startFakeAgentLlm(): Promise<FakeAgentLlm> {
  const state: FakeAgentLlm = { url: "", requests: [], issued: [], tokens: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0 }, omitUsage: false, cutAfter: null, delayMs: 0, stop: () => new Promise<void>((r) => server.close(() => r())) };
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", async () => {
      const path = req.url ?? "";
      state.requests.push({ method: req.method ?? "", path, headers: req.headers, body });
      if (state.delayMs > 0) await Bun.sleep(state.delayMs);
      if (res.destroyed) return;
      knobs = state;
      const stream = /"stream"\s*:\s*true/.test(body) || path.includes("alt=sse") || path.includes(":streamGenerateContent");
      const p = path.split("?")[0]!;
      if (req.method === "POST" && p === "/oauth/token") {
        const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
        const access = `${b64({ alg: "RS256" })}.${b64({ exp: Math.floor(Date.now() / 1000) + 3600, n: state.issued.length })}.fake-signature-${state.issued.length}`;
        state.issued.push(access);
        return json(res, { access_token: access, refresh_token: `rt-refreshed-${state.issued.length}` });
      }
      if (req.method === "POST" && p.endsWith("/messages/count_tokens")) return json(res, { input_tokens: 10 });
      if (req.method === "POST" && p.endsWith("/messages")) return anthropic(res, stream, modelOf(body));
      if (req.method === "POST" && p.endsWith("/responses")) return responses(res, stream, modelOf(body));
      if (req.method === "POST" && p.endsWith("/chat/completions")) return chat(res, stream, modelOf(body), includeUsage(body));
      if (req.method === "POST" && p.endsWith("/v1internal:loadCodeAssist")) return json(res, { currentTier: { id: "standard-tier", name: "fake" }, allowedTiers: [{ id: "standard-tier", isDefault: true }], cloudaicompanionProject: "sbx-fake-project" });
      if (req.method === "POST" && p.endsWith("/v1internal:onboardUser")) return json(res, { done: true, response: { cloudaicompanionProject: { id: "sbx-fake-project" } } });
      if (req.method === "POST" && /\/v1internal:(stream)?[gG]enerateContent$/.test(p)) return gemini(res, stream, true, modelOf(body), path.includes("alt=sse"));
      if (req.method === "POST" && /:(stream)?[gG]enerateContent$/.test(p)) return gemini(res, stream, false, /\/models\/([^/:]+):/.exec(p)?.[1] ?? "gemini-fake", path.includes("alt=sse"));
      if (req.method === "POST" && p.endsWith(":countTokens")) return json(res, { totalTokens: 10 });
      if (req.method === "POST" && /\/v1internal:[A-Za-z]+$/.test(p)) return json(res, {}); // Code Assist's quota, experiments, …
      if (req.method === "GET" && /\/models\/?$/.test(p)) return json(res, { object: "list", data: [{ id: "fake-model", object: "model", created: 1, owned_by: "sbx" }], models: [] });
      json(res, { error: { type: "not_found", message: `fake LLM: nothing at ${req.method} ${path}` } }, 404);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const addr = server.address();
  state.url = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`;
  return state;
}
