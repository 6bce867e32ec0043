// Pure: where each credential sbx holds may go (a host, path patterns, methods), one table for all of them, and the one
// reading of a request target that the check and the upstream share.
//
// A credential's scope is judged on the path the upstream will act on, and servers read a target differently: URL
// parsers take `\` for `/` and resolve `.` and `..` (escaped ones too, `%2e%2e`), some decode `%2f` and `%5c` into
// separators or decode twice, Java servers drop `;params` from segments (`..;/`), some fold case or Unicode (a
// fullwidth `／`, an overlong `%c0%af`), and C servers stop at a NUL. So `canonicalPath` does not guess a server's
// reading: a target with only one reading is put in one form (escapes of what a path may hold as written decoded, the
// rest in upper-case hex), and anything else is refused with what it was. The form is what is sent, so the upstream
// acts on what was checked.

/** The longest request target taken (a real client's are far shorter). */
export const MAX_TARGET = 8192;

export type Canonical = { ok: true; path: string; query: string } | { ok: false; reason: string };

export interface CanonicalOptions {
  /** The server matches paths without regard to case: the canonical path is in lower case (and rules must be). */
  foldCase?: boolean;
}

/**
 * Escapes decoded in the canonical form: RFC 3986's unreserved characters (the same to every server), and the other
 * characters a path may hold as written (sub-delims but `;`, `:`, `@`), which servers decode before they route: a rule
 * is matched on the character, however the sandbox spelled it.
 */
const DECODED = /^[A-Za-z0-9\-._~!$&'()*+,=:@]$/;
/** What a path may hold as written: unreserved, sub-delims but `;`, `:`, `@`, `/` and escapes. */
const PATH_CHARS = /^[A-Za-z0-9\-._~!$&'()*+,=:@/%]*$/;
const HEX2 = /^[0-9A-Fa-f]{2}$/;

/** Escaped bytes refused in a path, and why (the rest of the printable ASCII stays escaped, as it was sent). */
function refusedByte(b: number): string | null {
  if (b === 0x2f) return "an escaped '/' (%2f), which some servers take as a separator";
  if (b === 0x5c) return "an escaped '\\' (%5c), which some servers take as a separator";
  if (b === 0x3b) return "an escaped ';' (%3b), which some servers take as a parameter";
  if (b === 0x25) return "an escaped '%' (%25), which a server that decodes twice reads as another escape";
  if (b === 0x3f || b === 0x23) return "an escaped '?' or '#', which a server that decodes first splits on";
  if (b < 0x20 || b === 0x7f) return "an escaped control character (NUL, tab, newline, …)";
  if (b >= 0x80) return "an escaped non-ASCII byte: servers decode, fold and normalise these differently (overlong UTF-8, fullwidth '／')";
  return null;
}

/**
 * Pure: the canonical path and query of an origin-form request target, or why it has none. Refused: anything not
 * starting with `/`, over MAX_TARGET, a character that is not printable ASCII (controls, NUL, space, raw UTF-8), a
 * fragment, and in the path: `\`, `;`, an invalid escape, an escape of `/`, `\`, `;`, `%`, `?`, `#`, a control or a
 * non-ASCII byte, an empty segment (`//`), and a segment of dots only (`.`, `..`, `...`, spelled or escaped).
 */
export function canonicalPath(target: string, o: CanonicalOptions = {}): Canonical {
  const no = (reason: string): Canonical => ({ ok: false, reason });
  if (target.length > MAX_TARGET) return no(`a request target over ${MAX_TARGET} characters`);
  if (!target.startsWith("/")) return no("a request target that is not a path starting with '/'");
  if (!/^[\x21-\x7e]*$/.test(target)) return no("a character that is not printable ASCII (a control, NUL, space or raw non-ASCII byte)");
  if (target.includes("#")) return no("a fragment ('#'), which is never sent and servers read differently");
  const q = target.indexOf("?");
  const rawPath = q === -1 ? target : target.slice(0, q);
  const query = q === -1 ? "" : target.slice(q + 1);
  if (rawPath.includes("\\")) return no("a '\\' in the path, which URL parsers take as '/'");
  if (rawPath.includes(";")) return no("a ';' in the path, which some servers cut a segment at (`..;/`)");
  if (!PATH_CHARS.test(rawPath)) return no("a character that is not allowed in a path as written");
  let path = "";
  for (let i = 0; i < rawPath.length; i++) {
    const c = rawPath[i]!;
    if (c !== "%") {
      path += o.foldCase ? c.toLowerCase() : c;
      continue;
    }
    const hex = rawPath.slice(i + 1, i + 3);
    if (!HEX2.test(hex)) return no("an invalid %-escape in the path");
    const b = parseInt(hex, 16);
    const why = refusedByte(b);
    if (why) return no(why);
    const ch = String.fromCharCode(b);
    path += DECODED.test(ch) ? (o.foldCase ? ch.toLowerCase() : ch) : `%${hex.toUpperCase()}`;
    i += 2;
  }
  const segments = path.split("/").slice(1);
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i]!;
    if (s === "" && i < segments.length - 1) return no("an empty path segment ('//'), which servers merge or keep differently");
    if (s !== "" && /^\.+$/.test(s)) return no("a '.' or '..' segment (spelled or escaped), which servers resolve");
  }
  if (!/^(?:[^%]|%[0-9A-Fa-f]{2})*$/.test(query)) return no("an invalid %-escape in the query");
  try {
    decodeURIComponent(query.replace(/\+/g, " "));
  } catch {
    return no("a query whose escapes are not UTF-8");
  }
  return { ok: true, path, query };
}

