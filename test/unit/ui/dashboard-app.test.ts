// The dashboard's HTTP surface through app.request(): token → cookie, 401s, CSRF and origin refusals, decisions changing the store, CSP, no token in logs.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { createDashboardApp, CSRF_HEADER, SESSION_COOKIE, type UiLog } from "../../../src/ui/app";
import { CONTENT_SECURITY_POLICY, LaunchTickets } from "../../../src/ui/auth";
import { createEventBus, type EventBus, type FeedEvent } from "../../../src/events/feed";
import { Store } from "../../../src/store/store";
import { SSE_MAX_QUEUED } from "../../../src/core/bounds";

const TOKEN = "launch-token-" + "x".repeat(30);
const ORIGIN = "http://127.0.0.1:4321";
const HOST = "127.0.0.1:4321";

let store: Store;
let bus: EventBus;
let lines: string[];
let app: ReturnType<typeof createDashboardApp>;

const log: UiLog = {
  info: (msg, fields) => void lines.push(`${msg} ${JSON.stringify(fields ?? {})}`),
  warn: (msg, fields) => void lines.push(`${msg} ${JSON.stringify(fields ?? {})}`),
};

beforeEach(() => {
  store = new Store(":memory:");
  bus = createEventBus();
  lines = [];
  // The daemon's view of each sandbox's state, in sbx's one word (here: every one runs).
  app = createDashboardApp({ source: { store, events: bus, stateOf: () => "running" }, token: TOKEN, log });
});
afterEach(() => store.close());

function req(path: string, init: RequestInit & { headers?: Record<string, string> } = {}) {
  return app.request(`${ORIGIN}${path}`, { ...init, headers: { host: HOST, ...init.headers } });
}

/** Visits the launch URL and returns the session cookie and the CSRF token from /api/state. */
async function login(): Promise<{ cookie: string; csrf: string }> {
  const res = await req(`/?token=${encodeURIComponent(TOKEN)}`);
  const set = res.headers.get("set-cookie") ?? "";
  const cookie = set.split(";")[0]!;
  const state = (await (await req("/api/state", { headers: { cookie } })).json()) as { csrf: string };
  return { cookie, csrf: state.csrf };
}

function pending() {
  const sb = store.createSandbox({ name: "demo", repo: "/src/app", backend: "fake" });
  const a = store.recordPending(sb.id, "example.org", 443, "not-allowed: example.org is not on the allowlist")!;
  return { sb, a };
}

