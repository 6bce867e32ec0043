// The store: migrations keyed on user_version, the sandbox/allowlist/approval/audit tables and their rules.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { MAX_PENDING, Store } from "../../../src/store/store";
import { migrations } from "../../../src/store/migrations";
import { SbxError } from "../../../src/core/errors";

const dirs: string[] = [];
function tmpDb(): string {
  const d = mkdtempSync(join(tmpdir(), "sbx-store-"));
  dirs.push(d);
  return join(d, "state", "sbx.db");
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("migrations", () => {
  test("a new database is migrated to the latest user_version, in WAL mode", () => {
    const s = new Store(tmpDb());
    expect(s.schemaVersion).toBe(migrations.length);
    expect(s.db.query<{ user_version: number }, []>("PRAGMA user_version").get()?.user_version).toBe(migrations.length);
    expect(s.db.query<{ journal_mode: string }, []>("PRAGMA journal_mode").get()?.journal_mode).toBe("wal");
    expect(s.db.query<{ foreign_keys: number }, []>("PRAGMA foreign_keys").get()?.foreign_keys).toBe(1);
    s.close();
  });

  test("reopening does not re-run migrations", () => {
    const f = tmpDb();
    const a = new Store(f);
    a.createSandbox({ name: "keep", repo: "/r", backend: "fake" });
    a.close();
    const b = new Store(f);
    expect(b.listSandboxes().map((x) => x.name)).toEqual(["keep"]);
    b.close();
  });

  test("2: a database made at schema 1 keeps its sandboxes, allowlists and approvals; an archived row becomes stopped, and no row can be archived again", () => {
    const f = tmpDb();
    const old = (() => {
      mkdirSync(join(f, ".."), { recursive: true });
      const db = new Database(f);
      db.run("PRAGMA foreign_keys = ON");
      db.run(migrations[0]!);
      db.run("PRAGMA user_version = 1");
      db.run(`INSERT INTO sandboxes (id, name, repo, backend, state, identity, created_at, updated_at) VALUES (1, 'a', '/r', 'fake', 'archived', '{}', 1, 1), (2, 'b', '/r', 'fake', 'active', '{}', 1, 1)`);
      db.run(`INSERT INTO allowlist (sandbox_id, pattern, added_by, added_at) VALUES (1, 'example.org', 'cli', 1)`);
      db.close();
      return f;
    })();
    const s = new Store(old);
    expect(s.schemaVersion).toBe(migrations.length);
    expect(s.listSandboxes().map((x) => [x.name, x.state])).toEqual([["a", "stopped"], ["b", "active"]]);
    expect(s.listAllow(1).map((e) => e.pattern)).toEqual(["example.org"]);
    expect(() => s.db.run(`UPDATE sandboxes SET state = 'archived' WHERE id = 2`)).toThrow(/active, stopped or deleted/);
    expect(() => s.db.run(`INSERT INTO sandboxes (name, repo, backend, state, created_at, updated_at) VALUES ('c', '/r', 'fake', 'archived', 1, 1)`)).toThrow(/active, stopped or deleted/);
    s.close();
  });

  test("a database from a newer sbx is refused with a hint", () => {
    const f = tmpDb();
    new Store(f).close();
    const raw = new Database(f);
    raw.run(`PRAGMA user_version = ${migrations.length + 5}`);
    raw.close();
    const err = (() => {
      try {
        new Store(f);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(SbxError);
    expect((err as SbxError).hint).toContain("Upgrade sbx");
  });
});

describe("sandboxes", () => {
  test("create, find, list, state changes", () => {
    let t = 1000;
    const s = new Store(tmpDb(), { now: () => t++ });
    const a = s.createSandbox({ name: "demo", repo: "/r", backend: "docker", identity: { uid: 1000 } });
    expect(a).toMatchObject({ name: "demo", repo: "/r", backend: "docker", state: "active", identity: { uid: 1000 } });
    expect(s.findSandbox("/r", "demo")?.id).toBe(a.id);
    expect(s.findSandbox("/other", "demo")).toBeNull();
    s.setSandboxState(a.id, "stopped");
    expect(s.getSandbox(a.id)?.state).toBe("stopped");
    s.touchSandbox(a.id);
    expect(s.getSandbox(a.id)?.lastUsedAt).not.toBeNull();
    s.close();
  });

  test("names are unique per repo among live sandboxes, and reusable after delete", () => {
    const s = new Store(tmpDb());
    const a = s.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    expect(() => s.createSandbox({ name: "demo", repo: "/r", backend: "fake" })).toThrow(/already exists/);
    s.createSandbox({ name: "demo", repo: "/r2", backend: "fake" });
    s.setSandboxState(a.id, "deleted");
    expect(s.listSandboxes({ repo: "/r" })).toEqual([]);
    expect(s.listSandboxes({ repo: "/r", all: true })).toHaveLength(1);
    s.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    s.close();
  });

  test("gone-when-removed: a purged sandbox's id is never given again, so what the audit log keeps of it (its refusals, which the egress desk serves a sandbox by id) is no other sandbox's", () => {
    const s = new Store(tmpDb());
    const keep = s.createSandbox({ name: "keep", repo: "/r", backend: "fake" });
    const failed = s.createSandbox({ name: "failed", repo: "/r", backend: "fake" });
    s.audit({ sandboxId: failed.id, kind: "egress", action: "denied", detail: { host: "private.example", path: "/secret-path" } });
    s.purgeSandbox(failed.id); // a create that failed: its row goes, its audit rows stay
    const next = s.createSandbox({ name: "other", repo: "/elsewhere", backend: "fake" });
    expect(next.id).not.toBe(failed.id);
    expect(next.id).toBeGreaterThan(keep.id);
    expect(s.listAudit({ sandboxId: next.id })).toEqual([]);
    s.close();
  });

  test("the schema itself refuses a bad name or state", () => {
    const s = new Store(tmpDb());
    expect(() => s.createSandbox({ name: "Bad_Name", repo: "/r", backend: "fake" })).toThrow();
    const a = s.createSandbox({ name: "ok", repo: "/r", backend: "fake" });
    expect(() => s.setSandboxState(a.id, "exploded" as never)).toThrow();
    s.close();
  });
});

describe("allowlist", () => {
  test("global and per-sandbox scopes are separate; adding twice is a no-op", () => {
    const s = new Store(tmpDb());
    const a = s.createSandbox({ name: "a", repo: "/r", backend: "fake" });
    expect(s.addAllow(null, "example.com", "cli")).toBe(true);
    expect(s.addAllow(null, "example.com", "cli")).toBe(false);
    expect(s.addAllow(a.id, "*.example.org", "chat")).toBe(true);
    expect(s.listAllow(null).map((e) => e.pattern)).toEqual(["example.com"]);
    expect(s.listAllow(a.id).map((e) => [e.pattern, e.addedBy])).toEqual([["*.example.org", "chat"]]);
    expect(s.removeAllow(a.id, "example.com")).toBe(false);
    expect(s.removeAllow(null, "example.com")).toBe(true);
    expect(s.listAllow(null)).toEqual([]);
    s.close();
  });
});

describe("approvals", () => {
  test("repeated blocks of one host make one pending row with a count", () => {
    let t = 0;
    const s = new Store(tmpDb(), { now: () => ++t });
    const a = s.createSandbox({ name: "a", repo: "/r", backend: "fake" });
    s.recordPending(a.id, "example.org", 443, "not allowlisted");
    const again = s.recordPending(a.id, "example.org", 443, "not allowlisted")!;
    expect(again.count).toBe(2);
    s.recordPending(a.id, "other.org", 80, "not allowlisted");
    const pending = s.listApprovals({ state: "pending" });
    expect(pending.map((p) => [p.host, p.count])).toEqual([
      ["other.org", 1],
      ["example.org", 2],
    ]);
    const decided = s.decideApproval(again.id, "allowed", "cli");
    expect(decided).toMatchObject({ state: "allowed", decidedBy: "cli" });
    expect(() => s.decideApproval(again.id, "denied", "cli")).toThrow(/no pending approval/);
    // A new block after a decision opens a new pending row.
    expect(s.recordPending(a.id, "example.org", 443, "again")!.count).toBe(1);
    // The same host on another port is its own row.
    expect(s.recordPending(a.id, "example.org", 8443, "port-not-allowed")!.count).toBe(1);
    s.close();
  });

  test("a flood of blocked names stops at MAX_PENDING rows per sandbox; repeats still count; another sandbox is not held", () => {
    const s = new Store(tmpDb());
    const a = s.createSandbox({ name: "a", repo: "/r", backend: "fake" });
    const b = s.createSandbox({ name: "b", repo: "/r", backend: "fake" });
    for (let i = 0; i < 1000; i++) s.recordPending(a.id, `n${i}.flood.test`, 443, "not allowlisted");
    expect(s.listApprovals({ state: "pending", sandboxId: a.id })).toHaveLength(MAX_PENDING);
    expect(s.recordPending(a.id, "n0.flood.test", 443, "again")!.count).toBe(2);
    expect(s.recordPending(a.id, "new.flood.test", 443, "x")).toBeNull();
    expect(s.recordPending(b.id, "ok.test", 443, "x")).not.toBeNull();
    // Removed: its approvals go with it.
    s.setSandboxState(a.id, "deleted");
    expect(s.listApprovals({ sandboxId: a.id })).toEqual([]);
    expect(s.listApprovals({ sandboxId: b.id })).toHaveLength(1);
    s.close();
  });
});

describe("audit", () => {
  test("append-only: entries come back in order and cannot be changed or deleted", () => {
    const s = new Store(tmpDb());
    s.audit({ kind: "proxy", action: "deny", detail: { host: "example.org" } });
    s.audit({ kind: "bridge", action: "push", detail: { ref: "main" } });
    const all = s.listAudit();
    expect(all.map((e) => e.action)).toEqual(["deny", "push"]);
    expect(all[0]!.detail).toEqual({ host: "example.org" });
    expect(s.listAudit({ afterId: all[0]!.id }).map((e) => e.action)).toEqual(["push"]);
    expect(() => s.db.run("UPDATE audit SET action = 'x'")).toThrow(/append-only/);
    expect(() => s.db.run("DELETE FROM audit")).toThrow(/append-only/);
    s.close();
  });
});
