// parent-proxy for what the daemon hosts (issue 39): the Zulip bot goes out through the host's parent proxy (the
// config's `proxy`), as the egress proxy, the LLM proxy, the bridge and the downloads do. Bun's own fetch reads only
// the environment's HTTPS_PROXY, so a bot left on it could not reach a company's chat from a network where only the
// proxy gets out. Here the parent is a fake company proxy on loopback that records what it carries.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildZulipConfig, writeChatConfig } from "../../../src/chat/config";
import { parentFromConfig } from "../../../src/core/parent-proxy";
import { startHosted, type Hosted } from "../../../src/daemon/hosted";
import { createEventBus } from "../../../src/events/feed";
import { Store } from "../../../src/store/store";
import { createLogger } from "../../../src/sys/log";
import { parentFetch, ParentRouter } from "../../../src/sys/parent";
import { FakeExec } from "../../fakes/exec";
import { startFakeParent, type FakeParent } from "../../support/fake-parent";
import { startFakeZulip, type FakeZulip } from "../../support/fake-zulip";

const BOT = "sbx-bot@zulip.test";
const KEY = "bot-key-0123456789abcdef";
const PASSWORD = "corp-Pa55";

let dir = "";
let store: Store | undefined;
let hosted: Hosted | undefined;
let zulip: FakeZulip | undefined;
let parent: FakeParent | undefined;
afterEach(async () => {
  await hosted?.close();
  hosted = undefined;
  await zulip?.stop();
  await parent?.close();
  store?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("parent-proxy: the chat bot the daemon hosts goes out through the host's proxy", () => {
  test("the bot registers through the parent, with sbx's credentials (never logged)", async () => {
    dir = mkdtempSync(join(tmpdir(), "sbx-chat-parent-"));
    zulip = startFakeZulip({ accounts: { [BOT]: KEY }, heartbeatMs: 200 });
    const port = Number(new URL(zulip.site).port);
    parent = await startFakeParent({ sites: { "127.0.0.1": port }, credentials: `corp:${PASSWORD}` });
    const router = new ParentRouter(parentFromConfig({ url: parent.url, credentials: "PROXY_LOGIN" }).settings, () => `corp:${PASSWORD}`);
    writeChatConfig(dir, buildZulipConfig({ site: zulip.site, email: BOT, apiKey: KEY, stream: "sandboxes", allowSenders: [] }));
    store = new Store(":memory:");
    const lines: string[] = [];
    hosted = startHosted({ store, events: createEventBus(), log: createLogger((l) => void lines.push(l), "debug"), exec: new FakeExec(), configDir: dir, platform: "linux", dashboard: false, notifications: false, fetch: parentFetch(router) });
    for (let i = 0; i < 200 && !hosted.chat().connected; i++) await Bun.sleep(25);
    expect(hosted.chat()).toMatchObject({ configured: true, connected: true });
    const carried = parent.seen.map((s) => new URL(s.target).pathname);
    expect(carried).toContain("/api/v1/register");
    expect(zulip.calls.map((c) => c.path)).toContain("/api/v1/register");
    expect(parent.seen.every((s) => s.authorization === `Basic ${Buffer.from(`corp:${PASSWORD}`).toString("base64")}`)).toBe(true);
    expect(lines.join("\n")).not.toContain(PASSWORD);
  });
});
