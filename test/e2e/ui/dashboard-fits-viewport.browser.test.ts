// The dashboard at a phone's 360 px and a desktop's 1280 px, in a real browser (Debian's Chromium, playwright-core) against a real daemon: no sideways scrolling, long names wrap inside the viewport, every button is a 44 px target, and a tap on "Allow for this sandbox" decides.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { uiLaunch } from "../../../src/client/hosted";
import type { Store } from "../../../src/store/store";
import { makeWorld, seedSandbox, startDaemonProc, type DaemonProc, type World } from "../../support/daemon-proc";

const CHROMIUM = "/usr/bin/chromium";
const ARTIFACTS = join(import.meta.dir, "../../../test-artifacts");

const PHONE = { width: 360, height: 740, isMobile: true, hasTouch: true, deviceScaleFactor: 2 } as const;
const DESKTOP = { width: 1280, height: 800, isMobile: false, hasTouch: false, deviceScaleFactor: 1 } as const;
type Viewport = typeof PHONE | typeof DESKTOP;

// Names as long as sbx lets them be: a 63-character sandbox name with no '-' to break at, host names of many labels
// and one 63-character label, a repo path, a bridge subject with a long branch name.
const LONG_SANDBOX = "averylongsandboxnamewithoutanyhyphenssothatitcannotbreakanywher";
const HYPHEN_SANDBOX = "refactor-the-authentication-middleware-and-session-store-v2";
const LONG_HOST = "a-very-long-subdomain-for-testing-wrapping.eu-west-1.storage.internal.example-cloud-provider.test";
const LABEL_HOST = "thisisasinglelabelofsixtythreecharacterswithnodotsorhyphensxyzw.example.test";
const LONG_REPO = "/home/someone/src/github.com/some-organisation/a-repository-with-quite-a-long-name-indeed";
const BRIDGE_SUBJECT = "push feature/a-branch-name-that-goes-on-and-on-for-quite-a-while-longer-than-a-phone";

/** What the page's probe (layout-probe.js, in the page's own JS) measures: see that file. */
const PROBE = join(import.meta.dir, "layout-probe.js");
const textProblems = "sbxLayout.textProblems()";
const buttonProblems = "sbxLayout.buttonProblems()";