function post(path: string, body: unknown, headers: Record<string, string>) {
  return req(path, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json", ...headers } });
}

describe("access", () => {
  test("requests without the token or a session cookie get 401", async () => {
    for (const path of ["/", "/api/state", "/api/events", "/static/app.js"]) {
      expect((await req(path)).status).toBe(401);
    }
    expect((await req("/?token=wrong")).status).toBe(401);
    expect((await req("/api/state", { headers: { cookie: `${SESSION_COOKIE}=forged` } })).status).toBe(401);
  });

  test("the launch token is traded for an HttpOnly SameSite=Strict cookie and a redirect that drops it from the URL", async () => {
    const res = await req(`/?token=${encodeURIComponent(TOKEN)}`);
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/");
    const set = res.headers.get("set-cookie") ?? "";
    expect(set).toContain(`${SESSION_COOKIE}=`);
    expect(set).toContain("HttpOnly");
    expect(set).toContain("SameSite=Strict");
    expect(set).not.toContain(TOKEN);
    const cookie = set.split(";")[0]!;
    const page = await req("/", { headers: { cookie } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("Pending approvals");
  });

  test("a launch ticket works once, within its TTL, and never as the token", async () => {
    let now = 1_000;
    const tickets = new LaunchTickets(64, () => now);
    const a = createDashboardApp({ source: { store, events: bus }, token: TOKEN, tickets, log });
    const visit = (q: string) => a.request(`${ORIGIN}/?${q}`, { headers: { host: HOST } });
    const { ticket } = tickets.issue(60_000);
    expect(tickets.state(ticket)).toBe("unused");
    const res = await visit(`ticket=${encodeURIComponent(ticket)}`);
    expect(res.status).toBe(303);
    expect(res.headers.get("set-cookie")).toContain(`${SESSION_COOKIE}=`);
    expect(tickets.state(ticket)).toBe("used");
    // Used: a second visit (another browser, a replayed history entry) gets nothing.
    expect((await visit(`ticket=${encodeURIComponent(ticket)}`)).status).toBe(401);
    const late = tickets.issue(60_000).ticket;
    now += 60_000;
    expect(tickets.state(late)).toBe("expired");
    expect((await visit(`ticket=${encodeURIComponent(late)}`)).status).toBe(401);
    expect((await visit(`token=${encodeURIComponent(tickets.issue(1000).ticket)}`)).status).toBe(401);
    expect((await visit("ticket=forged")).status).toBe(401);
    expect(tickets.state("forged")).toBe("unknown");
    expect(lines.join("\n")).not.toContain(ticket);
  });

  test("a foreign Host (DNS rebinding) is refused even with a session", async () => {
    const { cookie } = await login();
    const res = await app.request("http://evil.example:4321/api/state", { headers: { host: "evil.example:4321", cookie } });
    expect(res.status).toBe(421);
  });

  test("every response carries a CSP that forbids inline script and any non-self source", async () => {
    const { cookie } = await login();
    for (const res of [await req("/"), await req("/", { headers: { cookie } }), await req("/static/app.js", { headers: { cookie } })]) {
      const csp = res.headers.get("content-security-policy") ?? "";
      expect(csp).toBe(CONTENT_SECURITY_POLICY);
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain("unsafe-inline");
      expect(csp).not.toMatch(/https?:|\*/);
      expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    }
  });

  test("the page has no inline script or style and loads nothing from elsewhere", async () => {
    const { cookie } = await login();
    const html = await (await req("/", { headers: { cookie } })).text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/\sstyle=|<style/);
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
  });
});

describe("mutations", () => {
  test("Allow for this sandbox only adds the host to that sandbox's list and decides the approval", async () => {
    const { sb, a } = pending();
    const { cookie, csrf } = await login();
    const res = await post(`/api/approvals/${a.id}/decide`, { choice: "allow-sandbox" }, { cookie, origin: ORIGIN, "sec-fetch-site": "same-origin", [CSRF_HEADER]: csrf });
    expect(res.status).toBe(200);
    expect(store.listAllow(sb.id).map((e) => e.pattern)).toEqual(["example.org"]);
    expect(store.listAllow(null)).toEqual([]);
    expect(store.listApprovals({ state: "pending" })).toEqual([]);
    expect(store.listApprovals({ state: "allowed" })[0]?.decidedBy).toBe("ui");
  });

  test("Allow adds it to the global list and answers every sandbox's pending request for it", async () => {
    const { a } = pending();
    const other = store.createSandbox({ name: "other", repo: "/src/app", backend: "fake" });
    store.recordPending(other.id, "example.org", 443, "not-allowed");
    const seen: FeedEvent[] = [];
    bus.subscribe((e) => seen.push(e));
    const { cookie, csrf } = await login();
    const res = await post(`/api/approvals/${a.id}/decide`, { choice: "allow-global" }, { cookie, origin: ORIGIN, [CSRF_HEADER]: csrf });
    expect(res.status).toBe(200);
    expect(store.listAllow(null).map((e) => e.pattern)).toEqual(["example.org"]);
    expect(store.listApprovals({ state: "pending" })).toEqual([]);
    expect(seen).toMatchObject([{ kind: "decision", action: "allow", scope: "global", pattern: "example.org", by: "ui" }]);
  });

  test("Deny decides the approval and adds nothing; the form-encoded CSRF field works too", async () => {
    const { sb, a } = pending();
    const { cookie, csrf } = await login();
    const res = await req(`/api/approvals/${a.id}/decide`, {
      method: "POST",
      body: new URLSearchParams({ choice: "deny", csrf }).toString(),
      headers: { cookie, origin: ORIGIN, "content-type": "application/x-www-form-urlencoded" },
    });
    expect(res.status).toBe(200);
    expect(store.listApprovals({ state: "denied" }).map((x) => x.id)).toEqual([a.id]);
    expect(store.listAllow(sb.id)).toEqual([]);
  });

  test("approval-once / approval-lapses: the page's Once and For 1 hour answer with a one-time or timed entry; a bad time changes nothing", async () => {
    const { sb, a } = pending();
    const b = store.recordPending(sb.id, "timed.example", 443, "not-allowed")!;
    const c = store.recordPending(sb.id, "bad.example", 443, "not-allowed")!;
    const { cookie, csrf } = await login();
    const h = { cookie, origin: ORIGIN, [CSRF_HEADER]: csrf };
    expect(await (await post(`/api/approvals/${a.id}/decide`, { choice: "allow-sandbox", lasts: "once" }, h)).json()).toMatchObject({ action: "allow", lasts: "once (one connection)" });
    expect((await post(`/api/approvals/${b.id}/decide`, { choice: "allow-sandbox", lasts: "1h" }, h)).status).toBe(200);
    expect((await post(`/api/approvals/${c.id}/decide`, { choice: "allow-sandbox", lasts: "forever" }, h)).status).toBe(400);
    const byPattern = Object.fromEntries(store.listAllow(sb.id).map((e) => [e.pattern, e]));
    expect(byPattern["example.org"]).toMatchObject({ once: true });
    expect(byPattern["timed.example"]).toMatchObject({ once: false, expiresAt: expect.any(Number) });
    expect(byPattern["bad.example"]).toBeUndefined();
    expect(store.listApprovals({ state: "pending" }).map((x) => x.id)).toEqual([c.id]);
  });

  test("a non-default port is allowed as host:port", async () => {
    const sb = store.createSandbox({ name: "demo", repo: "/src/app", backend: "fake" });
    const a = store.recordPending(sb.id, "example.org", 8443, "not-allowed")!;
    const { cookie, csrf } = await login();
    await post(`/api/approvals/${a.id}/decide`, { choice: "allow-sandbox" }, { cookie, origin: ORIGIN, [CSRF_HEADER]: csrf });
    expect(store.listAllow(sb.id).map((e) => e.pattern)).toEqual(["example.org:8443"]);
  });

  test("a cross-site POST is refused even with the right CSRF token and cookie", async () => {
    const { sb, a } = pending();
    const { cookie, csrf } = await login();
    const cases: Record<string, string>[] = [
      { origin: "https://evil.example", [CSRF_HEADER]: csrf },
      { origin: ORIGIN, "sec-fetch-site": "cross-site", [CSRF_HEADER]: csrf },
      { origin: ORIGIN, "sec-fetch-site": "same-site", [CSRF_HEADER]: csrf },
      { "sec-fetch-site": "same-origin", [CSRF_HEADER]: csrf },
      { origin: "null", [CSRF_HEADER]: csrf },
    ];
    for (const h of cases) {
      const res = await post(`/api/approvals/${a.id}/decide`, { choice: "allow-sandbox" }, { cookie, ...h });
      expect(res.status).toBe(403);
    }
    expect(store.listAllow(sb.id)).toEqual([]);
    expect(store.listApprovals({ state: "pending" })).toHaveLength(1);
  });

  test("a same-origin POST without the CSRF token, or with another session's, is refused", async () => {
    const { sb, a } = pending();
    const { cookie } = await login();
    const other = await login();
    expect((await post(`/api/approvals/${a.id}/decide`, { choice: "allow-sandbox" }, { cookie, origin: ORIGIN })).status).toBe(403);
    expect((await post(`/api/approvals/${a.id}/decide`, { choice: "allow-sandbox" }, { cookie, origin: ORIGIN, [CSRF_HEADER]: other.csrf })).status).toBe(403);
    expect(store.listAllow(sb.id)).toEqual([]);
  });

  test("mutations are POST only", async () => {
    const { a } = pending();
    const { cookie, csrf } = await login();
    const res = await req(`/api/approvals/${a.id}/decide?choice=allow-sandbox`, { headers: { cookie, origin: ORIGIN, [CSRF_HEADER]: csrf } });
    expect(res.status).toBe(404);
    expect(store.listApprovals({ state: "pending" })).toHaveLength(1);
  });

  test("deciding an approval twice, or one that does not exist, is a 404 with a hint", async () => {
    const { a } = pending();
    const { cookie, csrf } = await login();
    const h = { cookie, origin: ORIGIN, [CSRF_HEADER]: csrf };
    expect((await post(`/api/approvals/${a.id}/decide`, { choice: "deny" }, h)).status).toBe(200);
    const again = await post(`/api/approvals/${a.id}/decide`, { choice: "deny" }, h);
    expect(again.status).toBe(404);
    expect(((await again.json()) as { hint: string }).hint).toContain("sbx approvals");
    expect((await post(`/api/approvals/999/decide`, { choice: "bogus" }, h)).status).toBe(400);
  });

  test("Remove takes an entry off a list", async () => {
    const sb = store.createSandbox({ name: "demo", repo: "/src/app", backend: "fake" });
    store.addAllow(sb.id, "example.org", "cli");
    store.addAllow(null, "pypi.org", "cli");
    const { cookie, csrf } = await login();
    const h = { cookie, origin: ORIGIN, [CSRF_HEADER]: csrf };
    expect((await post("/api/allowlist/remove", { sandboxId: sb.id, pattern: "example.org" }, h)).status).toBe(200);
    expect((await post("/api/allowlist/remove", { sandboxId: null, pattern: "pypi.org" }, h)).status).toBe(200);
    expect(store.listAllow(sb.id)).toEqual([]);
    expect(store.listAllow(null)).toEqual([]);
  });
});

describe("state and feed", () => {
  test("/api/state lists sandboxes, pending approvals, allowlists and feed history", async () => {
    const { sb } = pending();
    store.addAllow(null, "pypi.org", "cli");
    store.audit({ sandboxId: sb.id, kind: "egress", action: "denied", detail: { method: "CONNECT", host: "example.org", port: 443, reason: "not-allowed" } });
    const { cookie } = await login();
    const state = (await (await req("/api/state", { headers: { cookie } })).json()) as Record<string, unknown>;
    expect(state.sandboxes).toMatchObject([{ name: "demo", state: "running", repo: "/src/app" }]);
    expect(state.pending).toMatchObject([{ sandbox: "demo", host: "example.org", port: 443, pattern: "example.org", kind: "egress", sandboxOnly: false }]);
    // What the bridge refused, and a service of the host, are one sandbox's: the page is told so (no "every sandbox").
    store.recordPending(sb.id, "push main", 0, "outside sbx/demo/", "bridge");
    store.recordPending(sb.id, "127.0.0.1", 5432, "host-address");
    const more = (await (await req("/api/state", { headers: { cookie } })).json()) as { pending: { host: string; kind: string; sandboxOnly: boolean }[] };
    expect(more.pending.map((p) => [p.host, p.kind, p.sandboxOnly]).sort()).toEqual([
      ["127.0.0.1", "egress", true],
      ["example.org", "egress", false],
      ["push main", "bridge", true],
    ]);
    expect(state.allowlists).toMatchObject({ global: [{ pattern: "pypi.org" }], sandboxes: [{ name: "demo", entries: [] }] });
    expect(state.feed).toMatchObject([{ kind: "egress", action: "denied", host: "example.org", sandbox: { name: "demo" } }]);
  });

  test("the SSE stream sends bus events as `feed` messages and unsubscribes when the client goes", async () => {
    const { cookie } = await login();
    const ctl = new AbortController();
    const res = await req("/api/events", { headers: { cookie }, signal: ctl.signal });
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    const readUntil = async (needle: string) => {
      while (!text.includes(needle)) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value);
      }
    };
    await readUntil("event: hello");
    expect(bus.size()).toBe(1);
    bus.publish({ kind: "egress", at: 1, sandbox: { id: 1, name: "demo" }, action: "denied", method: "CONNECT", host: "example.org", port: 443, reason: "not-allowed" });
    await readUntil("example.org");
    expect(text).toContain("event: feed");
    ctl.abort();
    await reader.cancel().catch(() => undefined);
    for (let i = 0; i < 50 && bus.size() > 0; i++) await Bun.sleep(10);
    expect(bus.size()).toBe(0);
  });
});

