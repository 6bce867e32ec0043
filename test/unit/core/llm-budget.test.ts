// llm-budget: a budget as the person writes it, the price table spend is reckoned at (a model it lacks is unknown, said,
// and held against a usd cap at the dearest price, never free), the day a /day budget counts in, and the refusal in
// each provider's own error shape.
import { describe, expect, test } from "bun:test";
import {
  budgetRefusal,
  BudgetSchema,
  capOf,
  dayOf,
  DEFAULT_PRICES,
  formatBudget,
  parseBudget,
  periodOf,
  priceOf,
  pricesWith,
  spendLine,
  spendOf,
  spendView,
  standing,
  withGrant,
  type UsageRow,
} from "../../../src/core/llm-budget";
import { parseConfig } from "../../../src/core/config";

const row = (model: string, t: Partial<UsageRow>): UsageRow => ({ model, calls: 1, estimated: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, ...t });

describe("llm-budget: a budget as written", () => {
  test("usd per day or in total, tokens with k/m, `none`; it reads back as written", () => {
    expect(parseBudget("5usd/day")).toEqual({ amount: 5, unit: "usd", per: "day" });
    expect(parseBudget("$2.50/day")).toEqual({ amount: 2.5, unit: "usd", per: "day" });
    expect(parseBudget("20usd")).toEqual({ amount: 20, unit: "usd", per: "total" });
    expect(parseBudget("2mtokens/day")).toEqual({ amount: 2_000_000, unit: "tokens", per: "day" });
    expect(parseBudget("500ktokens")).toEqual({ amount: 500_000, unit: "tokens", per: "total" });
    expect(parseBudget("none")).toBeNull();
    for (const t of ["5usd/day", "20usd", "2mtokens/day", "500ktokens", "1234tokens/day", "0.5usd/day"]) expect(formatBudget(parseBudget(t)!)).toBe(t);
  });

  test("what is not a budget is refused with the forms, never read as none or as no cap", () => {
    for (const t of ["", "5", "5eur/day", "-5usd", "0usd/day", "5usd/week", "5kusd", "1.5tokens", "NaNusd", "1e9usd", "5usd/day; rm -rf"]) {
      expect(() => parseBudget(t)).toThrow(/is not a budget/);
    }
  });

  test("the config file's llmBudget is checked when the file is read, its llmPrices too", () => {
    expect(parseConfig('{"llmBudget":"5usd/day","llmPrices":{"my-model":{"input":1,"output":2}}}', "c.json")).toMatchObject({ llmBudget: "5usd/day" });
    expect(() => parseConfig('{"llmBudget":"lots"}', "c.json")).toThrow(/llmBudget: 'lots' is not a budget/);
    expect(() => parseConfig('{"llmPrices":{"m":{"input":-1,"output":2}}}', "c.json")).toThrow(/llmPrices/);
  });
});

