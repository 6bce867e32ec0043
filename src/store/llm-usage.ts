// The LLM budget's ledger: each sandbox's tokens per day and model, added to in place (a row per call would grow without
// bound: invariant 14), read back as rows for a period. Its rows go when the sandbox is removed (store.ts).
import type { CallUsage } from "../core/llm-usage";
import type { UsageRow } from "../core/llm-budget";
import type { Store } from "./store";

/** Rows a sandbox's ledger has in one day: a model each, the last one "other" for calls of any further model. */
export const LLM_MODELS_PER_DAY = 16;
export const OTHER_MODEL = "other";

type Row = { model: string; calls: number; estimated: number; input: number; output: number; cache_read: number; cache_write: number };

const toRow = (r: Row): UsageRow => ({ model: r.model, calls: r.calls, estimated: r.estimated, input: r.input, output: r.output, cacheRead: r.cache_read, cacheWrite: r.cache_write });

export class LlmLedger {
  constructor(private readonly store: Store) {}

  /** Adds one call to its sandbox's row for that day and model; nothing for a sandbox that is gone (a call it left running). */
  add(sandboxId: number, day: string, u: CallUsage): void {
    const { db } = this.store;
    this.store.write(() => {
      if (db.query(`SELECT 1 FROM sandboxes WHERE id = ? AND state != 'deleted'`).get(sandboxId) === null) return;
      const bump = db.query(
        `UPDATE llm_usage SET calls = calls + 1, estimated = estimated + ?, input = input + ?, output = output + ?, cache_read = cache_read + ?, cache_write = cache_write + ?
         WHERE sandbox_id = ? AND day = ? AND model = ?`,
      );
      const args = [u.estimated ? 1 : 0, u.input, u.output, u.cacheRead, u.cacheWrite, sandboxId, day] as const;
      if (bump.run(...args, u.model).changes > 0) return;
      const n = db.query<{ n: number }, [number, string]>(`SELECT count(*) AS n FROM llm_usage WHERE sandbox_id = ? AND day = ?`).get(sandboxId, day)?.n ?? 0;
      const model = n < LLM_MODELS_PER_DAY - 1 ? u.model : OTHER_MODEL;
      if (model !== u.model && bump.run(...args, model).changes > 0) return;
      db.query(`INSERT INTO llm_usage (sandbox_id, day, model, calls, estimated, input, output, cache_read, cache_write) VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?)`).run(
        sandboxId,
        day,
        model,
        u.estimated ? 1 : 0,
        u.input,
        u.output,
        u.cacheRead,
        u.cacheWrite,
      );
    });
  }

  /** A sandbox's rows for one day, or for its whole life ("total"), summed by model. */
  rows(sandboxId: number, period: string): UsageRow[] {
    const where = period === "total" ? "sandbox_id = ?" : "sandbox_id = ? AND day = ?";
    const args = period === "total" ? [sandboxId] : [sandboxId, period];
    return this.store.db
      .query<Row, (string | number)[]>(
        `SELECT model, sum(calls) AS calls, sum(estimated) AS estimated, sum(input) AS input, sum(output) AS output, sum(cache_read) AS cache_read, sum(cache_write) AS cache_write
         FROM llm_usage WHERE ${where} GROUP BY model ORDER BY model`,
      )
      .all(...args)
      .map(toRow);
  }
}
