// What the dashboard page changes: an approval decided, an allowlist entry removed. Every one a POST from the page
// itself (same origin) carrying the session's CSRF token; PolicyService does the change, as the CLI's would.
import type { Context, Hono } from "hono";
import { z } from "zod";
import { SbxError, toSbxError } from "../core/errors";
import type { Store } from "../store/store";
import { checkSameOrigin, safeEqual, type UiEnv } from "./auth";
import type { FeedEvent } from "../events/feed";
import { PolicyService } from "../policy/service";
import { termOf, termText } from "../core/allow-term";

export const CSRF_HEADER = "x-sbx-csrf";

/** `lasts`: how long an allow lasts: absent for good, `once` (one connection), or a time as `--for` takes it (`1h`). */
const DecideBody = z.object({ choice: z.enum(["allow-global", "allow-sandbox", "deny"]), lasts: z.string().max(16).optional(), csrf: z.string().optional() });
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

export interface ActionRouteDeps {
  store: Store;
  publish: (e: FeedEvent) => void;
  now: () => number;
  log?: { warn(msg: string, fields?: Record<string, unknown>): void };
}

/** POST /api/approvals/:id/decide and POST /api/allowlist/remove. */
export function actionRoutes(app: Hono<UiEnv>, d: ActionRouteDeps): void {
  const { store, publish, now } = d;
/** Every mutation: POST, same origin, and the session's CSRF token in the header or the body. */
const mutation = async (c: Context<UiEnv>): Promise<Record<string, unknown> | Response> => {
  const origin = checkSameOrigin({
    origin: c.req.header("origin"),
    secFetchSite: c.req.header("sec-fetch-site"),
    host: c.req.header("host") ?? new URL(c.req.url).host,
  });
  if (!origin.ok) {
    d.log?.warn("ui: refused mutation", { path: c.req.path, why: origin.why });
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
    d.log?.warn("ui: refused mutation", { path: c.req.path, why: "missing or wrong CSRF token" });
    return c.json({ error: "permission", message: "refused: missing or wrong CSRF token", hint: "Reload the dashboard." }, 403);
  }
  return body;
};

const fail = (c: Context<UiEnv>, e: unknown) => {
  const err = e instanceof z.ZodError ? new SbxError("usage", `bad request: ${e.issues[0]?.message ?? "invalid"}`) : toSbxError(e);
  return c.json(err.toWire(), STATUS_OF[err.code] ?? 500);
};

app.post("/api/approvals/:id/decide", async (c) => {
  const body = await mutation(c);
  if (body instanceof Response) return body;
  try {
    const id = z.coerce.number().int().positive().parse(c.req.param("id"));
    const { choice, lasts } = DecideBody.parse(body);
    const term = termOf(lasts === undefined || lasts === "" ? {} : lasts === "once" ? { once: true } : { for: lasts });
    const r = new PolicyService({ store, publish, now }).decide(id, choice, "ui", term);
    return c.json({ ok: true, action: r.action, scope: r.scope, pattern: r.pattern, sandbox: r.sandbox.name, added: r.added, ...(term.kind === "good" ? {} : { lasts: termText(term) }) });
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
}
