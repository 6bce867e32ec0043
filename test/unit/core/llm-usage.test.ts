// llm-budget: the tokens of a call are read from the provider's own usage fields, wherever each provider puts them, as
// the answer passes in chunks of any size; what the model wrote cannot pose as a count; and what the provider did not
// report is estimated on the high side, said, never taken as free.
import { describe, expect, test } from "bun:test";
import { JsonPathReader, NESTING_MAX } from "../../../src/core/json-paths";
import { countCall, isInference, normalise, UsageReader, type CallFacts, type RawUsage } from "../../../src/core/llm-usage";

const enc = new TextEncoder();
const sse = (events: Array<[string | null, unknown]>) => events.map(([e, d]) => `${e ? `event: ${e}\n` : ""}data: ${typeof d === "string" ? d : JSON.stringify(d)}\n\n`).join("");

/** Each provider's answer as it comes on the wire, with the counts an independent reading of its docs gives. */
const ANSWERS: Record<string, { format: "json" | "sse"; text: string; want: RawUsage }> = {
  "anthropic json": {
    format: "json",
    text: JSON.stringify({ id: "m", type: "message", model: "claude-sonnet-4-5-20250929", content: [{ type: "text", text: "hi ünïcødé 🎉" }], usage: { input_tokens: 12, cache_creation_input_tokens: 3, cache_read_input_tokens: 40, output_tokens: 7 } }),
    want: { model: "claude-sonnet-4-5-20250929", input: 12, cacheWrite: 3, cacheRead: 40, output: 7 },
  },
  "anthropic sse": {
    format: "sse",
    text: sse([
      ["message_start", { type: "message_start", message: { model: "claude-haiku-4-5", usage: { input_tokens: 25, cache_read_input_tokens: 100, output_tokens: 1 } } }],
      ["ping", { type: "ping" }],
      ["content_block_delta", { type: "content_block_delta", delta: { type: "text_delta", text: "a \"usage\": {\"input_tokens\": 1}" } }],
      ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 321 } }],
      ["message_stop", { type: "message_stop" }],
    ]),
    want: { model: "claude-haiku-4-5", input: 25, cacheRead: 100, output: 321 },
  },
  "openai chat sse with include_usage": {
    format: "sse",
    text: sse([
      [null, { model: "gpt-4o-2024-08-06", choices: [{ delta: { content: "x" } }], usage: null }],
      [null, { model: "gpt-4o-2024-08-06", choices: [], usage: { prompt_tokens: 50, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 20 } } }],
      [null, "[DONE]"],
    ]),
    want: { model: "gpt-4o-2024-08-06", input: 50, output: 9, cacheRead: 20 },
  },
  "openai responses sse": {
    format: "sse",
    text: sse([
      ["response.created", { type: "response.created", response: { model: "gpt-5-codex", usage: null } }],
      ["response.output_text.delta", { type: "response.output_text.delta", delta: "{\"usage\":{\"input_tokens\":9}}" }],
      ["response.completed", { type: "response.completed", response: { model: "gpt-5-codex", output: [{ type: "function_call", arguments: "{}" }], usage: { input_tokens: 70, input_tokens_details: { cached_tokens: 64 }, output_tokens: 11 } } }],
    ]),
    want: { model: "gpt-5-codex", input: 70, cacheRead: 64, output: 11 },
  },
  "gemini sse": {
    format: "sse",
    text: sse([
      [null, { candidates: [{ content: { parts: [{ text: "a" }] } }], usageMetadata: { promptTokenCount: 30, candidatesTokenCount: 1 }, modelVersion: "gemini-2.5-pro" }],
      [null, { candidates: [{ content: { parts: [{ text: "b" }] } }], usageMetadata: { promptTokenCount: 30, candidatesTokenCount: 8, thoughtsTokenCount: 4, cachedContentTokenCount: 10 }, modelVersion: "gemini-2.5-pro" }],
    ]),
    want: { model: "gemini-2.5-pro", input: 30, output: 8, thoughts: 4, cacheRead: 10 },
  },
  "gemini json array (streamGenerateContent without alt=sse)": {
    format: "json",
    text: JSON.stringify([
      { candidates: [], usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 1 }, modelVersion: "gemini-2.5-flash" },
      { candidates: [], usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 6 }, modelVersion: "gemini-2.5-flash" },
    ]),
    want: { model: "gemini-2.5-flash", input: 5, output: 6 },
  },
  "code assist sse (wrapped in response)": {
    format: "sse",
    text: sse([[null, { response: { candidates: [], usageMetadata: { promptTokenCount: 44, candidatesTokenCount: 2, toolUsePromptTokenCount: 3 }, modelVersion: "gemini-2.5-pro" }, traceId: "t" }]]),
    want: { model: "gemini-2.5-pro", input: 44, output: 2, toolPrompt: 3 },
  },
};

