// Pure: a secret bound to hosts (`sbx secret set NAME --host …`), what a request to one of them may carry of it, and the
// request as it goes up once its placeholders are swapped.
//
// Inside, a sandbox holds a placeholder shaped like the value. The proxy swaps the placeholder for the value only in a
// request to one of the secret's hosts (matched as the allowlist matches), within its methods and paths (judged on the
// canonical path the upstream will act on: core/credential-scope.ts), in the header values and the query, and in the
// body only when the secret says so. A placeholder anywhere else stays a placeholder, and is reported.
import { hostMatches, parsePattern, type AllowPattern } from "./allowlist";
import { canonicalPath, pathMatches, type PathRule } from "./credential-scope";
import { reflectionForms, type Form } from "./reflection-forms";
import { replaceAll } from "./stream-replace";
import { isReservedEnv } from "./reserved-env";
import type { BindingSpec } from "./bound-secret-schema";

/** Every method a secret may go with when it names none. */
/** The variables a session with secrets gets for trust (sandboxes/secret-env.ts): never a secret's. */
export const SESSION_TRUST_VARS: readonly string[] = ["SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "GIT_SSL_CAINFO", "NODE_EXTRA_CA_CERTS", "NPM_CONFIG_GLOBALCONFIG"];

export const ALL_METHODS: readonly string[] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/** A secret as the proxy sees it for one sandbox: where it goes, and this sandbox's placeholder for it. */
export interface BoundSecret {
  name: string;
  /** Allowlist patterns (`sentry.io`, `*.example.com`); only names, never addresses. */
  hosts: readonly string[];
  /** What it may be used for; the default is every method on every path. */
  rules: readonly PathRule[];
  /** A header added when the request lacks it: its name, and its value with `{}` where the secret goes. */
  header: { name: string; template: string } | null;
  /** Whether a text body's placeholders are swapped too. */
  inBody: boolean;
  /**
   * This sandbox's placeholder: the same length as the value (core/placeholder.ts), random per sandbox; null when none
   * was given out yet (no session since the secret was set): then only its header can be added.
   */
  placeholder: string | null;
}

/** A header as the proxy reads it. */
export type HeaderPair = [name: string, value: string];

/** Pure: whether a secret is bound to this host (a normalised name) on this port (any port a host pattern allows). */
export function boundTo(secret: Pick<BoundSecret, "hosts">, host: string): boolean {
  return secret.hosts.some((h) => {
    const p = parsePattern(h);
    return p.ok && hostMatches(p.pattern as AllowPattern, host);
  });
}

/** Pure: why a host pattern cannot bind a secret, or null. Names only: an address would let the secret follow a lookup. */
export function hostPatternProblem(raw: string): string | null {
  const p = parsePattern(raw);
  if (!p.ok) return p.reason;
  if (p.pattern.kind === "cidr") return `${raw} is an address; a secret is bound to names (what TLS certificates name)`;
  if (p.pattern.port !== null) return `${raw} names a port; a secret is bound to a name on any port it is reached on`;
  return null;
}

/** A use of a secret, or a refused one, for the audit (never its value). */
export interface SecretUse {
  name: string;
  /** `used`: swapped or its header added; `outside`: its placeholder went, unswapped, where the secret may not. */
  action: "used" | "outside";
  reason: string | null;
}

/** A request to a bound host, made ready to go up. */
export interface SwappedRequest {
  /** The target to send: its canonical form when a secret was used (what was checked is what is sent). */
  target: string;
  headers: HeaderPair[];
  /** Placeholder → value pairs for the body (secrets in scope that allow it); empty: the body goes as it is. */
  bodyPairs: { from: string; to: string }[];
  uses: SecretUse[];
  /**
   * Pairs for this request's answer beside reflectionPairs: each Basic credentials the proxy made (base64 of
   * `user:value`) back to what the sandbox sent, so an echo of the header shows it nothing it could decode.
   */
  reflect: { from: string; to: string }[];
}

/** Pure: the content types whose body a secret with `inBody` is swapped in: text, JSON, a form. */
export function textBody(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const t = contentType.split(";")[0]!.trim().toLowerCase();
  return t.startsWith("text/") || t === "application/json" || t.endsWith("+json") || t === "application/x-www-form-urlencoded";
}

/**
 * Pure: a request to `host` with the placeholders of the secrets in scope swapped for their values (`values`, by name;
 * those with no value known are left out by the caller). A secret is in scope when it is bound to the host, names the
 * method, and a rule matches the canonical path; a target without one reading puts every secret out of scope.
 * Placeholders of secrets out of scope (or bound elsewhere) stay as they are and are reported as `outside`.
 */
export function swapRequest(
  secrets: readonly BoundSecret[],
  values: ReadonlyMap<string, string>,
  req: { method: string; host: string; target: string; headers: readonly HeaderPair[] },
  /** Why no secret may be swapped into this request at all (plain HTTP to a name): each one present is said as outside. */
  refused: string | null = null,
): SwappedRequest {
  const method = req.method.toUpperCase();
  const canon = canonicalPath(req.target);
  const uses: SecretUse[] = [];
  const inScope: BoundSecret[] = [];
  const credentials = req.headers.map(([n, v]) => basicCredentials(n, v));
  const present = (s: BoundSecret) =>
    s.placeholder !== null && (req.target.includes(s.placeholder) || req.headers.some(([, v]) => v.includes(s.placeholder!)) || credentials.some((c) => c?.includes(s.placeholder!)));
  for (const s of secrets) {
    const value = values.get(s.name);
    let why: string | null = refused;
    if (why !== null) {
      // Refused whole: said for a placeholder present, or a header that would have been added.
    } else if (!boundTo(s, req.host)) why = `${req.host} is not one of its hosts (${s.hosts.join(", ")})`;
    else if (!canon.ok) why = `the request's path cannot be read one way only: ${canon.reason}`;
    else if (!s.rules.some((r) => r.methods.includes(method) && pathMatches(r.path, canon.path))) why = `${method} ${canon.path} is outside what it is for`;
    else if (value === undefined) why = "its value cannot be read now";
    if (why === null) inScope.push(s);
    else if (present(s) || (s.header !== null && boundTo(s, req.host))) uses.push({ name: s.name, action: "outside", reason: why });
  }
  if (inScope.length === 0) return { target: req.target, headers: [...req.headers], bodyPairs: [], uses, reflect: [] };
  const pairs = inScope.filter((s) => s.placeholder !== null).map((s) => ({ from: s.placeholder!, to: values.get(s.name)! }));
  const c = canon as { ok: true; path: string; query: string };
  const query = replaceAll(c.query, pairs);
  const target = c.query === "" && !req.target.includes("?") ? c.path : `${c.path}?${query.text}`;
  const used = new Set<string>();
  if (query.count > 0) for (const s of inScope) if (s.placeholder !== null && c.query.includes(s.placeholder)) used.add(s.name);
  const reflect: { from: string; to: string }[] = [];
  // Credentials are bytes: a value is swapped in as its UTF-8, read one character per byte as the decoded text is.
  const bytePairs = pairs.map((p) => ({ from: p.from, to: Buffer.from(p.to, "utf8").toString("latin1") }));
  const headers: HeaderPair[] = req.headers.map(([n, v], i) => {
    const r = replaceAll(v, pairs);
    if (r.count > 0) for (const s of inScope) if (s.placeholder !== null && v.includes(s.placeholder)) used.add(s.name);
    const cred = credentials[i];
    if (r.count > 0 || cred == null) return [n, r.text];
    const c = replaceAll(cred, bytePairs);
    if (c.count === 0) return [n, v];
    for (const s of inScope) if (s.placeholder !== null && cred.includes(s.placeholder)) used.add(s.name);
    const sent = Buffer.from(c.text, "latin1").toString("base64");
    reflect.push({ from: sent, to: Buffer.from(cred, "latin1").toString("base64") });
    return [n, `Basic ${sent}`];
  });
  for (const s of inScope) {
    if (s.header === null || headers.some(([n]) => n.toLowerCase() === s.header!.name.toLowerCase())) continue;
    headers.push([s.header.name, s.header.template.replaceAll("{}", values.get(s.name)!)]);
    used.add(s.name);
  }
  const contentType = headers.find(([n]) => n.toLowerCase() === "content-type")?.[1];
  const bodyPairs = textBody(contentType) ? inScope.filter((s) => s.inBody && s.placeholder !== null).map((s) => ({ from: s.placeholder!, to: values.get(s.name)! })) : [];
  // A body's swaps cannot be counted before it is read: a secret that may be swapped there counts as used.
  for (const p of bodyPairs) used.add(inScope.find((s) => s.placeholder === p.from)!.name);
  for (const name of used) uses.push({ name, action: "used", reason: null });
  return { target, headers, bodyPairs, uses, reflect };
}

/**
 * Pure: an Authorization header's HTTP Basic credentials as the upstream decodes them (one character per byte), or
 * null when the header is not that. Only a canonical base64 encoding is read: one the decoder would read loosely is not
 * judged, and goes as it is.
 */
function basicCredentials(name: string, value: string): string | null {
  if (name.toLowerCase() !== "authorization") return null;
  const m = /^\s*basic\s+([A-Za-z0-9+/]+={0,2})\s*$/i.exec(value);
  if (!m) return null;
  const text = Buffer.from(m[1]!, "base64").toString("latin1");
  return Buffer.from(text, "latin1").toString("base64") === m[1] ? text : null;
}

/**
 * Pure: the pairs that turn a response's values back into this sandbox's placeholders (never reflected): each value
 * plain and in every spelling `reflectionForms` names (JSON, URL, HTML, inside base64). With no placeholder given out,
 * a value reflected comes back as a run of '*' as long as it.
 */
export function reflectionPairs(secrets: readonly BoundSecret[], values: ReadonlyMap<string, string>, forms: (value: string, placeholder: string | null) => Form[] = reflectionForms): { from: string; to: string }[] {
  const out: { from: string; to: string }[] = [];
  for (const s of secrets) {
    const v = values.get(s.name);
    if (v !== undefined && v.length > 0) out.push(...forms(v, s.placeholder));
  }
  return out;
}

export type { BindingSpec } from "./bound-secret-schema";

/** Pure: why a binding cannot be kept as given (a host that is an address, a path in a form the proxy never sees), or null. */
export function bindingProblem(spec: BindingSpec): string | null {
  // The variable holding the placeholder cannot be one sbx sets itself (a proxy, a trust file): a session would lose
  // its route out or its trust in sbx's CA.
  if (spec.env !== null && (isReservedEnv(spec.env) || SESSION_TRUST_VARS.includes(spec.env))) return `--env ${spec.env}: sbx sets that variable itself`;
  for (const h of spec.hosts) {
    const why = hostPatternProblem(h);
    if (why) return `--host ${h}: ${why}`;
  }
  for (const r of spec.rules) {
    // Patterns are matched on canonical paths: one that is not in that form would never match (or match by accident).
    const probe = canonicalPath(r.path.replaceAll("**", "x").replaceAll("*", "x"));
    if (!probe.ok || probe.query !== "") return `--path ${r.path}: not a path the proxy can match (${probe.ok ? "it has a query" : probe.reason})`;
  }
  return null;
}
