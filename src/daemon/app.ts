// The control API (hono): health, status, sandboxes, logs (long-poll follow), sessions. Requests and responses are zod-checked; errors have one shape.
import type { AgentService } from "../agents/service";
import { Hono, type Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { z } from "zod";
import { SbxError, toSbxError, type ErrorCode } from "../core/errors";
import type { Sandbox } from "../core/schemas";
import { listScope } from "../core/scope";
import { scopeLabel, type PatternResult, type PolicyService, type Scope } from "../policy/service";
import { secretRoutes } from "./routes-secrets";
import type { Output, SandboxService } from "../sandboxes/service";
import type { Store } from "../store/store";
import type { Paths } from "../sys/paths";
import { adoptStagedClone } from "../workspace/staged-clone";
import { sandboxView } from "./views";
import type { GuardHost } from "./guard-host";
import type { ExecAgents } from "./exec-agents";
import { EXEC_FRAMES_TYPE } from "./exec-types";
import { encodeFrame, FrameType } from "../../shims/exec-frames";
import { printable } from "../core/printable";
import type { Hosted } from "./hosted";
import type { LimitWatch } from "./limit-watch";
import type { Logger } from "../sys/log";
import {
  AuditViewSchema,
  ChatStatusSchema,
  HealthSchema,
  LIFECYCLE_LINES_TYPE,
  AgentListSchema,
  LifecycleAgentSchema,
  LifecycleCreateSchema,
  LifecycleListSchema,
  LifecycleLimitsSchema,
  LifecycleBridgeSchema,
  LifecyclePublishSchema,
  LifecyclePortSchema,
  LifecycleNamedSchema,
  LifecyclePruneSchema,
  LifecycleResults,
  LifecycleSessionSchema,
  type LifecycleLine,
  LogsQuerySchema,
  LogsSchema,
  PolicyChangeSchema,
  PolicyDecideSchema,
  PolicyDecisionSchema,
  PolicyPatternsSchema,
  PolicyPendingSchema,
  PolicyShowSchema,
  PolicyViewSchema,
  ExecAnswerSchema,
  SandboxExecSchema,
  SandboxListSchema,
  SessionCreateSchema,
  SessionListSchema,
  SessionViewSchema,
  StatusSchema,
  UiLaunchRequestSchema,
  UiLaunchSchema,
  UiTicketRequestSchema,
  UiTicketStateSchema,
  type AuditView,
  type ErrorBody,
  type Health,
} from "./protocol";
import type { SessionManager } from "./sessions";

export interface AppDeps {
  /** The guards' bookkeeping (what `sbx status` shows of each sandbox's guards). */
  guards: GuardHost;
  sessions: SessionManager;
  store: Store;
  log: Logger;
  health: () => Health;
  backends: string[];
  /** The dashboard and chat bot, once started (null before, or when the daemon hosts none). */
  hosted?: () => Hosted | null;
  /** The in-sandbox exec agents (POST /v1/sandboxes/exec); without, that route always answers "no agent". */
  agents?: ExecAgents;
  /** The sandbox service: every route that names a sandbox, starts, stops or lists one goes through it. */
  service: SandboxService;
  /** Where clones staged by the CLI live (`<cache>/sandbox-staging`). */
  paths?: Pick<Paths, "cacheDir">;
  /** The allowlist and approvals (/v1/policy/*); the dashboard and chat bot decide through the same service. */
  policy?: PolicyService;
  /** Who a CLI decision is recorded as (`cli:<user>`): the control socket is the user's own (0600). */
  user?: string;
  /** Notices limits a sandbox runs into; a command that ran into one is told so on its stderr. */
  limits?: LimitWatch;
  /** `sbx run AGENT` (/v1/lifecycle/agent); without, that route answers not_available. */
  agentRuns?: AgentService;
}

/**
 * Runs one service verb and answers with its lines as they come: notes and build output, then the result or the error.
 * The verb runs to its end even when the caller goes away: a create or rm is never left half-done by a Ctrl-C.
 */
function lifecycleLines(log: Logger, req: Request, run: (out: Output, gone: AbortSignal) => Promise<unknown>): Response {
  const enc = new TextEncoder();
  // The caller is gone when its request is aborted or it stops reading (its end of the socket closed).
  const gone = new AbortController();
  req.signal.addEventListener("abort", () => gone.abort(), { once: true });
  const stream = new ReadableStream<Uint8Array>({
    async start(ctl) {
      let open = true;
      const send = (l: LifecycleLine) => {
        if (!open) return;
        try {
          ctl.enqueue(enc.encode(`${JSON.stringify(l)}\n`));
        } catch {
          open = false; // the caller is gone; the work goes on
        }
      };
      try {
        const result = await run({ log: (line) => send({ t: "log", line }), progress: (chunk) => send({ t: "progress", chunk }) }, gone.signal);
        send({ t: "done", result });
      } catch (e) {
        const { status, body } = errorBody(e);
        if (status >= 500) log.error("lifecycle request failed", { error: body.error, message: body.message });
        send({ t: "error", body });
      }
      if (open) {
        try {
          ctl.close();
        } catch {
          /* cancelled meanwhile */
        }
      }
    },
    cancel() {
      gone.abort();
    },
  });
  return new Response(stream, { headers: { "content-type": LIFECYCLE_LINES_TYPE } });
}

/** Pure: splits an exec request body into its JSON head and the stdin bytes after it. */
export function splitExecBody(body: Uint8Array): { head: unknown; stdin: Uint8Array } {
  if (body.length < 4) throw new SbxError("usage", "exec request body is too short", { hint: "Send a u32 length, a JSON head, then stdin." });
  const n = new DataView(body.buffer, body.byteOffset, 4).getUint32(0);
  if (n > body.length - 4) throw new SbxError("usage", "exec request head is longer than the body", { hint: "Send a u32 length, a JSON head, then stdin." });
  let head: unknown;
  try {
    head = JSON.parse(new TextDecoder().decode(body.subarray(4, 4 + n)));
  } catch {
    throw new SbxError("usage", "exec request head is not JSON", { hint: "Send a u32 length, a JSON head, then stdin." });
  }
  return { head, stdin: body.subarray(4 + n) };
}

/** The start's notes as stderr frames ahead of the command's own (made printable: they may carry a repo's path). */
function withNotes(notes: readonly string[], body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const head = notes.map((n) => encodeFrame(FrameType.stderr, 0, new TextEncoder().encode(`${printable(n)}\n`)));
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    start(ctl) {
      for (const f of head) ctl.enqueue(f);
    },
    async pull(ctl) {
      const { value, done } = await reader.read();
      if (done) ctl.close();
      else ctl.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

const statusOf: Record<ErrorCode, ContentfulStatusCode> = {
  usage: 400,
  invalid_name: 400,
  not_found: 404,
  exists: 409,
  conflict: 409,
  not_available: 501,
  unavailable: 503,
  permission: 403,
  policy_denied: 403,
  config: 422,
  exec_failed: 502,
  unsynced_commits: 409,
  internal: 500,
};

/** The wire error of anything thrown: zod issues become usage errors that name the field. */
export function errorBody(e: unknown): { status: ContentfulStatusCode; body: ErrorBody } {
  if (e instanceof z.ZodError) {
    const first = e.issues[0];
    const where = first?.path.length ? `${first.path.join(".")}: ` : "";
    return {
      status: 400,
      body: { error: "usage", message: `bad request: ${where}${first?.message ?? "invalid"}`, hint: "The client and daemon may be different versions: restart the daemon (`sbx daemon`)." },
    };
  }
  const err = toSbxError(e);
  return { status: statusOf[err.code], body: err.toWire() };
}

async function jsonBody(c: Context): Promise<unknown> {
  try {
    return await c.req.json();
  } catch {
    throw new SbxError("usage", "request body is not JSON", { hint: "Send a JSON object with Content-Type: application/json." });
  }
}

function uiOf(h: Hosted | null): { origin: string } | null {
  const origin = h?.uiOrigin() ?? null;
  return origin === null ? null : { origin };
}

export function createApp(deps: AppDeps): Hono {
  const { guards, sessions, store, log } = deps;
  const svc = deps.service;
  const views = () => store.listSandboxes().map((sb) => sandboxView(sb, svc, guards));
  const app = new Hono();

  app.use(async (c, next) => {
    const t = performance.now();
    await next();
    log.debug("request", { method: c.req.method, path: c.req.path, status: c.res.status, ms: Math.round(performance.now() - t) });
  });

  app.onError((e, c) => {
    const { status, body } = errorBody(e);
    if (status >= 500) log.error("request failed", { path: c.req.path, error: body.error, message: body.message });
    return c.json(body, status);
  });

  app.notFound((c) =>
    c.json({ error: "not_found", message: `no route ${c.req.method} ${c.req.path}`, hint: "The client and daemon may be different versions: restart the daemon." } satisfies ErrorBody, 404),
  );

  app.get("/health", (c) => c.json(HealthSchema.parse(deps.health())));

  app.get("/v1/status", async (c) => {
    await svc.refreshPhases();
    return c.json(
      StatusSchema.parse({
        daemon: deps.health(),
        backends: deps.backends,
        guards: guards.guardNames,
        sandboxes: views(),
        sessions: sessions.size,
        ...(deps.hosted ? { ui: uiOf(deps.hosted()), chat: deps.hosted()?.chat() ?? { configured: false, connected: false } } : {}),
      }),
    );
  });

  const hosted = (): Hosted => {
    const h = deps.hosted?.() ?? null;
    if (!h) throw new SbxError("unavailable", "this daemon hosts no dashboard", { hint: "Restart the daemon (`sbx daemon`); see its log." });
    return h;
  };

  // The launch URL is a secret until used: it goes only to the 0600 control socket's client, never to a log.
  app.post("/v1/ui/launch", async (c) => {
    const { ttlMs } = UiLaunchRequestSchema.parse(await jsonBody(c));
    return c.json(UiLaunchSchema.parse(hosted().launch(ttlMs)));
  });

  app.post("/v1/chat/reload", async (c) => c.json(ChatStatusSchema.parse(await hosted().reloadChat())));

  app.post("/v1/ui/ticket", async (c) => {
    const { ticket } = UiTicketRequestSchema.parse(await jsonBody(c));
    return c.json(UiTicketStateSchema.parse({ state: hosted().ticketState(ticket) }));
  });

  app.get("/v1/sandboxes", (c) => c.json(SandboxListSchema.parse({ sandboxes: views() })));

  // The quick path of a piped `sbx shell|run NAME -- cmd`: the same start as every other (the service's, under the
  // sandbox's lock: guards up, then it runs), then the command through the sandbox's exec agent, its frames streamed
  // back after the start's notes (as stderr). Without an agent the answer says how to run it instead (JSON): in the
  // engine when the kind is a container whose agent has not connected, else not here (the CLI's full path).
  app.post("/v1/sandboxes/exec", async (c) => {
    const { head, stdin } = splitExecBody(new Uint8Array(await c.req.arrayBuffer()));
    const req = SandboxExecSchema.parse(head);
    const notes: string[] = [];
    const row = await svc.start(req.name, { cwd: req.cwd, repoFlag: req.repoFlag, asUid: req.asUid, foundRepo: req.foundRepo, out: { log: (l) => notes.push(l) } });
    const [caps, cwd] = await Promise.all([svc.capsOf(row), svc.sessionCwd(row, req.cwd)]);
    const agent = req.agent && caps.execAgent ? await deps.agents?.wait(row.id, 1000) : undefined;
    if (!agent) return c.json(ExecAnswerSchema.parse({ sandbox: sandboxView(row, svc, guards), cwd, notes, agent: false, engine: caps.execAgent }));
    store.audit({ sandboxId: row.id, kind: "daemon", action: "exec", detail: { argv0: req.argv[0] ?? "", via: "agent" } });
    const watch = deps.limits;
    const ended = watch ? await watch.span(row) : undefined; // the counters as the command starts
    const beforeExit = watch && ended ? async () => watch.notes(row, await ended()) : undefined;
    const env = { ...req.env, ...(await svc.secretEnv(row, undefined, { log: (l) => notes.push(l) })) };
    const body = agent.run({ argv: req.argv, cwd, env, stdin: req.stdin }, req.stdin ? stdin : undefined, beforeExit ? { beforeExit } : {});
    return new Response(notes.length ? withNotes(notes, body) : body, { headers: { "content-type": EXEC_FRAMES_TYPE } });
  });

  app.post("/v1/reconcile", async (c) => c.json(await svc.reconcile()));

  // ── the sandbox service's verbs: every answer is lines (lifecycleLines) ──
  const service = (): SandboxService => svc;
  const where = (w: { cwd: string; repoFlag?: string | undefined; asUid?: number | undefined }, out: Output) => ({
    cwd: w.cwd,
    repoFlag: w.repoFlag,
    asUid: w.asUid,
    out,
  });

  app.post("/v1/lifecycle/create", async (c) => {
    const req = LifecycleCreateSchema.parse(await jsonBody(c));
    const s = service();
    const staged = req.staged ? adoptStagedClone(deps.paths ?? { cacheDir: "/nonexistent" }, req.staged) : undefined;
    return lifecycleLines(log, c.req.raw, async (out, gone) => {
      const r = await s.create({
        ...where(req, out),
        name: req.name,
        ...(req.backend ? { backend: req.backend } : {}),
        rebuild: req.rebuild,
        overlays: req.overlays,
        ...(req.claudeAuth ? { claudeAuth: req.claudeAuth } : {}),
        ifExists: req.ifExists,
        ...(staged ? { staged } : {}),
        ...(req.shell ? { shell: req.shell } : {}),
        limits: req.limits,
        exposeCredentials: req.exposeCredentials,
        ...(req.image ? { image: req.image } : {}),
        ...(req.withChanges ? { withChanges: true } : {}),
        ...(req.ports.length ? { ports: req.ports } : {}),
        ...(req.allowWeaker ? { allowWeaker: true } : {}),
        ...(req.transparent === false ? { transparent: false } : {}),
        signal: gone,
      });
      return LifecycleResults.create.parse(r);
    });
  });

  app.get("/v1/agents", async (c) => {
    const runs = deps.agentRuns;
    if (!runs) throw new SbxError("not_available", "this daemon runs no agents", { hint: "Restart the daemon (`sbx daemon`); see its log." });
    return c.json(AgentListSchema.parse({ agents: await runs.list() }));
  });

  app.post("/v1/lifecycle/agent", async (c) => {
    const req = LifecycleAgentSchema.parse(await jsonBody(c));
    const runs = deps.agentRuns;
    if (!runs) throw new SbxError("not_available", "this daemon runs no agents", { hint: "Restart the daemon (`sbx daemon`); see its log." });
    return lifecycleLines(log, c.req.raw, async (out, gone) => {
      const r = await runs.run({
        ...where(req, out),
        agent: req.agent,
        ...(req.name ? { name: req.name } : {}),
        ...(req.version ? { version: req.version } : {}),
        unattended: req.unattended,
        ...(req.backend ? { backend: req.backend } : {}),
        rebuild: req.rebuild,
        overlays: req.overlays,
        ...(req.claudeAuth ? { claudeAuth: req.claudeAuth } : {}),
        ...(req.shell ? { shell: req.shell } : {}),
        limits: req.limits,
        exposeCredentials: req.exposeCredentials,
        ...(req.image ? { image: req.image } : {}),
        ...(req.withChanges ? { withChanges: true } : {}),
        ...(req.ports.length ? { ports: req.ports } : {}),
        ...(req.allowWeaker ? { allowWeaker: true } : {}),
        ...(req.transparent === false ? { transparent: false } : {}),
        signal: gone,
      });
      return LifecycleResults.agent.parse(r);
    });
  });

  app.post("/v1/lifecycle/start", async (c) => {
    const req = LifecycleNamedSchema.parse(await jsonBody(c));
    const s = service();
    return lifecycleLines(log, c.req.raw, async (out) => {
      const row = await s.start(req.name, where(req, out));
      return LifecycleResults.start.parse({ sandbox: row, cwd: await s.sessionCwd(row, req.cwd) });
    });
  });

  app.post("/v1/lifecycle/session", async (c) => {
    const req = LifecycleSessionSchema.parse(await jsonBody(c));
    const s = service();
    return lifecycleLines(log, c.req.raw, async (out) => {
      const argv = await s.session({ ...where(req, out), name: req.name, argv: req.argv, tty: false, stdin: req.stdin, env: req.env });
      return LifecycleResults.session.parse({ argv });
    });
  });

  app.post("/v1/lifecycle/stop", async (c) => {
    const req = LifecycleNamedSchema.parse(await jsonBody(c));
    const s = service();
    return lifecycleLines(log, c.req.raw, async (out) => LifecycleResults.stop.parse(await s.stop(req.name, { ...where(req, out), ifSessions: req.ifSessions })));
  });

  app.post("/v1/lifecycle/rebuild", async (c) => {
    const req = LifecycleNamedSchema.parse(await jsonBody(c));
    const s = service();
    return lifecycleLines(log, c.req.raw, async (out) => LifecycleResults.rebuild.parse(await s.rebuild(req.name, { ...where(req, out), ifSessions: req.ifSessions })));
  });

  app.post("/v1/lifecycle/rm", async (c) => {
    const req = LifecycleNamedSchema.parse(await jsonBody(c));
    const s = service();
    return lifecycleLines(log, c.req.raw, async (out) => LifecycleResults.rm.parse(await s.rm(req.name, { ...where(req, out), force: req.force, ifSessions: req.ifSessions })));
  });

  app.post("/v1/lifecycle/limits", async (c) => {
    const req = LifecycleLimitsSchema.parse(await jsonBody(c));
    const s = service();
    return lifecycleLines(log, c.req.raw, async (out) => LifecycleResults.limits.parse(await s.limits(req.name, { ...where(req, out), set: req.set })));
  });

  app.post("/v1/lifecycle/bridge", async (c) => {
    const req = LifecycleBridgeSchema.parse(await jsonBody(c));
    const s = service();
    return lifecycleLines(log, c.req.raw, async (out) =>
      LifecycleResults.bridge.parse(await s.bridge(req.name, { ...where(req, out), allow: req.allow, disallow: req.disallow, protect: req.protect, unprotect: req.unprotect, addRepos: req.addRepos, dropRepos: req.dropRepos, pushTo: req.pushTo, unpushTo: req.unpushTo, ...(req.prefix !== undefined ? { prefix: req.prefix } : {}), ...(req.pushRemote !== undefined ? { pushRemote: req.pushRemote } : {}) })),
    );
  });

  app.post("/v1/lifecycle/publish", async (c) => {
    const req = LifecyclePublishSchema.parse(await jsonBody(c));
    const s = service();
    return lifecycleLines(log, c.req.raw, async (out) => LifecycleResults.publish.parse(await s.publish(req.name, { ...where(req, out), add: req.add, remove: req.remove })));
  });

  app.post("/v1/lifecycle/port", async (c) => {
    const req = LifecyclePortSchema.parse(await jsonBody(c));
    const s = service();
    return lifecycleLines(log, c.req.raw, async (out) => LifecycleResults.port.parse(await s.ports(req.name, { ...where(req, out), add: req.add, remove: req.remove })));
  });

  app.post("/v1/lifecycle/prune", async (c) => {
    const req = LifecyclePruneSchema.parse(await jsonBody(c));
    const s = service();
    return lifecycleLines(log, c.req.raw, async (out) => LifecycleResults.prune.parse(await s.prune({ dryRun: req.dryRun, out })));
  });

  app.post("/v1/lifecycle/list", async (c) => {
    const req = LifecycleListSchema.parse(await jsonBody(c));
    const s = service();
    return lifecycleLines(log, c.req.raw, async () => {
      const items = await s.list({ all: req.all, ...(req.here ? { repo: await s.repoOf(req.here) } : {}) });
      // The daemon's side of each: whether its guards are up, and why not when they failed to come up.
      const seen = new Map(views().map((v) => [`${v.repo}\0${v.name}`, v]));
      return LifecycleResults.list.parse({
        sandboxes: items.map((i) => {
          const v = seen.get(`${i.repo}\0${i.name}`);
          return { ...i, guarded: v?.guarded ?? false, ...(v?.error ? { guardError: v.error } : {}) };
        }),
      });
    });
  });

  // ── the allowlist and approvals: the one policy service the dashboard and chat use too ──
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

  secretRoutes(app, { store, sandboxNamed, jsonBody: (c) => jsonBody(c as Context) });

  app.post("/v1/policy/allow", async (c) => {
    const req = PolicyPatternsSchema.parse(await jsonBody(c));
    const scope = await scopeOf("allow", req);
    return c.json(changeView(scope, policy().allow(scope, req.patterns, cliBy)));
  });

  app.post("/v1/policy/deny", async (c) => {
    const req = PolicyPatternsSchema.parse(await jsonBody(c));
    const scope = await scopeOf("deny", req);
    return c.json(changeView(scope, policy().deny(scope, req.patterns, cliBy)));
  });

  app.post("/v1/policy/allowlist", async (c) => {
    const req = PolicyShowSchema.parse(await jsonBody(c));
    const view = policy().show(req.sandbox === undefined ? null : await sandboxNamed(req, req.sandbox));
    const entry = (e: { pattern: string; addedBy: string; addedAt: number }) => ({ pattern: e.pattern, addedBy: e.addedBy, addedAt: e.addedAt });
    return c.json(
      PolicyViewSchema.parse({
        sandbox: view.sandbox && { name: view.sandbox.name, entries: view.sandbox.entries.map(entry) },
        global: view.global.map(entry),
        builtin: [...view.builtin],
      }),
    );
  });

  app.post("/v1/policy/approvals", (c) => c.json(PolicyPendingSchema.parse({ pending: policy().pending() })));

  app.post("/v1/policy/decide", async (c) => {
    const req = PolicyDecideSchema.parse(await jsonBody(c));
    return c.json(PolicyDecisionSchema.parse(policy().decide(req.id, req.choice, cliBy)));
  });

  app.get("/v1/logs", async (c) => {
    const q = LogsQuerySchema.parse(c.req.query());
    const sandboxId = q.sandbox ? (await svc.resolve(q.sandbox, { ...(q.repo ? { repo: q.repo } : {}) })).id : undefined;
    const names = new Map(store.listSandboxes({ all: true }).map((s) => [s.id, s.name]));
    const read = () =>
      store.listAudit({
        ...(sandboxId !== undefined ? { sandboxId } : {}),
        ...(q.after !== undefined ? { afterId: q.after } : {}),
        ...(q.kind !== undefined ? { kind: q.kind } : {}),
        ...(q.since !== undefined ? { since: q.since } : {}),
        limit: q.limit || (q.after !== undefined ? 10_000 : 100),
      });
    let entries = read();
    if (entries.length === 0 && q.waitMs && q.after !== undefined) {
      // Long-poll: the store is re-read rather than waiting on an event (every writer is in this daemon, but not every
      // kind of audit row is published on the bus).
      const until = Date.now() + q.waitMs;
      const aborted = () => c.req.raw.signal.aborted;
      while (entries.length === 0 && Date.now() < until && !aborted()) {
        await Bun.sleep(Math.min(100, until - Date.now()));
        entries = read();
      }
    }
    const views: AuditView[] = entries.map((e) =>
      AuditViewSchema.parse({ ...e, sandbox: e.sandboxId === null ? null : (names.get(e.sandboxId) ?? null) }),
    );
    const cursor = views.length ? views[views.length - 1]!.id : (q.after ?? 0);
    return c.json(LogsSchema.parse({ entries: views, cursor }));
  });

  app.get("/v1/sessions", (c) => c.json(SessionListSchema.parse({ sessions: sessions.list() })));

  app.post("/v1/sessions", async (c) => {
    const req = SessionCreateSchema.parse(await jsonBody(c));
    return c.json(SessionViewSchema.parse(await sessions.create(req)), 201);
  });

  app.get("/v1/attach", () => {
    throw new SbxError("usage", "/v1/attach needs a WebSocket upgrade", { hint: "Use `sbx shell --attach <session>`." });
  });

  return app;
}
