// llm-budget through the real LLM handler: every model call a sandbox makes (Anthropic, OpenAI Chat and Responses,
// Gemini, Code Assist; JSON and SSE) is counted into its ledger from the provider's usage fields as the answer passes; a
// sandbox cannot dodge the count (a stream asked without usage, an answer cut short, a client that leaves first); at its
// cap its next call is refused in the provider's own error shape and an approval asks to raise it; a /day budget starts
// again at midnight; and one sandbox's spend is never another's.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { createServer, request, type Server } from "node:http";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLlmHandler } from "../../../src/llm/handler";
import { llmServer } from "../../support/llm-server";
import { LlmBudgets } from "../../../src/llm/budget";
import { DEFAULT_PRICES, parseBudget, type Budget } from "../../../src/core/llm-budget";
import { PolicyService } from "../../../src/policy/service";
import { Store } from "../../../src/store/store";
import type { FeedEvent } from "../../../src/events/feed";
import { startFakeAgentLlm, type FakeAgentLlm } from "../../support/fake-agent-llm";

const dir = mkdtempSync(join(tmpdir(), "sbx-llm-budget-"));
// Gemini CLI's Google sign-in (the Code Assist route's credential), valid for a day.
const geminiOauthFile = join(dir, "oauth_creds.json");
writeFileSync(geminiOauthFile, JSON.stringify({ access_token: "ya29.host", refresh_token: "1//r", expiry_date: Date.now() + 86_400_000 }));
let store: Store;
let fake: FakeAgentLlm;
let clock = new Date(2026, 10, 28, 12, 0, 0).getTime();
const published: FeedEvent[] = [];
let budgets: LlmBudgets;
const servers: Server[] = [];
const ports: Record<string, number> = {};
const ids: Record<string, number> = {};

/** A sandbox's own LLM route, as its proxy serves it: the handler with that sandbox's budget. */
async function serve(name: string): Promise<void> {
  const sb = store.createSandbox({ name, repo: "/repo", backend: "fake" });
  ids[name] = sb.id;
  const handler = createLlmHandler({
    keys: () => ({ env: { ANTHROPIC_API_KEY: "sk-ant-host", OPENAI_API_KEY: "sk-host", GEMINI_API_KEY: "AIza-host" }, geminiOauthFile }),
    upstreams: { anthropic: fake.url, openai: fake.url, google: fake.url, codex: `${fake.url}/v1`, codeassist: fake.url },
    budget: budgets.forSandbox({ id: sb.id, name }),
  });
  const server = llmServer(handler);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  servers.push(server);
  const a = server.address();
  ports[name] = typeof a === "object" && a ? a.port : 0;
}

function setBudget(name: string, b: Budget | null): void {
  const sb = store.getSandbox(ids[name]!)!;
  const { llmBudget: _, ...rest } = sb.identity;
  store.updateIdentity(sb.id, b ? { ...rest, llmBudget: b } : rest);
}

interface Answer {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
  /** The answer ended before its framing said (a cut). */
  cut: boolean;
}

/** One call as an SDK makes it: POST with a JSON body, the whole answer read (or its cut seen). */
function call(name: string, path: string, body: unknown, opts: { leaveAfterMs?: number } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port: ports[name], method: "POST", path, headers: { "content-type": "application/json", "x-api-key": "sbx-placeholder" } }, (res) => {
      let text = "";
      res.on("data", (c: Buffer) => (text += c.toString()));
      res.on("error", () => undefined);
      res.on("close", () => resolve({ status: res.statusCode ?? 0, body: text, headers: res.headers, cut: !res.complete }));
    });
    req.on("error", (e) => (opts.leaveAfterMs === undefined ? reject(e) : resolve({ status: 0, body: "", headers: {}, cut: true })));
    req.end(JSON.stringify(body));
    if (opts.leaveAfterMs !== undefined) setTimeout(() => req.destroy(), opts.leaveAfterMs);
  });
}

/** The sandbox's ledger today, by model. */
function ledger(name: string) {
  return budgets.ledger.rows(ids[name]!, "2026-11-28");
}

async function until<T>(f: () => T, ok: (v: T) => boolean, ms = 3000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = f();
    if (ok(v) || Date.now() > end) return v;
    await Bun.sleep(10);
  }
}

