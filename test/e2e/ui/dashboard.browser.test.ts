// The dashboard of a real daemon process in a real browser (Debian's Chromium driven by playwright-core): a request the daemon's egress proxy blocks shows up live, clicking Allow lets the next one through.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { uiLaunch } from "../../../src/client/hosted";
import type { UiLaunch } from "../../../src/daemon/protocol";
import type { Store } from "../../../src/store/store";
import { makeWorld, seedSandbox, startDaemonProc, type DaemonProc, type World, startSandbox } from "../../support/daemon-proc";

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

describe.skipIf(!existsSync(CHROMIUM))(`dashboard in a real browser${existsSync(CHROMIUM) ? "" : " — skipped: needs Debian's chromium at /usr/bin/chromium"}`, () => {
  let w: World;
  let d: DaemonProc;
  let store: Store;
  let proxySocket: string;
  let launch: UiLaunch;
  let context: BrowserContext;
  let page: Page;
  let upstream: ReturnType<typeof Bun.serve>;
  const cspViolations: string[] = [];

  beforeAll(async () => {
    w = makeWorld();
    mkdirSync(ARTIFACTS, { recursive: true });
    upstream = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("hello from upstream\n") });
    const sid = seedSandbox(w, "demo", undefined, "/src/webapp");
    store = w.store();
    // The upstream is on the host's loopback: that service is published for the sandbox, its name is not on the
    // allowlist — that is what the person decides.
    const row = store.findSandbox("/src/webapp", "demo")!;
    store.updateIdentity(row.id, { ...row.identity, publish: [`127.0.0.1:${upstream.port}`] });
    // The real daemon (fake backend) with its production egress proxy guard; `*.test` names resolve to 127.0.0.1.
    d = await startDaemonProc(w, 10_000, "real-proxy");
    await startSandbox(w, "demo");
    proxySocket = join(w.paths.runtimeDir, "sb", sid, "proxy.sock");
    launch = await uiLaunch(w.client, 60_000);

    const profile = join(w.root, "profile");
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
    if (d) {
      d.proc.kill("SIGTERM");
      await d.exited;
    }
    upstream?.stop(true);
    w?.cleanup();
  });

  test("the daemon's single-use launch link becomes a cookie session and leaves the address bar", async () => {
    await page.goto(launch.url);
    expect(page.url()).toBe(launch.origin);
    await page.getByText("live", { exact: true }).waitFor({ timeout: 10_000 });
    const cookies = await context.cookies(launch.origin);
    expect(cookies).toMatchObject([{ name: "sbx_ui", httpOnly: true, sameSite: "Strict" }]);
  }, 30_000);

  test("a blocked request appears in the feed and in pending; Allow lets the next request through", async () => {
    const url = `http://blocked.test:${upstream.port}/`;
    const first = await viaProxy(proxySocket, url);
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

    const second = await viaProxy(proxySocket, url);
    expect(second.status).toBe(200);
    expect(second.body).toContain("hello from upstream");
    await page.locator("#feed li", { hasText: "decision: allow" }).first().waitFor({ timeout: 10_000 });
    await page.screenshot({ path: join(ARTIFACTS, "dashboard-after-allow.png"), fullPage: true });
    // Nothing secret reached the daemon's log.
    expect(d.log()).not.toContain(launch.ticket);
  }, 60_000);

  test("the open page reconnects by itself after the daemon restarts: no reload, and what happens next shows up live", async () => {
    d.proc.kill("SIGTERM");
    await d.exited;
    await page.getByText("reconnecting…", { exact: true }).waitFor({ timeout: 10_000 });
    d = await startDaemonProc(w, 10_000, "real-proxy");
    await startSandbox(w, "demo");
    await page.getByText("live", { exact: true }).waitFor({ timeout: 20_000 });
    const url = `http://after-restart.test:${upstream.port}/`;
    expect((await viaProxy(proxySocket, url)).status).toBe(403);
    await page.locator("#feed li", { hasText: "after-restart.test" }).first().waitFor({ timeout: 10_000 });
    await page.locator("#pending-table tbody tr", { hasText: "after-restart.test" }).waitFor({ timeout: 10_000 });
    // The same tab, never reloaded: its cookie session is still good for a decision.
    await page.locator("#pending-table tbody tr", { hasText: "after-restart.test" }).getByRole("button", { name: /^Deny/ }).click();
    await page.locator("#action-result", { hasText: "Denied" }).waitFor({ timeout: 10_000 });
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
