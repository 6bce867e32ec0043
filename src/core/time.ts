// How sbx shows a time: relative for a person at a terminal ("3 min ago"), ISO 8601 in UTC everywhere else (--json,
// output read by scripts). Pure: the current time is passed in.

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

/** Pure: ISO 8601 in UTC to the second, `2026-11-26T02:36:11Z`: `--json`, and human output off a terminal (one word, so columns split on blanks). */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** Pure: a length of time, rounded down to its largest unit: `12 s`, `3 min`, `2 h`, `4 d`. */
export function duration(ms: number): string {
  const t = Math.max(0, ms);
  if (t < MIN) return `${Math.floor(t / 1000)} s`;
  if (t < HOUR) return `${Math.floor(t / MIN)} min`;
  if (t < DAY) return `${Math.floor(t / HOUR)} h`;
  return `${Math.floor(t / DAY)} d`;
}

/**
 * Pure: a time as a person at a terminal reads it: `just now` (within a minute), `3 min ago`, `2 h ago`, `yesterday`
 * (one to two days back), `4 d ago`, and the date (UTC) once it is a week or more away. A time ahead says `in 3 min`.
 */
export function relativeTime(ms: number, now: number): string {
  const d = now - ms;
  if (Math.abs(d) < MIN) return "just now";
  if (Math.abs(d) >= 7 * DAY) return isoTime(ms).slice(0, 10);
  if (d < 0) return `in ${duration(-d)}`;
  if (d >= DAY && d < 2 * DAY) return "yesterday";
  return `${duration(d)} ago`;
}

/**
 * The fields of sbx's wire shapes that hold a time (epoch milliseconds). `--json` shows each as `isoTime`; a field of
 * another name is never touched. test/unit/core/time.test.ts checks the wire shapes name no other.
 */
export const TIME_KEYS: ReadonlySet<string> = new Set([
  "ts",
  "createdAt",
  "lastErrorAt",
  "lastOkAt",
  "updatedAt",
  "lastUsedAt",
  "startedAt",
  "addedAt",
  "firstSeen",
  "lastSeen",
  "decidedAt",
  "expiresAt",
]);

/** Pure: a copy of `value` with every number under a time key as `isoTime` (for `--json`); everything else as it was. */
export function isoTimes(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(isoTimes);
  if (value === null || typeof value !== "object") return value;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value; // not a plain object: JSON.stringify shows it as it does
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = typeof v === "number" && TIME_KEYS.has(k) && Number.isFinite(v) ? isoTime(v) : isoTimes(v);
  return out;
}
