// The allowlist and approvals over the control API (/v1/policy/*): the one policy service the dashboard and chat use too.
import type { Hono } from "hono";
import { SbxError } from "../core/errors";
import type { Sandbox } from "../core/schemas";
import { listScope } from "../core/scope";
import { scopeLabel, type PatternResult, type PolicyService, type Scope } from "../policy/service";
import type { SandboxService } from "../sandboxes/service";
import { jsonBody } from "./http";
import { ruleText } from "../core/rules";
import type { StoredRule } from "../store/egress-rules";
import {
  PolicyChangeSchema,
  PolicyCheckResultSchema,
  PolicyCheckSchema,
  PolicyRuleChangeSchema,
  PolicyRuleSchema,
  PolicyDecideSchema,
  PolicyDecisionSchema,
  PolicyPatternsSchema,
  PolicyPendingSchema,
  PolicyShowSchema,
  PolicyViewSchema,
} from "./protocol";

export interface PolicyRouteDeps {
  /** Resolves `--sandbox NAME`. */
  service: Pick<SandboxService, "resolve">;
  /** The allowlist and approvals; without, every route answers not_available. */
  policy?: PolicyService | undefined;
  /** Who a CLI decision is recorded as (`cli:<user>`): the control socket is the user's own (0600). */
  user?: string | undefined;
}

export function policyRoutes(app: Hono, deps: PolicyRouteDeps): void {
  const svc = deps.service;
  const policy = (): PolicyService => {
    if (!deps.policy) throw new SbxError("not_available", "this daemon runs no policy service", { hint: "Restart the daemon (`sbx daemon`); see its log." });
    return deps.policy;
  };
  const cliBy = `cli:${deps.user ?? "user"}`;
  /** The sandbox `--sandbox NAME` means: the one resolver's answer (the caller's repo's, else the one of that name anywhere). */
  const sandboxNamed = (w: { cwd: string; repoFlag?: string | undefined; asUid?: number | undefined }, name: string): Promise<Sandbox> => svc.resolve(name, w);
  const scopeOf = async (verb: string, req: { cwd: string; repoFlag?: string | undefined; asUid?: number | undefined; sandbox?: string | undefined; global: boolean }): Promise<Scope> => {
    const name = listScope(verb, req.sandbox, req.global);
    return name === null ? { kind: "global" } : { kind: "sandbox", sandbox: await sandboxNamed(req, name) };
  };
  const changeView = (scope: Scope, results: PatternResult[]) =>
    PolicyChangeSchema.parse({ scope: scopeLabel(scope), results: results.map((r) => ({ pattern: r.pattern, changed: r.changed, resolved: r.resolved.length })) });

  app.post("/v1/policy/allow", async (c) => {
    const req = PolicyPatternsSchema.parse(await jsonBody(c));
    const scope = await scopeOf("allow", req);
    return c.json(changeView(scope, policy().allow(scope, req.patterns, cliBy, req.term)));
  });

  app.post("/v1/policy/deny", async (c) => {
    const req = PolicyPatternsSchema.parse(await jsonBody(c));
    const scope = await scopeOf("deny", req);
    return c.json(changeView(scope, policy().deny(scope, req.patterns, cliBy)));
  });

  app.post("/v1/policy/allowlist", async (c) => {
    const req = PolicyShowSchema.parse(await jsonBody(c));
    const view = policy().show(req.sandbox === undefined ? null : await sandboxNamed(req, req.sandbox));
    const entry = (e: { pattern: string; addedBy: string; addedAt: number; expiresAt: number | null; once: boolean }) => ({ pattern: e.pattern, addedBy: e.addedBy, addedAt: e.addedAt, expiresAt: e.expiresAt, once: e.once });
    const rule = (r: StoredRule) => ({ rule: ruleText(r.spec), spec: r.spec, addedBy: r.addedBy, addedAt: r.addedAt });
    return c.json(
      PolicyViewSchema.parse({
        sandbox: view.sandbox && { name: view.sandbox.name, entries: view.sandbox.entries.map(entry), rules: view.sandbox.rules.map(rule) },
        global: view.global.map(entry),
        globalRules: view.globalRules.map(rule),
        builtin: [...view.builtin],
      }),
    );
  });

  app.post("/v1/policy/rule", async (c) => {
    const req = PolicyRuleSchema.parse(await jsonBody(c));
    const scope = await scopeOf(req.spec.effect, req);
    const r = policy().rule(scope, req.spec, cliBy, req.remove);
    return c.json(PolicyRuleChangeSchema.parse({ scope: scopeLabel(scope), rule: r.rule, changed: r.changed, resolved: r.resolved.length }));
  });

  app.post("/v1/policy/check", async (c) => {
    const req = PolicyCheckSchema.parse(await jsonBody(c));
    const sb = req.sandbox === undefined ? null : await sandboxNamed(req, req.sandbox);
    const r = policy().check(sb, { host: req.host, port: req.port, ...(req.method ? { method: req.method } : {}), ...(req.target !== undefined ? { target: req.target } : {}) });
    return c.json(PolicyCheckResultSchema.parse({ scope: sb ? `sandbox '${sb.name}'` : "the global list alone (no sandbox named)", ...r }));
  });

  app.post("/v1/policy/approvals", (c) => c.json(PolicyPendingSchema.parse({ pending: policy().pending() })));

  app.post("/v1/policy/decide", async (c) => {
    const req = PolicyDecideSchema.parse(await jsonBody(c));
    return c.json(PolicyDecisionSchema.parse(policy().decide(req.id, req.choice, cliBy, req.term)));
  });
}