/** One thing a credential may be used for: these methods on the paths a pattern matches. */
export interface PathRule {
  /** Upper case. */
  methods: readonly string[];
  /**
   * A canonical path, matched segment by segment: `*` stands for one or more characters within a segment, and a last
   * segment `**` for no more segments or any number of them (`/v1/models/**` matches `/v1/models` and `/v1/models/x`).
   */
  path: string;
}

function segmentMatches(pattern: string, s: string): boolean {
  if (!pattern.includes("*")) return pattern === s;
  return new RegExp(`^${pattern.split("*").map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join("[^/]+")}$`).test(s);
}

/** Pure: whether a canonical path matches a rule's pattern. */
export function pathMatches(pattern: string, path: string): boolean {
  const ps = pattern.split("/");
  const xs = path.split("/");
  if (ps.at(-1) === "**") {
    const head = ps.slice(0, -1);
    return xs.length >= head.length && head.every((p, i) => segmentMatches(p, xs[i]!));
  }
  return ps.length === xs.length && ps.every((p, i) => segmentMatches(p, xs[i]!));
}

/** Where one credential may go: one host, and the rules. */
export interface CredentialScope {
  /** host[:port] as a URL names it, lower case. */
  host: string;
  rules: readonly PathRule[];
}

export type ScopeVerdict = { ok: true; path: string; query: string } | { ok: false; reason: string };

/**
 * Pure: whether a request may carry the credential: its host is the scope's, and its target's canonical path (which
 * the caller sends, in place of what it was given) matches a rule that names its method.
 */
export function checkScope(scope: CredentialScope, req: { method: string; host: string; target: string }, o: CanonicalOptions = {}): ScopeVerdict {
  const c = canonicalPath(req.target, o);
  if (!c.ok) return { ok: false, reason: `its path cannot be read one way only: ${c.reason}` };
  if (req.host.toLowerCase() !== scope.host) return { ok: false, reason: `${req.host} is not ${scope.host}, the one host it is for` };
  const method = req.method.toUpperCase();
  if (!scope.rules.some((r) => r.methods.includes(method) && pathMatches(r.path, c.path))) {
    return { ok: false, reason: `${method} ${c.path} is not one of ${describeRules(scope.rules)}` };
  }
  return { ok: true, path: c.path, query: c.query };
}

/** A person's words for a scope's rules: `POST /v1/messages, GET /v1/models/**`. */
export function describeRules(rules: readonly PathRule[]): string {
  return rules.map((r) => `${r.methods.join("|")} ${r.path}`).join(", ");
}

