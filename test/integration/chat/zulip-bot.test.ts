// The Zulip bot against a fake Zulip on loopback: notifications per sandbox topic, /allow /allow --global /deny /allowlist /status, refusals, queue expiry.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { startZulipBot, backoffDelay, type ZulipBot } from "../../../src/chat/bot";
import { topicFor } from "../../../src/chat/commands";
import { buildZulipConfig } from "../../../src/chat/config";
import { bridgeSettingsOf, NO_BRIDGE_SETTINGS, subjectText } from "../../../src/core/bridge-settings";
import { patternFor } from "../../../src/core/egress";
import { Store } from "../../../src/store/store";
import { createEventBus, type EventBus, type FeedEvent } from "../../../src/events/feed";
import { startFakeZulip, type FakeMessage, type FakeZulip } from "../../support/fake-zulip";

const BOT = "sbx-bot@zulip.test";
const KEY = "bot-key-0123456789abcdef";
const ALICE = "alice@example.com";
const MALLORY = "mallory@example.com";
const STREAM = "sandboxes";

let store: Store;
let bus: EventBus;
let zulip: FakeZulip;
let bot: ZulipBot;
let logs: string[];

function start(apiKey = KEY): ZulipBot {
  const config = buildZulipConfig({ site: zulip.site, email: BOT, apiKey, stream: STREAM, allowSenders: [ALICE] });
  const log = {
    info: (m: string, f?: Record<string, unknown>) => void logs.push(`${m} ${JSON.stringify(f ?? {})}`),
    warn: (m: string, f?: Record<string, unknown>) => void logs.push(`${m} ${JSON.stringify(f ?? {})}`),
  };
  // The daemon's view of each sandbox's state, as the daemon hands it (here: every one runs).
  return startZulipBot({ config, source: { store, events: bus, stateOf: () => "running" }, log, backoff: { baseMs: 5, maxMs: 20 } });
}

beforeEach(async () => {
  store = new Store(":memory:");
  bus = createEventBus();
  logs = [];
  zulip = startFakeZulip({
    accounts: { [BOT]: KEY, [ALICE]: "alice-key", [MALLORY]: "mallory-key" },
    names: { [ALICE]: "Alice", [MALLORY]: "Mallory" },
    heartbeatMs: 200,
  });
  bot = start();
  await bot.ready;
});

afterEach(async () => {
  await bot.close();
  await zulip.stop();
  store.close();
});

function sandbox(name = "demo", repo = "/src/app") {
  return store.createSandbox({ name, repo, backend: "fake" });
}

/** What the proxy does on a denial: a pending approval in the store, then the event on the bus; waits for the bot's notice of a new one. */
async function blocked(sb: { id: number; name: string }, host: string, port = 443) {
  const before = zulip.messages.length;
  const a = store.recordPending(sb.id, host, port, `not-allowed: ${host} is not on the allowlist`)!;
  const e: FeedEvent = {
    kind: "egress",
    at: Date.now(),
    sandbox: { id: sb.id, name: sb.name },
    action: "denied",
    method: "CONNECT",
    host,
    port,
    reason: "not-allowed",
    suggest: patternFor(host, port),
    approvalId: a.id,
    count: a.count,
  };
  bus.publish(e);
  if (a.count === 1) await zulip.waitFor((ms) => ms.slice(before).some((m) => m.sender_email === BOT && m.content.includes(host)));
  return a;
}

/** A person writes in a topic; resolves with the bot's reply in that topic. */
async function ask(sender: string, topic: string, content: string): Promise<FakeMessage> {
  const asked = zulip.say(sender, STREAM, topic, content);
  const ms = await zulip.waitFor((all) => all.some((m) => m.id > asked.id && m.sender_email === BOT && m.subject === topic));
  return ms.find((m) => m.id > asked.id && m.sender_email === BOT && m.subject === topic)!;
}

/** What the bridge does on a push outside the branch prefix: a pending bridge approval, then its feed event. */
async function bridgeAsked(sb: { id: number; name: string }, ref: string) {
  const before = zulip.messages.length;
  const a = store.recordPending(sb.id, subjectText({ kind: "push", ref }), 0, `a push to ${ref} on origin, outside sbx/${sb.name}/`, "bridge")!;
  bus.publish({ kind: "bridge", at: Date.now(), sandbox: { id: sb.id, name: sb.name }, command: ["git", "push", "origin", ref], outcome: "refused", exitCode: 77, detail: "outside", approvalId: a.id, count: a.count });
  if (a.count === 1) await zulip.waitFor((ms) => ms.slice(before).some((m) => m.sender_email === BOT && m.content.includes(`/approve ${a.id}`)));
  return a;
}

