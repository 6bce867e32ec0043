// Built-in secret patterns and a scanner that reports file and line: what the push gate refuses to let out.

export interface SecretPattern {
  /** Stable id shown to the user, e.g. `aws-access-key-id`. */
  id: string;
  description: string;
  regex: RegExp;
}

/**
 * Patterns for credentials that have a recognisable shape. Each is anchored on a prefix that real
 * providers issue, so prose, hashes and UUIDs do not match.
 */
export const SECRET_PATTERNS: readonly SecretPattern[] = [
  { id: "aws-access-key-id", description: "AWS access key id", regex: /\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b/ },
  {
    id: "aws-secret-access-key",
    description: "AWS secret access key",
    regex: /aws_?secret_?access_?key["']?\s*[:=]\s*["']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])/i,
  },
  { id: "github-token", description: "GitHub token", regex: /\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b/ },
  { id: "github-fine-grained-token", description: "GitHub fine-grained token", regex: /\bgithub_pat_[A-Za-z0-9_]{60,255}\b/ },
  { id: "gitlab-token", description: "GitLab token", regex: /\b(?:glpat|gldt|glrt|glptt|glsoat)-[A-Za-z0-9_-]{20,}\b/ },
  {
    id: "private-key",
    description: "private key block",
    regex: /-----BEGIN (?:RSA |DSA |EC |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?-----/,
  },
  { id: "anthropic-api-key", description: "Anthropic API key", regex: /\bsk-ant-(?:api|admin|oat|ort)\d{2}-[A-Za-z0-9_-]{20,}/ },
  { id: "openai-api-key", description: "OpenAI API key", regex: /\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}/ },
  { id: "openai-api-key", description: "OpenAI API key", regex: /\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}/ },
  { id: "google-api-key", description: "Google API key", regex: /\bAIza[0-9A-Za-z_-]{35}\b/ },
  { id: "google-oauth-token", description: "Google OAuth access token", regex: /\bya29\.[0-9A-Za-z_-]{30,}/ },
  { id: "slack-token", description: "Slack token", regex: /\bxox[abposr]-[0-9A-Za-z-]{10,}/ },
  {
    id: "slack-webhook",
    description: "Slack webhook URL",
    regex: /https:\/\/hooks\.slack\.com\/services\/T[0-9A-Z]{6,}\/B[0-9A-Z]{6,}\/[0-9A-Za-z]{20,}/,
  },
  { id: "stripe-key", description: "Stripe secret key", regex: /\b(?:sk|rk)_live_[0-9A-Za-z]{20,}\b/ },
  { id: "npm-token", description: "npm token", regex: /\bnpm_[A-Za-z0-9]{36}\b/ },
  { id: "huggingface-token", description: "Hugging Face token", regex: /\bhf_[A-Za-z]{34}\b/ },
];

export interface SecretFinding {
  file: string;
  line: number;
  pattern: string;
  description: string;
  /** The commit the line was added in, when scanning history. */
  commit?: string;
}

/** Scans one text; line numbers start at 1. */
export function scanText(text: string, file: string, patterns: readonly SecretPattern[] = SECRET_PATTERNS): SecretFinding[] {
  const out: SecretFinding[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const f = scanLine(lines[i]!, patterns);
    if (f) out.push({ file, line: i + 1, pattern: f.id, description: f.description });
  }
  return out;
}

/** The first pattern the line (or one of its decodings) matches, as a finding names it: "GitHub token (base64-encoded)". */
/**
 * Pure: the patterns, none of which matches where one of `exact` stands whole (a sandbox's own placeholders for its bound
 * secrets: shaped like real keys, meaningless anywhere else, and what its code is told to use). A match that only starts
 * with one (a longer key) is still found, and so is every other secret on the line.
 */
