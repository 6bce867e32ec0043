// The dashboard's HTTP surface (hono): token → cookie session, state as JSON, a server-sent-events feed, and CSRF-checked approval buttons.
// Here: the Host check, the launch link, the session, the page; what the page reads is state-routes.ts's, what it
// changes action-routes.ts's.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Hono, type Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { toSbxError } from "../core/errors";
import { isLocalHost, safeEqual, SECURITY_HEADERS, Sessions, type LaunchTickets, type UiEnv } from "./auth";
import type { DataSource, FeedEvent } from "../events/feed";
import { actionRoutes } from "./action-routes";
import { stateRoutes } from "./state-routes";

export const SESSION_COOKIE = "sbx_ui";
export { CSRF_HEADER } from "./action-routes";

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

export function createDashboardApp(opts: DashboardAppOptions): Hono<UiEnv> {
  const { source, token } = opts;
  const now = opts.now ?? Date.now;
  const historyLimit = opts.historyLimit ?? 100;
  const keepAliveMs = opts.keepAliveMs ?? 15_000;
  const sessions = new Sessions(opts.sessionKey, now);
  const files = loadStatic();
  const app = new Hono<UiEnv>();

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

  stateRoutes(app, { source, now, historyLimit, keepAliveMs });
  actionRoutes(app, { store: source.store, publish, now, ...(opts.log ? { log: opts.log } : {}) });

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
