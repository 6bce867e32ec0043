// Two processes writing the store at once never see SQLITE_BUSY: WAL + busy_timeout + immediate transactions.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Store } from "../../../src/store/store";

const dir = mkdtempSync(join(tmpdir(), "sbx-store-conc-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const WRITES = 300;

describe("store across processes", () => {
  test("two processes migrating and writing at once both succeed, and no write is lost", async () => {
    const db = join(dir, "sbx.db");
    const worker = join(dir, "worker.ts");
    const storeModule = join(import.meta.dir, "../../../src/store/store.ts");
    writeFileSync(
      worker,
      `import { Store } from ${JSON.stringify(storeModule)};
       const [db, who, n] = [process.argv[2]!, process.argv[3]!, Number(process.argv[4])];
       const s = new Store(db);
       const sb = s.createSandbox({ name: "w-" + who, repo: "/r", backend: "fake" });
       for (let i = 0; i < n; i++) {
         s.audit({ sandboxId: sb.id, kind: "test", action: who, detail: { i } });
         s.recordPending(sb.id, "host" + (i % 7) + ".example", 443, "t");
         if (i % 10 === 0) s.addAllow(null, who + i + ".example.com", who);
         if (i % 25 === 0) s.listAudit({ limit: 5 });
       }
       s.close();
       console.log("done " + who);`,
    );
    const run = (who: string) =>
      Bun.spawn([process.execPath, worker, db, who, String(WRITES)], { stdout: "pipe", stderr: "pipe" });
    const procs = [run("a"), run("b")];
    const results = await Promise.all(
      procs.map(async (p) => ({ code: await p.exited, out: await new Response(p.stdout).text(), err: await new Response(p.stderr).text() })),
    );
    for (const r of results) {
      expect(r.err).toBe("");
      expect(r.code).toBe(0);
    }
    const s = new Store(db);
    const audit = s.listAudit({ limit: 10_000 });
    expect(audit.filter((e) => e.action === "a")).toHaveLength(WRITES);
    expect(audit.filter((e) => e.action === "b")).toHaveLength(WRITES);
    expect(s.listAllow(null)).toHaveLength(2 * (WRITES / 10));
    const pending = s.listApprovals({ state: "pending" });
    expect(pending).toHaveLength(14);
    expect(pending.reduce((n, p) => n + p.count, 0)).toBe(2 * WRITES);
    s.close();
  });
});
