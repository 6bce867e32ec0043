// bounded: every audit row, of every kind, is at most AUDIT_DETAIL_MAX bytes of detail, and the rows a sandbox's
// traffic writes are budgeted per sandbox (a burst, then a steady rate); what is held back is counted and said in one
// row. What a person did is never held back.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AUDIT_DETAIL_MAX, AUDIT_HELD_ACTIONS_MAX, AUDIT_ROWS_BURST, AUDIT_ROWS_PER_SECOND } from "../../../src/core/bounds";
import { Store } from "../../../src/store/store";
import { MAX_NAMES, nameAddressAt } from "../../../src/core/transparent";

const dirs: string[] = [];
function tmpDb(): string {
  const d = mkdtempSync(join(tmpdir(), "sbx-audit-"));
  dirs.push(d);
  return join(d, "sbx.db");
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Bytes of the detail column of every row. */
function detailSizes(s: Store): number[] {
  return s.db.query<{ n: number }, []>("SELECT length(CAST(detail AS BLOB)) AS n FROM audit").all().map((r) => r.n);
}

describe("bounded: audit rows", () => {
  test("a row of any kind carries at most AUDIT_DETAIL_MAX bytes of detail, whatever the sandbox sent (1 MiB of argv, a 16 KiB path, deep nesting)", () => {
    const s = new Store(":memory:");
    const sb = s.createSandbox({ name: "a", repo: "/r", backend: "fake" });
    const arg = "x".repeat(4096);
    let deep: Record<string, unknown> = { leaf: "y".repeat(10_000) };
    for (let i = 0; i < 50; i++) deep = { deeper: deep, [`k${i}`]: "z".repeat(500) };
    s.audit({ sandboxId: sb.id, kind: "guard", action: "git.refused", detail: { tool: "git", args: Array.from({ length: 256 }, () => arg), cwd: "/w" } });
    s.audit({ sandboxId: sb.id, kind: "guard", action: "llm.request", detail: { provider: "anthropic", path: `/v1/${"p".repeat(16 * 1024)}` } });
    s.audit({ sandboxId: sb.id, kind: "egress", action: "denied", detail: deep });
    s.audit({ sandboxId: null, kind: "lifecycle", action: "create.failed", detail: { error: "e".repeat(1 << 20) } });
    s.audit({ sandboxId: sb.id, kind: "guard", action: "many", detail: Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`key${i}`, i])) });
    const sizes = detailSizes(s);
    expect(sizes.length).toBe(5);
    for (const n of sizes) expect(n).toBeLessThanOrEqual(AUDIT_DETAIL_MAX);
    // What was cut says so, and the row still reads as what it was.
    const git = s.listAudit({ kind: "guard" }).find((r) => r.action === "git.refused")!;
    expect(git.detail.tool).toBe("git");
    expect(JSON.stringify(git.detail)).toContain("more]");
    s.close();
  });

  test("a sandbox's traffic writes at most a burst, then a steady rate; the rest is counted in one held-back row", () => {
    let now = 1_000_000;
    const s = new Store(":memory:", { now: () => now });
    const a = s.createSandbox({ name: "a", repo: "/r", backend: "fake" });
    for (let i = 0; i < 5000; i++) s.audit({ sandboxId: a.id, kind: "egress", action: "denied", detail: { host: `h${i}.example`, port: 443 } });
    const written = s.listAudit({ sandboxId: a.id, limit: 100_000 }).filter((r) => r.kind === "egress");
    expect(written.length).toBe(AUDIT_ROWS_BURST);
    // Ten seconds later, ten more may go; the first to go brings the count of what was held back.
    now += 10_000;
    for (let i = 0; i < 100; i++) s.audit({ sandboxId: a.id, kind: "guard", action: "git.refused", detail: { i } });
    const rows = s.listAudit({ sandboxId: a.id, limit: 100_000 });
    expect(rows.filter((r) => r.kind === "guard").length).toBe(10 * AUDIT_ROWS_PER_SECOND);
    const held = rows.filter((r) => r.action === "audit.held-back");
    expect(held.length).toBeGreaterThanOrEqual(1);
    expect(held[0]!.detail.rows).toBe(5000 - AUDIT_ROWS_BURST);
    expect(held[0]!.detail.actions).toEqual({ "egress denied": 5000 - AUDIT_ROWS_BURST });
    s.close();
  });

  test("what is held back is counted before it is answered: said when the log is read, and after a crash (no close) by the next store", () => {
    const f = tmpDb();
    let now = 5_000_000;
    const s = new Store(f, { now: () => now });
    const a = s.createSandbox({ name: "a", repo: "/r", backend: "fake" });
    for (let i = 0; i < AUDIT_ROWS_BURST + 7; i++) s.audit({ sandboxId: a.id, kind: "egress", action: "denied", detail: { i } });
    const read = s.listAudit({ sandboxId: a.id, limit: 100_000 }).filter((r) => r.action === "audit.held-back");
    expect(read.map((r) => r.detail.rows)).toEqual([7]);
    for (let i = 0; i < 3; i++) s.audit({ sandboxId: a.id, kind: "egress", action: "denied", detail: { i } });
    // kill -9: this store is never closed; another opens the same file.
    const again = new Store(f);
    expect(again.listAudit({ sandboxId: a.id, limit: 100_000 }).filter((r) => r.action === "audit.held-back").map((r) => r.detail.rows)).toEqual([7, 3]);
    again.close();
    s.close();
  });

  test("a sandbox naming ever new actions is counted under at most a few names (the count table stays small)", () => {
    const s = new Store(":memory:", { now: () => 1 });
    const a = s.createSandbox({ name: "a", repo: "/r", backend: "fake" });
    for (let i = 0; i < AUDIT_ROWS_BURST + 1000; i++) s.audit({ sandboxId: a.id, kind: "guard", action: `x.${i}`, detail: {} });
    expect(s.db.query<{ n: number }, []>("SELECT count(*) AS n FROM audit_held").get()!.n).toBeLessThanOrEqual(AUDIT_HELD_ACTIONS_MAX);
    const held = s.listAudit({ sandboxId: a.id, limit: 100_000 }).find((r) => r.action === "audit.held-back")!;
    expect(held.detail.rows).toBe(1000);
    expect((held.detail.actions as Record<string, number>).other).toBe(1000 - (AUDIT_HELD_ACTIONS_MAX - 1));
    s.close();
  });

  test("one sandbox's flood leaves another's rows and the person's own untouched", () => {
    const s = new Store(":memory:", { now: () => 42 });
    const a = s.createSandbox({ name: "a", repo: "/r", backend: "fake" });
    const b = s.createSandbox({ name: "b", repo: "/r", backend: "fake" });
    for (let i = 0; i < 3000; i++) s.audit({ sandboxId: a.id, kind: "egress", action: "denied", detail: { i } });
    for (let i = 0; i < 50; i++) s.audit({ sandboxId: b.id, kind: "egress", action: "allowed", detail: { i } });
    for (let i = 0; i < 500; i++) s.audit({ sandboxId: a.id, kind: "lifecycle", action: "limits", detail: { i } });
    expect(s.listAudit({ sandboxId: b.id, limit: 100_000 }).length).toBe(50);
    expect(s.listAudit({ sandboxId: a.id, kind: "lifecycle", limit: 100_000 }).length).toBe(500);
    s.close();
  });

  test("60 refused bridge requests of 1 MiB of argv each (the issue's case: 60 MiB before) grow the database by at most 60 rows' worth", () => {
    const f = tmpDb();
    let now = 7_000_000;
    const s = new Store(f, { now: () => now });
    const a = s.createSandbox({ name: "a", repo: "/r", backend: "fake" });
    const size = () => statSync(f).size + (() => { try { return statSync(`${f}-wal`).size; } catch { return 0; } })();
    const before = size();
    const args = Array.from({ length: 256 }, () => "a".repeat(4096));
    for (let i = 0; i < 60; i++) {
      now += 15; // 60 requests in about a second
      s.audit({ sandboxId: a.id, kind: "guard", action: "git.refused", detail: { tool: "git", args, cwd: "/w", decision: "refused", reason: "not a network command" } });
    }
    s.db.run("PRAGMA wal_checkpoint(TRUNCATE)");
    const grew = size() - before;
    console.log(`bounded: 60 refused 1 MiB requests grew the database by ${(grew / 1024).toFixed(0)} KiB`);
    expect(grew).toBeLessThan(60 * (AUDIT_DETAIL_MAX + 1024));
    s.close();
  });
});