/** The credentials the LLM proxy holds, by kind (each is read from the host at request time: llm/keys.ts). */
export type LlmCredentialKind = "anthropic-api-key" | "anthropic-oauth" | "openai-api-key" | "chatgpt-sign-in" | "gemini-api-key" | "google-sign-in";

/** A credential's declared scope: the origin it is for, and the rules, as paths on that origin. */
export interface DeclaredScope {
  /** For people: which credential this is. */
  what: string;
  origin: string;
  rules: readonly PathRule[];
}

const POST = ["POST"] as const;
const GET = ["GET"] as const;
const GET_POST = ["GET", "POST"] as const;

/** The inference endpoints of Anthropic's API (Claude Code 2.1.332 sends only the first two, measured). */
const ANTHROPIC_INFERENCE: readonly PathRule[] = [
  { methods: POST, path: "/v1/messages" },
  { methods: POST, path: "/v1/messages/count_tokens" },
  // Claude Code's prompt-cache keep-alive (in its code; not seen sent).
  { methods: POST, path: "/v1/messages/cache_touch" },
  { methods: GET, path: "/v1/models/**" },
];

/**
 * The one table: every LLM credential and what it may reach. Each is the provider's inference endpoints and nothing of
 * the account: no keys, organisations, billing, files, batches (which read back other work of the account) or profile.
 */
export const LLM_CREDENTIAL_SCOPES: Record<LlmCredentialKind, DeclaredScope> = {
  "anthropic-api-key": { what: "the host's Anthropic API key", origin: "https://api.anthropic.com", rules: ANTHROPIC_INFERENCE },
  "anthropic-oauth": { what: "the host's Anthropic sign-in (Claude Code's login, or a token)", origin: "https://api.anthropic.com", rules: ANTHROPIC_INFERENCE },
  "openai-api-key": {
    what: "the host's OpenAI API key",
    origin: "https://api.openai.com",
    rules: [
      { methods: POST, path: "/v1/chat/completions" },
      { methods: POST, path: "/v1/completions" },
      { methods: POST, path: "/v1/embeddings" },
      // Codex: POST /v1/responses (and /v1/responses/compact); its WebSocket is a GET of /v1/responses.
      { methods: GET_POST, path: "/v1/responses/**" },
      { methods: GET, path: "/v1/models/**" },
    ],
  },
  "chatgpt-sign-in": {
    what: "the host's ChatGPT sign-in for Codex",
    origin: "https://chatgpt.com",
    // Codex's backend and nothing else of ChatGPT's (the account, its conversations, other apps).
    rules: [{ methods: GET_POST, path: "/backend-api/codex/**" }],
  },
  "gemini-api-key": {
    what: "the host's Gemini API key",
    origin: "https://generativelanguage.googleapis.com",
    rules: [
      { methods: GET_POST, path: "/v1beta/models/**" },
      { methods: GET_POST, path: "/v1/models/**" },
    ],
  },
  "google-sign-in": {
    what: "the host's Google sign-in for Gemini CLI (Code Assist)",
    origin: "https://cloudcode-pa.googleapis.com",
    // Code Assist's methods (`/v1internal:generateContent`, `:loadCodeAssist`, …) and GETs of its operations: never
    // another Google API, which the same cloud-platform token would open.
    rules: [
      { methods: GET_POST, path: "/v1internal:*" },
      { methods: GET, path: "/v1internal/**" },
    ],
  },
};

/**
 * Pure: a declared scope as it applies through a route whose provider base (`defaultBase`, on the credential's origin)
 * is served at `actualBase` instead (the host's own gateway, or a test's fake): the same rules under the new base path
 * on its host. A route whose default base is not on the credential's origin gives it no rule at all.
 */
