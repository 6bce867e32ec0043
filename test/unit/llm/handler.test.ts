// LLM routing and header rewriting as pure functions: where a path goes, what headers leave.
import { describe, expect, test } from "bun:test";
import { PROVIDERS, upstreamFor, upstreamHeaders } from "../../../src/llm/handler";

describe("upstreamFor", () => {
  const cases: Array<[string, string | null]> = [
    ["/llm/anthropic/v1/messages", "https://api.anthropic.com/v1/messages"],
    ["/llm/openai/v1/chat/completions?x=1", "https://api.openai.com/v1/chat/completions?x=1"],
    ["/llm/google/v1beta/models/g:streamGenerateContent?alt=sse&key=placeholder", "https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent?alt=sse"],
    ["/llm/evil/x", null],
    ["/llm/anthropic/../x", "malformed"],
    ["/llm/anthropic/a/%2F/b", "malformed"],
    ["/llm/anthropic/a/%zz", "malformed"],
    ["/llm/anthropic/%", "malformed"],
    ["/llm/anthropic/%E0%A4%A", "malformed"],
    ["/llm/anthropic/%2e%2e/x", "malformed"],
    ["/llm/anthropic/v1/messages?beta=%", "malformed"],
    ["/llm/toString/x", null],
    ["/v1/messages", null],
    ["http://api.anthropic.com/llm/anthropic/x", null],
  ];
  for (const [path, want] of cases) {
    test(path, () => {
      const r = upstreamFor(path, PROVIDERS);
      expect(r === "malformed" ? r : (r?.url.toString() ?? null)).toBe(want);
    });
  }
});

describe("upstreamHeaders", () => {
  test("credentials and hop-by-hop headers are dropped; the host's credential and Host are set", () => {
    const h = upstreamHeaders(
      { authorization: "Bearer placeholder", "x-api-key": "placeholder", connection: "keep-alive", host: "127.0.0.1:9", "content-type": "application/json", "anthropic-version": "2023-06-01" },
      { "x-api-key": "real" },
      "api.anthropic.com",
    );
    expect(h).toEqual({ "content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": "real", host: "api.anthropic.com" });
  });
});
