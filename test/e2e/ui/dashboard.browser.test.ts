// The dashboard in a real browser (Debian's Chromium driven by playwright-core): a request the real egress proxy blocks shows up live, clicking Allow lets the next one through.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { createDecisionSink } from "../../../src/proxy/allowlist-service";
import { policyFor } from "../../../src/proxy/allowlist-service";
import { startEgressProxy, type EgressProxy } from "../../../src/proxy/egress-proxy";
import { Store } from "../../../src/store/store";
import { createEventBus, feedFromEgress } from "../../../src/ui/feed";
import { startDashboard, type Dashboard } from "../../../src/ui/server";

const CHROMIUM = "/usr/bin/chromium";
const ARTIFACTS = join(import.meta.dir, "../../../test-artifacts");

/** One HTTP/1.1 request in absolute-URI form through the proxy's unix socket, as curl sends it with HTTP_PROXY set. */
function viaProxy(socketPath: string, url: string): Promise<{ status: number; headers: string; body: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = connect({ path: socketPath });
    let buf = "";
    s.on("connect", () => s.write(`GET ${url} HTTP/1.1\r\nHost: ${u.host}\r\nConnection: close\r\n\r\n`));
    s.on("data", (d) => (buf += d.toString("utf8")));
    s.on("end", () => {
      const [head, ...rest] = buf.split("\r\n\r\n");
      resolve({ status: Number(head!.split(" ")[1]), headers: head!, body: rest.join("\r\n\r\n") });
    });
    s.on("error", reject);
    setTimeout(() => reject(new Error("proxy request timed out")), 10_000).unref();
  });
}

describe.skipIf(!existsSync(CHROMIUM))("dashboard in a real browser (skipped: needs Debian's chromium at /usr/bin/chromium)", () => {
  let dir: string;
  let store: Store;
  let proxy: EgressProxy;
  let dash: Dashboard;
  let context: BrowserContext;
  let page: Page;
  let upstream: ReturnType<typeof Bun.serve>;
  const cspViolations: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sbx-ui-e2e-"));
    mkdirSync(ARTIFACTS, { recursive: true });
    store = new Store(join(dir, "sbx.db"));
    const sb = store.createSandbox({ name: "demo", repo: "/src/webapp", backend: "fake" });
    upstream = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("hello from upstream\n") });
    // The upstream is on loopback: its address is allowlisted, its name is not — that is what the person decides.
    store.addAllow(null, `127.0.0.1:${upstream.port}`, "test");

    const bus = createEventBus();
    const sink = createDecisionSink(store, { flushMs: 20 });
    proxy = await startEgressProxy({
      socketPath: join(dir, "sb", "proxy.sock"),
      sandbox: { id: sb.id, name: sb.name },
      policy: () => policyFor(store, sb.id),
      resolve: async (h) => (h === "blocked.test" ? ["127.0.0.1"] : []),
      hostAddresses: () => [],
      onDecision: (e) => {
        // What the daemon will do: the sink records the pending approval, then the feed hears of it.
        sink.onDecision(e);
        const approval = e.type === "denied" ? store.listApprovals({ state: "pending", sandboxId: sb.id }).find((a) => a.host === e.host) : undefined;
        bus.publish(feedFromEgress(e, approval ? { id: approval.id, count: approval.count } : null));
      },
    });
    dash = startDashboard({ source: { store, events: bus } });

    const profile = join(dir, "profile");
    mkdirSync(profile);
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
      viewport: { width: 1200, height: 900 },
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on("console", (m) => {
      if (/content security policy/i.test(m.text())) cspViolations.push(m.text());
    });
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    await dash?.close();
    await proxy?.close();
    upstream?.stop(true);
    store?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("the launch URL becomes a cookie session and the token leaves the address bar", async () => {
    await page.goto(dash.launchUrl);
    expect(page.url()).toBe(dash.origin);
    await page.getByText("live", { exact: true }).waitFor({ timeout: 10_000 });
    const cookies = await context.cookies(dash.origin);
    expect(cookies).toMatchObject([{ name: "sbx_ui", httpOnly: true, sameSite: "Strict" }]);
  }, 30_000);

  test("a blocked request appears in the feed and in pending; Allow lets the next request through", async () => {
    const url = `http://blocked.test:${upstream.port}/`;
    const first = await viaProxy(proxy.socketPath, url);
    expect(first.status).toBe(403);

    const feedItem = page.locator("#feed li", { hasText: `blocked.test:${upstream.port}` }).first();
    await feedItem.waitFor({ timeout: 10_000 });
    expect(await feedItem.textContent()).toContain("denied");
    const row = page.locator("#pending-table tbody tr", { hasText: "blocked.test" });
    await row.waitFor({ timeout: 10_000 });

    await page.emulateMedia({ colorScheme: "light" });
    await page.screenshot({ path: join(ARTIFACTS, "dashboard-light.png"), fullPage: true });
    await page.emulateMedia({ colorScheme: "dark" });
    await page.screenshot({ path: join(ARTIFACTS, "dashboard-dark.png"), fullPage: true });
    await page.emulateMedia({ colorScheme: "light" });

    await row.getByRole("button", { name: /for every sandbox$/ }).click();
    await page.locator("#action-result", { hasText: "Allowed" }).waitFor({ timeout: 10_000 });
    expect(store.listAllow(null).map((e) => e.pattern)).toContain(`blocked.test:${upstream.port}`);
    expect(store.listApprovals({ state: "pending" })).toEqual([]);
    await page.locator("#pending-empty").waitFor({ state: "visible" });

    const second = await viaProxy(proxy.socketPath, url);
    expect(second.status).toBe(200);
    expect(second.body).toContain("hello from upstream");
    await page.locator("#feed li", { hasText: "decision: allow" }).first().waitFor({ timeout: 10_000 });
    await page.screenshot({ path: join(ARTIFACTS, "dashboard-after-allow.png"), fullPage: true });
  }, 60_000);

  test("keyboard: the first Tab reaches the skip link, which moves focus to the pending approvals", async () => {
    await page.reload();
    await page.getByText("live", { exact: true }).waitFor({ timeout: 10_000 });
    await page.keyboard.press("Tab");
    expect(await page.evaluate("document.activeElement?.textContent")).toBe("Skip to pending approvals");
    await page.keyboard.press("Enter");
    expect(await page.evaluate("document.activeElement?.id")).toBe("pending");
  }, 30_000);

  test("nothing on the page broke the Content-Security-Policy", () => {
    expect(cspViolations).toEqual([]);
  });
});
