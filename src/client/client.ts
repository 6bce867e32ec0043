// The typed client of the daemon's control socket: fetch over a unix socket, responses zod-checked, errors turned back into SbxError.
import type { z } from "zod";
import { SbxError } from "../core/errors";
import type { AllowTerm } from "../core/allow-term";
import {
  AgentListSchema,
  SecretBindingsSchema,
  SecretChangeSchema,
  type SecretBind,
  type SecretUnbind,
  ErrorBodySchema,
  HealthSchema,
  LIFECYCLE_LINES_TYPE,
  LifecycleLineSchema,
  LifecycleResults,
  type ErrorBody,
  type LifecycleVerb,
  LogsSchema,
  PolicyChangeSchema,
  PolicyDecisionSchema,
  PolicyLevelViewSchema,
  type PolicyLevel,
  PolicyPendingSchema,
  PolicyViewSchema,
  type PolicyPatterns,
  type PolicyRule,
  type PolicyCheck,
  PolicyRuleChangeSchema,
  PolicyCheckResultSchema,
  type PolicyShow,
  SandboxListSchema,
  SessionListSchema,
  SessionViewSchema,
  StatusSchema,
  type Health,
  type LogsQuery,
  type SessionCreate,
} from "../daemon/protocol";

/** Errors that mean "nothing listens on that socket". */
function isNoDaemon(e: unknown): boolean {
  const code = (e as { code?: string }).code ?? "";
  const msg = e instanceof Error ? e.message : String(e);
  return /ENOENT|ECONNREFUSED|FailedToOpenSocket|ConnectionRefused|ECONNRESET|ConnectionClosed/i.test(`${code} ${msg}`);
}

export function noDaemonError(socket: string, cause?: unknown): SbxError {
  return new SbxError("unavailable", `the sbx daemon is not answering on ${socket}`, {
    hint: "Start it with `sbx daemon` (or install it: `sbx service install`).",
    ...(cause === undefined ? {} : { cause }),
  });
}

/** An error as the daemon sent it, with its hint and data. */
function wireError(b: ErrorBody): SbxError {
  return new SbxError(b.error, b.message, { hint: b.hint, ...(b.data ? { data: b.data } : {}) });
}

export class DaemonClient {
  constructor(
    readonly socket: string,
    private readonly timeoutMs = 30_000,
  ) {}

  private async call<S extends z.ZodTypeAny>(
    method: "GET" | "POST",
    path: string,
    schema: S,
    body?: unknown,
    timeoutMs = this.timeoutMs,
  ): Promise<z.infer<S>> {
    let res: Response;
    try {
      res = await fetch(`http://sbx${path}`, {
        method,
        unix: this.socket,
        signal: AbortSignal.timeout(timeoutMs),
        ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
      });
    } catch (e) {
      if ((e as Error).name === "TimeoutError") {
        throw new SbxError("unavailable", `the sbx daemon did not answer ${method} ${path} within ${timeoutMs} ms`, {
          hint: "It may be busy or stuck: see `sbx status` and its log.",
        });
      }
      if (isNoDaemon(e)) throw noDaemonError(this.socket, e);
      throw e;
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new SbxError("internal", `the daemon sent a non-JSON answer to ${path} (HTTP ${res.status})`, {
        hint: "The client and daemon may be different versions: restart the daemon.",
      });
    }
    if (!res.ok) {
      const err = ErrorBodySchema.safeParse(json);
      if (err.success) throw wireError(err.data);
      throw new SbxError("internal", `the daemon answered ${path} with HTTP ${res.status}`, { hint: "See the daemon log." });
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      throw new SbxError("internal", `the daemon's answer to ${path} has an unexpected shape: ${parsed.error.issues[0]?.message}`, {
        hint: "The client and daemon may be different versions: restart the daemon.",
      });
    }
    return parsed.data;
  }

  /** The daemon's health, or null when nothing answers. */
  async health(timeoutMs = 1000): Promise<Health | null> {
    try {
      return await this.call("GET", "/health", HealthSchema, undefined, timeoutMs);
    } catch (e) {
      if (e instanceof SbxError && e.code === "unavailable") return null;
      throw e;
    }
  }

  status() {
    return this.call("GET", "/v1/status", StatusSchema);
  }

  sandboxes() {
    return this.call("GET", "/v1/sandboxes", SandboxListSchema);
  }

  /** Adds patterns to a sandbox's list or the global one (answering the pending approvals they cover). */
  allow(req: PolicyPatterns) {
    return this.call("POST", "/v1/policy/allow", PolicyChangeSchema, req);
  }

  /** Removes patterns from a list (answering pending approvals for those hosts as denied). */
  deny(req: PolicyPatterns) {
    return this.call("POST", "/v1/policy/deny", PolicyChangeSchema, req);
  }

  /** Adds or removes a rule that sees requests (`sbx allow|deny HOST --method … --path …`). */
  rule(req: PolicyRule) {
    return this.call("POST", "/v1/policy/rule", PolicyRuleChangeSchema, req);
  }

  /** What the policy would do with a connection or request, and why (`sbx policy check`). */
  policyCheck(req: PolicyCheck) {
    return this.call("POST", "/v1/policy/check", PolicyCheckResultSchema, req);
  }

