// Pure: how a bound secret's source is written (`--ttl 55m`, `--ref op://vault/item/field`), for the CLI to check before
// it asks for anything and for secrets/sources.ts, which reads the values.

/** How long a command's or a reference's answer is kept when the secret names no time: five minutes. */
export const DEFAULT_TTL_MS = 5 * 60_000;

/** Pure: `55m`, `30s`, `2h`, `1d` in milliseconds; null when it is not one of those. */
export function parseTtl(text: string): number | null {
  const m = /^(\d{1,6})(s|m|h|d)$/.exec(text.trim());
  if (!m) return null;
  const n = Number(m[1]);
  const unit = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as "s" | "m" | "h" | "d"];
  return n > 0 ? n * unit : null;
}

/** Pure: whether a 1Password reference is well formed (`op://vault/item/field`, optionally `/section/field`). */
export function isOpRef(ref: string): boolean {
  return /^op:\/\/[^/\s]+\/[^/\s]+(\/[^/\s]+){1,2}$/.test(ref);
}
