// `sbx list`: sandboxes of every kind with their observed phase, unsynced commits, limits hit and notes.
import type { SandboxSpec } from "../core/spec";
import { limitHits } from "../core/limits";
import { levelOf } from "../core/levels";
import type { Driver } from "../drivers/driver";
import { baseIdentity } from "../drivers/identity";
import { createProgress } from "../workspace/lock";
import type { ServiceContext } from "./context";
import { unsynced as commitsOnlyThere } from "./last-sync";
import type { SandboxInfo } from "./requests";
import { LlmBudgets } from "../llm/budget";
import { priceReader } from "../sys/config-file";

/** Sandboxes of every kind with their observed phase and unsynced commits. */
export async function listSandboxes(c: ServiceContext, opts: { all?: boolean; repo?: string } = {}): Promise<SandboxInfo[]> {
  const rows = c.d.store.listSandboxes({ all: opts.all === true, ...(opts.repo ? { repo: opts.repo } : {}) });
  // LLM spend, priced at the table in force (read once for the list).
  const budgets = new LlmBudgets({ store: c.d.store, prices: priceReader(c.d.paths, c.d.env) });
  return Promise.all(
    rows.map(async (row): Promise<SandboxInfo> => {
      const ident = baseIdentity(row);
      const base = { name: row.name, repo: row.repo, backend: row.backend, state: row.state, createdAt: row.createdAt, lastUsedAt: row.lastUsedAt, dir: ident?.dir ?? "", id: ident?.id ?? "", level: levelOf(row.identity)?.level ?? null };
      if (row.state === "deleted") return { ...base, phase: "absent", unsynced: null };
      // Spend is the store's: known whatever the sandbox's runtime says.
      const llm = budgets.view(row);
      const creating = createProgress(c.d.paths.stateDir, row.repo, row.name, base.dir);
      if (creating === "in-progress") return { ...base, phase: "absent", creating, unsynced: null, llm };
      const interrupted = creating === "interrupted"
        ? { creating, reason: `its create was interrupted: \`sbx create ${row.name}\` again starts it over, \`sbx rm ${row.name}\` removes it` }
        : {};
      let driver: Driver;
      let spec: SandboxSpec;
      try {
        driver = await c.driver(row.backend);
        spec = driver.spec(row);
      } catch (e) {
        return { ...base, phase: "unknown", unsynced: null, reason: (e as Error).message.split("\n")[0]!, llm };
      }
      const limits = c.limitsOf(row);
      const [obs, unsynced, counters] = await Promise.all([
        driver.inspect(spec).then(
          async (o): Promise<{ phase: SandboxInfo["phase"]; reason?: string }> => {
            const why = o.phase === "stopped" ? await driver.stopReason(spec).catch(() => null) : null;
            return why ? { phase: o.phase, reason: why } : { phase: o.phase };
          },
          (e: unknown) => ({ phase: "unknown" as const, reason: (e as Error).message.split("\n")[0]! }),
        ),
        commitsOnlyThere(c, row, driver, false, false).catch(() => null),
        driver.counters(spec).catch(() => null),
      ]);
      const hits = counters === null ? [] : limitHits(null, counters);
      const notes: string[] = [];
      c.sayNotes(row, driver, { log: (l) => notes.push(l) });
      return { ...base, ...obs, ...interrupted, unsynced, ...(limits ? { limits } : {}), ...(hits.length ? { hits } : {}), ...(notes.length ? { notes } : {}), llm };
    }),
  );
}