function read(format: "json" | "sse", chunks: Uint8Array[]): RawUsage {
  const r = new UsageReader(format);
  for (const c of chunks) r.feed(c);
  return r.finish();
}

describe("llm-budget: each provider's usage fields are read, JSON and SSE", () => {
  for (const [name, a] of Object.entries(ANSWERS)) {
    test(`${name}: the provider's counts, whole`, () => {
      expect(read(a.format, [enc.encode(a.text)])).toEqual(a.want);
    });
  }

  test("an answer split at any byte (one byte at a time, or in two anywhere) reads the same: counts never depend on chunking", () => {
    for (const [name, a] of Object.entries(ANSWERS)) {
      const bytes = enc.encode(a.text);
      expect({ name, got: read(a.format, [...bytes].map((b) => Uint8Array.of(b))) }).toEqual({ name, got: a.want });
      for (let i = 1; i < bytes.length; i++) {
        const got = read(a.format, [bytes.subarray(0, i), bytes.subarray(i)]);
        if (!Bun.deepEquals(got, a.want)) throw new Error(`${name}: split at ${i} read ${JSON.stringify(got)}`);
      }
    }
  });

  test("CRLF and CR line ends, comments, id/retry lines and data split over lines are SSE as the spec has it", () => {
    const text = `: keep-alive\r\nid: 1\r\nretry: 10\r\nevent: message_start\r\ndata: {"type":"message_start",\r\ndata: "message":{"usage":{"input_tokens":3,"output_tokens":1}}}\r\n\r\nevent: message_delta\rdata: {"usage":{"output_tokens":4}}\r\r`;
    expect(read("sse", [enc.encode(text)])).toEqual({ input: 3, output: 4 });
  });
});

describe("llm-budget: nothing but the provider's own fields is taken as a count", () => {
  test("a `usage` the model wrote inside its answer (a tool call's input, text) is another path, never a count", () => {
    const body = { model: "claude-sonnet-4-5", content: [{ type: "tool_use", input: { usage: { input_tokens: 0, output_tokens: 0 }, model: "free-model" } }, { type: "text", text: '"usage":{"input_tokens":0}' }], usage: { input_tokens: 1000, output_tokens: 900 } };
    expect(read("json", [enc.encode(JSON.stringify(body))])).toEqual({ model: "claude-sonnet-4-5", input: 1000, output: 900 });
    // Even when it comes first: the provider's root `usage` is the only one read.
    const before = { content: [{ type: "tool_use", input: { usage: { input_tokens: 5e9 } } }], usage: { input_tokens: 2, output_tokens: 3 } };
    expect(read("json", [enc.encode(JSON.stringify(before))])).toEqual({ input: 2, output: 3 });
  });

  test("counts that are not counts (negative, fractional, huge, strings) are dropped, not trusted", () => {
    const body = { usage: { input_tokens: -5, output_tokens: 1.5, cache_read_input_tokens: 1e300, cache_creation_input_tokens: "7" } };
    expect(read("json", [enc.encode(JSON.stringify(body))])).toEqual({});
  });

  test("an escaped key is the key it spells (JSON's reading), and a model name is kept printable and short", () => {
    const text = `{"us\\u0061ge":{"input_tokens":4,"output_tokens":2},"model":"${"m\\u0007 ".repeat(30)}"}`;
    const got = read("json", [enc.encode(text)]);
    expect(got.input).toBe(4);
    expect(got.model).toMatch(/^[\x21-\x7e]{64}$/);
    // Past what is kept of a value (256 bytes), a model name is dropped whole, never cut into another model's name.
    expect(read("json", [enc.encode(`{"model":"${"a".repeat(300)}"}`)])).toEqual({});
  });
});

