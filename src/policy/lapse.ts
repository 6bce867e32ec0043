// Allowlist entries that do not last for good: made for a time (`--for 30m`) or one connection (`--once`), used up by
// the proxy, and swept when they lapse (an audit row and a feed event say so). The proxy's read (policyFor) leaves out
// an entry past its expiry by itself: the sweep only tidies and tells, it is never what stops an entry allowing.
import { expiryOf, type AllowTerm } from "../core/allow-term";
import { AllowEntrySchema, type AllowEntry } from "../core/schemas";
import type { Store } from "../store/store";

/** How often the daemon sweeps lapsed entries (they stop allowing at their expiry whatever this is). */
export const LAPSE_SWEEP_MS = 5_000;

type Row = { id: number; expires_at: number | null; once: number };

/** Whether an entry allows at `now`: for good, or before its expiry. */
export function liveAt(e: Pick<AllowEntry, "expiresAt">, now: number): boolean {
  return e.expiresAt === null || e.expiresAt > now;
}

/**
 * Adds a pattern to a list (global when sandboxId is null) for a term, inside the caller's transaction or its own.
 * Returns whether the list changed. For good wins over any term (a timed or one-time entry becomes lasting); a time
 * replaces a time or a one-time entry (the newest word counts); a one-time approval of what is allowed already, or
 * asked again while one waits, changes nothing.
 */
export function grant(store: Store, sandboxId: number | null, pattern: string, by: string, term: AllowTerm, now: number): boolean {
  return store.write(() => {
    const had = store.db
      .query<Row, [number | null, string]>(`SELECT id, expires_at, once FROM allowlist WHERE coalesce(sandbox_id, 0) = coalesce(?, 0) AND pattern = ?`)
      .get(sandboxId, pattern);
    const expires = expiryOf(term, now);
    const once = term.kind === "once" ? 1 : 0;
    // One past its expiry that the sweep has not taken yet counts as gone.
    const live = had !== null && (had.expires_at === null || had.expires_at > now);
    if (had === null || !live) {
      if (had) store.db.query(`DELETE FROM allowlist WHERE id = ?`).run(had.id);
      store.db.query(`INSERT INTO allowlist (sandbox_id, pattern, added_by, added_at, expires_at, once) VALUES (?, ?, ?, ?, ?, ?)`).run(sandboxId, pattern, by, now, expires, once);
      return true;
    }
    if (had.expires_at === null || term.kind === "once") return false;
    store.db.query(`UPDATE allowlist SET expires_at = ?, once = 0, added_by = ?, added_at = ? WHERE id = ?`).run(expires, by, now, had.id);
    return true;
  });
}

/** Uses up a sandbox's one-time approval of a pattern: the entry when this call took it (so one connection, never two). */
export function consumeOnce(store: Store, sandboxId: number, pattern: string, now: number): AllowEntry | null {
  return store.write(() => {
    const row = store.db
      .query<Record<string, unknown>, [number, string, number]>(`DELETE FROM allowlist WHERE sandbox_id = ? AND pattern = ? AND once = 1 AND expires_at > ? RETURNING *`)
      .get(sandboxId, pattern, now);
    return row ? toEntry(row) : null;
  });
}

/** Deletes every entry past its expiry at `now` and returns them (the caller says so). */
export function takeLapsed(store: Store, now: number): AllowEntry[] {
  return store.write(() =>
    store.db
      .query<Record<string, unknown>, [number]>(`DELETE FROM allowlist WHERE expires_at IS NOT NULL AND expires_at <= ? RETURNING *`)
      .all(now)
      .map(toEntry),
  );
}

function toEntry(r: Record<string, unknown>): AllowEntry {
  return AllowEntrySchema.parse(r);
}

/**
 * How long what a list holds for a pattern still lasts at `now`, as a term another entry made to go with it takes (a
 * name's pairing with its private address): for good, for what is left of its time, or once; null when it holds
 * nothing live for it.
 */
export function termOfEntry(store: Store, sandboxId: number | null, pattern: string, now: number): AllowTerm | null {
  const e = store.listAllow(sandboxId).find((x) => x.pattern === pattern && liveAt(x, now));
  if (!e) return null;
  if (e.once) return { kind: "once" };
  return e.expiresAt === null ? { kind: "good" } : { kind: "for", ms: e.expiresAt - now };
}

/** Runs a sweep now and then every `ms` until stopped (the daemon's; tests call the sweep themselves). */
export function startLapseSweep(sweep: () => unknown, ms = LAPSE_SWEEP_MS, onError?: (e: unknown) => void): { stop(): void } {
  const run = () => {
    try {
      sweep();
    } catch (e) {
      onError?.(e);
    }
  };
  run();
  const t = setInterval(run, ms);
  return { stop: () => clearInterval(t) };
}
