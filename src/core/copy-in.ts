// What of the host's content may cross into a sandbox: one scanner for every field of everything sbx copies in
// (~/.claude.json, the views of overlaid dirs, the seeded home, agents' first-run files, the environment, carried
// changes). It looks for what the push scan looks for (the host's own secret values in every form secretForms names,
// secret shapes, each also decoded by decodedViews) and, in config, for where a credential sits whatever it looks like
// (a credential's name, a flag, a header, a URL's userinfo or query). A hit is removed, never copied, and said as the
// file and field, never the value. Pure; secrets/copy-in.ts is the host side (files, dirs, archives, tars).
import { hostSecretPatterns } from "./redact";
import { matchSecret, SECRET_PATTERNS, type SecretPattern } from "./secrets";

export interface CopyInFinding {
  /** The file as the person knows it (`~/.claude.json`), or what it is (`the sandbox's environment`). */
  file: string;
  /** Where in it: a JSON path (`mcpServers.github.args[4]`), `line 3`, `its name`; "" for the whole of it. */
  field: string;
  /** What was found (`GitHub token (base64-encoded)`, `a credential's name`), never the value. */
  what: string;
}

/**
 * How closely to look. `strict`: what the push scan knows (host values and shapes, encoded or not), for content that
 * is data (transcripts, a repo's files, sbx's own placeholders). `config`: that, plus where credentials sit in
 * settings whatever their shape (a credential-named key or variable, `Bearer …`, a URL's password or key parameter).
 */
export type CopyInTier = "strict" | "config";

/** Names that hold credentials by convention: variables, JSON keys, flags (`-` read as `_`), query parameters. */
export const CREDENTIAL_NAME = /(?:TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?|AUTHORIZATION|AUTH|COOKIE)(?![a-z])/i;

/** Whether `name` (a variable, a key, a flag without its dashes, a header) names a credential. */
export function credentialName(name: string): boolean {
  return CREDENTIAL_NAME.test(name.replace(/-/g, "_"));
}

