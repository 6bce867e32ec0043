// llm-budget: the ledger is bounded (a row per sandbox, day and model, never a row per call; a sandbox that names ever
// more models fills no more than LLM_MODELS_PER_DAY rows a day), one sandbox's rows are its own, and they go with it.
// Migration 9 keeps every approval there was while making room for the budget's.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { Store } from "../../../src/store/store";
import { migrations } from "../../../src/store/migrations";
import { LLM_MODELS_PER_DAY, LlmLedger, OTHER_MODEL } from "../../../src/store/llm-usage";
import type { CallUsage } from "../../../src/core/llm-usage";

const dirs: string[] = [];
function tmpDb(): string {
  const d = mkdtempSync(join(tmpdir(), "sbx-ledger-"));
  dirs.push(d);
  return join(d, "sbx.db");
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const use = (model: string, t: Partial<CallUsage> = {}): CallUsage => ({ model, input: 10, output: 5, cacheRead: 1, cacheWrite: 0, estimated: false, ...t });

describe("llm-budget: the ledger", () => {
  test("10,000 calls of one sandbox are one row a day and model; the sums are exact", () => {
    const s = new Store(tmpDb());
    const sb = s.createSandbox({ name: "a", repo: "/r", backend: "fake" });
    const l = new LlmLedger(s);
    for (let i = 0; i < 10_000; i++) l.add(sb.id, "2026-11-28", use("claude-haiku-4-5", { estimated: i % 10 === 0 }));
    l.add(sb.id, "2026-11-29", use("claude-haiku-4-5"));
    expect(s.db.query("SELECT count(*) AS n FROM llm_usage").get()).toEqual({ n: 2 });
    expect(l.rows(sb.id, "2026-11-28")).toEqual([{ model: "claude-haiku-4-5", calls: 10_000, estimated: 1000, input: 100_000, output: 50_000, cacheRead: 10_000, cacheWrite: 0 }]);
    expect(l.rows(sb.id, "total")).toEqual([{ model: "claude-haiku-4-5", calls: 10_001, estimated: 1000, input: 100_010, output: 50_005, cacheRead: 10_001, cacheWrite: 0 }]);
    s.close();
  });

  test("a sandbox that names a new model each call fills at most LLM_MODELS_PER_DAY rows a day; the rest is counted as other", () => {
    const s = new Store(tmpDb());
    const sb = s.createSandbox({ name: "a", repo: "/r", backend: "fake" });
    const l = new LlmLedger(s);
    for (let i = 0; i < 1000; i++) l.add(sb.id, "2026-11-28", use(`model-${i}`));
    const rows = l.rows(sb.id, "2026-11-28");
    expect(rows.length).toBe(LLM_MODELS_PER_DAY);
    expect(rows.find((r) => r.model === OTHER_MODEL)?.calls).toBe(1000 - (LLM_MODELS_PER_DAY - 1));
    expect(rows.reduce((n, r) => n + r.calls, 0)).toBe(1000);
    s.close();
  });

  test("one sandbox's rows are its own, and they go with it when it is removed", () => {
    const s = new Store(tmpDb());
    const a = s.createSandbox({ name: "a", repo: "/r", backend: "fake" });
    const b = s.createSandbox({ name: "b", repo: "/r", backend: "fake" });
    const l = new LlmLedger(s);
    l.add(a.id, "2026-11-28", use("m"));
    l.add(b.id, "2026-11-28", use("m", { input: 99 }));
    expect(l.rows(a.id, "total")).toMatchObject([{ input: 10 }]);
    s.setSandboxState(a.id, "deleted");
    expect(l.rows(a.id, "total")).toEqual([]);
    expect(l.rows(b.id, "total")).toMatchObject([{ input: 99 }]);
    // A call the removed sandbox left running ends after its rm: it leaves nothing behind.
    l.add(a.id, "2026-11-28", use("m"));
    expect(l.rows(a.id, "total")).toEqual([]);
    s.purgeSandbox(b.id);
    expect(s.db.query("SELECT count(*) AS n FROM llm_usage").get()).toEqual({ n: 0 });
    s.close();
  });
});

describe("migrations", () => {
  test("9: a database at schema 8 keeps its approvals (ids, kinds, states, the one-pending rule), and takes budget approvals", () => {
    const f = tmpDb();
    mkdirSync(join(f, ".."), { recursive: true });
    const db = new Database(f);
    db.run("PRAGMA foreign_keys = ON");
    for (const m of migrations.slice(0, 8)) db.run(m);
    db.run("PRAGMA user_version = 8");
    db.run(`INSERT INTO sandboxes (id, name, repo, backend, state, identity, created_at, updated_at) VALUES (3, 'a', '/r', 'fake', 'active', '{}', 1, 1)`);
    db.run(`INSERT INTO approvals (id, sandbox_id, host, port, reason, state, first_seen, last_seen, kind) VALUES (41, 3, 'example.org', 443, 'r', 'pending', 1, 2, 'egress'), (42, 3, 'push x', 0, 'r', 'allowed', 1, 2, 'bridge')`);
    expect(() => db.run(`INSERT INTO approvals (sandbox_id, host, port, reason, state, first_seen, last_seen, kind) VALUES (3, 'x', 0, 'r', 'pending', 1, 1, 'budget')`)).toThrow();
    db.close();
    const s = new Store(f);
    expect(s.listApprovals().map((a) => [a.id, a.kind, a.host, a.state]).sort()).toEqual([[41, "egress", "example.org", "pending"], [42, "bridge", "push x", "allowed"]]);
    const b = s.recordPending(3, "llm-budget 5usd/day", 0, "spent", "budget");
    expect(b).toMatchObject({ kind: "budget", count: 1 });
    expect(s.recordPending(3, "llm-budget 5usd/day", 0, "spent", "budget")).toMatchObject({ id: b!.id, count: 2 });
    expect(() => s.db.run(`INSERT INTO approvals (sandbox_id, host, port, reason, state, first_seen, last_seen, kind) VALUES (3, 'x', 0, 'r', 'pending', 1, 1, 'nonsense')`)).toThrow();
    s.close();
  });
});
