// Each sandbox's LLM budget, kept by the daemon: every call the LLM handler forwards is counted into the ledger, and a
// sandbox at its cap has its next call refused (in the provider's error shape) and a pending approval filed to raise it.
import { budgetOf, budgetRefusal, dayOf, formatAmount, formatBudget, periodOf, spendOf, spendView, standing, type Budget, type Prices, type Spend, type SpendView } from "../core/llm-budget";
import type { CallUsage, UsageFamily } from "../core/llm-usage";
import type { Sandbox } from "../core/schemas";
import type { FeedEvent } from "../events/feed";
import { LlmLedger } from "../store/llm-usage";
import type { Store } from "../store/store";

export interface LlmBudgetsOptions {
  store: Store;
  /** The price table in force, read at each use (the config file's, over sbx's list prices). */
  prices: () => Prices;
  /** The live feed: a new budget approval shows where other approvals do. */
  publish?: (e: FeedEvent) => void;
  now?: () => number;
  warn?: (message: string, fields?: Record<string, unknown>) => void;
}

/** What the LLM handler asks of one sandbox's budget. */
export interface SandboxBudget {
  /** null: the call may go; else the answer to give instead (nothing is sent upstream). */
  admit(family: UsageFamily): { status: number; body: unknown; message: string } | null;
  /** Counts a call that was made. */
  record(u: CallUsage): void;
}

/** The approval's subject, as `sbx approvals` shows it. */
export function budgetSubject(b: Budget): string {
  return `llm-budget ${formatBudget(b)}`;
}

export class LlmBudgets {
  readonly ledger: LlmLedger;
  private readonly now: () => number;

  constructor(private readonly o: LlmBudgetsOptions) {
    this.ledger = new LlmLedger(o.store);
    this.now = o.now ?? Date.now;
  }

  forSandbox(sandbox: { id: number; name: string }): SandboxBudget {
    return {
      admit: (family) => this.admit(sandbox, family),
      record: (u) => {
        try {
          this.ledger.add(sandbox.id, dayOf(this.now()), u);
        } catch (e) {
          // Called from a stream's end: a busy or closed database must not take the daemon down.
          this.o.warn?.("LLM usage not counted", { sandbox: sandbox.name, err: (e as Error).message });
        }
      },
    };
  }

  /** A sandbox's spend: in its budget's period (today without one) and its whole life. */
  view(row: Pick<Sandbox, "id" | "identity">): SpendView {
    const b = budgetOf(row.identity);
    const period = b ? periodOf(b, this.now()) : dayOf(this.now());
    return spendView(b, period, this.ledger.rows(row.id, period), this.ledger.rows(row.id, "total"), this.o.prices());
  }

  private admit(sandbox: { id: number; name: string }, family: UsageFamily): { status: number; body: unknown; message: string } | null {
    const row = this.o.store.getSandbox(sandbox.id);
    const b = row ? budgetOf(row.identity) : null;
    if (!b) return null;
    const period = periodOf(b, this.now());
    const spend = spendOf(this.ledger.rows(sandbox.id, period), this.o.prices());
    const st = standing(b, spend, period);
    if (!st.over) return null;
    const when = b.per === "day" ? "today" : "in its life";
    const spent = `${formatAmount(b.unit, st.spent)} of ${formatAmount(b.unit, st.cap)} ${when} (budget ${formatBudget(b)})`;
    const a = this.o.store.recordPending(sandbox.id, budgetSubject(b), 0, `LLM budget spent: ${spent}`, "budget");
    if (a?.count === 1) {
      this.o.store.audit({ sandboxId: sandbox.id, kind: "llm", action: "budget.reached", detail: { budget: formatBudget(b), period, spent: st.spent, cap: st.cap, approvalId: a.id } });
      try {
        this.o.publish?.({ kind: "llm", at: this.now(), sandbox: { id: sandbox.id, name: sandbox.name }, action: "budget-reached", detail: spent, approvalId: a.id, count: a.count });
      } catch {
        // the feed is best effort; the approval is filed
      }
    }
    const message = refusalText(sandbox.name, b, spent, spend, a?.id ?? null);
    return { ...budgetRefusal(family, message), message };
  }
}

/** What the agent shows: what was spent, when it starts again, and what a person runs to raise it. */
function refusalText(name: string, b: Budget, spent: string, spend: Spend, approvalId: number | null): string {
  const lines = [`sbx: sandbox '${name}' has spent its LLM budget: ${spent}. Its model calls are refused${b.per === "day" ? " until midnight (the host's clock)" : ""} unless a person raises it.`];
  if (b.unit === "usd" && spend.unpricedTokens > 0) {
    lines.push(`${formatAmount("tokens", spend.unpricedTokens)} of ${spend.unpricedModels.join(", ")} have no price in sbx's table and count at its dearest prices: add theirs under llmPrices in sbx's config.json.`);
  }
  const grant = approvalId === null ? "" : `\`sbx approvals allow ${approvalId}\` (one more ${formatBudget({ ...b, per: "total" })}${b.per === "day" ? " today" : ""}), or `;
  lines.push(`On the host: ${grant}\`sbx limits ${name} --llm-budget AMOUNT\`.`);
  return lines.join(" ");
}