describe("bounded: the transparent path's name map", () => {
  test(`a sandbox giving out all ${MAX_NAMES} names pays the same for the last as for the first (no count of the map per name)`, () => {
    const s = new Store(":memory:");
    const a = s.createSandbox({ name: "a", repo: "/r", backend: "fake" });
    const time = (from: number, to: number) => {
      const t0 = performance.now();
      for (let i = from; i < to; i++) expect(s.nameAddress(a.id, `n${i}.example`, MAX_NAMES, nameAddressAt)).not.toBeNull();
      return performance.now() - t0;
    };
    const first = time(0, 1000);
    time(1000, MAX_NAMES - 1000);
    const last = time(MAX_NAMES - 1000, MAX_NAMES);
    console.log(`bounded: the first 1000 names ${first.toFixed(0)} ms, the last 1000 ${last.toFixed(0)} ms`);
    expect(last).toBeLessThan(Math.max(3 * first, 200));
    expect(s.nameAddress(a.id, "one-more.example", MAX_NAMES, nameAddressAt)).toBeNull();
    // A name given before keeps its address; another sandbox has its own count.
    expect(s.nameAddress(a.id, "n5.example", MAX_NAMES, nameAddressAt)).toBe(nameAddressAt(5));
    const b = s.createSandbox({ name: "b", repo: "/r", backend: "fake" });
    expect(s.nameAddress(b.id, "x.example", MAX_NAMES, nameAddressAt)).toBe(nameAddressAt(0));
    s.close();
  }, 60_000);
});
