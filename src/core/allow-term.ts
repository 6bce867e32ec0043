// How long an allow lasts (`sbx allow HOST --for 30m`, `sbx approvals allow N --once`): for good, for a time, or for
// one connection; pure.
import { SbxError } from "./errors";

export type AllowTerm = { kind: "good" } | { kind: "for"; ms: number } | { kind: "once" };

export const FOR_GOOD: AllowTerm = { kind: "good" };

/** How long a one-time approval waits to be used: the refused client retries, or is told to, well within it. */
export const ONCE_TTL_MS = 15 * 60_000;

/** The longest `--for`: past it, allow for good and `sbx deny` it when done. */
export const FOR_MAX_MS = 90 * 24 * 3_600_000;

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Pure: `30s`, `30m`, `2h`, `1d` (also `1h30m`) as milliseconds, or null. */
export function parseFor(text: string): number | null {
  const t = text.trim().toLowerCase();
  if (!/^(\d{1,6}[smhd])+$/.test(t)) return null;
  let ms = 0;
  for (const m of t.matchAll(/(\d+)([smhd])/g)) ms += Number(m[1]) * UNIT_MS[m[2]!]!;
  return ms >= 1_000 && ms <= FOR_MAX_MS ? ms : null;
}

/** The term a person asked for with `--once` / `--for D` (neither: for good); both, or a bad time, is a usage error. */
export function termOf(opts: { once?: unknown; for?: unknown }): AllowTerm {
  const once = opts.once === true;
  const span = typeof opts.for === "string" ? opts.for : undefined;
  if (once && span !== undefined) throw new SbxError("usage", "--once and --for both say how long it lasts", { hint: "Give one: --once (one connection) or --for 30m (a time)." });
  if (once) return { kind: "once" };
  if (span === undefined) return FOR_GOOD;
  const ms = parseFor(span);
  if (ms === null) throw new SbxError("usage", `--for ${span}: not a time from 1s to 90d`, { hint: "e.g. --for 30m, --for 2h, --for 1d, --for 1h30m" });
  return { kind: "for", ms };
}

/** Pure: a span as `--for` takes it: `30m`, `1h30m`, `45s`. */
export function spanText(ms: number): string {
  let rest = Math.max(0, Math.round(ms / 1000)) * 1000;
  let out = "";
  for (const u of ["d", "h", "m", "s"]) {
    const n = Math.floor(rest / UNIT_MS[u]!);
    if (n > 0) out += `${n}${u}`;
    rest -= n * UNIT_MS[u]!;
  }
  return out || "0s";
}

/** Pure: a term as people read it: `for good`, `for 30m`, `once`. */
export function termText(t: AllowTerm): string {
  return t.kind === "good" ? "for good" : t.kind === "once" ? "once (one connection)" : `for ${spanText(t.ms)}`;
}

/** The expiry a term gives an entry made at `now` (null: none). */
export function expiryOf(t: AllowTerm, now: number): number | null {
  return t.kind === "good" ? null : now + (t.kind === "once" ? ONCE_TTL_MS : t.ms);
}
