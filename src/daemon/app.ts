// The control API (hono): health, status, the dashboard's launch, sessions; the route groups register from their files
// (routes-lifecycle.ts, routes-agents.ts, routes-exec.ts, routes-secrets.ts, routes-policy.ts, routes-levels.ts, routes-logs.ts).
// Requests and responses are zod-checked; errors have one shape (http.ts).
import type { AgentService } from "../agents/service";
import { Hono, type Context } from "hono";
import { SbxError } from "../core/errors";
import type { PolicyService } from "../policy/service";
import type { SandboxService } from "../sandboxes/service";
import type { Store } from "../store/store";
import type { Paths } from "../sys/paths";
import { sandboxView } from "./views";
import type { GuardHost } from "./guard-host";
import type { ExecAgents } from "./exec-agents";
import type { Hosted } from "./hosted";
import type { LimitWatch } from "./limit-watch";
import type { Logger } from "../sys/log";
import { errorBody, jsonBody } from "./http";
import { agentRoutes } from "./routes-agents";
import { execRoutes } from "./routes-exec";
import { lifecycleRoutes } from "./routes-lifecycle";
import { logsRoutes } from "./routes-logs";
import { policyRoutes } from "./routes-policy";
import { levelRoutes } from "./routes-levels";
import { secretRoutes } from "./routes-secrets";
import {
  ChatStatusSchema,
  HealthSchema,
  SandboxListSchema,
  SessionCreateSchema,
  SessionListSchema,
  SessionViewSchema,
  StatusSchema,
  UiLaunchRequestSchema,
  UiLaunchSchema,
  UiTicketRequestSchema,
  UiTicketStateSchema,
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
  paths?: Pick<Paths, "cacheDir" | "configDir">;
  /** The allowlist and approvals (/v1/policy/*); the dashboard and chat bot decide through the same service. */
  policy?: PolicyService;
  /** Who a CLI decision is recorded as (`cli:<user>`): the control socket is the user's own (0600). */
  user?: string;
  /** Notices limits a sandbox runs into; a command that ran into one is told so on its stderr. */
  limits?: LimitWatch;
  /** `sbx run AGENT` (/v1/lifecycle/agent); without, that route answers not_available. */
  agentRuns?: AgentService;
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
        ...(deps.hosted ? { ui: uiOf(deps.hosted()), chat: deps.hosted()?.chat() ?? { configured: false, connected: false }, approvals: deps.hosted()?.channels() ?? { configured: false } } : {}),
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

  execRoutes(app, { service: svc, guards, store, agents: deps.agents, limits: deps.limits });
  lifecycleRoutes(app, { service: svc, log, views, paths: deps.paths });
  agentRoutes(app, { log, agentRuns: deps.agentRuns });
  secretRoutes(app, { store, ...(deps.paths ? { configDir: deps.paths.configDir } : {}), sandboxNamed: (w, name) => svc.resolve(name, w), jsonBody: (c) => jsonBody(c as Context) });
  policyRoutes(app, { service: svc, policy: deps.policy, user: deps.user });
  levelRoutes(app, { service: svc, store });
  logsRoutes(app, { service: svc, store });

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
