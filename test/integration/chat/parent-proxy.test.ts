// parent-proxy for what the daemon hosts (issue 39): the Zulip bot goes out through the host's parent proxy (the
// config's `proxy`), as the egress proxy, the LLM proxy, the bridge and the downloads do. Bun's own fetch reads only
// the environment's HTTPS_PROXY, so a bot left on it could not reach a company's chat from a network where only the
// proxy gets out. Here the parent is a fake company proxy on loopback that records what it carries.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startApprovalChannels, type Channels } from "../../../src/chat/channels";
import { buildApprovalsConfig } from "../../../src/chat/channels-config";
import { buildZulipConfig, writeChatConfig } from "../../../src/chat/config";
import { parentFromConfig } from "../../../src/core/parent-proxy";
import { startHosted, type Hosted } from "../../../src/daemon/hosted";
import { createEventBus } from "../../../src/events/feed";
import { Store } from "../../../src/store/store";
import { createLogger } from "../../../src/sys/log";
import { parentFetch, ParentRouter } from "../../../src/sys/parent";
import { FakeExec } from "../../fakes/exec";
import { startFakeParent, type FakeParent } from "../../support/fake-parent";
import { startFakeSlack, type FakeSlack } from "../../support/fake-slack";
import { startFakeWebhook, type FakeWebhook } from "../../support/fake-webhook";
import { startFakeZulip, type FakeZulip } from "../../support/fake-zulip";

const BOT = "sbx-bot@zulip.test";
const KEY = "bot-key-0123456789abcdef";
const PASSWORD = "corp-Pa55";

let dir = "";
let store: Store | undefined;
let hosted: Hosted | undefined;
let zulip: FakeZulip | undefined;
let parent: FakeParent | undefined;
let channels: Channels | undefined;
let hook: FakeWebhook | undefined;
let slack: FakeSlack | undefined;
afterEach(async () => {
  await hosted?.close();
  hosted = undefined;
  await channels?.close();
  channels = undefined;
  await hook?.stop();
  await slack?.stop();
  hook = slack = undefined;
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

/** A port where nothing listens: the receiver's address as the sandbox-side config names it, reached only through the parent. */
async function deadPort(): Promise<number> {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = s.port!;
  await s.stop(true);
  return port;
}

describe("parent-proxy: the daemon's approval deliveries (webhook, Slack) go out through the host's proxy", () => {
  test("a pending approval reaches the webhook and Slack through the parent, with sbx's credentials, never logged", async () => {
    const SECRET = "whsec-0123456789abcdef0123456789abcdef";
    const TOKEN = "xoxb-1111-2222-abcdefABCDEF";
    const SIGNING = "0123456789abcdef0123456789abcdef";
    hook = startFakeWebhook(SECRET);
    slack = startFakeSlack({ token: TOKEN, signingSecret: SIGNING, channels: { C0SANDBOX01: { member: true } } });
    // The parent alone knows where each name is: "127.0.0.1" (any port) is the webhook, "localhost" is Slack.
    parent = await startFakeParent({ sites: { "127.0.0.1": Number(new URL(hook.url).port), localhost: Number(new URL(slack.api).port) }, credentials: `corp:${PASSWORD}` });
    const router = new ParentRouter(parentFromConfig({ url: parent.url, credentials: "PROXY_LOGIN" }).settings, () => `corp:${PASSWORD}`);
    const dead = await deadPort();
    const config = buildApprovalsConfig({ listen: "127.0.0.1:0", publicUrl: "https://sbx.example.test", webhook: { url: `http://127.0.0.1:${dead}/hooks/sbx`, secret: SECRET, timeoutMs: 10_000 }, slack: { botToken: TOKEN, signingSecret: SIGNING, channel: "C0SANDBOX01", allowUsers: ["U0ALICE0001"], apiBase: `http://localhost:${dead}/api` } }, "");
    store = new Store(":memory:");
    const events = createEventBus();
    const lines: string[] = [];
    const line = (m: string, f?: Record<string, unknown>) => void lines.push(`${m} ${JSON.stringify(f ?? {})}`);
    channels = startApprovalChannels({ configDir: "/nonexistent", config, source: { store, events }, log: { info: line, warn: line }, fetch: parentFetch(router) });
    const sb = store.createSandbox({ name: "demo", repo: "/src/app", backend: "fake" });
    const a = store.recordPending(sb.id, "example.org", 443, "not-allowed: example.org is not on the allowlist")!;
    events.publish({ kind: "egress", at: Date.now(), sandbox: { id: sb.id, name: sb.name }, action: "denied", method: "CONNECT", host: "example.org", port: 443, reason: "not-allowed", suggest: "example.org", approvalId: a.id, count: a.count });
    // Generous waits: on a loaded machine (CI beside other work) a delivery through the parent took over 5 s.
    const d = await hook.waitFor((ds) => ds.find((x) => x.event === "approval.pending"), 30_000);
    expect(d.verified).toBe(true);
    await slack.waitFor(() => slack!.messages[0], 30_000);
    expect(slack.calls.map((c) => c.method)).toContain("chat.postMessage");
    const carried = parent.seen.map((s) => new URL(s.target).pathname);
    expect(carried).toContain("/hooks/sbx");
    expect(carried).toContain("/api/chat.postMessage");
    expect(parent.seen.every((s) => s.authorization === `Basic ${Buffer.from(`corp:${PASSWORD}`).toString("base64")}`)).toBe(true);
    expect(lines.join("\n")).not.toContain(PASSWORD);
  }, 90_000);
});

