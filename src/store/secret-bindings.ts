// The secrets bound to hosts, as stored: one binding per name for every sandbox or for one (the sandbox's own wins),
// and the placeholder each sandbox was given for each. Never a value: those stay in the vault or their source.
import { BindingSpecSchema, type BindingSpec } from "../core/bound-secret-schema";
import type { Store } from "./store";

export interface Binding {
  name: string;
  /** null: every sandbox. */
  sandboxId: number | null;
  spec: BindingSpec;
  createdAt: number;
  lastUsedAt: number | null;
}

type Row = { name: string; sandbox_id: number | null; spec: string; created_at: number; last_used_at: number | null };

const toBinding = (r: Row): Binding => ({ name: r.name, sandboxId: r.sandbox_id, spec: BindingSpecSchema.parse(JSON.parse(r.spec)), createdAt: r.created_at, lastUsedAt: r.last_used_at });

export class SecretBindings {
  constructor(
    private readonly store: Store,
    private readonly now: () => number = Date.now,
  ) {}

  /** Sets (or replaces) a binding; a replaced one keeps its placeholders only if it stays the same shape of value. */
  set(name: string, sandboxId: number | null, spec: BindingSpec): { replaced: boolean } {
    const text = JSON.stringify(BindingSpecSchema.parse(spec));
    return this.store.write(() => {
      const had = this.store.db.query(`DELETE FROM secret_bindings WHERE name = ? AND coalesce(sandbox_id, 0) = ?`).run(name, sandboxId ?? 0).changes > 0;
      this.store.db.query(`INSERT INTO secret_bindings (name, sandbox_id, spec, created_at) VALUES (?, ?, ?, ?)`).run(name, sandboxId, text, this.now());
      return { replaced: had };
    });
  }

  /** Removes a binding; its placeholders go too where no other binding of that name still applies. */
  remove(name: string, sandboxId: number | null): boolean {
    return this.store.write(() => {
      const gone = this.store.db.query(`DELETE FROM secret_bindings WHERE name = ? AND coalesce(sandbox_id, 0) = ?`).run(name, sandboxId ?? 0).changes > 0;
      if (!gone) return false;
      const global = this.store.db.query(`SELECT 1 FROM secret_bindings WHERE name = ? AND sandbox_id IS NULL`).get(name) !== null;
      if (sandboxId !== null && !global) this.store.db.query(`DELETE FROM secret_placeholders WHERE name = ? AND sandbox_id = ?`).run(name, sandboxId);
      if (sandboxId === null) {
        // Sandboxes with a binding of their own keep theirs.
        this.store.db
          .query(`DELETE FROM secret_placeholders WHERE name = ? AND sandbox_id NOT IN (SELECT sandbox_id FROM secret_bindings WHERE name = ? AND sandbox_id IS NOT NULL)`)
          .run(name, name);
      }
      return gone;
    });
  }

  /** Every binding (for `sbx secret list`), global first, then by name. */
  list(): Binding[] {
    return this.store.db.query<Row, []>(`SELECT name, sandbox_id, spec, created_at, last_used_at FROM secret_bindings ORDER BY sandbox_id IS NOT NULL, sandbox_id, name`).all().map(toBinding);
  }

  /** The bindings that apply to a sandbox: its own, and the global ones it has none of the same name for. */
  forSandbox(sandboxId: number): Binding[] {
    const rows = this.store.db
      .query<Row, [number]>(`SELECT name, sandbox_id, spec, created_at, last_used_at FROM secret_bindings WHERE sandbox_id IS NULL OR sandbox_id = ? ORDER BY sandbox_id IS NULL, name`)
      .all(sandboxId);
    const seen = new Set<string>();
    const out: Binding[] = [];
    for (const r of rows) {
      if (seen.has(r.name)) continue;
      seen.add(r.name);
      out.push(toBinding(r));
    }
    return out.sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The placeholders given to a sandbox, by name. */
  placeholders(sandboxId: number): Map<string, string> {
    const rows = this.store.db.query<{ name: string; placeholder: string }, [number]>(`SELECT name, placeholder FROM secret_placeholders WHERE sandbox_id = ?`).all(sandboxId);
    return new Map(rows.map((r) => [r.name, r.placeholder]));
  }

  /** Keeps the placeholder a sandbox was given for a secret (a new one replaces an old of another shape). */
  setPlaceholder(sandboxId: number, name: string, placeholder: string): void {
    this.store.write(() => {
      this.store.db.query(`INSERT INTO secret_placeholders (sandbox_id, name, placeholder) VALUES (?, ?, ?) ON CONFLICT (sandbox_id, name) DO UPDATE SET placeholder = excluded.placeholder`).run(sandboxId, name, placeholder);
    });
  }

  /** Marks a secret used now (what `sbx secret list` shows as last used). */
  touch(name: string): void {
    this.store.write(() => {
      this.store.db.query(`UPDATE secret_bindings SET last_used_at = ? WHERE name = ?`).run(this.now(), name);
    });
  }
}
