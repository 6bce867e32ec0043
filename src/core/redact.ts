// Redaction: removes every secret value the host knows, secret-shaped strings and auth headers from text.
import { SECRET_PATTERNS, type SecretPattern } from "./secrets";

export const REDACTED = "[REDACTED]";

/** Values shorter than this are not redacted by value (they would shred ordinary output). */
export const MIN_SECRET_LENGTH = 8;

const AUTH_HEADER =
  /^(\s*(?:authorization|proxy-authorization|x-api-key|api-key|x-goog-api-key|cookie|set-cookie|private-token|x-auth-token)\s*[:=]\s*)(.+)$/gim;
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/@:]+)(?::([^\s/@]*))?@/gi;
const BEARER = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/g;

/** Pieces of a value this long (and longer values' every such piece) are redacted too: a token printed in slices. */
export const SLICE_LENGTH = 12;

/**
 * Pure: the forms a secret value takes in output that meant to carry it out: itself, reversed, URL-encoded, hex (both
 * cases), base64 and base64url at each of the three alignments it can sit at inside longer encoded text, and (for
 * values at least twice SLICE_LENGTH long) every SLICE_LENGTH-long piece. Only forms of MIN_SECRET_LENGTH or more.
 */
export function secretForms(v: string): string[] {
  const out = new Set<string>([v, [...v].reverse().join(""), encodeURIComponent(v)]);
  const bytes = new TextEncoder().encode(v);
  const hex = Buffer.from(bytes).toString("hex");
  out.add(hex);
  out.add(hex.toUpperCase());
  for (let k = 0; k < 3; k++) {
    // k bytes before the value: the characters that depend on them (the first group) and on what follows (the last
    // group) are dropped, the rest is what any text with the value at that alignment encodes to.
    let b = Buffer.concat([Buffer.alloc(k), bytes]).toString("base64").replace(/=+$/, "");
    if (k > 0) b = b.slice(4);
    if ((k + bytes.length) % 3 !== 0) b = b.slice(0, -4);
    out.add(b);
    out.add(b.replaceAll("+", "-").replaceAll("/", "_"));
  }
  if (v.length >= 2 * SLICE_LENGTH) for (let i = 0; i + SLICE_LENGTH <= v.length; i++) out.add(v.slice(i, i + SLICE_LENGTH));
  return [...out].filter((f) => f.length >= MIN_SECRET_LENGTH);
}

/**
 * Returns `text` with each known secret value (and every form of it secretForms names) replaced,
 * then any auth header value, URL credentials, bearer token or secret-shaped string.
 */
export function redact(text: string, secrets: Iterable<string> = []): string {
  let out = text;
  const values = [...new Set([...secrets].filter((s) => s.length >= MIN_SECRET_LENGTH))];
  // Longest first so a value that contains another is removed whole.
  const forms = [...new Set(values.flatMap((v) => [...secretForms(v), base64(v)]))].filter((v) => v.length >= MIN_SECRET_LENGTH);
  forms.sort((a, b) => b.length - a.length);
  for (const v of forms) out = out.split(v).join(REDACTED);
  out = out.replace(AUTH_HEADER, (_m, head: string) => `${head}${REDACTED}`);
  out = out.replace(URL_USERINFO, (_m, scheme: string, user: string, pass: string | undefined) =>
    pass === undefined ? `${scheme}${REDACTED}@` : `${scheme}${user}:${REDACTED}@`,
  );
  out = out.replace(BEARER, (_m, kind: string) => `${kind} ${REDACTED}`);
  for (const p of SECRET_PATTERNS) out = out.replace(new RegExp(p.regex.source, p.regex.flags.includes("g") ? p.regex.flags : p.regex.flags + "g"), REDACTED);
  return out;
}

/** A redactor bound to a secrets source read at call time (so rotated keys are covered at once). */
export function redactor(secrets: () => Iterable<string>): (text: string) => string {
  return (text) => redact(text, secrets());
}

/** The most text a line may hold back before it is redacted and passed on without its end (a line that never ends). */
export const HELD_LINE_MAX = 64 * 1024;
/** What of such a line stays held: longer than any form of a value, so one cut by the flush is still found whole. */
const HELD_TAIL = 4096;

/**
 * Text that arrives in pieces (a command's stderr as it runs), redacted whole: each piece is held back to its last line
 * end (`\n` or `\r`, which no value or form of one holds), so a value a read cut in two is redacted as one, and the
 * header and bearer patterns see their whole line. A line longer than HELD_LINE_MAX is redacted and passed on but for
 * its last HELD_TAIL characters, read again with what follows.
 */
export class RedactingLines {
  private held = "";

  constructor(private readonly secrets: () => Iterable<string>) {}

  /** What of `text` (and what was held) can go on now, redacted. */
  push(text: string): string {
    this.held += text;
    const end = Math.max(this.held.lastIndexOf("\n"), this.held.lastIndexOf("\r"));
    let out = "";
    if (end >= 0) {
      out = redact(this.held.slice(0, end + 1), this.secrets());
      this.held = this.held.slice(end + 1);
    }
    if (this.held.length > HELD_LINE_MAX) {
      const r = redact(this.held, this.secrets());
      out += r.slice(0, -HELD_TAIL);
      this.held = r.slice(-HELD_TAIL);
    }
    return out;
  }

  /** What is left at the end, redacted. */
  end(): string {
    const r = redact(this.held, this.secrets());
    this.held = "";
    return r;
  }
}

function base64(s: string): string {
  // btoa only takes latin1; secrets are ASCII in practice, and anything else is skipped.
  try {
    return btoa(s);
  } catch {
    return s;
  }
}

/**
 * Patterns for the exact values the host holds (a push must not carry one out, in any form secretForms names), one per
 * secret, named by the secret's name; the value is in no description. Values shorter than MIN_SECRET_LENGTH are left out.
 */
export function hostSecretPatterns(secrets: Readonly<Record<string, string>>): SecretPattern[] {
  return Object.entries(secrets)
    .filter(([, v]) => v.length >= MIN_SECRET_LENGTH)
    .map(([name, v]) => ({
      id: "host-secret",
      description: `the value of the host secret ${name} (or an encoding of it)`,
      regex: new RegExp(secretForms(v).map((f) => f.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|")),
    }));
}
