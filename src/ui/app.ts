// The dashboard's HTTP surface (hono): token → cookie session, state as JSON, a server-sent-events feed, and CSRF-checked approval buttons.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Hono, type Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { streamSSE } from "hono/streaming";
import { z } from "zod";
import { BUILTIN_ALLOWLIST, isHostService, patternFor } from "../core/egress";
import { SbxError, toSbxError } from "../core/errors";
import { SSE_MAX_QUEUED } from "../core/bounds";
import { checkSameOrigin, isLocalHost, safeEqual, SECURITY_HEADERS, Sessions, type LaunchTickets, type Session } from "./auth";
import { feedFromAudit, stateFrom, type DataSource, type FeedEvent } from "../events/feed";
import { PolicyService } from "../policy/service";

export const SESSION_COOKIE = "sbx_ui";
export const CSRF_HEADER = "x-sbx-csrf";

/** The log the daemon passes in (its Logger fits). Only method, path and status are logged: never a query string. */
export interface UiLog {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
}

export interface DashboardAppOptions {
  source: DataSource;
  /** The dashboard's own token (`?token=`): never leaves the process that started the dashboard. */
  token: string;
  /** Single-use launch tickets (`?ticket=`) handed to `sbx ui`. */
  tickets?: LaunchTickets;
  log?: UiLog;
  now?: () => number;
  /** Feed history sent on connect and in /api/state. */
  historyLimit?: number;
  /** SSE keep-alive comment interval. */
  keepAliveMs?: number;
  /** Signs the cookie sessions (the same key after a restart keeps open tabs signed in); random when absent. */
  sessionKey?: string;
}

const STATIC: Record<string, { file: string; type: string }> = {
  "/static/app.js": { file: "app.js", type: "text/javascript; charset=utf-8" },
  "/static/style.css": { file: "style.css", type: "text/css; charset=utf-8" },
};

function loadStatic(): Map<string, string> {
  const dir = join(import.meta.dir, "static");
  const files = new Map<string, string>();
  for (const name of ["index.html", "app.js", "style.css"]) files.set(name, readFileSync(join(dir, name), "utf8"));
  return files;
}

const DecideBody = z.object({ choice: z.enum(["allow-global", "allow-sandbox", "deny"]), csrf: z.string().optional() });
const RemoveBody = z.object({
  sandboxId: z.union([z.number().int(), z.null()]),
  pattern: z.string().min(1).max(300),
  csrf: z.string().optional(),
});

const STATUS_OF: Partial<Record<string, 400 | 403 | 404 | 409>> = {
  usage: 400,
  invalid_name: 400,
  not_found: 404,
  conflict: 409,
  policy_denied: 403,
  permission: 403,
};

type Env = { Variables: { session: Session } };