export function scopeThrough(d: DeclaredScope, defaultBase: string, actualBase: string): CredentialScope {
  const from = new URL(defaultBase);
  const to = new URL(actualBase);
  if (from.origin !== new URL(d.origin).origin) return { host: to.host.toLowerCase(), rules: [] };
  const fromPath = from.pathname.replace(/\/+$/, "");
  const toPath = to.pathname.replace(/\/+$/, "");
  const rules = d.rules.flatMap((r) => (r.path === fromPath || r.path.startsWith(`${fromPath}/`) ? [{ ...r, path: toPath + r.path.slice(fromPath.length) }] : []));
  return { host: to.host.toLowerCase(), rules };
}

/**
 * Forge tokens, by the name they have among the host's secrets: the hosts each may go to. git and gh on the host make
 * the requests, to one repository: the host repo's own remote, or one the user added for the sandbox
 * (`sbx bridge NAME --allow-repo`); the bridge checks which before it hands a token over (bridge/git-policy.ts, bridge/gh-policy.ts).
 */
export const FORGE_TOKENS: ReadonlyArray<{ name: string; hosts: string }> = [
  { name: "GIT_TOKEN_<HOST>", hosts: "the host its name spells (GIT_TOKEN_GHE_EXAMPLE_COM: ghe.example.com; a port too: _8443)" },
  { name: "GH_TOKEN, GITHUB_TOKEN", hosts: "github.com" },
  { name: "GITLAB_TOKEN", hosts: "gitlab.com" },
  { name: "GIT_TOKEN", hosts: "the hosts of the host repository's own remotes, never one the sandbox named or asked for" },
];

/** The secret name of a host's own token: GIT_TOKEN_ and the host[:port], every other character `_`, upper case. */
export function hostTokenName(host: string): string {
  return `GIT_TOKEN_${host.replace(/[^a-z0-9]/gi, "_").toUpperCase()}`;
}

/**
 * Pure: the names a token for `host` (host[:port], lower case) may have, in the order they are looked at: its own
 * name, the forge's usual ones, and GIT_TOKEN only when the host is one of `ownHosts` (the host repo's remotes').
 */
export function forgeTokenNames(host: string, ownHosts: ReadonlySet<string>): string[] {
  const bare = host.replace(/:\d+$/, "");
  const usual = bare === "github.com" ? ["GH_TOKEN", "GITHUB_TOKEN"] : bare === "gitlab.com" ? ["GITLAB_TOKEN"] : [];
  return [hostTokenName(host), ...usual, ...(ownHosts.has(host) || ownHosts.has(bare) ? ["GIT_TOKEN"] : [])];
}

export type ForgeTokenChoice = { name: string; value: string } | { name: null; withheld?: string };

/**
 * Pure: the token for `host`, or none; `withheld` names a token the host has that is not for this host (GIT_TOKEN for
 * a host of no remote of the host repo), so the refusal can say what to set instead.
 */
export function forgeTokenFor(host: string, secrets: Readonly<Record<string, string>>, ownHosts: ReadonlySet<string>): ForgeTokenChoice {
  const name = forgeTokenNames(host, ownHosts).find((n) => secrets[n]);
  if (name !== undefined) return { name, value: secrets[name]! };
  return secrets.GIT_TOKEN ? { name: null, withheld: "GIT_TOKEN" } : { name: null };
}

/**
 * Pure: the hosts (host[:port], lower case) of remote URLs as the host repo's config has them: an http(s) URL's
 * authority without its user; an ssh URL's host (`git@host:path`, `ssh://user@host[:port]/path`), whose https form is
 * the same host. Anything else names no host.
 */
export function remoteHosts(urls: Iterable<string>): Set<string> {
  const out = new Set<string>();
  for (const u of urls) {
    const http = /^https?:\/\/(?:[^@/?#]*@)?([^/?#]+)/i.exec(u);
    const ssh = /^ssh:\/\/(?:[^@/]*@)?([A-Za-z0-9.-]+)(?::\d+)?\//i.exec(u) ?? /^[A-Za-z0-9._-]+@([A-Za-z0-9.-]+):(?!\/\/)/.exec(u);
    const h = http?.[1] ?? ssh?.[1];
    if (h) out.add(h.toLowerCase());
  }
  return out;
}
