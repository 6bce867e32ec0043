// What the egress policy would do with a connection or a request, and why, before anything is sent (`sbx policy
// check`): the same decide() and judgeRequest() the proxy runs, so the dry run and the live decision cannot differ.
// The one thing the dry run cannot know is what a name resolves to: that check (no private or host address unless
// that exact address is allowed) is said, and made when the proxy connects. Pure.
import { allowCommand, decide, type BlockReason, type CompiledPolicy, type PolicySource } from "./egress";
import { judgeRequest } from "./rules";

export interface CheckRequest {
  host: string;
  port: number;
  /** With a method and path, the request is judged too (where a rule names the host). */
  method?: string;
  target?: string;
}

export interface CheckResult {
  allowed: boolean;
  host: string;
  port: number;
  method: string | null;
  /** The canonical path judged (null when no request was given or it could not be read). */
  path: string | null;
  /** What decided: a pattern or a rule, and which list it is on; null when nothing allowed it. */
  decidedBy: { text: string; source: PolicySource; kind: "pattern" | "rule" } | null;
  reason: BlockReason | null;
  detail: string;
  /** The command that changes the outcome (allow it, or remove the rule that refuses it); null when none can. */
  fix: string | null;
  /** Requests to this host are judged one by one (a rule names it): HTTPS to it is ended by sbx's proxy. */
  judged: boolean;
}

export function checkPolicy(policy: CompiledPolicy, req: CheckRequest, sandboxName: string | null): CheckResult {
  const d = decide(policy, req.host, req.port);
  const method = req.method?.toUpperCase() ?? null;
  const scoped = (cmd: string) => (sandboxName === null || / --global\b/.test(cmd) ? cmd : `${cmd} --sandbox ${sandboxName}`);
  if (!d.allow) {
    return {
      allowed: false,
      host: d.host,
      port: req.port,
      method,
      path: null,
      decidedBy: null,
      reason: d.reason,
      detail: d.detail,
      fix: d.suggest === null ? null : sandboxName === null ? `sbx allow ${d.suggest} --global` : allowCommand(d.suggest, sandboxName),
      judged: false,
    };
  }
  const hostBy = { text: d.pattern, source: d.source, kind: d.wholeHost ? ("pattern" as const) : ("rule" as const) };
  const addressNote = d.ip ? "" : "; its addresses are checked when it is resolved (a private or host address is refused unless that exact address is allowed)";
  if (method === null || req.target === undefined) {
    return {
      allowed: true,
      host: d.host,
      port: req.port,
      method: null,
      path: null,
      decidedBy: hostBy,
      reason: null,
      detail: `${d.host}:${req.port} is allowed by the ${d.source} ${hostBy.kind} "${d.pattern}"${d.requests ? ", and each request to it is judged by its rules" : ""}${addressNote}`,
      fix: null,
      judged: d.requests,
    };
  }
  if (!d.requests) {
    return { allowed: true, host: d.host, port: req.port, method, path: null, decidedBy: hostBy, reason: null, detail: `every request to ${d.host}:${req.port} is allowed by the ${d.source} pattern "${d.pattern}"${addressNote}`, fix: null, judged: false };
  }
  const v = judgeRequest(policy.rules, { host: d.host, port: req.port, method, target: req.target }, d.wholeHost);
  if (!v.ok) {
    return { allowed: false, host: d.host, port: req.port, method, path: null, decidedBy: null, reason: v.reason, detail: v.detail, fix: v.fix === null ? null : scoped(v.fix), judged: true };
  }
  const by = d.wholeHost && v.by === d.wholeHost.pattern ? hostBy : { text: v.by, source: v.source, kind: "rule" as const };
  return { allowed: true, host: d.host, port: req.port, method, path: v.path, decidedBy: by, reason: null, detail: `${method} ${v.path} on ${d.host} is allowed by the ${by.source} ${by.kind} "${by.text}"${addressNote}`, fix: null, judged: true };
}
