// The daemon's approvals listener (hono): where answers from outside come back. A one-time link (GET shows the
// approval and changes nothing, so a chat's link preview cannot decide; POST decides once), the signed decision API
// (sbx's v1 scheme, a timestamp window and a nonce seen once), and Slack's interactivity requests. No cookies, no
// session: every request carries its own authority, and every decision goes through decideBound.
import { Hono, type Context } from "hono";
import { z } from "zod";
import type { UiLog } from "../ui/app";
import { isLocalHost } from "../ui/auth";
import { decideBound, decisionLine, describeApproval, type DecideDeps } from "./decide";
import type { DecisionLinks, LinkState } from "./links";
import { CHECK_TEXT, SBX_SIGNATURE, SBX_TIMESTAMP, SeenOnce, verify } from "./signing";
import { DECIDE_PATH, LINK_PATH, SLACK_PATH } from "./webhook";

/** The most a request to the listener may carry (a Slack payload is a few KiB). */
export const HOOK_BODY_MAX = 64 * 1024;

export interface HooksAppOptions {
  decide: DecideDeps;
  /** The one-time links (the webhook's); null: none are issued. */
  links: DecisionLinks | null;
  /** The webhook's signing secret (the signed decision API); null: the API is off. */
  webhookSecret: string | null;
  /** Slack's interactivity handler; null: Slack is not set up. */
  slack: { interact(body: Uint8Array, headers: Headers): Response } | null;
  /** Host names (no port) besides loopback that requests may name: the public URL's, a non-loopback listen address. */
  hosts: readonly string[];
  /** The public URL's path, when the proxy in front forwards it as is (`/sbx`); "" for none. */
  basePath: string;
  log?: UiLog;
  now?: () => number;
}

const HEADERS: Record<string, string> = {
  "Content-Security-Policy": "default-src 'none'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
  "Cache-Control": "no-store",
};

const DecisionSchema = z
  .object({
    approval: z.number().int().positive(),
    sandbox: z.number().int().positive(),
    choice: z.enum(["allow-sandbox", "deny"]),
    nonce: z.string().regex(/^[A-Za-z0-9_-]{16,128}$/, "a nonce of 16 to 128 letters, digits, _ or -"),
  })
  .strict();

function html(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex"><title>${html(title)}</title></head><body><h1>${html(title)}</h1>${body}</body></html>\n`;
}

const LINK_DEAD: Record<Exclude<LinkState, "unused">, string> = {
  used: "This link was used already: it answers once.",
  expired: "This link has expired.",
  unknown: "This link is not known here (it may be from before the daemon restarted, or mistyped).",
};

/** Raw body bytes, within HOOK_BODY_MAX (a longer one is refused before it is read whole where the length is said). */
async function rawBody(c: Context): Promise<Uint8Array | null> {
  const said = Number(c.req.header("content-length") ?? "0");
  if (said > HOOK_BODY_MAX) return null;
  const b = new Uint8Array(await c.req.arrayBuffer());
  return b.length > HOOK_BODY_MAX ? null : b;
}

