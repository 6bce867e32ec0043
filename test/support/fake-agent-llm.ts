// Test fixture: a fake LLM provider on 127.0.0.1 that answers the real agents' requests in each provider's own wire
// format (Anthropic Messages, OpenAI Responses and Chat Completions, Gemini generateContent, ChatGPT's Codex backend),
// streaming or not, with one fixed answer, and records every request.
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";

export const FAKE_ANSWER = "SBX-FAKE-ANSWER-7f3a";

export interface AgentLlmRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface FakeAgentLlm {
  url: string;
  requests: AgentLlmRequest[];
  /** What POST /oauth/token (OpenAI's token refresh) answers with next: a fresh access token per call. */
  issued: string[];
  stop(): Promise<void>;
}

function sse(res: ServerResponse, events: Array<[string | null, unknown]>): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  for (const [event, data] of events) res.write(`${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`);
  res.end();
}

function json(res: ServerResponse, body: unknown, status = 200): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

function anthropic(res: ServerResponse, stream: boolean, model: string): void {
  const usage = { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  const message = { id: "msg_fake", type: "message", role: "assistant", model, content: [] as unknown[], stop_reason: null, stop_sequence: null, usage };
  if (!stream) {
    json(res, { ...message, content: [{ type: "text", text: FAKE_ANSWER }], stop_reason: "end_turn" });
    return;
  }
  sse(res, [
    ["message_start", { type: "message_start", message }],
    ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
    ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: FAKE_ANSWER } }],
    ["content_block_stop", { type: "content_block_stop", index: 0 }],
    ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 5 } }],
    ["message_stop", { type: "message_stop" }],
  ]);
}

function responses(res: ServerResponse, stream: boolean, model: string): void {
  const item = { type: "message", id: "msg_fake", status: "completed", role: "assistant", content: [{ type: "output_text", text: FAKE_ANSWER, annotations: [] }] };
  const usage = { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 15 };
  const done = { id: "resp_fake", object: "response", created_at: 1, status: "completed", model, output: [item], usage };
  if (!stream) {
    json(res, done);
    return;
  }
  sse(res, [
    ["response.created", { type: "response.created", sequence_number: 0, response: { ...done, status: "in_progress", output: [] } }],
    ["response.output_item.added", { type: "response.output_item.added", sequence_number: 1, output_index: 0, item: { ...item, status: "in_progress", content: [] } }],
    ["response.content_part.added", { type: "response.content_part.added", sequence_number: 2, item_id: "msg_fake", output_index: 0, content_index: 0, part: { type: "output_text", text: "", annotations: [] } }],
    ["response.output_text.delta", { type: "response.output_text.delta", sequence_number: 3, item_id: "msg_fake", output_index: 0, content_index: 0, delta: FAKE_ANSWER }],
    ["response.output_text.done", { type: "response.output_text.done", sequence_number: 4, item_id: "msg_fake", output_index: 0, content_index: 0, text: FAKE_ANSWER }],
    ["response.content_part.done", { type: "response.content_part.done", sequence_number: 5, item_id: "msg_fake", output_index: 0, content_index: 0, part: item.content[0] }],
    ["response.output_item.done", { type: "response.output_item.done", sequence_number: 6, output_index: 0, item }],
    ["response.completed", { type: "response.completed", sequence_number: 7, response: done }],
  ]);
}

function chat(res: ServerResponse, stream: boolean, model: string): void {
  const base = { id: "chatcmpl-fake", created: 1, model };
  if (!stream) {
    json(res, { ...base, object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: FAKE_ANSWER }, finish_reason: "stop" }], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } });
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream" });
  const chunk = (delta: unknown, finish: string | null) => ({ ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] });
  res.write(`data: ${JSON.stringify(chunk({ role: "assistant", content: FAKE_ANSWER }, null))}\n\n`);
  res.write(`data: ${JSON.stringify({ ...chunk({}, "stop"), usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } })}\n\n`);
  res.end("data: [DONE]\n\n");
}

function gemini(res: ServerResponse, stream: boolean, codeAssist = false): void {
  const inner = { candidates: [{ content: { parts: [{ text: FAKE_ANSWER }], role: "model" }, finishReason: "STOP", index: 0 }], usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 }, modelVersion: "gemini-fake" };
  // Code Assist (Gemini CLI signed in with Google) wraps the Gemini API's answer.
  const body = codeAssist ? { response: inner, traceId: "fake" } : inner;
  if (stream) sse(res, [[null, body]]);
  else json(res, body);
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
  const state: FakeAgentLlm = { url: "", requests: [], issued: [], stop: () => new Promise<void>((r) => server.close(() => r())) };
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      const path = req.url ?? "";
      state.requests.push({ method: req.method ?? "", path, headers: req.headers, body });
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
      if (req.method === "POST" && p.endsWith("/chat/completions")) return chat(res, stream, modelOf(body));
      if (req.method === "POST" && p.endsWith("/v1internal:loadCodeAssist")) return json(res, { currentTier: { id: "standard-tier", name: "fake" }, allowedTiers: [{ id: "standard-tier", isDefault: true }], cloudaicompanionProject: "sbx-fake-project" });
      if (req.method === "POST" && p.endsWith("/v1internal:onboardUser")) return json(res, { done: true, response: { cloudaicompanionProject: { id: "sbx-fake-project" } } });
      if (req.method === "POST" && /\/v1internal:(stream)?[gG]enerateContent$/.test(p)) return gemini(res, stream, true);
      if (req.method === "POST" && /:(stream)?[gG]enerateContent$/.test(p)) return gemini(res, stream);
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