beforeAll(async () => {
  store = new Store(join(dir, "state.db"));
  fake = await startFakeAgentLlm();
  budgets = new LlmBudgets({ store, prices: () => DEFAULT_PRICES, publish: (e) => published.push(e), now: () => clock });
  for (const n of ["a", "b", "quiet"]) await serve(n);
});
afterAll(async () => {
  for (const s of servers) await new Promise<void>((r) => s.close(() => r()));
  await fake.stop();
  store.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  fake.tokens = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0 };
  fake.omitUsage = false;
  fake.cutAfter = null;
  fake.delayMs = 0;
  clock = new Date(2026, 10, 28, 12, 0, 0).getTime();
  store.db.run("DELETE FROM llm_usage");
  store.db.run("DELETE FROM approvals");
  for (const n of Object.keys(ids)) setBudget(n, null);
  published.length = 0;
});

const ANTHROPIC = "/llm/anthropic/v1/messages";
const msg = (model: string, stream: boolean) => ({ model, stream, max_tokens: 100, messages: [{ role: "user", content: "hi" }] });

describe("llm-budget: every provider's calls are counted from their usage fields, JSON and SSE", () => {
  const CALLS: Array<[string, string, unknown, string]> = [
    ["anthropic json", ANTHROPIC, msg("claude-sonnet-4-5", false), "claude-sonnet-4-5"],
    ["anthropic sse", ANTHROPIC, msg("claude-sonnet-4-5", true), "claude-sonnet-4-5"],
    ["openai chat json", "/llm/openai/v1/chat/completions", { model: "gpt-4o", messages: [] }, "gpt-4o"],
    ["openai chat sse (include_usage)", "/llm/openai/v1/chat/completions", { model: "gpt-4o", stream: true, stream_options: { include_usage: true }, messages: [] }, "gpt-4o"],
    ["openai responses json", "/llm/openai/v1/responses", { model: "gpt-5", input: "hi" }, "gpt-5"],
    ["codex responses sse", "/llm/codex/responses", { model: "gpt-5-codex", stream: true, input: "hi" }, "gpt-5-codex"],
    ["gemini json", "/llm/google/v1beta/models/gemini-2.5-pro:generateContent", { contents: [] }, "gemini-2.5-pro"],
    ["gemini sse", "/llm/google/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", { contents: [] }, "gemini-2.5-flash"],
    ["gemini stream as a JSON array", "/llm/google/v1beta/models/gemini-2.5-flash:streamGenerateContent", { contents: [] }, "gemini-2.5-flash"],
    ["code assist sse", "/llm/codeassist/v1internal:streamGenerateContent?alt=sse", { model: "gemini-2.5-pro", project: "p", request: {} }, "gemini-2.5-pro"],
  ];
  for (const [what, path, body, model] of CALLS) {
    test(`${what}: the provider's counts, fresh input, output and cache apart`, async () => {
      fake.tokens = { input: 1200, output: 340, cacheRead: 5000, cacheWrite: path.includes("anthropic") ? 70 : 0 };
      const r = await call("a", path, body);
      expect(r.status).toBe(200);
      const rows = await until(() => ledger("a"), (x) => x.length > 0);
      expect(rows).toEqual([{ model, calls: 1, estimated: 0, input: 1200, output: 340, cacheRead: 5000, cacheWrite: path.includes("anthropic") ? 70 : 0 }]);
      // The upstream was asked for an answer it can be read in (never compressed).
      expect(fake.requests.at(-1)!.headers["accept-encoding"]).toBe("identity");
    });
  }
});