export function createHooksApp(o: HooksAppOptions): Hono {
  const now = o.now ?? Date.now;
  const hosts = new Set(o.hosts.map((h) => h.toLowerCase()));
  const nonces = new SeenOnce();
  const app = new Hono();
  const routes = new Hono();

  app.use("*", async (c, next) => {
    const host = (c.req.header("host") ?? new URL(c.req.url).host).toLowerCase();
    const name = host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : host.split(":")[0]!;
    if (!isLocalHost(host) && !hosts.has(name)) {
      o.log?.warn("approvals listener: refused a request for a foreign Host", { method: c.req.method });
      return c.text("This listener answers only for its own addresses.\n", 421, HEADERS);
    }
    await next();
    for (const [k, v] of Object.entries(HEADERS)) c.res.headers.set(k, v);
  });

  const linkPage = (c: Context, token: string) => {
    const p = o.links?.peek(token) ?? { state: "unknown" as const, target: null };
    if (p.state !== "unused" || p.target === null) return c.html(page("Nothing to answer", `<p>${html(LINK_DEAD[p.state as Exclude<LinkState, "unused">])} Nothing changed. On the host, <code>sbx approvals</code> lists what waits.</p>`), p.state === "unknown" ? 404 : 410);
    const a = o.decide.store.getApproval(p.target.approvalId);
    const sb = o.decide.store.getSandbox(p.target.sandboxId);
    if (a === null || sb === null || a.sandboxId !== sb.id || a.state !== "pending") {
      return c.html(page("Already answered", `<p>This approval was answered already${a?.decidedBy ? ` (${html(a.state)} by ${html(a.decidedBy)})` : ""}. Nothing changed.</p>`), 409);
    }
    const { asks } = describeApproval(a);
    return c.html(
      page(
        `${sb.name} asks to ${asks}`,
        `<p>Sandbox <strong>${html(sb.name)}</strong> asks to ${html(asks)}.</p><p>${html(a.reason)}</p>` +
          `<form method="post"><button name="choice" value="allow-sandbox">Allow for ${html(sb.name)}</button> <button name="choice" value="deny">Deny</button></form>` +
          `<p>This link answers once.</p>`,
      ),
    );
  };

  routes.get(`${LINK_PATH}:token`, (c) => linkPage(c, c.req.param("token")));

  routes.post(`${LINK_PATH}:token`, async (c) => {
    const body = await rawBody(c);
    const choice = body === null ? null : new URLSearchParams(new TextDecoder().decode(body)).get("choice");
    if (choice !== "allow-sandbox" && choice !== "deny") return c.html(page("Not understood", "<p>Choose Allow or Deny on the link's page. Nothing changed.</p>"), 400);
    // Used up before the decision is taken: two answers racing on one link, one wins.
    const r = o.links?.redeem(c.req.param("token")) ?? { state: "unknown" as const, target: null };
    if (r.state !== "unused" || r.target === null) {
      o.log?.warn("approvals listener: a dead link was used", { state: r.state });
      return c.html(page("Nothing to answer", `<p>${html(LINK_DEAD[r.state as Exclude<LinkState, "unused">])} Nothing changed.</p>`), r.state === "unknown" ? 404 : 410);
    }
    const d = decideBound(o.decide, r.target, choice, "webhook:link");
    if (!d.ok) return c.html(page("Nothing changed", `<p>${html(d.message)}.</p>`), d.status);
    o.log?.info("approvals listener: decided through a link", { approval: r.target.approvalId, action: d.decision.action });
    return c.html(page("Done", `<p>${html(decisionLine(d.decision, d.sandbox.name))}.</p>`));
  });

  routes.post(DECIDE_PATH, async (c) => {
    if (o.webhookSecret === null) return c.json({ error: "not_found", message: "the signed decision API is off (no webhook is set up)", hint: "" }, 404);
    const body = await rawBody(c);
    if (body === null) return c.json({ error: "usage", message: `the body is over ${HOOK_BODY_MAX} bytes`, hint: "" }, 413);
    const check = verify(o.webhookSecret, "v1", { timestamp: c.req.header(SBX_TIMESTAMP), signature: c.req.header(SBX_SIGNATURE), body }, now());
    if (!check.ok) {
      o.log?.warn("approvals listener: refused an unsigned or badly signed decision", { why: check.why });
      return c.json({ error: "permission", message: `refused: ${CHECK_TEXT[check.why]}`, hint: "Sign as `sbx help chat-setup` says: v1=HMAC-SHA256(secret, \"v1:\" + timestamp + \":\" + body)." }, 401);
    }
    let parsed: z.infer<typeof DecisionSchema>;
    try {
      parsed = DecisionSchema.parse(JSON.parse(new TextDecoder().decode(body)));
    } catch (e) {
      const why = e instanceof z.ZodError ? `${e.issues[0]?.path.join(".")}: ${e.issues[0]?.message}` : "not JSON";
      return c.json({ error: "usage", message: `bad decision: ${why}`, hint: '{"approval": ID, "sandbox": SANDBOX_ID, "choice": "allow-sandbox"|"deny", "nonce": RANDOM}' }, 400);
    }
    // The nonce is remembered only once the signature holds: a forger cannot fill the memory.
    const once = nonces.take(parsed.nonce, now());
    if (once !== "new") {
      o.log?.warn("approvals listener: refused a replayed decision", { approval: parsed.approval });
      return once === "seen"
        ? c.json({ error: "conflict", message: "refused: this nonce was used already (a replayed decision)", hint: "Send each decision with a fresh nonce." }, 409)
        : c.json({ error: "unavailable", message: "refused: too many decisions at once", hint: "Try again in a few minutes." }, 429);
    }
    const d = decideBound(o.decide, { approvalId: parsed.approval, sandboxId: parsed.sandbox }, parsed.choice, "webhook:api");
    if (!d.ok) return c.json({ error: d.code === "not_found" ? "not_found" : d.code === "answered" ? "conflict" : "permission", message: d.message, hint: "" }, d.status);
    o.log?.info("approvals listener: decided through the signed API", { approval: parsed.approval, action: d.decision.action });
    return c.json({ ok: true, approval: parsed.approval, sandbox: d.sandbox.name, action: d.decision.action, pattern: d.decision.pattern });
  });

  routes.post(SLACK_PATH, async (c) => {
    if (o.slack === null) return c.text("Slack is not set up here.\n", 404);
    const body = await rawBody(c);
    if (body === null) return c.text("too large\n", 413);
    return o.slack.interact(body, c.req.raw.headers);
  });

  app.route("/", routes);
  if (o.basePath !== "" && o.basePath !== "/") app.route(o.basePath, routes);
  app.notFound((c) => c.text("not found\n", 404));
  app.onError((e, c) => {
    o.log?.warn("approvals listener: error", { message: (e as Error).message });
    return c.text("internal error\n", 500);
  });
  return app;
}