describe("zulip bot under a flood", () => {
  test("a sandbox blocked on 40 names gets a few notices and one line saying more are held back, not 40", async () => {
    const sb = sandbox();
    const other = sandbox("other");
    for (let i = 0; i < 40; i++) {
      const host = `n${i}.flood.test`;
      const a = store.recordPending(sb.id, host, 443, "not-allowed")!;
      bus.publish({ kind: "egress", at: Date.now(), sandbox: { id: sb.id, name: sb.name }, action: "denied", method: "CONNECT", host, port: 443, reason: "not-allowed", suggest: host, approvalId: a.id, count: a.count });
    }
    await blocked(other, "calm.test"); // another sandbox is not held back by this one's flood
    await Bun.sleep(200);
    const mine = zulip.messages.filter((m) => m.sender_email === BOT && m.subject === topicFor(sb));
    expect(mine).toHaveLength(6);
    expect(mine.at(-1)!.content).toContain("hold back further notices");
    expect(zulip.messages.filter((m) => m.sender_email === BOT && m.subject === topicFor(other))).toHaveLength(1);
  });
});

describe("zulip bot: what the bridge asks for", () => {
  test("a push outside the prefix is posted once to the sandbox's topic; /approve there adds that branch for it", async () => {
    const sb = sandbox();
    const other = sandbox("other");
    const a = await bridgeAsked(sb, "main");
    await bridgeAsked(sb, "main"); // asked again: counted, not posted again
    const notes = zulip.messages.filter((m) => m.sender_email === BOT);
    expect(notes).toHaveLength(1);
    expect(notes[0]!.subject).toBe(topicFor(sb));
    expect(notes[0]!.content).toContain("push to main (outside its branch prefix)");
    // An id typed in another sandbox's topic changes nothing; a listed sender's /approve in its own topic does.
    expect((await ask(ALICE, topicFor(other), `/approve ${a.id}`)).content).toContain("not this sandbox's");
    expect((await ask(MALLORY, topicFor(sb), `/approve ${a.id}`)).content).toContain("Sorry");
    expect(bridgeSettingsOf(store.getSandbox(sb.id)!.identity).pushTo).toEqual([]);
    const reply = await ask(ALICE, topicFor(sb), `/approve ${a.id}`);
    expect(reply.content).toContain("Approved for **demo**: push to main");
    expect(bridgeSettingsOf(store.getSandbox(sb.id)!.identity).pushTo).toEqual(["main"]);
    expect(store.listApprovals({ state: "allowed" })[0]).toMatchObject({ id: a.id, decidedBy: `zulip:${ALICE}` });
    expect((await ask(ALICE, topicFor(sb), `/approve ${a.id}`)).content).toContain("no pending approval");
  });

  test("/reject answers it as denied and changes no setting; /status lists what the bridge waits for", async () => {
    const sb = sandbox();
    const a = await bridgeAsked(sb, "release/1.0");
    expect((await ask(ALICE, topicFor(sb), "/status")).content).toContain(`push to release/1.0 (outside its branch prefix) — \`/approve ${a.id}\``);
    expect((await ask(ALICE, topicFor(sb), `/reject ${a.id}`)).content).toContain("Rejected for **demo**");
    expect(store.listApprovals({ state: "denied" }).map((x) => x.id)).toEqual([a.id]);
    expect(bridgeSettingsOf(store.getSandbox(sb.id)!.identity)).toEqual(NO_BRIDGE_SETTINGS);
    expect((await ask(ALICE, topicFor(sb), "/approve twelve")).content).toContain("takes one approval id");
  });
});

