// Redaction: removes every secret value the host knows, secret-shaped strings and auth headers from text.
import { SECRET_PATTERNS } from "./secrets";

export const REDACTED = "[REDACTED]";

/** Values shorter than this are not redacted by value (they would shred ordinary output). */
export const MIN_SECRET_LENGTH = 8;

const AUTH_HEADER =
  /^(\s*(?:authorization|proxy-authorization|x-api-key|api-key|x-goog-api-key|cookie|set-cookie|private-token|x-auth-token)\s*[:=]\s*)(.+)$/gim;
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/@:]+)(?::([^\s/@]*))?@/gi;
const BEARER = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/g;

/**
 * Returns `text` with each known secret value (and its base64 and URL-encoded forms) replaced,
 * then any auth header value, URL credentials, bearer token or secret-shaped string.
 */
export function redact(text: string, secrets: Iterable<string> = []): string {
  let out = text;
  const values = [...new Set([...secrets].filter((s) => s.length >= MIN_SECRET_LENGTH))];
  // Longest first so a value that contains another is removed whole.
  const forms = values.flatMap((v) => [v, encodeURIComponent(v), base64(v)]).filter((v) => v.length >= MIN_SECRET_LENGTH);
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

function base64(s: string): string {
  // btoa only takes latin1; secrets are ASCII in practice, and anything else is skipped.
  try {
    return btoa(s);
  } catch {
    return s;
  }
}