describe("llm-budget: prices", () => {
  test("a dated or -latest name is priced as its model; a family name never prices another model of it", () => {
    expect(priceOf(DEFAULT_PRICES, "claude-sonnet-4-5-20250929")).toEqual(DEFAULT_PRICES["claude-sonnet-4-5"]!);
    expect(priceOf(DEFAULT_PRICES, "gpt-4o-2024-08-06")).toEqual(DEFAULT_PRICES["gpt-4o"]!);
    expect(priceOf(DEFAULT_PRICES, "claude-opus-4@20250514")).toEqual(DEFAULT_PRICES["claude-opus-4"]!);
    expect(priceOf({ "gpt-4o": { input: 2.5, output: 10 } }, "gpt-4o-mini")).toBeNull();
    expect(priceOf(DEFAULT_PRICES, "claude-sonnet-9")).toBeNull();
    expect(priceOf(DEFAULT_PRICES, "constructor")).toBeNull();
  });

  test("the config's prices add models and replace sbx's by name", () => {
    const p = pricesWith({ "claude-sonnet-4-5": { input: 1, output: 1 }, "my-local": { input: 0, output: 0 } });
    expect(p["claude-sonnet-4-5"]).toEqual({ input: 1, output: 1 });
    expect(p["my-local"]).toEqual({ input: 0, output: 0 });
    expect(p["gpt-5"]).toEqual(DEFAULT_PRICES["gpt-5"]!);
  });

  test("spend is tokens times the price per million, cache reads and writes at theirs", () => {
    // claude-sonnet-4-5: 3 in, 15 out, 0.30 cache read, 3.75 cache write (USD per million).
    const s = spendOf([row("claude-sonnet-4-5", { input: 1_000_000, output: 100_000, cacheRead: 2_000_000, cacheWrite: 400_000 })], DEFAULT_PRICES);
    expect(s.usdMicro).toBe(3_000_000 + 1_500_000 + 600_000 + 1_500_000);
    expect(s.tokens).toBe(3_500_000);
    expect(s.unpricedTokens).toBe(0);
  });

  test("a model with no price: its cost is unknown (its tokens and name said), and a usd cap counts it at the dearest price", () => {
    const s = spendOf([row("claude-sonnet-9", { input: 100_000, output: 10_000 }), row("gpt-5", { input: 1_000_000 })], DEFAULT_PRICES);
    expect(s.usdMicro).toBe(1_250_000);
    expect(s.unpricedTokens).toBe(110_000);
    expect(s.unpricedModels).toEqual(["claude-sonnet-9"]);
    // Dearest input 15, output 75 (per million): 1.5 + 0.75 more against the cap.
    expect(s.boundMicro).toBe(1_250_000 + 1_500_000 + 750_000);
    const v = spendView(parseBudget("3usd/day"), "2026-11-28", [row("claude-sonnet-9", { input: 100_000, output: 10_000 }), row("gpt-5", { input: 1_000_000 })], [], DEFAULT_PRICES);
    expect(v.cap).toEqual({ unit: "usd", amount: 3, spent: 3.5, over: true });
    expect(spendLine(v)).toBe("$1.25 + 110k tokens unpriced of $3.00 today (at its cap)");
  });
});

describe("llm-budget: periods and caps", () => {
  test("a /day budget counts in the host's calendar day: a second before midnight and at midnight are two days", () => {
    const beforeMidnight = new Date(2026, 10, 28, 23, 59, 59).getTime();
    const midnight = new Date(2026, 10, 29, 0, 0, 0).getTime();
    expect(dayOf(beforeMidnight)).toBe("2026-11-28");
    expect(dayOf(midnight)).toBe("2026-11-29");
    expect(periodOf({ per: "day" }, midnight)).toBe("2026-11-29");
    expect(periodOf({ per: "total" }, midnight)).toBe("total");
  });

  test("an approval grants one more budget's worth for the period it is in, and lapses with it", () => {
    const b = parseBudget("5usd/day")!;
    const g = withGrant(withGrant(b, "2026-11-28"), "2026-11-28");
    expect(capOf(g, "2026-11-28")).toBe(15);
    expect(capOf(g, "2026-11-29")).toBe(5);
    expect(capOf(withGrant(g, "2026-11-29"), "2026-11-29")).toBe(10);
    // However often it is granted, the budget stays one its schema reads back (one it could not read is none at all).
    let big = parseBudget("1000000mtokens/day")!;
    for (let i = 0; i < 5; i++) big = withGrant(big, "d");
    expect(BudgetSchema.safeParse(big).success).toBe(true);
  });

  test("at the cap is over (the call that would start past it is refused); a tokens budget counts every token", () => {
    const b = parseBudget("1ktokens/day")!;
    expect(standing(b, spendOf([row("x", { input: 999 })], DEFAULT_PRICES), "d").over).toBe(false);
    expect(standing(b, spendOf([row("x", { input: 600, cacheRead: 400 })], DEFAULT_PRICES), "d").over).toBe(true);
  });
});

describe("llm-budget: the refusal is the provider's own error shape, not retried", () => {
  test("Anthropic, OpenAI and Gemini each get a body their SDKs parse, with the message, status 402", () => {
    expect(budgetRefusal("anthropic", "m")).toEqual({ status: 402, body: { type: "error", error: { type: "billing_error", message: "m" } } });
    expect(budgetRefusal("openai", "m")).toEqual({ status: 402, body: { error: { message: "m", type: "insufficient_quota", param: null, code: "sbx_llm_budget" } } });
    expect(budgetRefusal("google", "m")).toEqual({ status: 402, body: { error: { code: 402, message: "m", status: "RESOURCE_EXHAUSTED" } } });
  });
});
