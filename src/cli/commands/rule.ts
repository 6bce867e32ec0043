// The rule half of `sbx allow` and `sbx deny`: with --method, --path or --read-only, each host named gets a rule that
// sees requests (core/rules.ts) instead of a plain allowlist entry; --remove takes one away.
import { ExitCode, SbxError } from "../../core/errors";
import { READ_ONLY_METHODS, type RuleSpec } from "../../core/rules";
import type { DaemonClient } from "../../client/client";
import type { CliContext } from "../verb";
import type { scopeOf } from "../../client/sandboxes";

/** Pure: the rules `sbx allow|deny HOST… --method … --path …` asks for; null when it names none (a plain allow or deny). */
export function ruleSpecsOf(effect: "allow" | "deny", hosts: readonly string[], opts: Record<string, unknown>): RuleSpec[] | null {
  const list = (v: unknown) => (Array.isArray(v) ? (v as string[]) : typeof v === "string" ? [v] : []).flatMap((x) => x.split(",")).map((x) => x.trim()).filter(Boolean);
  const methods = list(opts.method).map((m) => m.toUpperCase());
  const paths = list(opts.path);
  const readOnly = opts.readOnly === true;
  if (methods.length === 0 && paths.length === 0 && !readOnly) {
    if (opts.remove === true) throw new SbxError("usage", `--remove takes away a rule: name it with --method, --path${effect === "allow" ? " or --read-only" : ""}`, { hint: `\`sbx ${effect === "allow" ? "deny" : "allow"} HOST\` ${effect === "allow" ? "removes a host's plain allow" : "is not how a deny is undone: remove the rule it added"}; \`sbx allowlist\` lists the rules.` });
    return null;
  }
  if (readOnly && methods.length > 0) throw new SbxError("usage", "--read-only is GET, HEAD and OPTIONS: give it or --method, not both", { hint: "e.g. sbx allow api.example.com --read-only --path '/v1/**'" });
  if (typeof opts.preset === "string") throw new SbxError("usage", "--preset names whole hosts: a rule names one host with --method/--path", { hint: "Allow the preset, then add rules for the hosts that need them." });
  if (hosts.length === 0) throw new SbxError("usage", `sbx ${effect}: which host does the rule apply to?`, { hint: `e.g. sbx ${effect} api.github.com ${effect === "allow" ? "--method GET,HEAD --path '/repos/acme/**'" : "--method DELETE"}` });
  for (const m of methods) if (!/^[A-Z]{1,20}$/.test(m)) throw new SbxError("usage", `--method ${m}: not an HTTP method`, { hint: "e.g. --method GET,HEAD" });
  for (const p of paths) if (!p.startsWith("/")) throw new SbxError("usage", `--path ${p}: a path starts with /`, { hint: "e.g. --path '/repos/acme/**'" });
  return hosts.map((host) => ({ effect, host, methods: readOnly ? [...READ_ONLY_METHODS] : methods.length ? methods : null, paths: paths.length ? paths : null }));
}

/** Adds (or removes) each rule through the daemon and says what changed. */
export async function runRule(ctx: CliContext, effect: "allow" | "deny", specs: RuleSpec[], opts: Record<string, unknown>, client: Pick<DaemonClient, "rule">, scope: ReturnType<typeof scopeOf>): Promise<number> {
  const remove = opts.remove === true;
  let changed = 0;
  for (const spec of specs) {
    const r = await client.rule({ ...scope, spec, remove });
    if (r.changed) changed++;
    if (remove) ctx.render.out(r.changed ? `removed the rule "${r.rule}" from ${r.scope}` : `no rule "${r.rule}" on ${r.scope} (see \`sbx allowlist\`)`);
    else ctx.render.out(r.changed ? `added the rule "${r.rule}" for ${r.scope}` : `the rule "${r.rule}" was already there for ${r.scope}`);
    if (r.resolved > 0) ctx.render.info(`${r.resolved} pending request${r.resolved === 1 ? "" : "s"} answered`);
  }
  if (!remove) {
    ctx.render.info(`each request to ${specs.map((s) => s.host).join(", ")} is judged on its method and path from the next one (HTTPS is ended by sbx's proxy to see it); \`sbx policy check\` shows what a request would get`);
    ctx.render.info("new sessions trust sbx's CA for it; a shell opened before the sandbox's first rule or bound secret does not yet: open a new one");
  }
  return remove && changed === 0 ? ExitCode.noInput : ExitCode.ok;
}