describe("llm-budget: a sandbox cannot dodge the count", () => {
  test("a stream cut mid-way is counted as what was read (its input as reported, output from the bytes), and the next call is served", async () => {
    fake.tokens = { input: 800, output: 500, cacheRead: 0, cacheWrite: 0 };
    fake.cutAfter = 2; // message_start and content_block_start, then the socket dies
    const r = await call("a", ANTHROPIC, msg("claude-haiku-4-5", true));
    expect(r.cut).toBe(true);
    const rows = await until(() => ledger("a"), (x) => x.length > 0);
    expect(rows).toMatchObject([{ model: "claude-haiku-4-5", calls: 1, estimated: 1, input: 800 }]);
    expect(rows[0]!.output).toBeGreaterThanOrEqual(1);
    fake.cutAfter = null;
    expect((await call("a", ANTHROPIC, msg("claude-haiku-4-5", false))).status).toBe(200);
  });

  test("a JSON answer cut mid-way: counted by estimate, never as nothing", async () => {
    fake.cutAfter = 0;
    await call("a", "/llm/openai/v1/chat/completions", { model: "gpt-4o", messages: [{ role: "user", content: "x".repeat(4000) }] });
    const rows = await until(() => ledger("a"), (x) => x.length > 0);
    expect(rows).toMatchObject([{ model: "gpt-4o", calls: 1, estimated: 1 }]);
    expect(rows[0]!.input).toBeGreaterThanOrEqual(1000);
  });

  test("an answer with no usage field is counted by estimate, and the estimate is said where the call is recorded", async () => {
    fake.omitUsage = true;
    const events: unknown[] = [];
    const handler = createLlmHandler({ keys: () => ({ env: { ANTHROPIC_API_KEY: "k" } }), upstreams: { anthropic: fake.url }, budget: budgets.forSandbox({ id: ids.a!, name: "a" }), onEvent: (e) => events.push(e.usage) });
    const s = llmServer(handler);
    await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
    const port = (s.address() as { port: number }).port;
    const res = await fetch(`http://127.0.0.1:${port}${ANTHROPIC}`, { method: "POST", body: JSON.stringify(msg("claude-haiku-4-5", false)) });
    await res.text();
    await new Promise<void>((r) => s.close(() => r()));
    const rows = await until(() => ledger("a"), (x) => x.length > 0);
    expect(rows).toMatchObject([{ model: "claude-haiku-4-5", calls: 1, estimated: 1 }]);
    expect(rows[0]!.input + rows[0]!.output).toBeGreaterThan(0);
    expect(events).toMatchObject([{ estimated: true, note: expect.stringContaining("reported no usage") }]);
  });

  test("a stream asked without usage (stream_options off) is charged at least what the provider would have reported", async () => {
    fake.tokens = { input: 20, output: 40, cacheRead: 0, cacheWrite: 0 };
    const body = { model: "gpt-4o", stream: true, messages: [{ role: "user", content: "hello there" }] };
    await call("a", "/llm/openai/v1/chat/completions", { ...body, stream_options: { include_usage: false } });
    const dodged = (await until(() => ledger("a"), (x) => x.length > 0))[0]!;
    store.db.run("DELETE FROM llm_usage");
    await call("a", "/llm/openai/v1/chat/completions", { ...body, stream_options: { include_usage: true } });
    const honest = (await until(() => ledger("a"), (x) => x.length > 0))[0]!;
    expect(honest).toMatchObject({ input: 20, output: 40, estimated: 0 });
    expect(dodged.estimated).toBe(1);
    expect(dodged.input + dodged.output).toBeGreaterThanOrEqual(honest.input + honest.output);
  });

  test("a client that sends its request and leaves before the answer still pays for its input", async () => {
    fake.delayMs = 300;
    const big = { ...msg("claude-haiku-4-5", true), messages: [{ role: "user", content: "y".repeat(40_000) }] };
    await call("a", ANTHROPIC, big, { leaveAfterMs: 80 });
    const rows = await until(() => ledger("a"), (x) => x.length > 0);
    expect(rows).toMatchObject([{ model: "claude-haiku-4-5", calls: 1, estimated: 1 }]);
    expect(rows[0]!.input).toBeGreaterThanOrEqual(10_000);
    await Bun.sleep(300); // the fake's held answer goes nowhere
  });
});