describe.skipIf(!existsSync(CHROMIUM))(`the dashboard fits its viewport${existsSync(CHROMIUM) ? "" : " — skipped: needs Debian's chromium at /usr/bin/chromium"}`, () => {
  let w: World;
  let d: DaemonProc;
  let store: Store;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const pages = new Map<number, Page>();

  beforeAll(async () => {
    w = makeWorld();
    mkdirSync(ARTIFACTS, { recursive: true });
    seedSandbox(w, "demo", "running", "/src/webapp");
    seedSandbox(w, LONG_SANDBOX, "running", LONG_REPO);
    seedSandbox(w, HYPHEN_SANDBOX, "stopped", LONG_REPO);
    store = w.store();
    const id = (name: string) => store.listSandboxes().find((s) => s.name === name)!.id;
    store.recordPending(id("demo"), "api.example.test", 443, "not-allowlisted: api.example.test is not on this sandbox's allowlist");
    store.recordPending(id(LONG_SANDBOX), LONG_HOST, 443, `not-allowlisted: ${LONG_HOST} is not on this sandbox's allowlist`);
    store.recordPending(id(HYPHEN_SANDBOX), LABEL_HOST, 8443, "not-allowlisted: the name is not on this sandbox's allowlist");
    store.recordPending(id(HYPHEN_SANDBOX), BRIDGE_SUBJECT, 0, "refused: the branch is not this sandbox's", "bridge");
    store.addAllow(null, `registry.${LONG_HOST}`, "test");
    store.addAllow(id(LONG_SANDBOX), LABEL_HOST, "test");
    store.audit({ sandboxId: id(LONG_SANDBOX), kind: "egress", action: "denied", detail: { host: LONG_HOST, port: 443, method: "CONNECT", reason: "not-allowlisted" } });
    store.audit({ sandboxId: id(HYPHEN_SANDBOX), kind: "bridge", action: "git.refused", detail: { argv: BRIDGE_SUBJECT.split(" "), decision: "refused" } });
    d = await startDaemonProc(w, 10_000);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
  }, 60_000);

  afterAll(async () => {
    for (const c of contexts) await c.close();
    await browser?.close();
    if (d) {
      d.proc.kill("SIGTERM");
      await d.exited;
    }
    w?.cleanup();
  });

  /** A signed-in page at this viewport (its own browser context and launch link), once everything seeded is on it. */
  async function pageAt(vp: Viewport): Promise<Page> {
    const have = pages.get(vp.width);
    if (have) return have;
    const context = await browser.newContext({
      viewport: { width: vp.width, height: vp.height },
      isMobile: vp.isMobile,
      hasTouch: vp.hasTouch,
      deviceScaleFactor: vp.deviceScaleFactor,
      colorScheme: "light",
    });
    contexts.push(context);
    await context.addInitScript({ path: PROBE });
    const page = await context.newPage();
    const launch = await uiLaunch(w.client, 60_000);
    await page.goto(launch.url);
    await page.getByText("live", { exact: true }).waitFor({ timeout: 10_000 });
    await page.locator("#pending-table tbody tr", { hasText: BRIDGE_SUBJECT }).waitFor({ timeout: 10_000 });
    await page.locator("#feed li", { hasText: LONG_HOST }).first().waitFor({ timeout: 10_000 });
    pages.set(vp.width, page);
    return page;
  }

  for (const vp of [PHONE, DESKTOP]) {
    test(`${vp.width} px: the page never scrolls sideways, and long names wrap inside the viewport in text of 14 px or more`, async () => {
      const page = await pageAt(vp);
      await page.screenshot({ path: join(ARTIFACTS, `dashboard-${vp.width}.png`), fullPage: true });
      // Hiding the overflow is not fitting: the page's own overflow stays visible. (A phone zooms out to a page wider than itself.)
      const fit = await page.evaluate<{ scrollWidth: number; innerWidth: number; overflowX: string[] }>("sbxLayout.page()");
      expect(fit.overflowX).toEqual(["visible", "visible"]);
      expect(fit.scrollWidth).toBeLessThanOrEqual(vp.width);
      expect(fit.innerWidth).toBe(vp.width);
      expect(await page.evaluate<string[]>(textProblems)).toEqual([]);
      // Every long name is on the page in full (wrapped, not cut).
      const text = (await page.evaluate<string>("document.body.innerText")).replaceAll(/\s+/g, " ");
      for (const s of [LONG_SANDBOX, HYPHEN_SANDBOX, LONG_HOST, LABEL_HOST, LONG_REPO, BRIDGE_SUBJECT]) expect(text).toContain(s);
    }, 60_000);

    test(`${vp.width} px: every button is reached without sideways scrolling and is at least 44 px each way`, async () => {
      const page = await pageAt(vp);
      expect(await page.locator("#pending-table tbody button").count()).toBe(17);
      expect(await page.evaluate<string[]>(buttonProblems)).toEqual([]);
    }, 60_000);
  }

  test("every width in between (and around the layout's breakpoints) fits too", async () => {
    const page = await pageAt(DESKTOP);
    const misfits: Record<number, unknown> = {};
    try {
      for (const width of [320, 480, 640, 641, 768, 895, 896, 897, 1024, 1199, 1200, 1440, 1920]) {
        await page.setViewportSize({ width, height: 800 });
        const { scrollWidth } = await page.evaluate<{ scrollWidth: number }>("sbxLayout.page()");
        const text = await page.evaluate<string[]>(textProblems);
        const buttons = await page.evaluate<string[]>(buttonProblems);
        if (scrollWidth > width || text.length || buttons.length) misfits[width] = { scrollWidth, text, buttons };
      }
    } finally {
      await page.setViewportSize({ width: DESKTOP.width, height: DESKTOP.height });
    }
    expect(misfits).toEqual({});
  }, 60_000);

  test("1280 px: pending approvals are still a table, a row of cells per approval under its column headers", async () => {
    const page = await pageAt(DESKTOP);
    expect(await page.evaluate("sbxLayout.pendingShape()")).toEqual({ head: true, tops: [1, 1, 1, 1] });
  }, 60_000);

  test("360 px: a tap on 'Allow for this sandbox', reached without sideways scrolling, allows it for that sandbox only", async () => {
    const page = await pageAt(PHONE);
    const sandboxId = store.listSandboxes().find((s) => s.name === LONG_SANDBOX)!.id;
    const approval = store.listApprovals({ sandboxId })[0]!;
    const row = page.locator(`#pending-table tbody tr[data-approval="${approval.id}"]`);
    expect(await row.getByRole("button", { name: /for this sandbox$/ }).count()).toBe(1);
    expect(await row.getByRole("button", { name: /for every sandbox$/ }).count()).toBe(1);
    type Box = { scrollX: number; left: number; right: number; top: number; bottom: number };
    const box = await page.evaluate<Box>(`sbxLayout.reveal(document.querySelector('tr[data-approval="${approval.id}"] button.primary'))`);
    expect(box.scrollX).toBe(0);
    expect(box.left).toBeGreaterThanOrEqual(0);
    expect(box.right).toBeLessThanOrEqual(PHONE.width);
    await page.touchscreen.tap((box.left + box.right) / 2, (box.top + box.bottom) / 2);
    await page.locator("#action-result", { hasText: `Allowed ${LONG_HOST} for sandbox ${LONG_SANDBOX}` }).waitFor({ timeout: 10_000 });
    expect(store.listApprovals({ sandboxId }).map((a) => [a.host, a.state])).toEqual([[LONG_HOST, "allowed"]]);
    expect(store.listAllow(sandboxId).map((e) => e.pattern)).toContain(LONG_HOST);
    expect(store.listAllow(null).map((e) => e.pattern)).not.toContain(LONG_HOST);
    await row.waitFor({ state: "detached", timeout: 10_000 });
    expect(await page.locator("#pending-table tbody tr").count()).toBe(3);
  }, 60_000);
});
