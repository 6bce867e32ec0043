// The state store: bun:sqlite in WAL mode, every write an immediate transaction, rows zod-checked on the way out.
import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { z } from "zod";
import { SbxError } from "../core/errors";
import {
  ApprovalSchema,
  AllowEntrySchema,
  AuditEntrySchema,
  SandboxSchema,
  type Approval,
  type AllowEntry,
  type AuditEntry,
  type BackendKind,
  type Sandbox,
  type SandboxState,
} from "../core/schemas";
import { migrations } from "./migrations";
import { APPROVAL_HOST_MAX, APPROVAL_REASON_MAX, AUDIT_HELD_ACTIONS_MAX, AUDIT_ROWS_BURST, AUDIT_ROWS_PER_SECOND, BUDGETED_AUDIT_KINDS, Budget, boundDetail, cutText } from "../core/bounds";

export interface StoreOptions {
  /** Clock seam for tests; milliseconds since the epoch. */
  now?: () => number;
}

/**
 * Puts a database in WAL mode. Turning WAL on takes an exclusive lock that SQLite does not wait for (busy_timeout does
 * not cover it): two processes opening a new store at once (the CLI and the daemon it starts) can meet SQLITE_BUSY
 * here, so it is retried for up to 5 s; a store already in WAL is not changed at all.
 */
function walMode(db: Database): void {
  const mode = () => db.query<{ journal_mode: string }, []>("PRAGMA journal_mode").get()?.journal_mode;
  for (let i = 0; ; i++) {
    try {
      if (mode() === "wal") return;
      db.run("PRAGMA journal_mode = WAL");
      return;
    } catch (e) {
      if ((e as { code?: string }).code !== "SQLITE_BUSY" || i >= 250) throw e;
      Bun.sleepSync(20);
    }
  }
}

/** Opens the database with the pragmas measured to work across processes (DESIGN.md). */
function openDb(file: string): Database {
  if (file !== ":memory:") mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const db = new Database(file, { create: true, strict: true });
  // busy_timeout first: the journal_mode change itself can meet a lock held by another process.
  db.run("PRAGMA busy_timeout = 5000");
  walMode(db);
  db.run("PRAGMA synchronous = NORMAL");
  db.run("PRAGMA foreign_keys = ON");
  return db;
}

function migrate(db: Database): number {
  const apply = db.transaction(() => {
    const row = db.query<{ user_version: number }, []>("PRAGMA user_version").get();
    const current = row?.user_version ?? 0;
    if (current > migrations.length) {
      throw new SbxError("config", `state database is at schema ${current}, newer than this sbx knows (${migrations.length})`, {
        hint: "Upgrade sbx, or move the state directory aside to start fresh.",
      });
    }
    for (let v = current; v < migrations.length; v++) {
      db.run(migrations[v]!);
      db.run(`PRAGMA user_version = ${v + 1}`);
    }
    return migrations.length;
  });
  return apply.immediate();
}

type Row = Record<string, unknown>;

export interface NewSandbox {
  name: string;
  repo: string;
  backend: BackendKind;
  identity?: Record<string, unknown>;
}

export interface AuditInput {
  sandboxId?: number | null;
  kind: string;
  action: string;
  detail?: Record<string, unknown>;
}

/** Pending approvals one sandbox may have at once. */
export const MAX_PENDING = 100;

export class Store {
  readonly db: Database;
  readonly schemaVersion: number;
  private readonly now: () => number;
  /** Rows of a sandbox's traffic (BUDGETED_AUDIT_KINDS): per sandbox, a burst then a steady rate (invariant 14). */
  private readonly auditBudget = new Budget(AUDIT_ROWS_BURST, AUDIT_ROWS_PER_SECOND);
  /** Names given out per sandbox (the transparent path's map), read once and kept: see nameAddress. */
  private readonly namesGiven = new Map<number, number>();
  /** Sandboxes with a held-back count in `audit_held` (read at open: a crashed daemon's counts are said too). */
  private readonly held = new Set<number>();

  constructor(file: string, opts: StoreOptions = {}) {
    this.db = openDb(file);
    this.now = opts.now ?? Date.now;
    this.schemaVersion = migrate(this.db);
    for (const r of this.db.query<{ id: number }, []>(`SELECT DISTINCT sandbox_id AS id FROM audit_held`).all()) this.held.add(r.id);
  }