/** A value that only refers to one (`$GH_TOKEN`, `${X}`, `$(cmd)`, `<token>`): no secret in it. */
function reference(v: string): boolean {
  return /^["']?(?:\$|`|<|\*{3})/.test(v);
}

const NAME_PART = String.raw`[A-Za-z0-9_-]*(?:TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?|AUTH)(?![A-Za-z])`;
const VALUE_PART = String.raw`["']?(?![$({\x60<*])[^\s"'&;,]{6,}`;

/** Where a credential sits in settings, whatever its shape: what the `config` tier adds to the push scan's. */
export const PLACED_CREDENTIALS: readonly SecretPattern[] = [
  { id: "credential-assignment", description: "a credential set by name", regex: new RegExp(String.raw`(?:^|[^A-Za-z0-9_])${NAME_PART}\s*[=:]\s*${VALUE_PART}`, "i") },
  { id: "credential-set", description: "a credential set by name", regex: new RegExp(String.raw`\bset\s+(?:-[A-Za-z]+\s+)*${NAME_PART}\s+${VALUE_PART}`, "i") },
  { id: "auth-header", description: "an Authorization header", regex: /\b(?:authorization|proxy-authorization|x-api-key|api-key|private-token|x-auth-token|cookie)\s*:\s*(?![$<])\S{6,}/i },
  { id: "bearer", description: "a bearer credential", regex: /\b(?:Bearer|Basic)\s+(?![$<])[A-Za-z0-9._~+/=-]{8,}/ },
  { id: "url-password", description: "a password in a URL", regex: /\b[a-z][a-z0-9+.-]*:\/\/[^\s/@:]+:[^\s/@]+@/i },
  { id: "url-key", description: "a key in a URL's query", regex: /[?&#](?:api[_-]?key|apikey|key|token|access[_-]?token|auth[_-]?token|auth|secret|client[_-]?secret|password|pass|pwd|sig|signature)=(?![$<])[^&\s#"']{6,}/i },
];

/** A string field that held a secret in a transcript keeps its place (its line still parses), not its text. */
export const REMOVED_TEXT = "[removed by sbx: it held a secret]";

/** At most this many findings are kept per scanner (the count goes on): a report, not a copy of the file. */
const MAX_FINDINGS = 200;

/** `a.b[3]["odd key"]`: a JSON path as a person reads it. */
export function fieldPath(parent: string, key: string | number): string {
  if (typeof key === "number") return `${parent}[${key}]`;
  if (/^[A-Za-z_$][\w$-]*$/.test(key)) return parent === "" ? key : `${parent}.${key}`;
  return `${parent}[${JSON.stringify(key)}]`;
}

export class CopyInScanner {
  private readonly strict: readonly SecretPattern[];
  private readonly config: readonly SecretPattern[];
  readonly findings: CopyInFinding[] = [];
  /** How many findings there were in all (findings keeps the first MAX_FINDINGS). */
  count = 0;

  /** `hostValues`: the host's secrets by name (sbx secrets, LLM keys and logins, credential-named variables). */
  constructor(hostValues: Readonly<Record<string, string>>) {
    // A value with a quote, a backslash, a slash or a control character reads otherwise inside a JSON string: that
    // spelling is looked for too, so a JSON line can be judged by its text (jsonLines) without parsing it.
    const values: Record<string, string> = { ...hostValues };
    for (const [name, v] of Object.entries(hostValues)) {
      const esc = JSON.stringify(v).slice(1, -1);
      if (esc !== v) values[`${name} (as JSON writes it)`] = esc;
      if (esc.includes("/")) values[`${name} (as JSON may write it)`] = esc.replaceAll("/", "\\/");
    }
    this.strict = [...hostSecretPatterns(values), ...SECRET_PATTERNS];
    this.config = [...this.strict, ...PLACED_CREDENTIALS];
  }

  /**
   * Records a finding (file and field, never the value). A name that is itself a secret (a key, a file's name, a dir on
   * its path) is never said either: the file is named up to it, the field by where it was.
   */
  report(f: CopyInFinding): void {
    this.count++;
    if (this.findings.length >= MAX_FINDINGS) return;
    const parts = f.file.split("/");
    const bad = parts.findIndex((p) => this.find(p, "strict") !== undefined);
    const file = bad === -1 ? f.file : `${parts.slice(0, bad).join("/")}/… (a name that holds a secret)`;
    const field = this.find(f.field, "strict") === undefined ? f.field : "a place whose name holds a secret";
    this.findings.push({ file, field, what: f.what });
  }

  /** What `text` holds (a pattern's description, with how it was encoded), or undefined when nothing. */
  find(text: string, tier: CopyInTier): string | undefined {
    if (text.length < 6) return undefined;
    const m = matchSecret(text, tier === "config" ? this.config : this.strict);
    return m === undefined ? undefined : m.how === "" ? m.pattern.description : `${m.pattern.description} (${m.how})`;
  }

  /** Each line of a text: the first that holds something, with its number, or undefined. */
  findLine(text: string, tier: CopyInTier): { line: number; what: string } | undefined {
    const lines = text.split("\n");
    for (let i = 0; i < lines.length; i++) {
      const what = this.find(lines[i]!, tier);
      if (what !== undefined) return { line: i + 1, what };
    }
    return undefined;
  }

  /**
   * A JSON value with every field that holds a secret removed: object entries whose key or string value hits
   * (and, at `config`, whose key names a credential and holds text), array elements likewise, at every depth. With
   * `replace`, a hit string keeps its place as REMOVED_TEXT (a transcript's line must still read as one).
   */
  json(file: string, v: unknown, tier: CopyInTier, opts: { replace?: boolean; at?: string; prefix?: string } = {}): unknown {
    const at = opts.at ?? "";
    const field = (f: string) => `${opts.prefix ?? ""}${f}`;
    if (typeof v === "string") {
      const what = this.find(v, tier);
      if (what === undefined) return v;
      this.report({ file, field: field(at), what });
      return opts.replace ? REMOVED_TEXT : undefined;
    }
    if (Array.isArray(v)) {
      const out: unknown[] = [];
      v.forEach((x, i) => {
        const y = this.json(file, x, tier, { ...opts, at: fieldPath(at, i) });
        if (y !== undefined) out.push(y);
      });
      return out;
    }
    if (v && typeof v === "object") {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
        const inName = this.find(k, tier);
        if (inName !== undefined) {
          // Said by where it was, never by the key itself (which is the secret).
          this.report({ file, field: field(`${at === "" ? "" : `${at}: `}a key`), what: inName });
          continue;
        }
        const here = fieldPath(at, k);
        if (tier === "config" && typeof x === "string" && x.length >= 6 && credentialName(k) && !reference(x)) {
          this.report({ file, field: field(here), what: "a credential's name" });
          continue;
        }
        const y = this.json(file, x, tier, { ...opts, at: here });
        if (y !== undefined) out[k] = y;
      }
      return out;
    }
    return v;
  }

  /**
   * A transcript (JSON Lines): each line's fields scanned `strict` as JSON reads them (its escapes undone), a hit's
   * text replaced; a line that is not JSON and hits, or that still hits once its fields are clean (a value split across
   * two), is dropped.
   */
  jsonLines(file: string, text: string): string {
    const lines = text.split("\n");
    let changed = false;
    const out: string[] = [];
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      const raw = this.find(line, "strict");
      // A line's strings are its own text but for JSON's escapes; the short ones (\n, \", \\) cannot hide a value
      // whose JSON spelling is looked for too (the constructor), so only \u and \/ make the line worth parsing.
      if (raw === undefined && !line.includes("\\u") && !line.includes("\\/")) {
        out.push(line);
        continue;
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        if (raw === undefined) out.push(line);
        else {
          changed = true;
          this.report({ file, field: `line ${i + 1}`, what: raw });
        }
        continue;
      }
      const before = this.count;
      const kept = this.json(file, parsed, "strict", { replace: true, prefix: `line ${i + 1}: ` });
      if (this.count === before) {
        if (raw === undefined) out.push(line);
        else {
          changed = true;
          this.report({ file, field: `line ${i + 1}`, what: raw });
        }
        continue;
      }
      changed = true;
      const line2 = JSON.stringify(kept);
      if (this.find(line2, "strict") === undefined) out.push(line2);
    }
    return changed ? out.join("\n") : text;
  }
}

/** The parts of an MCP server's `args` that carry a credential, by position: what claude-json.ts removes. */
export function credentialArgs(args: readonly unknown[]): Array<{ index: number; what: string }> {
  const out: Array<{ index: number; what: string }> = [];
  const s = (i: number) => (typeof args[i] === "string" ? (args[i] as string) : undefined);
  for (let i = 0; i < args.length; i++) {
    const a = s(i);
    if (a === undefined) continue;
    const next = s(i + 1);
    // -e NAME=VALUE, --env NAME=VALUE (docker, npx wrappers): a credential's variable with its value.
    if ((a === "-e" || a === "--env") && next !== undefined && /^[A-Za-z_][A-Za-z0-9_]*=./.test(next) && credentialName(next.split("=")[0]!) && !reference(next.slice(next.indexOf("=") + 1))) {
      out.push({ index: i, what: "a credential's variable (its flag)" }, { index: i + 1, what: "a credential's variable" });
      i++;
      continue;
    }
    // -H/--header "Authorization: Bearer …"
    if ((a === "-H" || a === "--header") && next !== undefined && headerCredential(next)) {
      out.push({ index: i, what: "a credential header (its flag)" }, { index: i + 1, what: "a credential header" });
      i++;
      continue;
    }
    const flag = /^--?([A-Za-z][A-Za-z0-9_-]*)(?:=(.*))?$/s.exec(a);
    if (flag && credentialName(flag[1]!)) {
      if (flag[2] !== undefined) {
        if (flag[2] !== "" && !reference(flag[2])) out.push({ index: i, what: `a credential flag (--${flag[1]}=…)` });
        continue;
      }
      if (next !== undefined && !next.startsWith("-") && !reference(next)) {
        out.push({ index: i, what: `a credential flag (--${flag[1]})` }, { index: i + 1, what: `a credential flag's value (--${flag[1]})` });
        i++;
      }
      continue;
    }
    const assign = /^(?:--env=|-e)?([A-Za-z_][A-Za-z0-9_]*)=(.+)$/s.exec(a);
    if (assign && credentialName(assign[1]!) && !reference(assign[2]!)) {
      out.push({ index: i, what: "a credential's variable" });
      continue;
    }
    if (headerCredential(a)) out.push({ index: i, what: "a credential header" });
  }
  return out;
}

/** `Authorization: Bearer …`, `X-Api-Key: …`: a header whose name is a credential's and whose value is not a reference. */
function headerCredential(s: string): boolean {
  const m = /^\s*([A-Za-z][A-Za-z0-9-]*)\s*:\s*(.+)$/s.exec(s);
  if (!m) return /\b(?:Bearer|Basic)\s+(?![$<])\S{8,}/.test(s);
  return (credentialName(m[1]!) || /^x-api-key$/i.test(m[1]!)) && !reference(m[2]!.trim());
}

/** A path segment that looks like a key rather than a name (long, random-looking): e.g. `/s/<key>/mcp`. */
export function tokenLike(seg: string): boolean {
  let s = seg;
  try {
    s = decodeURIComponent(seg);
  } catch {
    /* as it is */
  }
  if (s.length < 16 || !/^[A-Za-z0-9_.~+=-]+$/.test(s)) return false;
  const classes = [/[a-z]/, /[A-Z]/, /[0-9]/].filter((r) => r.test(s)).length;
  return /[0-9]/.test(s) && (classes >= 3 || s.length >= 24);
}

/** Query parameters that carry keys by convention. */
const KEY_PARAM = /^(?:api[_-]?key|apikey|key|token|access[_-]?token|auth[_-]?token|auth|secret|client[_-]?secret|password|pass|pwd|sig|signature|code)$/i;

/**
 * A URL without what would carry a credential: userinfo, key-named query parameters, the fragment. null when its
 * path holds a key (a random-looking segment), which cannot be taken out without changing where it points. What
 * was taken out is listed (never the values).
 */
export function urlWithoutCredentials(u: string): { url: string | null; removed: string[] } {
  let url: URL;
  try {
    url = new URL(u);
  } catch {
    return { url: u, removed: [] };
  }
  if (!/^(?:https?|wss?):$/.test(url.protocol)) return { url: u, removed: [] };
  const removed: string[] = [];
  if (url.username || url.password) {
    url.username = "";
    url.password = "";
    removed.push("its user and password");
  }
  if (url.pathname.split("/").some(tokenLike)) return { url: null, removed: ["a key in its path"] };
  for (const k of [...new Set(url.searchParams.keys())]) {
    if (KEY_PARAM.test(k) || credentialName(k)) {
      url.searchParams.delete(k);
      removed.push(`its ${k} parameter`);
    }
  }
  if (url.hash) {
    url.hash = "";
    removed.push("its fragment");
  }
  return { url: removed.length ? url.toString() : u, removed };
}