export function exemptExact(patterns: readonly SecretPattern[], exact: readonly string[]): SecretPattern[] {
  const list = exact.filter((e) => e.length > 0);
  if (list.length === 0) return [...patterns];
  const alt = list.map((e) => e.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|");
  return patterns.map((p) => ({ ...p, regex: new RegExp(`(?!(?:${alt})(?![A-Za-z0-9_\\-]))(?:${p.regex.source})`, p.regex.flags) }));
}

export function scanLine(line: string, patterns: readonly SecretPattern[]): SecretPattern | undefined {
  const m = matchSecret(line, patterns);
  return m === undefined ? undefined : m.how === "" ? m.pattern : { ...m.pattern, description: `${m.pattern.description} (${m.how})` };
}

/**
 * Scans the added lines of a unified diff (as printed by `git log -p --format=commit %H`), reporting
 * the new file's path and line number, and the commit when the diff is a log.
 */
export function scanUnifiedDiff(diff: string, patterns: readonly SecretPattern[] = SECRET_PATTERNS): SecretFinding[] {
  const out: SecretFinding[] = [];
  let commit: string | undefined;
  let file = "";
  let line = 0;
  let inHunk = false;
  for (const raw of diff.split("\n")) {
    const c = /^commit ([0-9a-f]{40,64})$/.exec(raw);
    if (c) {
      commit = c[1];
      inHunk = false;
      continue;
    }
    if (raw.startsWith("diff --git ")) {
      inHunk = false;
      file = "";
      continue;
    }
    if (!inHunk && raw.startsWith("+++ ")) {
      const p = raw.slice(4);
      file = p === "/dev/null" ? "" : unquote(p).replace(/^b\//, "");
      continue;
    }
    const h = /^@@+ (?:-\d+(?:,\d+)? )+\+(\d+)(?:,\d+)? @@/.exec(raw);
    if (h) {
      inHunk = true;
      line = Number(h[1]);
      continue;
    }
    if (!inHunk) continue;
    if (raw.startsWith("+")) {
      const f = scanLine(raw.slice(1), patterns);
      if (f) out.push({ file, line, pattern: f.id, description: f.description, ...(commit ? { commit } : {}) });
      line++;
    } else if (raw.startsWith(" ")) {
      line++;
    } else if (raw.startsWith("-") || raw.startsWith("\\")) {
      // removed lines and "\ No newline" do not advance the new side
    } else {
      inHunk = false;
    }
  }
  return out;
}

/** git quotes paths with unusual bytes as C strings: "b/a\tb". */
function unquote(p: string): string {
  if (!p.startsWith('"')) return p;
  try {
    return JSON.parse(p) as string;
  } catch {
    return p.slice(1, -1);
  }
}

/** One line per finding, for refusals: `path:line: GitHub token (commit abc1234)`. */
export function formatFindings(fs: readonly SecretFinding[]): string {
  return fs
    .map((f) => `${f.file}:${f.line}: ${f.description}${f.commit ? ` (commit ${f.commit.slice(0, 12)})` : ""}`)
    .join("\n");
}

/** One way a line may hold a secret out of sight: what it decodes to, and how it was encoded. */
export interface DecodedView {
  how: string;
  text: string;
}

/** Runs at least this long are tried as base64 (or base64url) and hex: shorter ones cannot hold a whole key. */
const B64_RUN = /[A-Za-z0-9+/_-]{20,}={0,2}/g;
// A plain run, cut to an even length when decoded: `(?:[0-9a-fA-F]{2}){12,}` says the same, but JSC's engine takes
// time that grows faster than the run (2.6 s for 1 MiB of hex, in the daemon's one thread).
const HEX_RUN = /[0-9a-fA-F]{24,}/g;
const PERCENT = /%[0-9A-Fa-f]{2}/;
/** Bytes of decoded text one line may produce, across all its views: a bound on a crafted line's cost. */
const MAX_DECODED = 1 << 20;

/**
 * A base64 or base64url run (no padding) decoded to one character per byte, as Buffer's base64 decoder reads it (a
 * last group of 2 or 3 characters gives 1 or 2 bytes; a lone last character nothing). Through atob: no Buffer is made
 * per run, which the push scan does for every line it reads.
 */
function base64Text(run: string): string {
  const std = run.includes("-") || run.includes("_") ? run.replace(/-/g, "+").replace(/_/g, "/") : run;
  const rem = std.length % 4;
  return atob(rem === 0 ? std : rem === 1 ? std.slice(0, -1) : std + (rem === 2 ? "==" : "="));
}

/** Each byte as the character of that code (0-255). Buffer's latin1 is 20x faster than joining fromCharCode pieces. */
function latin1(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1");
}

/**
 * What a line decodes to, for the scan to look at as well as the line itself: each base64/base64url and hex run,
 * percent-encoding, and UTF-16 (its NUL bytes dropped), and those again one level down (base64 of hex, UTF-16 in
 * base64). Pure and bounded; a line with nothing that could decode costs three regex tests.
 */
export function decodedViews(line: string, depth = 2, budget = { left: MAX_DECODED }): DecodedView[] {
  const out: DecodedView[] = [];
  const add = (how: string, decoded: string) => {
    if (decoded.length === 0 || decoded === line || budget.left <= 0) return;
    const text = decoded.length > budget.left ? decoded.slice(0, budget.left) : decoded;
    budget.left -= text.length;
    out.push({ how, text });
    if (depth > 1) for (const v of decodedViews(text, depth - 1, budget)) out.push({ how: `${v.how} inside ${how}`, text: v.text });
  };
  if (line.includes("\0")) add("UTF-16", line.replaceAll("\0", ""));
  if (PERCENT.test(line)) add("URL-encoded", line.replace(/%([0-9A-Fa-f]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16))));
  for (const m of line.matchAll(HEX_RUN)) {
    if (budget.left <= 0) break;
    const even = m[0].length & ~1;
    add("hex-encoded", latin1(Buffer.from(m[0].slice(0, Math.min(even, budget.left * 2)), "hex")));
  }
  for (const m of line.matchAll(B64_RUN)) {
    if (budget.left <= 0) break;
    // A hex run is base64's alphabet too; decoding it as base64 gives noise, which costs a regex test and no more.
    const run = m[0].replace(/=+$/, "").slice(0, Math.ceil((budget.left * 4) / 3));
    const decoded = base64Text(run);
    if (decoded.length >= 12) add("base64-encoded", decoded);
  }
  return out;
}

/**
 * One regex per flag set that matches wherever any of `patterns` does: a line that holds no secret costs one or two
 * scans instead of one per pattern (the push scan reads every line a push adds). Cached per list.
 */
const combined = new WeakMap<readonly SecretPattern[], RegExp[]>();
function anyOf(patterns: readonly SecretPattern[]): RegExp[] {
  let rs = combined.get(patterns);
  if (rs === undefined) {
    const byFlags = new Map<string, string[]>();
    for (const p of patterns) {
      const flags = p.regex.flags.replace(/[gy]/g, "");
      byFlags.set(flags, [...(byFlags.get(flags) ?? []), `(?:${p.regex.source})`]);
    }
    rs = [...byFlags].map(([flags, sources]) => new RegExp(sources.join("|"), flags));
    combined.set(patterns, rs);
  }
  return rs;
}

function firstIn(text: string, patterns: readonly SecretPattern[]): SecretPattern | undefined {
  if (!anyOf(patterns).some((r) => r.test(text))) return undefined;
  return patterns.find((p) => p.regex.test(text));
}

/** The first pattern that matches the line or one of its decodings, and how it was hidden ("" when in plain sight). */
export function matchSecret(line: string, patterns: readonly SecretPattern[]): { pattern: SecretPattern; how: string } | undefined {
  const plain = firstIn(line, patterns);
  if (plain) return { pattern: plain, how: "" };
  for (const v of decodedViews(line)) {
    const p = firstIn(v.text, patterns);
    if (p) return { pattern: p, how: v.how };
  }
  return undefined;
}