export function createDashboardApp(opts: DashboardAppOptions): Hono<Env> {
  const { source, token } = opts;
  const { store } = source;
  const now = opts.now ?? Date.now;
  const historyLimit = opts.historyLimit ?? 100;
  const keepAliveMs = opts.keepAliveMs ?? 15_000;
  const sessions = new Sessions(opts.sessionKey, now);
  const files = loadStatic();
  const app = new Hono<Env>();

  const publish = (e: FeedEvent) => source.events.publish?.(e);

  app.use("*", async (c, next) => {
    const started = now();
    if (!isLocalHost(c.req.header("host") ?? new URL(c.req.url).host)) {
      opts.log?.warn("ui: refused request for a foreign Host", { method: c.req.method, path: c.req.path });
      return c.text("This dashboard only answers on 127.0.0.1.", 421, SECURITY_HEADERS);
    }
    await next();
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) c.res.headers.set(k, v);
    if (c.req.path !== "/api/events") {
      opts.log?.info("ui: request", { method: c.req.method, path: c.req.path, status: c.res.status, ms: now() - started });
    }
  });

  // The launch URL: trade the token (or a single-use ticket) for an HttpOnly cookie and drop it from the address bar.
  app.get("/", async (c, next) => {
    const offered = c.req.query("token");
    const ticket = c.req.query("ticket");
    if (offered === undefined && ticket === undefined) return next();
    const ok = offered !== undefined ? safeEqual(offered, token) : (opts.tickets?.redeem(ticket!) ?? false);
    if (!ok) return unauthorized(c);
    const session = sessions.create();
    setCookie(c, SESSION_COOKIE, session.id, { httpOnly: true, sameSite: "Strict", path: "/" });
    return c.redirect("/", 303);
  });

  app.use("*", async (c, next) => {
    const session = sessions.find(getCookie(c, SESSION_COOKIE));
    if (!session) return unauthorized(c);
    c.set("session", session);
    return next();
  });

  app.get("/", (c) => c.html(files.get("index.html")!));
  for (const [path, { file, type }] of Object.entries(STATIC)) {
    app.get(path, (c) => c.body(files.get(file)!, 200, { "Content-Type": type }));
  }

  const nameOf = (() => {
    const names = new Map<number, string>();
    return (id: number) => {
      if (!names.has(id)) names.set(id, store.getSandbox(id)?.name ?? `#${id}`);
      return names.get(id)!;
    };
  })();

  const history = (): FeedEvent[] =>
    store
      .listAudit({ limit: historyLimit * 2 })
      .map((r) => feedFromAudit(r, nameOf))
      .filter((e): e is FeedEvent => e !== null)
      .slice(-historyLimit);

  app.get("/api/state", (c) => {
    const sandboxes = store.listSandboxes();
    const byId = new Map(sandboxes.map((s) => [s.id, s]));
    const lastActivity = (id: number, fallback: number) => {
      const a = store.listAudit({ sandboxId: id, limit: 1 })[0]?.ts ?? 0;
      return Math.max(a, fallback);
    };
    return c.json({
      csrf: c.get("session").csrf,
      now: now(),
      sandboxes: sandboxes.map((s) => ({
        id: s.id,
        name: s.name,
        repo: s.repo,
        backend: s.backend,
        state: stateFrom(source, s),
        createdAt: s.createdAt,
        lastActivity: lastActivity(s.id, s.lastUsedAt ?? s.updatedAt),
      })),
      pending: store.listApprovals({ state: "pending" }).map((a) => ({
        id: a.id,
        sandboxId: a.sandboxId,
        sandbox: byId.get(a.sandboxId)?.name ?? nameOf(a.sandboxId),
        // What the bridge refused (`host` is its subject), or an egress request; the bridge's and a service of the
        // host's are one sandbox's: the page offers no "every sandbox" for them.
        kind: a.kind,
        sandboxOnly: a.kind === "bridge" || isHostService(patternFor(a.host, a.port)),
        host: a.host,
        port: a.port,
        reason: a.reason,
        count: a.count,
        firstSeen: a.firstSeen,
        lastSeen: a.lastSeen,
        pattern: patternFor(a.host, a.port),
      })),
      allowlists: {
        builtin: BUILTIN_ALLOWLIST,
        global: store.listAllow(null).map((e) => ({ pattern: e.pattern, addedBy: e.addedBy, addedAt: e.addedAt })),
        sandboxes: sandboxes.map((s) => ({
          id: s.id,
          name: s.name,
          entries: store.listAllow(s.id).map((e) => ({ pattern: e.pattern, addedBy: e.addedBy, addedAt: e.addedAt })),
        })),
      },
      feed: history(),
    });
  });

  app.get("/api/events", (c) =>
    streamSSE(c, async (stream) => {
      let chain: Promise<void> = Promise.resolve();
      // Events waiting to be written: a page that does not read (a tab asleep, a client that stalls) is let go past
      // SSE_MAX_QUEUED rather than held in memory; the page opens its feed again and reloads /api/state when it can.
      let queued = 0;
      const send = (event: string, data: string) => {
        if (queued >= SSE_MAX_QUEUED) return void stream.abort();
        queued++;
        chain = chain
          .then(() => stream.writeSSE({ event, data }))
          .catch(() => undefined)
          .finally(() => void queued--);
      };
      send("hello", JSON.stringify({ now: now() }));
      const unsubscribe = source.events.subscribe((e) => send("feed", JSON.stringify(e)));
      const keepAlive = setInterval(() => {
        if (queued > 0) return; // something is being written already
        chain = chain.then(() => stream.write(": keep-alive\n\n")).then(() => undefined).catch(() => undefined);
      }, keepAliveMs);
      await new Promise<void>((resolve) => {
        stream.onAbort(() => {
          unsubscribe();
          clearInterval(keepAlive);
          resolve();
        });
      });
    }),
  );

  /** Every mutation: POST, same origin, and the session's CSRF token in the header or the body. */
  const mutation = async (c: Context<Env>): Promise<Record<string, unknown> | Response> => {
    const origin = checkSameOrigin({
      origin: c.req.header("origin"),
      secFetchSite: c.req.header("sec-fetch-site"),
      host: c.req.header("host") ?? new URL(c.req.url).host,
    });
    if (!origin.ok) {
      opts.log?.warn("ui: refused mutation", { path: c.req.path, why: origin.why });
      return c.json({ error: "permission", message: `refused: ${origin.why}`, hint: "Use the dashboard page itself." }, 403);
    }
    const type = c.req.header("content-type") ?? "";
    let body: Record<string, unknown>;
    try {
      if (type.startsWith("application/json")) body = z.record(z.string(), z.unknown()).parse(await c.req.json());
      else if (type.startsWith("application/x-www-form-urlencoded")) body = Object.fromEntries(new URLSearchParams(await c.req.text()));
      else return c.json({ error: "usage", message: "expected a JSON or form body", hint: "" }, 415);
    } catch {
      return c.json({ error: "usage", message: "malformed request body", hint: "" }, 400);
    }
    const csrf = c.req.header(CSRF_HEADER) ?? (typeof body.csrf === "string" ? body.csrf : undefined);
    if (csrf === undefined || !safeEqual(csrf, c.get("session").csrf)) {
      opts.log?.warn("ui: refused mutation", { path: c.req.path, why: "missing or wrong CSRF token" });
      return c.json({ error: "permission", message: "refused: missing or wrong CSRF token", hint: "Reload the dashboard." }, 403);
    }
    return body;
  };

  const fail = (c: Context<Env>, e: unknown) => {
    const err = e instanceof z.ZodError ? new SbxError("usage", `bad request: ${e.issues[0]?.message ?? "invalid"}`) : toSbxError(e);
    return c.json(err.toWire(), STATUS_OF[err.code] ?? 500);
  };

  app.post("/api/approvals/:id/decide", async (c) => {
    const body = await mutation(c);
    if (body instanceof Response) return body;
    try {
      const id = z.coerce.number().int().positive().parse(c.req.param("id"));
      const { choice } = DecideBody.parse(body);
      const r = new PolicyService({ store, publish, now }).decide(id, choice, "ui");
      return c.json({ ok: true, action: r.action, scope: r.scope, pattern: r.pattern, sandbox: r.sandbox.name, added: r.added });
    } catch (e) {
      return fail(c, e);
    }
  });

  app.post("/api/allowlist/remove", async (c) => {
    const body = await mutation(c);
    if (body instanceof Response) return body;
    try {
      const { sandboxId, pattern } = RemoveBody.parse(typeof body.sandboxId === "string" ? { ...body, sandboxId: body.sandboxId === "" ? null : Number(body.sandboxId) } : body);
      const removed = new PolicyService({ store, publish, now }).remove(sandboxId, pattern, "ui");
      return c.json({ ok: true, removed });
    } catch (e) {
      return fail(c, e);
    }
  });

  app.notFound((c) => c.json({ error: "not_found", message: "no such page", hint: "" }, 404));
  app.onError((e, c) => {
    opts.log?.warn("ui: error", { path: c.req.path, message: toSbxError(e).message });
    return c.json(toSbxError(e).toWire(), 500);
  });
  return app;
}

function unauthorized(c: Context): Response {
  return c.text("401: this dashboard needs its launch link. Run `sbx ui` to open it.\n", 401, { "WWW-Authenticate": 'Bearer realm="sbx"' });
}