describe("bounded: the dashboard feed", () => {
  test(`a connection that does not read is closed once ${SSE_MAX_QUEUED} events wait for it (the page reconnects and reloads its state)`, async () => {
    const { cookie } = await login();
    const res = await req("/api/events", { headers: { cookie } });
    const reader = res.body!.getReader();
    await reader.read(); // the hello; nothing more is read
    for (let i = 0; i < SSE_MAX_QUEUED * 40; i++) {
      bus.publish({ kind: "decision", at: i, sandbox: null, action: "allow", pattern: `p${i}-${"x".repeat(2000)}.example`, scope: "global", by: "cli:u" });
    }
    // It was let go: no listener left on the bus, and the stream ends.
    for (let i = 0; i < 100 && bus.size() > 0; i++) await Bun.sleep(10);
    expect(bus.size()).toBe(0);
    let ended = false;
    for (let i = 0; i < 100000 && !ended; i++) ended = (await reader.read()).done;
    expect(ended).toBe(true);
  });
});

describe("logs", () => {
  test("the token never appears in any log line, whatever is requested", async () => {
    const { a } = pending();
    await req(`/?token=${encodeURIComponent(TOKEN)}`);
    await req(`/?token=${encodeURIComponent(TOKEN)}x`);
    await req(`/api/state?token=${encodeURIComponent(TOKEN)}`);
    const { cookie, csrf } = await login();
    await post(`/api/approvals/${a.id}/decide?token=${TOKEN}`, { choice: "deny" }, { cookie, origin: "https://evil.example", [CSRF_HEADER]: csrf });
    await post(`/api/approvals/${a.id}/decide`, { choice: "deny" }, { cookie, origin: ORIGIN, [CSRF_HEADER]: TOKEN });
    expect(lines.length).toBeGreaterThan(5);
    for (const l of lines) {
      expect(l).not.toContain(TOKEN);
      expect(l).not.toContain(csrf);
      expect(l).not.toContain(cookie.split("=")[1]!);
    }
  });
});