  /** Binds a secret to hosts, for every sandbox or one (`sbx secret set NAME --host …`). */
  secretBind(req: SecretBind) {
    return this.call("POST", "/v1/secrets/bind", SecretChangeSchema, req);
  }

  secretUnbind(req: SecretUnbind) {
    return this.call("POST", "/v1/secrets/unbind", SecretChangeSchema, req);
  }

  /** Tells the daemon a stored value changed (`sbx secret set`/`rm`/`import`): it reads them again before answering. */
  secretsReload() {
    return this.call("POST", "/v1/secrets/reload", SecretChangeSchema, {});
  }

  secretBindings() {
    return this.call("GET", "/v1/secrets/bindings", SecretBindingsSchema);
  }

  allowlist(req: PolicyShow) {
    return this.call("POST", "/v1/policy/allowlist", PolicyViewSchema, req);
  }

  /** `sbx agents`: each agent's cache, sandboxes and host login (names of sources only). */
  agents() {
    return this.call("GET", "/v1/agents", AgentListSchema);
  }

  approvals() {
    return this.call("POST", "/v1/policy/approvals", PolicyPendingSchema, {});
  }

  decide(id: number, choice: "allow-sandbox" | "allow-global" | "deny", term?: AllowTerm) {
    return this.call("POST", "/v1/policy/decide", PolicyDecisionSchema, { id, choice, ...(term && term.kind !== "good" ? { term } : {}) });
  }

  /** `sbx policy show NAME` (no level given) or `sbx policy set NAME --level L`. */
  level(req: PolicyLevel) {
    return this.call("POST", "/v1/policy/level", PolicyLevelViewSchema, req);
  }

  logs(q: LogsQuery = {}) {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) if (v !== undefined) params.set(k, String(v));
    const wait = q.waitMs ?? 0;
    return this.call("GET", `/v1/logs?${params}`, LogsSchema, undefined, this.timeoutMs + wait);
  }

  sessions() {
    return this.call("GET", "/v1/sessions", SessionListSchema);
  }

  createSession(req: SessionCreate) {
    return this.call("POST", "/v1/sessions", SessionViewSchema, req);
  }

  /**
   * One of the sandbox service's verbs (POST /v1/lifecycle/<verb>): notes and build output go to `out` as they come;
   * resolves with the result, or throws the verb's error. No time limit: a create that builds an image, or an rm
   * whose last sync is slow, takes what it takes (a daemon that dies closes the socket, which ends the wait).
   */
  async lifecycle<V extends LifecycleVerb>(
    verb: V,
    body: unknown,
    out: { log(line: string): void; progress?(chunk: string): void },
  ): Promise<z.infer<(typeof LifecycleResults)[V]>> {
    let res: Response;
    try {
      res = await fetch(`http://sbx/v1/lifecycle/${verb}`, {
        method: "POST",
        unix: this.socket,
        body: JSON.stringify(body),
        headers: { "content-type": "application/json" },
      });
    } catch (e) {
      if (isNoDaemon(e)) throw noDaemonError(this.socket, e);
      throw e;
    }
    if (!res.ok || res.headers.get("content-type") !== LIFECYCLE_LINES_TYPE) {
      const json = await res.json().catch(() => null);
      const err = ErrorBodySchema.safeParse(json);
      if (err.success) throw wireError(err.data);
      throw new SbxError("internal", `the daemon answered ${verb} with HTTP ${res.status}`, { hint: "The client and daemon may be different versions: restart the daemon." });
    }
    const lostDaemon = () =>
      new SbxError("unavailable", `lost the sbx daemon while it ran ${verb}`, {
        hint: "See the daemon log; `sbx list` shows what exists now (a create or rm the daemon finished is complete).",
      });
    let result: unknown;
    let ended = false;
    const dec = new TextDecoder();
    let buf = "";
    const take = (line: string) => {
      if (line === "") return;
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        throw new SbxError("internal", `the daemon sent a line that is not JSON while it ran ${verb}`, { hint: "Restart the daemon." });
      }
      const l = LifecycleLineSchema.safeParse(parsed);
      if (!l.success) throw new SbxError("internal", `the daemon sent an unexpected line while it ran ${verb}`, { hint: "The client and daemon may be different versions: restart the daemon." });
      const v = l.data;
      if (v.t === "log") out.log(v.line);
      else if (v.t === "progress") out.progress?.(v.chunk);
      else if (v.t === "error") throw wireError(v.body);
      else {
        result = v.result;
        ended = true;
      }
    };
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buf += dec.decode(chunk, { stream: true });
        let i: number;
        while ((i = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          take(line);
        }
      }
    } catch (e) {
      if (e instanceof SbxError) throw e;
      throw lostDaemon();
    }
    take(buf.trim());
    if (!ended) throw lostDaemon();
    const parsed = LifecycleResults[verb].safeParse(result);
    if (!parsed.success) {
      throw new SbxError("internal", `the daemon's answer to ${verb} has an unexpected shape: ${parsed.error.issues[0]?.message}`, {
        hint: "The client and daemon may be different versions: restart the daemon.",
      });
    }
    return parsed.data as z.infer<(typeof LifecycleResults)[V]>;
  }

  /** The WebSocket URL of a session's PTY relay (Bun's `ws+unix://<socket>:<path>`). */
  attachUrl(session: string): string {
    return `ws+unix://${this.socket}:/v1/attach?session=${encodeURIComponent(session)}`;
  }
}
