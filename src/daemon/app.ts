// The control API (hono): health, status, sandboxes, logs (long-poll follow), sessions. Requests and responses are zod-checked; errors have one shape.
import type { AgentService } from "../agents/service";
import { Hono, type Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { z } from "zod";
import { SbxError, toSbxError, type ErrorCode } from "../core/errors";
import type { Sandbox } from "../core/schemas";
import { listScope } from "../core/scope";
import { scopeLabel, type PatternResult, type PolicyService, type Scope } from "../policy/service";
import type { Output, SandboxService } from "../sandboxes/service";
import type { Store } from "../store/store";
import type { Paths } from "../sys/paths";
import { adoptStagedClone } from "../workspace/staged-clone";
import type { Controller } from "./controller";
import type { ExecAgents } from "./exec-agents";
import { EXEC_FRAMES_TYPE } from "./exec-types";
import type { Hosted } from "./hosted";
import type { LimitWatch } from "./limit-watch";
import type { Logger } from "./log";
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
  SandboxActionSchema,
  SandboxExecSchema,
  SandboxListSchema,
  SandboxRefSchema,
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
  controller: Controller;
  sessions: SessionManager;
  store: Store;
  log: Logger;
  health: () => Health;
  backends: string[];
  /** The dashboard and chat bot, once started (null before, or when the daemon hosts none). */
  hosted?: () => Hosted | null;
  /** The in-sandbox exec agents (POST /v1/sandboxes/exec); without, that route always answers "no agent". */
  agents?: ExecAgents;
  /** The sandbox service (/v1/lifecycle/*); without one (a test's daemon) those routes answer not_available. */
  service?: SandboxService;
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
  const { controller, sessions, store, log } = deps;
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
    await controller.refreshPhases();
    return c.json(
      StatusSchema.parse({
        daemon: deps.health(),
        backends: deps.backends,
        guards: controller.guardNames,
        sandboxes: controller.views(),
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

  app.get("/v1/sandboxes", (c) => c.json(SandboxListSchema.parse({ sandboxes: controller.views() })));

  app.post("/v1/sandboxes/start", async (c) => {
    const ref = SandboxRefSchema.parse(await jsonBody(c));
    const sandbox = await controller.start(ref);
    const notes = ref.repo && deps.service ? await deps.service.notesOf(ref.repo, ref.name) : [];
    return c.json(SandboxActionSchema.parse({ sandbox, ...(notes.length ? { notes } : {}) }));
  });

  // Start (guards up, sandbox running), then run a command through the sandbox's exec agent, streaming its frames
  // back. Without an agent the answer is the started sandbox and `agent: false`: the caller runs it through the engine.
  app.post("/v1/sandboxes/exec", async (c) => {
    const { head, stdin } = splitExecBody(new Uint8Array(await c.req.arrayBuffer()));
    const req = SandboxExecSchema.parse(head);
    const view = await controller.start({ name: req.name, ...(req.repo ? { repo: req.repo } : {}) });
    if (!view.guarded) {
      throw new SbxError("unavailable", `sandbox '${req.name}' started but its guards are not all up`, {
        hint: "See `sbx status` and the daemon log; nothing runs in a sandbox whose proxy and bridge are down.",
      });
    }
    const agent = view.backend === "docker" ? await deps.agents?.wait(view.id, 1000) : undefined;
    if (!agent) return c.json({ ...SandboxActionSchema.parse({ sandbox: view }), agent: false });
    store.audit({ sandboxId: view.id, kind: "daemon", action: "exec", detail: { argv0: req.argv[0] ?? "", via: "agent" } });
    const row = store.getSandbox(view.id);
    const watch = deps.limits;
    const ended = watch && row ? await watch.span(row) : undefined; // the counters as the command starts
    const beforeExit = watch && row && ended ? async () => watch.notes(row, await ended()) : undefined;
    const body = agent.run({ argv: req.argv, cwd: req.cwd, env: req.env, stdin: req.stdin }, req.stdin ? stdin : undefined, beforeExit ? { beforeExit } : {});
    return new Response(body, { headers: { "content-type": EXEC_FRAMES_TYPE } });
  });

  app.post("/v1/sandboxes/stop", async (c) => {
    const ref = SandboxRefSchema.parse(await jsonBody(c));
    const sb = controller.resolve(ref);
    sessions.endFor(sb.id);
    return c.json(SandboxActionSchema.parse({ sandbox: await controller.stop(ref) }));
  });

  app.post("/v1/sandboxes/release", async (c) => {
    const ref = SandboxRefSchema.parse(await jsonBody(c));
    const sb = controller.resolve(ref);
    sessions.endFor(sb.id);
    await controller.release(ref);
    return c.json({ ok: true as const });
  });

  app.post("/v1/reconcile", async (c) => c.json(await controller.reconcile()));

  // ── the sandbox service's verbs: every answer is lines (lifecycleLines) ──
  const service = (): SandboxService => {
    if (!deps.service) throw new SbxError("not_available", "this daemon runs no sandbox service", { hint: "Restart the daemon (`sbx daemon`); see its log." });
    return deps.service;
  };
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
      const views = new Map(controller.views().map((v) => [`${v.repo}\0${v.name}`, v]));
      return LifecycleResults.list.parse({
        sandboxes: items.map((i) => {
          const v = views.get(`${i.repo}\0${i.name}`);
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
  /**
   * The sandbox `--sandbox NAME` means: this repo's (the cwd's, or --repo's) of that name; from anywhere else, the one
   * sandbox of that name there is. Two of that name in different repos need --repo, which the error names.
   */
  const sandboxNamed = async (w: { cwd: string; repoFlag?: string | undefined; asUid?: number | undefined }, name: string): Promise<Sandbox> => {
    let repo: string | null = null;
    try {
      repo = await service().repoOf(w);
    } catch (e) {
      if (w.repoFlag !== undefined) throw e;
    }
    const here = repo === null ? null : store.findSandbox(repo, name);
    if (here) return here;
    if (w.repoFlag === undefined) {
      const named = store.listSandboxes().filter((s) => s.name === name);
      if (named.length === 1) return named[0]!;
      if (named.length > 1) {
        throw new SbxError("usage", `there are sandboxes named '${name}' in ${named.length} repos: ${named.map((s) => s.repo).join(", ")}`, {
          hint: `Say which with --repo, e.g. --repo ${named[0]!.repo}.`,
        });
      }
    }
    throw new SbxError("not_found", `no sandbox '${name}'${repo === null ? "" : ` in ${repo}`}${w.repoFlag === undefined ? " or any other repo" : ""}`, {
      hint: "Run `sbx list` in the repo the sandbox was made from, or name that repo with --repo PATH.",
    });
  };
  const scopeOf = async (verb: string, req: { cwd: string; repoFlag?: string | undefined; asUid?: number | undefined; sandbox?: string | undefined; global: boolean }): Promise<Scope> => {
    const name = listScope(verb, req.sandbox, req.global);
    return name === null ? { kind: "global" } : { kind: "sandbox", sandbox: await sandboxNamed(req, name) };
  };
  const changeView = (scope: Scope, results: PatternResult[]) =>
    PolicyChangeSchema.parse({ scope: scopeLabel(scope), results: results.map((r) => ({ pattern: r.pattern, changed: r.changed, resolved: r.resolved.length })) });

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
    const sandboxId = q.sandbox ? controller.resolve({ name: q.sandbox, ...(q.repo ? { repo: q.repo } : {}) }).id : undefined;
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
    return c.json(SessionViewSchema.parse(sessions.create(req)), 201);
  });

  app.get("/v1/attach", () => {
    throw new SbxError("usage", "/v1/attach needs a WebSocket upgrade", { hint: "Use `sbx shell --attach <session>`." });
  });

  return app;
}
