// A reader that follows the audit log from a cursor (`sbx logs --follow`, `--export` paging through the whole log) gets
// every row after it, oldest first, a page at a time: however many rows arrived since its last read, none is skipped.
import { describe, expect, test } from "bun:test";
import { Store } from "../../../src/store/store";

describe("audit paging: a cursor misses no row", () => {
  test("rows after a cursor come oldest first, a page at a time, so paging forward reads each row once", () => {
    const s = new Store(":memory:");
    const ids = Array.from({ length: 7 }, (_, i) => s.audit({ sandboxId: null, kind: "lifecycle", action: `a${i}`, detail: {} }));
    const seen: number[] = [];
    let cursor = 0;
    for (let page = 0; page < 10; page++) {
      const rows = s.listAudit({ afterId: cursor, limit: 3 });
      if (rows.length === 0) break;
      seen.push(...rows.map((r) => r.id));
      cursor = rows[rows.length - 1]!.id;
    }
    expect(seen).toEqual(ids);
    s.close();
  });

  test("with no cursor, the newest rows are the ones shown (the tail, oldest of them first), as before", () => {
    const s = new Store(":memory:");
    const ids = Array.from({ length: 5 }, (_, i) => s.audit({ sandboxId: null, kind: "lifecycle", action: `a${i}`, detail: {} }));
    expect(s.listAudit({ limit: 2 }).map((r) => r.id)).toEqual(ids.slice(3));
    s.close();
  });

  test("a cursor with filters: only the rows that match, still from the oldest after the cursor", () => {
    const s = new Store(":memory:");
    const a = s.createSandbox({ name: "a", repo: "/r", backend: "fake" });
    const mine: number[] = [];
    for (let i = 0; i < 6; i++) {
      const id = s.audit({ sandboxId: i % 2 === 0 ? a.id : null, kind: i % 3 === 0 ? "allowlist" : "lifecycle", action: `a${i}`, detail: {} });
      if (i % 2 === 0 && i % 3 !== 0) mine.push(id);
    }
    expect(s.listAudit({ afterId: 0, sandboxId: a.id, kind: "lifecycle", limit: 1 }).map((r) => r.id)).toEqual(mine.slice(0, 1));
    s.close();
  });
});