describe("zulip bot", () => {
  test("a blocked request is posted once to the sandbox's own topic, with the commands that answer it", async () => {
    const sb = sandbox();
    await blocked(sb, "example.org");
    await blocked(sb, "example.org"); // a repeat: the store counts it, nobody is notified again
    const [note] = (await zulip.waitFor((ms) => ms.some((m) => m.sender_email === BOT))).filter((m) => m.sender_email === BOT);
    expect(note!.display_recipient).toBe(STREAM);
    expect(note!.subject).toBe(topicFor(sb));
    expect(note!.subject).toBe("demo · app");
    expect(note!.content).toContain("example.org:443");
    expect(note!.content).toContain("/allow example.org");
    await Bun.sleep(100);
    expect(zulip.messages.filter((m) => m.sender_email === BOT)).toHaveLength(1);
  });

  test("/allow from a listed sender adds the host to that sandbox, answers the pending request, and replies", async () => {
    const sb = sandbox();
    const other = sandbox("other");
    await blocked(sb, "example.org");
    const reply = await ask(ALICE, topicFor(sb), "/allow example.org");
    expect(reply.content).toContain("Allowed `example.org` for sandbox **demo**");
    expect(store.listAllow(sb.id).map((e) => e.pattern)).toEqual(["example.org"]);
    expect(store.listAllow(other.id)).toEqual([]);
    expect(store.listAllow(null)).toEqual([]);
    expect(store.listApprovals({ state: "allowed" })[0]).toMatchObject({ host: "example.org", decidedBy: `zulip:${ALICE}` });
  });

  test("/allow --global adds to the global list; a mention of the bot before the command is fine", async () => {
    const sb = sandbox();
    const reply = await ask(ALICE, topicFor(sb), "@**sbx bot** /allow *.pypi.org --global");
    expect(reply.content).toContain("every sandbox");
    expect(store.listAllow(null).map((e) => e.pattern)).toEqual(["*.pypi.org"]);
    expect(store.listAllow(sb.id)).toEqual([]);
  });

  test("/deny removes the host from the sandbox's list and answers its pending request as denied", async () => {
    const sb = sandbox();
    store.addAllow(sb.id, "example.org", "cli");
    await blocked(sb, "tracker.example.net");
    const r1 = await ask(ALICE, topicFor(sb), "/deny example.org");
    expect(r1.content).toContain("removed");
    expect(store.listAllow(sb.id)).toEqual([]);
    const r2 = await ask(ALICE, topicFor(sb), "/deny tracker.example.net");
    expect(r2.content).toContain("stays blocked");
    expect(store.listApprovals({ state: "denied" }).map((a) => a.host)).toEqual(["tracker.example.net"]);
  });

  test("/allowlist lists the sandbox's, the global and the built-in entries", async () => {
    const sb = sandbox();
    store.addAllow(sb.id, "example.org", "cli");
    store.addAllow(null, "pypi.org", "cli");
    const reply = await ask(ALICE, topicFor(sb), "/allowlist");
    expect(reply.content).toContain("**Sandbox demo:**\n- `example.org`");
    expect(reply.content).toContain("**Global (every sandbox):**\n- `pypi.org`");
    expect(reply.content).toContain("api.anthropic.com");
  });

  test("/status tells the sandbox's state (sbx's one word, the daemon's view) and what it is waiting for", async () => {
    const sb = sandbox();
    await blocked(sb, "example.org", 8443);
    const reply = await ask(ALICE, topicFor(sb), "/status");
    expect(reply.content).toContain("**demo** is **running**");
    expect(reply.content).toContain("`example.org:8443`");
  });

  test("a bad pattern or a topic that names no sandbox gets an explanation and changes nothing", async () => {
    const sb = sandbox();
    expect((await ask(ALICE, topicFor(sb), "/allow *.com")).content).toContain("top-level domain");
    expect((await ask(ALICE, "lunch", "/allow example.org")).content).toContain("does not name a sandbox");
    expect(store.listAllow(sb.id)).toEqual([]);
    expect(store.listAllow(null)).toEqual([]);
  });

  test("an unlisted sender gets a polite refusal and nothing changes", async () => {
    const sb = sandbox();
    await blocked(sb, "example.org");
    const reply = await ask(MALLORY, topicFor(sb), "/allow example.org --global");
    expect(reply.content).toContain("Sorry @_**Mallory**");
    expect(reply.content).toContain("not changed anything");
    expect(store.listAllow(sb.id)).toEqual([]);
    expect(store.listAllow(null)).toEqual([]);
    expect(store.listApprovals({ state: "pending" })).toHaveLength(1);
  });

  test("ordinary chat in a topic gets no reply", async () => {
    const sb = sandbox();
    const said = zulip.say(ALICE, STREAM, topicFor(sb), "looks like it wants example.org, fine by me");
    await ask(ALICE, topicFor(sb), "/status");
    expect(zulip.messages.filter((m) => m.sender_email === BOT && m.id > said.id)).toHaveLength(1);
  });

  test("when the server drops the event queue (BAD_EVENT_QUEUE_ID) the bot registers a new one and carries on", async () => {
    const sb = sandbox();
    expect(zulip.registrations()).toBe(1);
    expect(bot.state()).toEqual({ connected: true, lastError: null });
    zulip.expireQueues();
    for (let i = 0; i < 200 && zulip.registrations() < 2; i++) await Bun.sleep(10);
    expect(zulip.registrations()).toBe(2);
    expect(zulip.calls.some((c) => c.path === "/api/v1/events" && c.status === 400)).toBe(true);
    const reply = await ask(ALICE, topicFor(sb), "/allow example.org");
    expect(reply.content).toContain("Allowed");
    expect(store.listAllow(sb.id).map((e) => e.pattern)).toEqual(["example.org"]);
  });

  test("a wrong API key is retried with backoff and never logged", async () => {
    await bot.close();
    const wrong = "wrong-key-abcdefghijklmnop";
    const bad = start(wrong);
    for (let i = 0; i < 200 && zulip.calls.filter((c) => c.status === 401).length < 3; i++) await Bun.sleep(10);
    expect(zulip.calls.filter((c) => c.status === 401).length).toBeGreaterThanOrEqual(3);
    expect(bad.stats().registrations).toBe(0);
    // What `sbx status` shows: not connected, and why.
    expect(bad.state().connected).toBe(false);
    expect(bad.state().lastError).toBeTruthy();
    expect(bot.state().connected).toBe(false);
    await bad.close();
    bot = start(); // for afterEach
    for (const l of logs) {
      expect(l).not.toContain(wrong);
      expect(l).not.toContain(KEY);
    }
  });
});

describe("backoff", () => {
  test("full jitter under an exponential cap", () => {
    expect(backoffDelay(1, 1000, 60_000, () => 0.999)).toBe(999);
    expect(backoffDelay(3, 1000, 60_000, () => 0.5)).toBe(2000);
    expect(backoffDelay(30, 1000, 60_000, () => 0.5)).toBe(30_000);
    expect(backoffDelay(5, 1000, 60_000, () => 0)).toBe(0);
  });
});
