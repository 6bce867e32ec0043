// Pure: a sandbox's LLM budget (`5usd/day`, `20usd`, `2mtokens/day`), the price table its spend is reckoned at, what it
// has spent in the budget's period, and the refusal a call gets at the cap, in the provider's own error shape.
import { z } from "zod";
import { SbxError } from "./errors";
import type { Tokens } from "./llm-usage";

export const BudgetSchema = z
  .object({
    amount: z.number().positive().max(1e12),
    unit: z.enum(["usd", "tokens"]),
    per: z.enum(["day", "total"]),
    /** Raised by approvals for one period (a day's key, or "total"): this much more there. */
    grant: z.object({ period: z.string().max(16), amount: z.number().positive().max(1e12) }).optional(),
  })
  .strict();
export type Budget = z.infer<typeof BudgetSchema>;

const BUDGET_RE = /^\$?([0-9]+(?:\.[0-9]+)?)([km])?\s*(usd|\$|tokens?)?\s*(?:\/\s*(day|d))?$/i;

/**
 * `5usd/day`, `$5/day`, `20usd` (for the sandbox's whole life), `2mtokens/day`, `500ktokens`; `none` (or `off`): no
 * budget (null). Throws a usage error that says the forms.
 */
export function parseBudget(text: string, what = "--llm-budget"): Budget | null {
  const t = text.trim();
  if (/^(none|off)$/i.test(t)) return null;
  const m = BUDGET_RE.exec(t);
  const unitWord = m?.[3]?.toLowerCase();
  const unit = unitWord === undefined ? (t.startsWith("$") ? "usd" : undefined) : unitWord.startsWith("token") ? "tokens" : "usd";
  const scale = m?.[2] === undefined ? 1 : m[2].toLowerCase() === "k" ? 1e3 : 1e6;
  const amount = m ? Number(m[1]) * scale : NaN;
  if (!m || unit === undefined || !(amount > 0) || amount > (unit === "usd" ? 1e6 : 1e12) || (unit === "tokens" && !Number.isInteger(amount)) || (unit === "usd" && m[2] !== undefined)) {
    throw new SbxError("usage", `${what}: '${text}' is not a budget`, {
      hint: "Say an amount and a unit, per day or for the sandbox's whole life: 5usd/day, $5/day, 20usd, 2mtokens/day, 500ktokens; none for no budget.",
    });
  }
  return { amount, unit, per: m[4] ? "day" : "total" };
}

/** `5usd/day`, `2mtokens/day`, `20usd`: what parseBudget reads back. */
export function formatBudget(b: Pick<Budget, "amount" | "unit" | "per">): string {
  const amount = b.unit === "usd" ? `${+b.amount.toFixed(6)}usd` : b.amount % 1e6 === 0 ? `${b.amount / 1e6}mtokens` : b.amount % 1e3 === 0 ? `${b.amount / 1e3}ktokens` : `${b.amount}tokens`;
  return b.per === "day" ? `${amount}/day` : amount;
}

/** A sandbox's budget as its identity holds it (absent or malformed: none). */
export function budgetOf(identity: Record<string, unknown>): Budget | null {
  const r = BudgetSchema.safeParse(identity.llmBudget);
  return r.success ? r.data : null;
}

