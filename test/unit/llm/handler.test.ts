// LLM routing and header rewriting as pure functions: where a path goes, what headers leave.
import { describe, expect, test } from "bun:test";
import { answerHeaders, CHATGPT_UPSTREAM, gatewayUpstreams, PROVIDERS, secretsOf, upstreamFor, upstreamHeaders } from "../../../src/llm/handler";
import { rng } from "../../support/rng";

describe("upstreamFor", () => {
  const cases: Array<[string, string | null]> = [
    ["/llm/anthropic/v1/messages", "https://api.anthropic.com/v1/messages"],
    ["/llm/openai/v1/chat/completions?x=1", "https://api.openai.com/v1/chat/completions?x=1"],
    ["/llm/google/v1beta/models/g:streamGenerateContent?alt=sse&key=placeholder", "https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent?alt=sse"],
    ["/llm/codex/responses", "https://api.openai.com/v1/responses"],
    ["/llm/chatgpt/responses", null],
    ["/llm/evil/x", null],
    ["/llm/anthropic/../x", "malformed"],
    ["/llm/anthropic/a/%2F/b", "malformed"],
    ["/llm/anthropic/a/%zz", "malformed"],
    ["/llm/anthropic/%", "malformed"],
    ["/llm/anthropic/%E0%A4%A", "malformed"],
    ["/llm/anthropic/%2e%2e/x", "malformed"],
    ["/llm/anthropic/v1/messages?beta=%", "malformed"],
    ["/llm/codex/..\\..\\x", "malformed"],
    ["/llm/codex/a\\..\\..\\..\\x", "malformed"],
    ["/llm/anthropic/v1/m%65ssages", "https://api.anthropic.com/v1/messages"],
    ["/llm/anthropic/v1;x=1/messages", "malformed"],
    ["/llm/anthropic//v1/messages", "malformed"],
    ["/llm/toString/x", null],
    ["/v1/messages", null],
    ["http://api.anthropic.com/llm/anthropic/x", null],
  ];
  for (const [path, want] of cases) {
    test(path, () => {
      const r = upstreamFor(path, PROVIDERS);
      expect(r !== null && "malformed" in r ? "malformed" : (r?.url.toString() ?? null)).toBe(want);
    });
  }
});

describe("credential-scope: a route's path never leaves its base, however it is spelled (generated, seed 35)", () => {
  test("every target under /llm/codex/ is refused or lands under ChatGPT's /backend-api/codex/, read one way", () => {
    const pieces = ["a", "responses", "/", "\\", "..", ".", "%2e", "%2e%2e", "%2f", "%5c", "%252e", ";", "//", "%00", "%c0%af", "backend-api", "me"];
    const r = rng(35);
    const escaped: string[] = [];
    for (let i = 0; i < 5000; i++) {
      let t = "/llm/codex/";
      for (let j = 0, n = 1 + Math.floor(r() * 8); j < n; j++) t += pieces[Math.floor(r() * pieces.length)]!;
      const u = upstreamFor(t, { ...PROVIDERS, codex: CHATGPT_UPSTREAM });
      // (A string was the older "malformed".)
      if (u === null || typeof u === "string" || "malformed" in u) continue;
      const p = u.url.pathname;
      const read = new URL(`https://chatgpt.com${p}`).pathname;
      if (!p.startsWith("/backend-api/codex/") || read !== p || /(^|\/)(\.|%2e)+(\/|$)/i.test(p)) escaped.push(`${t} -> ${p}`);
    }
    expect(escaped).toEqual([]);
  });
});

describe("upstreamHeaders", () => {
  test("credentials and hop-by-hop headers are dropped; the host's credential and Host are set; the answer is asked for unencoded", () => {
    const h = upstreamHeaders(
      { authorization: "Bearer placeholder", "x-api-key": "placeholder", connection: "keep-alive", host: "127.0.0.1:9", "content-type": "application/json", "anthropic-version": "2023-06-01", "accept-encoding": "gzip, br" },
      { "x-api-key": "real" },
      "api.anthropic.com",
    );
    // identity: the LLM budget reads the answer's usage as it passes (llm/meter.ts).
    expect(h).toEqual({ "content-type": "application/json", "anthropic-version": "2023-06-01", "accept-encoding": "identity", "x-api-key": "real", host: "api.anthropic.com" });
  });
});

describe("llm-no-secret-inside: answerHeaders", () => {
  const KEY = "sk-ant-api03-REAL-0123456789";
  test("the credential's secret part is what is looked for in answers (a bearer token without its scheme; not the beta flag)", () => {
    expect(secretsOf({ authorization: `Bearer ${KEY}`, "anthropic-beta": "oauth-2025-04-20" })).toEqual([KEY]);
    expect(secretsOf({ "X-Api-Key": KEY })).toEqual([KEY]);
  });
  test("names in any case, Connection given twice or as a list, a secret in one value of many: all kept out; the rest as it was", () => {
    const h = answerHeaders(
      [
        ["Connection", ["close, X-One", "x-two"]],
        ["X-One", "1"],
        ["x-TWO", "2"],
        ["Set-Cookie", ["a=1", "b=2"]],
        ["x-echo", ["fine", `k=${KEY}`]],
        ["Content-Type", "text/event-stream"],
        ["request-id", "req_1"],
      ],
      [KEY],
    );
    expect(h).toEqual({ "content-type": "text/event-stream", "request-id": "req_1" });
  });
});

describe("gatewayUpstreams: the host's own LLM gateway is honoured", () => {
  test("ANTHROPIC_BASE_URL, OPENAI_BASE_URL (its /v1 kept for Codex's route only) and GOOGLE_GEMINI_BASE_URL", () => {
    expect(gatewayUpstreams({ ANTHROPIC_BASE_URL: "https://llm.corp.example/anthropic/", OPENAI_BASE_URL: "https://llm.corp.example/openai/v1", GOOGLE_GEMINI_BASE_URL: "http://127.0.0.1:8080" })).toEqual({
      anthropic: "https://llm.corp.example/anthropic",
      openai: "https://llm.corp.example/openai",
      codex: "https://llm.corp.example/openai/v1",
      google: "http://127.0.0.1:8080",
    });
    const up = { ...PROVIDERS, ...gatewayUpstreams({ OPENAI_BASE_URL: "https://gw.example/v1" }) };
    const r = upstreamFor("/llm/openai/v1/chat/completions", up);
    expect(r !== null && "url" in r && r.url.toString()).toBe("https://gw.example/v1/chat/completions");
    const c = upstreamFor("/llm/codex/responses", up);
    expect(c !== null && "url" in c && c.url.toString()).toBe("https://gw.example/v1/responses");
  });

  test("nothing set, or a value that is not an http(s) URL: the providers themselves", () => {
    expect(gatewayUpstreams({})).toEqual({});
    expect(gatewayUpstreams({ ANTHROPIC_BASE_URL: "file:///etc/passwd", OPENAI_BASE_URL: "", GOOGLE_GEMINI_BASE_URL: "not a url" })).toEqual({});
  });
});