describe("llm-budget: reading an answer is bounded and never throws", () => {
  test("nesting past NESTING_MAX gives the document up; what was read before stays, nothing throws", () => {
    const text = `{"usage":{"input_tokens":9},"x":${"[".repeat(NESTING_MAX + 10)}`;
    const r = new JsonPathReader(new Set(["usage.input_tokens"]));
    r.feed(enc.encode(text));
    expect(r.broken).toBe(true);
    expect(r.values().get("usage.input_tokens")).toBe(9);
  });

  test("garbage, a [DONE], a half event and bytes after the end are taken in stride", () => {
    for (const text of ["\u0000\u0001garbage", "data: [DONE]\n\n", "data: {\"usage\":{\"input_t", "{}{}", "]", "data:\n\n\n\n"]) {
      expect(() => read("sse", [enc.encode(text)])).not.toThrow();
      expect(() => read("json", [enc.encode(text)])).not.toThrow();
    }
  });

  test("an event of 32 MiB (a long answer in one response.completed) is read without holding it: memory stays flat", () => {
    const chunk = enc.encode("x".repeat(1 << 16));
    const r = new UsageReader("sse");
    r.feed(enc.encode('event: response.completed\ndata: {"response":{"output":[{"text":"'));
    Bun.gc(true);
    const before = process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
    for (let i = 0; i < 512; i++) r.feed(chunk);
    r.feed(enc.encode('"}],"usage":{"input_tokens":1,"output_tokens":2}}}\n\n'));
    Bun.gc(true);
    const grew = process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers - before;
    expect(r.finish()).toEqual({ input: 1, output: 2 });
    expect(grew).toBeLessThan(4 << 20);
  });
});

describe("llm-budget: what a call is counted as", () => {
  const base: CallFacts = { family: "anthropic", method: "POST", path: "/v1/messages", status: 200, reported: { model: "claude-haiku-4-5", input: 10, output: 5 }, requestModel: "claude-haiku-4-5", requestBytes: 4000, requestSent: true, responseBytes: 800, complete: true };

  test("a whole report is the count, not estimated", () => {
    expect(countCall(base)).toEqual({ model: "claude-haiku-4-5", input: 10, output: 5, cacheRead: 0, cacheWrite: 0, estimated: false });
  });

  test("no usage field in a whole answer: estimated from sizes (about 4 bytes a token), and said", () => {
    const u = countCall({ ...base, reported: {} })!;
    expect(u).toMatchObject({ model: "claude-haiku-4-5", input: 1000, output: 200, estimated: true });
    expect(u.note).toContain("reported no usage");
  });

  test("a stream cut after message_start: its input as reported, its output at least what the bytes read say", () => {
    const u = countCall({ ...base, reported: { input: 10, output: 1 }, complete: false, responseBytes: 4000 })!;
    expect(u).toMatchObject({ input: 10, output: 1000, estimated: true });
    expect(u.note).toContain("cut");
  });

  test("a client that leaves before the answer still pays for the input it sent; one whose request never went pays nothing", () => {
    expect(countCall({ ...base, status: null, reported: {}, responseBytes: 0, complete: false })).toMatchObject({ input: 1000, output: 0, estimated: true });
    expect(countCall({ ...base, status: null, reported: {}, requestSent: false, complete: false })).toBeNull();
  });

  test("an error answer with no usage is free (providers bill none); a model list or token count is not a model call", () => {
    expect(countCall({ ...base, status: 429, reported: {} })).toBeNull();
    expect(countCall({ ...base, method: "GET", path: "/v1/models", reported: {} })).toBeNull();
    expect(countCall({ ...base, path: "/v1/messages/count_tokens", reported: {} })).toBeNull();
    expect(isInference("POST", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse")).toBe(true);
    expect(isInference("POST", "/backend-api/codex/responses")).toBe(true);
  });

  test("an encoded answer (compressed despite identity) counts a token a byte: compression does not shrink the count", () => {
    expect(countCall({ ...base, reported: {}, encoded: true, responseBytes: 300 })).toMatchObject({ output: 300, estimated: true });
  });

  test("each family's fields become priced tokens: cached input taken out where the provider counts it in", () => {
    expect(normalise("anthropic", { input: 10, output: 5, cacheRead: 40, cacheWrite: 3 })).toEqual({ input: 10, output: 5, cacheRead: 40, cacheWrite: 3 });
    expect(normalise("openai", { input: 70, output: 11, cacheRead: 64 })).toEqual({ input: 6, output: 11, cacheRead: 64, cacheWrite: 0 });
    expect(normalise("google", { input: 30, output: 8, thoughts: 4, cacheRead: 10, toolPrompt: 2 })).toEqual({ input: 22, output: 12, cacheRead: 10, cacheWrite: 0 });
  });
});
