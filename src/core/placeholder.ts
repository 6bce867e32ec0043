// Pure: the stand-in a sandbox holds for a host secret: shaped like the real value (its issuer's prefix, its length,
// each character's class), random, and carrying nothing of the value but that shape.
//
// A client that checks a key's format (a prefix, a length, base62) accepts it; the proxy knows it by its exact bytes.
// Only a prefix that an issuer prints on every key of a kind is kept (a known list): a leading run of the value's own
// characters would be part of the secret for any other value (a UUID's first group, a hex token's first letters).

/** Issuers' fixed prefixes, longest first where one extends another (`sk-ant-api03-` before `sk-`). */
export const KNOWN_PREFIXES: readonly string[] = [
  "sk-ant-api03-",
  "sk-ant-admin01-",
  "sk-ant-oat01-",
  "sk-ant-ort01-",
  "sk-proj-",
  "sk-svcacct-",
  "sk-admin-",
  "sk_live_",
  "sk_test_",
  "rk_live_",
  "rk_test_",
  "pk_live_",
  "pk_test_",
  "whsec_",
  "github_pat_",
  "ghp_",
  "gho_",
  "ghu_",
  "ghs_",
  "ghr_",
  "glpat-",
  "gldt-",
  "glrt-",
  "xoxb-",
  "xoxp-",
  "xoxa-",
  "xoxe-",
  "xapp-",
  "npm_",
  "pypi-",
  "hf_",
  "sntrys_",
  "sntryu_",
  "dop_v1_",
  "shpat_",
  "shpss_",
  "lin_api_",
  "SG.",
  "AKIA",
  "ASIA",
  "AIza",
  "ya29.",
  "sk-",
];

const LOWER = "abcdefghijklmnopqrstuvwxyz";
const UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const DIGIT = "0123456789";

/** The issuer's prefix of a value ("" when none known). */
export function knownPrefix(value: string): string {
  for (const p of KNOWN_PREFIXES) if (value.startsWith(p) && value.length > p.length) return p;
  return "";
}

/**
 * The fewest characters a placeholder draws at random for the proxy to tell it from other text: a shorter one could
 * occur in a request by chance (and be swapped there). Callers refuse or warn below it (`randomLength`).
 */
export const MIN_RANDOM = 16;

/** How many characters of `value`'s placeholder are drawn at random (letters and digits after the prefix). */
export function randomLength(value: string): number {
  return [...value.slice(knownPrefix(value).length)].filter((c) => /[A-Za-z0-9]/.test(c)).length;
}

/**
 * A placeholder for `value`, of the same length: its known prefix, then for each further character one drawn from the
 * same class (lower, upper, digit); any other character (`-`, `_`, `.`, `=`) stays where it is, since formats check
 * those positions. `random(n)` gives n random bytes. Never equal to the value.
 */
export function placeholderFor(value: string, random: (n: number) => Uint8Array): string {
  if (randomLength(value) === 0) throw new Error("a placeholder needs a value with letters or digits after its prefix");
  const prefix = knownPrefix(value);
  const rest = [...value.slice(prefix.length)];
  // Rejection sampling keeps every character uniform in its class (a byte mod 26 would favour some letters).
  const pool: number[] = [];
  const draw = (size: number): number => {
    const limit = 256 - (256 % size);
    for (;;) {
      if (pool.length === 0) pool.push(...random(64));
      const b = pool.pop()!;
      if (b < limit) return b % size;
    }
  };
  const pick = (set: string) => set[draw(set.length)]!;
  for (;;) {
    let out = prefix;
    for (const c of rest) {
      if (c >= "a" && c <= "z") out += pick(LOWER);
      else if (c >= "A" && c <= "Z") out += pick(UPPER);
      else if (c >= "0" && c <= "9") out += pick(DIGIT);
      else out += c;
    }
    if (out !== value) return out;
  }
}
