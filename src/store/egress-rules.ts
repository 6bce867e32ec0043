// Egress rules that see requests (core/rules.ts), as stored: each once per scope (every sandbox, or one, gone with it),
// as canonical JSON so the same rule written two ways is one row.
import { RuleSpecSchema, type RuleSpec } from "../core/rules-schema";
import type { Store } from "./store";

export interface StoredRule {
  id: number;
  /** null: every sandbox. */
  sandboxId: number | null;
  spec: RuleSpec;
  addedBy: string;
  addedAt: number;
}

type Row = { id: number; sandbox_id: number | null; spec: string; added_by: string; added_at: number };

/** Pure: a rule in its one stored form: methods in a fixed order, paths sorted, each once. */
export function canonicalRule(spec: RuleSpec): RuleSpec {
  const r = RuleSpecSchema.parse(spec);
  return {
    effect: r.effect,
    host: r.host,
    methods: r.methods === null ? null : [...new Set(r.methods)].sort(),
    paths: r.paths === null ? null : [...new Set(r.paths)].sort(),
  };
}

const toRule = (r: Row): StoredRule => ({ id: r.id, sandboxId: r.sandbox_id, spec: RuleSpecSchema.parse(JSON.parse(r.spec)), addedBy: r.added_by, addedAt: r.added_at });

export class EgressRules {
  constructor(
    private readonly store: Store,
    private readonly now: () => number = Date.now,
  ) {}

  /** Adds a rule; adding one twice is a no-op. Returns whether it was added. */
  add(sandboxId: number | null, spec: RuleSpec, by: string): boolean {
    const text = JSON.stringify(canonicalRule(spec));
    return this.store.write(() => this.store.db.query(`INSERT OR IGNORE INTO egress_rules (sandbox_id, spec, added_by, added_at) VALUES (?, ?, ?, ?)`).run(sandboxId, text, by, this.now()).changes > 0);
  }

  /** Removes a rule; returns whether there was one. */
  remove(sandboxId: number | null, spec: RuleSpec): boolean {
    const text = JSON.stringify(canonicalRule(spec));
    return this.store.write(() => this.store.db.query(`DELETE FROM egress_rules WHERE coalesce(sandbox_id, 0) = ? AND spec = ?`).run(sandboxId ?? 0, text).changes > 0);
  }

  /** Removes a scope's allow rules for exactly this host pattern (`sbx deny HOST`: nothing allows it any more). */
  removeAllowsOf(sandboxId: number | null, host: string): RuleSpec[] {
    return this.store.write(() => {
      const gone = this.list(sandboxId).filter((r) => r.spec.effect === "allow" && r.spec.host === host);
      for (const r of gone) this.store.db.query(`DELETE FROM egress_rules WHERE id = ?`).run(r.id);
      return gone.map((r) => r.spec);
    });
  }

  /** Whether any rule applies to a sandbox (its own or a global one): then its sessions must trust sbx's CA. */
  anyFor(sandboxId: number): boolean {
    return this.store.db.query(`SELECT 1 FROM egress_rules WHERE sandbox_id IS NULL OR sandbox_id = ? LIMIT 1`).get(sandboxId) !== null;
  }

  /** One scope's rules: a sandbox's own, or the global ones (null), oldest first. */
  list(sandboxId: number | null): StoredRule[] {
    return this.store.db
      .query<Row, [number]>(`SELECT * FROM egress_rules WHERE coalesce(sandbox_id, 0) = ? ORDER BY id`)
      .all(sandboxId ?? 0)
      .map(toRule);
  }
}
