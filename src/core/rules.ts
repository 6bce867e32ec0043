// Egress rules that see requests, not only hosts (issue 38): an allow for some methods and paths of a host
// (`sbx allow api.github.com --method GET,HEAD --path '/repos/acme/**'`, `--read-only`), and a deny that carves
// requests out of a broader allow (`sbx deny api.github.com --method DELETE`). Pure: what a rule is, when it applies to
// a host, and the verdict for one request, judged on the canonical path the upstream acts on (credential-scope.ts).
import { canonicalPath, pathMatches } from "./credential-scope";
import { matchesAddress, matchesName, parsePattern, type AllowPattern } from "./allowlist";
import { parseIp } from "./addresses";

/** The methods a read-only rule allows. */
export const READ_ONLY_METHODS: readonly string[] = ["GET", "HEAD", "OPTIONS"];

export type { RuleSpec } from "./rules-schema";
import type { RuleSpec } from "./rules-schema";

/** Where a rule comes from, for the explanation (the same sources as the host lists'). */
export type RuleSource = "sandbox" | "global" | "level";

export interface Rule extends RuleSpec {
  source: RuleSource;
}

/** A rule compiled for matching: its host pattern parsed once. */
export interface CompiledRule extends Rule {
  pattern: AllowPattern;
  text: string;
}

/** Pure: a person's words for a rule: `allow GET,HEAD /repos/acme/** on api.github.com`. */
export function ruleText(r: RuleSpec): string {
  const what = `${r.methods ? r.methods.join(",") : "any method"} ${r.paths ? r.paths.join(" ") : "any path"}`;
  return `${r.effect} ${what} on ${r.host}`;
}

/** Pure: the `sbx allow`/`sbx deny` command that makes this rule (its flags in a fixed order). */
export function ruleCommand(r: RuleSpec): string {
  const m = r.methods ? ` --method ${r.methods.join(",")}` : "";
  const p = r.paths ? r.paths.map((x) => ` --path '${x}'`).join("") : "";
  return `sbx ${r.effect} ${r.host}${m}${p}`;
}

/** Pure: why a rule cannot be kept (its pattern, a method, a path that is not canonical), or null. */
export function ruleProblem(r: RuleSpec): string | null {
  const p = parsePattern(r.host);
  if (!p.ok) return `${r.host}: ${p.reason}`;
  if (p.canonical !== r.host) return `${r.host} is written ${p.canonical} in canonical form`;
  if (r.methods === null && r.paths === null) return "a rule names methods or paths (a host alone is a plain allow or deny)";
  for (const path of r.paths ?? []) {
    if (!path.startsWith("/")) return `--path ${path}: a path starts with /`;
    // The pattern must be a canonical path itself (with * standing for characters): what is matched is canonical.
    const c = canonicalPath(path.replace(/\*/g, "x"));
    if (!c.ok) return `--path ${path}: ${c.reason}`;
    if (c.query !== "" || path.includes("?")) return `--path ${path}: a path, without a query`;
    const segs = path.split("/");
    if (segs.some((s, i) => s.includes("**") && (s !== "**" || i !== segs.length - 1))) return `--path ${path}: '**' stands alone as the last segment`;
  }
  return null;
}

/** Compiles rules, leaving out (and naming) any that no longer parse. */
export function compileRules(rules: readonly Rule[]): { rules: CompiledRule[]; invalid: string[] } {
  const out: CompiledRule[] = [];
  const invalid: string[] = [];
  for (const r of rules) {
    const p = parsePattern(r.host);
    if (!p.ok || ruleProblem(r) !== null) invalid.push(ruleText(r));
    else out.push({ ...r, pattern: p.pattern, text: ruleText(r) });
  }
  return { rules: out, invalid };
}

/** Whether a rule's host pattern covers this normalised host (name or address) on this port. */
export function ruleCoversHost(r: CompiledRule, host: string, port: number): boolean {
  const ip = parseIp(host);
  return ip ? matchesAddress(r.pattern, ip, port) : matchesName(r.pattern, host, port);
}

/** Whether a rule covers a request's method and canonical path (its host already matched). */
export function ruleCoversRequest(r: RuleSpec, method: string, path: string): boolean {
  if (r.methods !== null && !r.methods.includes(method.toUpperCase())) return false;
  return r.paths === null || r.paths.some((p) => pathMatches(p, path));
}

/** The verdict for one request to an allowed host whose requests are judged. */
export type RequestVerdict<S extends string = string> =
  | { ok: true; path: string; query: string; by: string; source: S | RuleSource }
  | { ok: false; reason: "path-unreadable" | "denied-by-rule" | "request-not-allowed"; detail: string; rule: string | null; fix: string | null };

/**
 * Pure: one request's verdict. A deny rule covering it refuses it, whatever allows the host; else the host's plain allow
 * (`hostAllow`, when a pattern allows the whole host) or an allow rule covering its method and canonical path lets it
 * through; else it is refused, with the rule that would allow it. A path that cannot be read one way only is refused.
 */
export function judgeRequest<S extends string>(
  rules: readonly CompiledRule[],
  req: { host: string; port: number; method: string; target: string },
  hostAllow: { pattern: string; source: S } | null,
): RequestVerdict<S> {
  const c = canonicalPath(req.target);
  const method = req.method.toUpperCase();
  if (!c.ok) return { ok: false, reason: "path-unreadable", detail: `its path cannot be read one way only: ${c.reason}`, rule: null, fix: null };
  const here = rules.filter((r) => ruleCoversHost(r, req.host, req.port));
  const deny = here.find((r) => r.effect === "deny" && ruleCoversRequest(r, method, c.path));
  if (deny) {
    return { ok: false, reason: "denied-by-rule", detail: `${method} ${c.path} is refused by the ${deny.source} rule "${deny.text}"`, rule: deny.text, fix: deny.source === "level" ? null : `${ruleCommand(deny)} --remove${deny.source === "global" ? " --global" : ""}` };
  }
  if (hostAllow) return { ok: true, path: c.path, query: c.query, by: hostAllow.pattern, source: hostAllow.source };
  const allow = here.find((r) => r.effect === "allow" && ruleCoversRequest(r, method, c.path));
  if (allow) return { ok: true, path: c.path, query: c.query, by: allow.text, source: allow.source };
  const allows = here.filter((r) => r.effect === "allow").map((r) => `"${r.text}"`);
  return {
    ok: false,
    reason: "request-not-allowed",
    detail: `${method} ${c.path} is not one of what ${req.host} is allowed for (${allows.join("; ") || "no rule"})`,
    rule: null,
    fix: ruleCommand({ effect: "allow", host: here.find((r) => r.effect === "allow")?.host ?? req.host, methods: [method], paths: [c.path] }),
  };
}

/** Whether this host's requests must be judged one by one: some rule names it (a deny always; an allow when nothing allows the whole host). */
export function requestsJudged(rules: readonly CompiledRule[], host: string, port: number, wholeHostAllowed: boolean): boolean {
  return rules.some((r) => ruleCoversHost(r, host, port) && (r.effect === "deny" || !wholeHostAllowed));
}
