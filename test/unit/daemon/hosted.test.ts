// startHosted: the dashboard answers on 127.0.0.1 with single-use links; chat status for no config, a bad config and a reload; the notifier hears the bus.
import { afterEach, describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ZulipBot } from "../../../src/chat/bot";
import { buildZulipConfig, chatConfigPath, writeChatConfig } from "../../../src/chat/config";
import { startHosted, type Hosted } from "../../../src/daemon/hosted";
import { createLogger } from "../../../src/sys/log";
import { Store } from "../../../src/store/store";
import { createEventBus } from "../../../src/events/feed";
import { FakeExec } from "../../fakes/exec";

let dir: string;
let store: Store;
let hosted: Hosted | undefined;
afterEach(async () => {
  await hosted?.close();
  hosted = undefined;
  store?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function fakeBot(connected: boolean): ZulipBot & { closed: boolean } {
  const b = {
    closed: false,
    ready: Promise.resolve(),
    stats: () => ({ registrations: connected ? 1 : 0, errors: 0, handled: 0 }),
    state: () => ({ connected, lastError: connected ? null : "HTTP 401" }),
    async close() {
      b.closed = true;
    },
  };
  return b;
}

function start(opts: { startBot?: Parameters<typeof startHosted>[0]["startBot"]; exec?: FakeExec; lines?: string[] } = {}) {
  dir = mkdtempSync(join(tmpdir(), "sbx-hosted-"));
  store = new Store(":memory:");
  const events = createEventBus();
  const lines = opts.lines ?? [];
  hosted = startHosted({
    store,
    events,
    log: createLogger((l) => void lines.push(l), "debug"),
    exec: opts.exec ?? new FakeExec(),
    configDir: dir,
    platform: "linux",
    ...(opts.startBot ? { startBot: opts.startBot } : {}),
  });
  return { hosted, events, lines };
}

const cfg = (site = "https://chat.example.com") => buildZulipConfig({ site, email: "bot@example.com", apiKey: "k".repeat(32), stream: "sbx", allowSenders: [] });

describe("startHosted", () => {
  test("the dashboard answers on 127.0.0.1; a launch link works once; nothing secret is logged", async () => {
    const { hosted: h, lines } = start();
    const origin = h.uiOrigin()!;
    expect(origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    expect((await fetch(origin)).status).toBe(401);
    const l = h.launch(60_000);
    expect(h.ticketState(l.ticket)).toBe("unused");
    expect((await fetch(l.url, { redirect: "manual" })).status).toBe(303);
    expect(h.ticketState(l.ticket)).toBe("used");
    expect(lines.join("\n")).not.toContain(l.ticket);
  });

  test("no chat config: not configured, no bot", () => {
    let started = 0;
    const { hosted: h } = start({ startBot: () => (started++, fakeBot(true)) });
    expect(h.chat()).toEqual({ configured: false, connected: false });
    expect(started).toBe(0);
  });

  test("a config others can read is not used; the status says why", () => {
    dir = mkdtempSync(join(tmpdir(), "sbx-hosted-"));
    writeChatConfig(dir, cfg());
    chmodSync(chatConfigPath(dir), 0o644);
    const d0 = dir;
    let started = 0;
    store = new Store(":memory:");
    hosted = startHosted({ store, events: createEventBus(), log: createLogger(() => {}), exec: new FakeExec(), configDir: d0, platform: "linux", startBot: () => (started++, fakeBot(true)) });
    expect(started).toBe(0);
    expect(hosted.chat()).toMatchObject({ configured: true, connected: false });
    expect(hosted.chat().error).toContain("chmod 600");
  });

  test("reloadChat stops the old bot and starts one for the config now on disk", async () => {
    const bots: (ZulipBot & { closed: boolean })[] = [];
    const { hosted: h } = start({ startBot: () => (bots.push(fakeBot(bots.length > 0)), bots[bots.length - 1]!) });
    expect(bots).toHaveLength(0);
    writeChatConfig(dir, cfg("https://one.example.com"));
    expect(await h.reloadChat()).toMatchObject({ configured: true, connected: false, site: "https://one.example.com", error: "HTTP 401" });
    writeChatConfig(dir, cfg("https://two.example.com"));
    expect(await h.reloadChat()).toEqual({ configured: true, connected: true, provider: "zulip", site: "https://two.example.com", stream: "sbx" });
    expect(bots.map((b) => b.closed)).toEqual([true, false]);
  });

  test("denied egress on the bus reaches notify-send", async () => {
    const exec = new FakeExec().expect((a) => a[0] === "notify-send" && a[3] === "sbx: demo was refused example.org", { exitCode: 0 });
    const { hosted: h, events } = start({ exec });
    events.publish({ kind: "egress", at: 0, sandbox: { id: 1, name: "demo" }, action: "denied", method: "CONNECT", host: "example.org", port: 443, reason: "not-allowed", suggest: "example.org" });
    await h.notifier!.idle();
    exec.assertDone();
  });
});