/** The host's calendar day of a time (`2026-11-28`): a /day budget starts again at the host's midnight. */
export function dayOf(ms: number): string {
  const d = new Date(ms);
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, "0")}-${String(d.getDate()).padStart(2, "0")}`;
}

/** The period a budget counts in at a time: that day, or "total". */
export function periodOf(b: Pick<Budget, "per">, ms: number): string {
  return b.per === "day" ? dayOf(ms) : "total";
}

/** The cap in a period: the budget, plus what approvals granted for that period. */
export function capOf(b: Budget, period: string): number {
  return b.amount + (b.grant?.period === period ? b.grant.amount : 0);
}

/** Pure: the budget after an approval: one more budget's worth in the current period (it lapses with the day). */
export function withGrant(b: Budget, period: string): Budget {
  const had = b.grant?.period === period ? b.grant.amount : 0;
  // Within what the schema reads back: a budget it could not read would be no budget at all.
  return { ...b, grant: { period, amount: Math.min(had + b.amount, 1e12) } };
}

// ── prices ──────────────────────────────────────────────────────────────

/** USD per million tokens; a cache price left out is the input price. */
export const PriceSchema = z
  .object({
    input: z.number().min(0).max(10_000),
    output: z.number().min(0).max(10_000),
    cacheRead: z.number().min(0).max(10_000).optional(),
    cacheWrite: z.number().min(0).max(10_000).optional(),
  })
  .strict();
export type Price = z.infer<typeof PriceSchema>;
export const PricesSchema = z.record(z.string().min(1).max(64), PriceSchema);
export type Prices = Readonly<Record<string, Price>>;

/**
 * The providers' list prices, USD per million tokens, as published in 2025 (standard tier, short context). The config
 * file's `llmPrices` adds models and replaces these by name: a price that changed is the person's to set.
 */
export const DEFAULT_PRICES: Prices = {
  "claude-opus-4-5": { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 },
  "claude-opus-4-1": { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 },
  "claude-opus-4-0": { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 },
  "claude-opus-4": { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 },
  "claude-sonnet-4-5": { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  "claude-sonnet-4-0": { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  "claude-sonnet-4": { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  "claude-3-7-sonnet": { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  "claude-haiku-4-5": { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 },
  "claude-3-5-haiku": { input: 0.8, output: 4, cacheRead: 0.08, cacheWrite: 1 },
  "gpt-5.1": { input: 1.25, output: 10, cacheRead: 0.125 },
  "gpt-5.1-codex": { input: 1.25, output: 10, cacheRead: 0.125 },
  "gpt-5": { input: 1.25, output: 10, cacheRead: 0.125 },
  "gpt-5-codex": { input: 1.25, output: 10, cacheRead: 0.125 },
  "gpt-5-mini": { input: 0.25, output: 2, cacheRead: 0.025 },
  "gpt-5-nano": { input: 0.05, output: 0.4, cacheRead: 0.005 },
  "gpt-4.1": { input: 2, output: 8, cacheRead: 0.5 },
  "gpt-4.1-mini": { input: 0.4, output: 1.6, cacheRead: 0.1 },
  "gpt-4o": { input: 2.5, output: 10, cacheRead: 1.25 },
  "gpt-4o-mini": { input: 0.15, output: 0.6, cacheRead: 0.075 },
  o3: { input: 2, output: 8, cacheRead: 0.5 },
  "o4-mini": { input: 1.1, output: 4.4, cacheRead: 0.275 },
  "gemini-2.5-pro": { input: 1.25, output: 10, cacheRead: 0.125 },
  "gemini-2.5-flash": { input: 0.3, output: 2.5, cacheRead: 0.03 },
  "gemini-2.5-flash-lite": { input: 0.1, output: 0.4, cacheRead: 0.01 },
};

/**
 * A model's price: its name in the table, else the name without a dated or `-latest` suffix
 * (`claude-sonnet-4-5-20250929`, `gpt-4o-2024-08-06`, `claude-opus-4@20250514`). Never a shorter family name:
 * `gpt-4o-mini` is not priced as `gpt-4o`.
 */
export function priceOf(prices: Prices, model: string): Price | null {
  if (Object.hasOwn(prices, model)) return prices[model]!;
  const base = model.replace(/(?:[-@](?:\d{8}|\d{4}-\d{2}-\d{2}|latest))$/, "");
  return base !== model && Object.hasOwn(prices, base) ? prices[base]! : null;
}

/** Micro-dollars (a price per million tokens times tokens is micro-dollars). */
export function costMicro(t: Tokens, p: Price): number {
  return Math.round(t.input * p.input + t.output * p.output + t.cacheRead * (p.cacheRead ?? p.input) + t.cacheWrite * (p.cacheWrite ?? p.input));
}

/** The dearest price in a table, field by field: what usage of a model with no price is counted at against a cap. */
export function dearest(prices: Prices): Price {
  const all = Object.values(prices);
  const max = (f: (p: Price) => number) => Math.max(0, ...all.map(f));
  return { input: max((p) => p.input), output: max((p) => p.output), cacheRead: max((p) => p.cacheRead ?? p.input), cacheWrite: max((p) => p.cacheWrite ?? p.input) };
}

/** One row of the ledger: a model's tokens in a period. */
export interface UsageRow extends Tokens {
  model: string;
  calls: number;
  estimated: number;
}

/** What a sandbox spent in a period (or its whole life). */
export interface Spend {
  calls: number;
  /** Calls counted in part by estimate (sizes, not the provider's report). */
  estimatedCalls: number;
  tokens: number;
  /** At the price table's prices, for models it has. */
  usdMicro: number;
  /** Tokens of models the table has no price for (their cost is unknown; a usd cap counts them at the dearest price). */
  unpricedTokens: number;
  unpricedModels: string[];
  /** What a usd cap is held against: usdMicro, plus unpriced tokens at the dearest price. */
  boundMicro: number;
}

const total = (t: Tokens) => t.input + t.output + t.cacheRead + t.cacheWrite;

export function spendOf(rows: readonly UsageRow[], prices: Prices): Spend {
  const top = dearest(prices);
  const s: Spend = { calls: 0, estimatedCalls: 0, tokens: 0, usdMicro: 0, unpricedTokens: 0, unpricedModels: [], boundMicro: 0 };
  for (const r of rows) {
    s.calls += r.calls;
    s.estimatedCalls += r.estimated;
    s.tokens += total(r);
    const p = priceOf(prices, r.model);
    if (p) s.usdMicro += costMicro(r, p);
    else {
      s.unpricedTokens += total(r);
      if (!s.unpricedModels.includes(r.model)) s.unpricedModels.push(r.model);
      s.boundMicro += costMicro(r, top);
    }
  }
  s.boundMicro += s.usdMicro;
  return s;
}

/** How far along its cap a budget is: spent and cap in the budget's unit (usd or tokens). */
export function standing(b: Budget, spend: Spend, period: string): { spent: number; cap: number; over: boolean } {
  const spent = b.unit === "usd" ? spend.boundMicro / 1e6 : spend.tokens;
  const cap = capOf(b, period);
  return { spent, cap, over: spent >= cap };
}

/** `$1.23`, `$0.004`, `1.2M tokens`, `35k tokens`. */
export function formatAmount(unit: Budget["unit"], n: number): string {
  if (unit === "usd") return n >= 0.1 || n === 0 ? `$${n.toFixed(2)}` : `$${n.toPrecision(2)}`;
  return n >= 1e6 ? `${+(n / 1e6).toFixed(2)}M tokens` : n >= 1e3 ? `${+(n / 1e3).toFixed(1)}k tokens` : `${n} tokens`;
}

// ── the refusal ─────────────────────────────────────────────────────────

/**
 * The answer to a call at the cap, in the error shape the provider's own clients parse and show (so the agent prints
 * the message rather than a parse failure). 402, not 429: the SDKs retry a 429 (Claude Code up to ten times, with
 * backoff) and agents call it a rate limit, while a 402 is shown at once and not retried; the cap is lifted by a
 * person, not by waiting.
 */
export function budgetRefusal(family: "anthropic" | "openai" | "google", message: string): { status: 402; body: unknown } {
  if (family === "anthropic") return { status: 402, body: { type: "error", error: { type: "billing_error", message } } };
  if (family === "openai") return { status: 402, body: { error: { message, type: "insufficient_quota", param: null, code: "sbx_llm_budget" } } };
  return { status: 402, body: { error: { code: 402, message, status: "RESOURCE_EXHAUSTED" } } };
}

// ── what a person is shown ──────────────────────────────────────────────

/** The price table in force: sbx's list prices with the config file's `llmPrices` over them. */
export function pricesWith(own: Prices | undefined): Prices {
  return { ...DEFAULT_PRICES, ...own };
}

/** Spend in one span, as `sbx list --json`, `sbx limits` and the dashboard show it. */
export interface SpendSummary {
  calls: number;
  estimatedCalls: number;
  tokens: number;
  /** USD at the price table, for the models it prices. */
  usd: number;
  /** Tokens of models it has no price for: their cost is unknown (and said). */
  unpricedTokens: number;
  unpricedModels: string[];
}

export interface SpendView {
  /** The budget (`5usd/day`), or null: counted, never capped. */
  budget: string | null;
  /** The period spent counts in: the budget's (a day, or "total"); today when there is no budget. */
  period: string;
  spent: SpendSummary;
  /** Its whole life. */
  total: SpendSummary;
  /** With a budget: the cap in this period (approvals included), in its unit, and whether calls are refused. */
  cap?: { unit: Budget["unit"]; amount: number; spent: number; over: boolean };
}

const summary = (s: Spend): SpendSummary => ({ calls: s.calls, estimatedCalls: s.estimatedCalls, tokens: s.tokens, usd: s.usdMicro / 1e6, unpricedTokens: s.unpricedTokens, unpricedModels: s.unpricedModels });

/** Pure: the view of a sandbox's spend from its ledger rows (the period's and its whole life's). */
export function spendView(b: Budget | null, period: string, periodRows: readonly UsageRow[], totalRows: readonly UsageRow[], prices: Prices): SpendView {
  const inPeriod = spendOf(periodRows, prices);
  const view: SpendView = { budget: b ? formatBudget(b) : null, period, spent: summary(inPeriod), total: summary(spendOf(totalRows, prices)) };
  if (b) {
    const st = standing(b, inPeriod, period);
    view.cap = { unit: b.unit, amount: st.cap, spent: st.spent, over: st.over };
  }
  return view;
}

/** One short line: `$0.42 of $5.00 today`, `$0.42 + 31k tokens unpriced`, `1.2k tokens of 2M tokens/day`. */
export function spendLine(v: SpendView): string {
  const s = v.spent;
  const when = v.period === "total" ? "" : " today";
  const unpriced = s.unpricedTokens > 0 ? ` + ${formatAmount("tokens", s.unpricedTokens)} unpriced` : "";
  const spent = v.cap?.unit === "tokens" ? formatAmount("tokens", s.tokens) : `${formatAmount("usd", s.usd)}${unpriced}`;
  if (!v.cap) return s.calls === 0 && v.total.calls === 0 ? "-" : `${spent}${when}`;
  return `${spent} of ${formatAmount(v.cap.unit, v.cap.amount)}${when}${v.cap.over ? " (at its cap)" : ""}`;
}

/** What `sbx limits NAME` says of the LLM budget and spend, a line each. */
export function spendLines(v: SpendView): string[] {
  const sum = (s: SpendSummary) =>
    `${formatAmount("usd", s.usd)}${s.unpricedTokens > 0 ? ` + ${formatAmount("tokens", s.unpricedTokens)} unpriced` : ""} (${s.calls} call${s.calls === 1 ? "" : "s"}, ${formatAmount("tokens", s.tokens)})`;
  const when = v.period === "total" ? "in its life" : "today";
  const lines = [`LLM budget: ${v.budget ?? "none (counted, never capped)"}; ${when}: ${v.cap ? `${formatAmount(v.cap.unit, v.cap.spent)} of ${formatAmount(v.cap.unit, v.cap.amount)}${v.cap.over ? ", at its cap: its model calls are refused" : ""}; ` : ""}${sum(v.spent)}`];
  if (v.period !== "total") lines.push(`LLM spend in its life: ${sum(v.total)}`);
  const est = v.total.estimatedCalls;
  if (est > 0) lines.push(`${est} call${est === 1 ? " was" : "s were"} counted in part by estimate (the provider reported no usage, or the answer was cut): about 4 bytes a token`);
  if (v.total.unpricedTokens > 0) lines.push(`no price for ${v.total.unpricedModels.join(", ")}: their cost is unknown (a usd budget counts them at the dearest price); add them under llmPrices in config.json (sbx help budget)`);
  return lines;
}