describe("llm-budget: the cap refuses the next call, in the provider's shape, with an approval to raise it", () => {
  test("past a tokens budget the next Anthropic call is refused (402, Anthropic's error JSON), nothing goes upstream, an approval is filed once", async () => {
    setBudget("a", parseBudget("1ktokens/day"));
    fake.tokens = { input: 400, output: 200, cacheRead: 0, cacheWrite: 0 };
    expect((await call("a", ANTHROPIC, msg("claude-haiku-4-5", false))).status).toBe(200); // 600
    expect((await call("a", ANTHROPIC, msg("claude-haiku-4-5", false))).status).toBe(200); // 1200: went over
    const sent = fake.requests.length;
    const r = await call("a", ANTHROPIC, msg("claude-haiku-4-5", true));
    expect(r.status).toBe(402);
    expect(r.headers["x-sbx-error"]).toBe("llm_budget");
    const err = JSON.parse(r.body) as { type: string; error: { type: string; message: string } };
    expect(err).toMatchObject({ type: "error", error: { type: "billing_error" } });
    expect(err.error.message).toContain("sandbox 'a' has spent its LLM budget: 1.2k tokens of 1k tokens today");
    expect(err.error.message).toMatch(/sbx approvals allow \d+/);
    await call("a", ANTHROPIC, msg("claude-haiku-4-5", true));
    expect(fake.requests.length).toBe(sent);
    const pending = store.listApprovals({ state: "pending", sandboxId: ids.a! });
    expect(pending).toMatchObject([{ kind: "budget", host: "llm-budget 1ktokens/day", port: 0, count: 2 }]);
    expect(published.filter((e) => e.kind === "llm")).toMatchObject([{ kind: "llm", action: "budget-reached", sandbox: { name: "a" }, approvalId: pending[0]!.id, count: 1 }]);
  });

  test("OpenAI's and Gemini's routes get their own providers' error shapes", async () => {
    setBudget("a", parseBudget("1tokens/day"));
    await call("a", "/llm/openai/v1/chat/completions", { model: "gpt-4o", messages: [] });
    const o = await call("a", "/llm/openai/v1/chat/completions", { model: "gpt-4o", messages: [] });
    expect(o.status).toBe(402);
    expect(JSON.parse(o.body)).toMatchObject({ error: { type: "insufficient_quota", code: "sbx_llm_budget", message: expect.stringContaining("LLM budget") } });
    const g = await call("a", "/llm/google/v1beta/models/gemini-2.5-pro:generateContent", { contents: [] });
    expect(g.status).toBe(402);
    expect(JSON.parse(g.body)).toMatchObject({ error: { code: 402, status: "RESOURCE_EXHAUSTED", message: expect.stringContaining("LLM budget") } });
  });

  test("allowing the approval (as every surface does, through the policy service) gives one more budget's worth today; it lapses at midnight", async () => {
    setBudget("a", parseBudget("0.05usd/day"));
    fake.tokens = { input: 10_000, output: 0, cacheRead: 0, cacheWrite: 0 }; // claude-sonnet-4-5 at $3/M: $0.03 a call
    const go = async () => (await call("a", ANTHROPIC, msg("claude-sonnet-4-5", false))).status;
    expect([await go(), await go(), await go()]).toEqual([200, 200, 402]); // $0.06 spent of $0.05
    const [a] = store.listApprovals({ state: "pending", sandboxId: ids.a! });
    const policy = new PolicyService({ store, now: () => clock });
    expect(() => policy.decide(a!.id, "allow-global", "test")).toThrow(/one sandbox's LLM budget/);
    expect(policy.decide(a!.id, "allow-sandbox", "test")).toMatchObject({ action: "allow", pattern: "llm-budget +0.05usd today", added: true });
    expect([await go(), await go(), await go()]).toEqual([200, 200, 402]); // $0.12 of $0.10
    clock = new Date(2026, 10, 29, 9, 0, 0).getTime();
    expect([await go(), await go(), await go()]).toEqual([200, 200, 402]); // the grant was yesterday's: $0.05 again
  });

  test("a day boundary resets a /day budget: refused at 23:59, served at midnight", async () => {
    setBudget("a", parseBudget("1tokens/day"));
    clock = new Date(2026, 10, 28, 23, 59, 0).getTime();
    await call("a", ANTHROPIC, msg("claude-haiku-4-5", false));
    expect((await call("a", ANTHROPIC, msg("claude-haiku-4-5", false))).status).toBe(402);
    clock = new Date(2026, 10, 29, 0, 0, 0).getTime();
    expect((await call("a", ANTHROPIC, msg("claude-haiku-4-5", false))).status).toBe(200);
    // A whole-life budget does not reset.
    setBudget("a", parseBudget("1tokens"));
    clock = new Date(2026, 10, 30, 0, 0, 0).getTime();
    expect((await call("a", ANTHROPIC, msg("claude-haiku-4-5", false))).status).toBe(402);
  });

  test("another sandbox's budget is not consumed, nor its calls refused, by one sandbox's spend", async () => {
    setBudget("a", parseBudget("1ktokens/day"));
    setBudget("b", parseBudget("1ktokens/day"));
    fake.tokens = { input: 900, output: 900, cacheRead: 0, cacheWrite: 0 };
    await call("b", ANTHROPIC, msg("claude-haiku-4-5", false));
    expect((await call("b", ANTHROPIC, msg("claude-haiku-4-5", false))).status).toBe(402);
    expect(ledger("a")).toEqual([]);
    expect((await call("a", ANTHROPIC, msg("claude-haiku-4-5", false))).status).toBe(200);
    expect(store.listApprovals({ state: "pending" }).map((x) => x.sandboxId)).toEqual([ids.b!]);
  });

  test("a usd budget holds with a model the price table lacks: its tokens count at the dearest price, and the refusal says to price it", async () => {
    setBudget("a", parseBudget("1usd/day"));
    fake.tokens = { input: 10_000, output: 10_000, cacheRead: 0, cacheWrite: 0 }; // at the dearest (15/75): $0.90
    await call("a", ANTHROPIC, msg("claude-future-9", false));
    expect((await call("a", ANTHROPIC, msg("claude-future-9", false))).status).toBe(200);
    const r = await call("a", ANTHROPIC, msg("claude-future-9", false));
    expect(r.status).toBe(402);
    expect(r.body).toContain("claude-future-9 have no price in sbx's table");
    const v = budgets.view(store.getSandbox(ids.a!)!);
    expect(v.spent).toMatchObject({ usd: 0, unpricedTokens: 40_000, unpricedModels: ["claude-future-9"] });
  });
});