  close(): void {
    this.db.close();
  }

  /** Runs fn in an IMMEDIATE transaction: a deferred one fails with SQLITE_BUSY_SNAPSHOT across processes. */
  write<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }

  // ── sandboxes ──────────────────────────────────────────────────────────

  createSandbox(s: NewSandbox): Sandbox {
    return this.write(() => {
      const existing = this.findSandbox(s.repo, s.name);
      if (existing) {
        throw new SbxError("exists", `sandbox '${s.name}' already exists for ${s.repo}`, {
          hint: `Use \`sbx shell ${s.name}\` to enter it, or \`sbx rm ${s.name}\` first.`,
        });
      }
      const t = this.now();
      // An id no sandbox ever had, not even one purged since (SQLite would give the highest purged id again): the audit
      // log keeps rows of a purged sandbox by id, and the egress desk serves a sandbox its own refusals by id.
      const row = this.db
        .query<Row, [string, string, string, string, number, number]>(
          `INSERT INTO sandboxes (id, name, repo, backend, state, identity, created_at, updated_at)
           VALUES (1 + max(coalesce((SELECT max(id) FROM sandboxes), 0), coalesce((SELECT max(sandbox_id) FROM audit), 0)), ?, ?, ?, 'active', ?, ?, ?) RETURNING *`,
        )
        .get(s.name, s.repo, s.backend, JSON.stringify(s.identity ?? {}), t, t);
      return SandboxSchema.parse(row);
    });
  }

  findSandbox(repo: string, name: string): Sandbox | null {
    const row = this.db
      .query<Row, [string, string]>(`SELECT * FROM sandboxes WHERE repo = ? AND name = ? AND state != 'deleted'`)
      .get(repo, name);
    return row ? SandboxSchema.parse(row) : null;
  }

  getSandbox(id: number): Sandbox | null {
    const row = this.db.query<Row, [number]>(`SELECT * FROM sandboxes WHERE id = ?`).get(id);
    return row ? SandboxSchema.parse(row) : null;
  }

  listSandboxes(opts: { all?: boolean; repo?: string } = {}): Sandbox[] {
    const where: string[] = [];
    const args: string[] = [];
    if (!opts.all) where.push(`state != 'deleted'`);
    if (opts.repo !== undefined) {
      where.push(`repo = ?`);
      args.push(opts.repo);
    }
    const sql = `SELECT * FROM sandboxes ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY repo, name, id`;
    return this.db
      .query<Row, string[]>(sql)
      .all(...args)
      .map((r) => SandboxSchema.parse(r));
  }

  setSandboxState(id: number, state: SandboxState): void {
    this.write(() => {
      this.db.query(`UPDATE sandboxes SET state = ?, updated_at = ? WHERE id = ?`).run(state, this.now(), id);
      // A removed sandbox asks for nothing any more: its approvals go with it (the audit log keeps what happened).
      if (state === "deleted") {
        this.db.query(`DELETE FROM approvals WHERE sandbox_id = ?`).run(id);
        this.db.query(`DELETE FROM dns_names WHERE sandbox_id = ?`).run(id);
        // Its placeholders and the secrets bound to it alone go with it: nothing of it is left for a sandbox made later.
        this.db.query(`DELETE FROM secret_placeholders WHERE sandbox_id = ?`).run(id);
        this.db.query(`DELETE FROM secret_bindings WHERE sandbox_id = ?`).run(id);
        // Its LLM ledger too (what each call used stays in the audit log, as its llm.request rows).
        this.db.query(`DELETE FROM llm_usage WHERE sandbox_id = ?`).run(id);
        this.namesGiven.delete(id);
      }
    });
  }

  // ── the transparent path's name map ────────────────────────────────────

  /**
   * The address that stands for a name in this sandbox: the one it was given, else the next free one (`addressAt` of
   * the count so far), or null when `max` names have been given out.
   */
  nameAddress(sandboxId: number, name: string, max: number, addressAt: (i: number) => string): string | null {
    const had = this.db.query(`SELECT address FROM dns_names WHERE sandbox_id = ? AND name = ?`).get(sandboxId, name) as { address: string } | null;
    if (had) return had.address;
    return this.write(() => {
      // The count is read once per sandbox and kept (this process is the map's only writer): counting the map for every
      // new name made giving out the last of 16,384 names ten times the cost of the first (invariant 14).
      let n = this.namesGiven.get(sandboxId);
      if (n === undefined) n = (this.db.query(`SELECT count(*) AS n FROM dns_names WHERE sandbox_id = ?`).get(sandboxId) as { n: number }).n;
      if (n >= max) {
        this.namesGiven.set(sandboxId, n);
        return null;
      }
      const address = addressAt(n);
      const r = this.db.query(`INSERT OR IGNORE INTO dns_names (sandbox_id, name, address) VALUES (?, ?, ?)`).run(sandboxId, name, address);
      if (r.changes === 0) {
        // Given meanwhile by another writer (a second store on the same file): read again, count afresh.
        this.namesGiven.delete(sandboxId);
        const again = this.db.query(`SELECT address FROM dns_names WHERE sandbox_id = ? AND name = ?`).get(sandboxId, name) as { address: string } | null;
        if (again) return again.address;
        throw new SbxError("conflict", `the name map of sandbox ${sandboxId} changed under this process`, { hint: "Only the daemon gives out names; run one daemon." });
      }
      this.namesGiven.set(sandboxId, n + 1);
      return address;
    });
  }

  /** The name an address stands for in this sandbox, or null when it was never given out. */
  nameOfAddress(sandboxId: number, address: string): string | null {
    const r = this.db.query(`SELECT name FROM dns_names WHERE sandbox_id = ? AND address = ?`).get(sandboxId, address) as { name: string } | null;
    return r?.name ?? null;
  }

  /**
   * Removes a sandbox's row for good, with its allowlist and approvals (cascade): only for a create that failed, so
   * the store is as it was before it. The audit log keeps every row that names it.
   */
  purgeSandbox(id: number): void {
    this.write(() => {
      this.db.query(`DELETE FROM sandboxes WHERE id = ?`).run(id);
    });
    this.namesGiven.delete(id);
  }

  updateIdentity(id: number, identity: Record<string, unknown>): void {
    this.write(() => {
      this.db
        .query(`UPDATE sandboxes SET identity = ?, updated_at = ? WHERE id = ?`)
        .run(JSON.stringify(identity), this.now(), id);
    });
  }

  touchSandbox(id: number): void {
    this.write(() => {
      this.db.query(`UPDATE sandboxes SET last_used_at = ? WHERE id = ?`).run(this.now(), id);
    });
  }

  // ── allowlist ──────────────────────────────────────────────────────────

  /** Adds a pattern (global when sandboxId is null); adding one twice is a no-op. Returns true if added. */
  addAllow(sandboxId: number | null, pattern: string, addedBy: string): boolean {
    return this.write(() => {
      const r = this.db
        .query(`INSERT OR IGNORE INTO allowlist (sandbox_id, pattern, added_by, added_at) VALUES (?, ?, ?, ?)`)
        .run(sandboxId, pattern, addedBy, this.now());
      return r.changes > 0;
    });
  }

  removeAllow(sandboxId: number | null, pattern: string): boolean {
    return this.write(() => {
      const r = this.db
        .query(`DELETE FROM allowlist WHERE coalesce(sandbox_id, 0) = coalesce(?, 0) AND pattern = ?`)
        .run(sandboxId, pattern);
      return r.changes > 0;
    });
  }

  /** Entries of one scope: the sandbox's own (sandboxId) or the global list (null). */
  listAllow(sandboxId: number | null): AllowEntry[] {
    return this.db
      .query<Row, [number | null]>(`SELECT * FROM allowlist WHERE coalesce(sandbox_id, 0) = coalesce(?, 0) ORDER BY pattern`)
      .all(sandboxId)
      .map((r) => AllowEntrySchema.parse(r));
  }

  // ── approvals ──────────────────────────────────────────────────────────

  /**
   * Records a blocked request: one pending row per sandbox, kind, host (for a bridge approval, its subject) and port,
   * counted on repeats; null once the sandbox has MAX_PENDING waiting (the request is refused and audited all the same).
   */
  recordPending(sandboxId: number, hostText: string, port: number, reasonText: string, kind: Approval["kind"] = "egress"): Approval | null {
    // What a sandbox asked for and why are its text: kept to a size a person reads (invariant 14).
    const host = cutText(hostText, APPROVAL_HOST_MAX);
    const reason = cutText(reasonText, APPROVAL_REASON_MAX);
    return this.write(() => {
      const t = this.now();
      const again = this.db
        .query<Row, [number, string, number, string, string, number]>(
          `UPDATE approvals SET count = count + 1, last_seen = ?, reason = ?
           WHERE sandbox_id = ? AND kind = ? AND host = ? AND port = ? AND state = 'pending' RETURNING *`,
        )
        .get(t, reason, sandboxId, kind, host, port);
      if (again) return ApprovalSchema.parse(again);
      // A sandbox that asks for ever more (a flood of names) is capped: past MAX_PENDING the rest is only audited.
      const n = this.db.query<{ n: number }, [number]>(`SELECT count(*) AS n FROM approvals WHERE sandbox_id = ? AND state = 'pending'`).get(sandboxId)?.n ?? 0;
      if (n >= MAX_PENDING) return null;
      const row = this.db
        .query<Row, [number, string, string, number, string, number, number]>(
          `INSERT INTO approvals (sandbox_id, kind, host, port, reason, state, first_seen, last_seen)
           VALUES (?, ?, ?, ?, ?, 'pending', ?, ?) RETURNING *`,
        )
        .get(sandboxId, kind, host, port, reason, t, t);
      return ApprovalSchema.parse(row);
    });
  }

  listApprovals(opts: { state?: Approval["state"]; sandboxId?: number } = {}): Approval[] {
    const where: string[] = [];
    const args: (string | number)[] = [];
    if (opts.state) {
      where.push("state = ?");
      args.push(opts.state);
    }
    if (opts.sandboxId !== undefined) {
      where.push("sandbox_id = ?");
      args.push(opts.sandboxId);
    }
    const sql = `SELECT * FROM approvals ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY last_seen DESC, id DESC`;
    return this.db
      .query<Row, (string | number)[]>(sql)
      .all(...args)
      .map((r) => ApprovalSchema.parse(r));
  }

  /** The pending approval of a sandbox for a host and port (the newest), or null: one row read, not the whole list. */
  findPending(sandboxId: number, host: string, port: number): Approval | null {
    const row = this.db
      .query<Row, [number, string, number]>(`SELECT * FROM approvals WHERE sandbox_id = ? AND state = 'pending' AND host = ? AND port = ? ORDER BY last_seen DESC, id DESC LIMIT 1`)
      .get(sandboxId, host, port);
    return row ? ApprovalSchema.parse(row) : null;
  }

  /** One approval by id, or null. */
  getApproval(id: number): Approval | null {
    const row = this.db.query<Row, [number]>(`SELECT * FROM approvals WHERE id = ?`).get(id);
    return row ? ApprovalSchema.parse(row) : null;
  }

  decideApproval(id: number, state: "allowed" | "denied", decidedBy: string): Approval {
    return this.write(() => {
      const row = this.db
        .query<Row, [string, string, number, number]>(
          `UPDATE approvals SET state = ?, decided_by = ?, decided_at = ? WHERE id = ? AND state = 'pending' RETURNING *`,
        )
        .get(state, decidedBy, this.now(), id);
      if (!row) {
        throw new SbxError("not_found", `no pending approval with id ${id}`, {
          hint: "Run `sbx approvals` to see the pending ones.",
        });
      }
      return ApprovalSchema.parse(row);
    });
  }

  // ── audit ──────────────────────────────────────────────────────────────

  /**
   * Appends one row, its detail cut to AUDIT_DETAIL_MAX bytes. A row of a sandbox's traffic (BUDGETED_AUDIT_KINDS)
   * takes one of its sandbox's budget: past it the row is only counted (0 is returned) in `audit_held`, in place, and
   * the count becomes one `daemon` / `audit.held-back` row before that sandbox's next row, or when the log is read.
   */
  audit(e: AuditInput): number {
    const sandboxId = e.sandboxId ?? null;
    const t = this.now();
    if (sandboxId !== null && BUDGETED_AUDIT_KINDS.has(e.kind) && !this.auditBudget.take(sandboxId, t)) {
      this.holdBack(sandboxId, `${e.kind} ${e.action}`, t);
      return 0;
    }
    const detail = JSON.stringify(boundDetail(e.detail ?? {}));
    return this.write(() => {
      if (sandboxId !== null && this.held.has(sandboxId)) this.writeHeldBack(sandboxId);
      const r = this.db.query(`INSERT INTO audit (ts, sandbox_id, kind, action, detail) VALUES (?, ?, ?, ?, ?)`).run(t, sandboxId, cutText(e.kind, 64), cutText(e.action, 128), detail);
      return Number(r.lastInsertRowid);
    });
  }

  /** Counts one held-back row (at most AUDIT_HELD_ACTIONS_MAX actions a sandbox, the rest as "other"). */
  private holdBack(sandboxId: number, actionText: string, t: number): void {
    const action = cutText(actionText, 128);
    this.write(() => {
      const bump = this.db.query(`UPDATE audit_held SET count = count + 1, last_ts = ? WHERE sandbox_id = ? AND action = ?`);
      if (bump.run(t, sandboxId, action).changes > 0) return;
      const n = this.db.query<{ n: number }, [number]>(`SELECT count(*) AS n FROM audit_held WHERE sandbox_id = ?`).get(sandboxId)?.n ?? 0;
      const as = n < AUDIT_HELD_ACTIONS_MAX - 1 ? action : "other";
      if (as !== action && bump.run(t, sandboxId, as).changes > 0) return;
      this.db.query(`INSERT INTO audit_held (sandbox_id, action, count, first_ts, last_ts) VALUES (?, ?, 1, ?, ?)`).run(sandboxId, as, t, t);
    });
    this.held.add(sandboxId);
  }

  /** Turns every held-back count into its audit row (the log is about to be read). */
  private sayHeldBack(): void {
    if (this.held.size === 0) return;
    this.write(() => {
      for (const k of [...this.held]) this.writeHeldBack(k);
    });
  }

  private writeHeldBack(sandboxId: number): void {
    const rows = this.db.query<{ action: string; count: number; first_ts: number; last_ts: number }, [number]>(`SELECT action, count, first_ts, last_ts FROM audit_held WHERE sandbox_id = ?`).all(sandboxId);
    this.held.delete(sandboxId);
    if (rows.length === 0) return;
    const actions: Record<string, number> = {};
    for (const r of rows) actions[r.action] = r.count;
    const until = Math.max(...rows.map((r) => r.last_ts));
    const detail = {
      rows: rows.reduce((n, r) => n + r.count, 0),
      actions,
      from: Math.min(...rows.map((r) => r.first_ts)),
      until,
      budget: `${AUDIT_ROWS_BURST} rows at once, then ${AUDIT_ROWS_PER_SECOND} a second`,
    };
    this.db.query(`INSERT INTO audit (ts, sandbox_id, kind, action, detail) VALUES (?, ?, ?, ?, ?)`).run(until, sandboxId, "daemon", "audit.held-back", JSON.stringify(boundDetail(detail)));
    this.db.query(`DELETE FROM audit_held WHERE sandbox_id = ?`).run(sandboxId);
  }

  listAudit(opts: { sandboxId?: number; afterId?: number; limit?: number; kind?: string; since?: number } = {}): AuditEntry[] {
    this.sayHeldBack();
    const where: string[] = [];
    const args: (number | string)[] = [];
    if (opts.since !== undefined) {
      where.push("ts >= ?");
      args.push(opts.since);
    }
    if (opts.kind !== undefined) {
      where.push("kind = ?");
      args.push(opts.kind);
    }
    if (opts.sandboxId !== undefined) {
      where.push("sandbox_id = ?");
      args.push(opts.sandboxId);
    }
    if (opts.afterId !== undefined) {
      where.push("id > ?");
      args.push(opts.afterId);
    }
    const limit = z.number().int().positive().max(100_000).parse(opts.limit ?? 1000);
    // After a cursor, the oldest rows past it (a reader paging forward reads each row once, however many came since);
    // with none, the newest (the tail). Either way the answer is oldest first.
    const forward = opts.afterId !== undefined;
    const sql = `SELECT * FROM audit ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY id ${forward ? "ASC" : "DESC"} LIMIT ${limit}`;
    const rows = this.db
      .query<Row, (number | string)[]>(sql)
      .all(...args)
      .map((r) => AuditEntrySchema.parse(r));
    return forward ? rows : rows.reverse();
  }
}
