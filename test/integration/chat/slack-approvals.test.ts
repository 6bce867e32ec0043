// Approvals in Slack against a fake Slack on loopback that signs its interactivity requests as Slack documents: a
// posted notice with buttons, a listed member's click deciding it (and the message updated), and every click that is
// not one refused: forged, stale, replayed, for another sandbox's approval, from a member not listed or another channel.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { buildApprovalsConfig } from "../../../src/chat/channels-config";
import { startApprovalChannels, type Channels } from "../../../src/chat/channels";
import { createEventBus, type EventBus } from "../../../src/events/feed";
import { PolicyService } from "../../../src/policy/service";
import { Store } from "../../../src/store/store";
import { slackSign, startFakeSlack, type FakeSlack, type SlackMessage } from "../../support/fake-slack";

const TOKEN = "xoxb-1111-2222-abcdefABCDEF";
const SIGNING = "8f742231b10e8888abcd99yyyzzz85a5";
const CHANNEL = "C0SANDBOX01";
const ALICE = "U0ALICE0001";
const MALLORY = "U0MALLORY01";

let store: Store;
let bus: EventBus;
let slack: FakeSlack;
let channels: Channels | undefined;
let logs: string[];

function start(): Channels {
  const config = buildApprovalsConfig(
    { listen: "127.0.0.1:0", publicUrl: "https://sbx.example.test", slack: { botToken: TOKEN, signingSecret: SIGNING, channel: CHANNEL, allowUsers: [ALICE], apiBase: slack.api, timeoutMs: 500 } },
    "",
  );
  const line = (m: string, f?: Record<string, unknown>) => void logs.push(`${m} ${JSON.stringify(f ?? {})}`);
  channels = startApprovalChannels({ configDir: "/nonexistent", config, source: { store, events: bus }, log: { info: line, warn: line } });
  return channels;
}

beforeEach(() => {
  store = new Store(":memory:");
  bus = createEventBus();
  slack = startFakeSlack({ token: TOKEN, signingSecret: SIGNING, channels: { [CHANNEL]: { member: true }, C0ELSEWHERE: { member: true } } });
  logs = [];
});

afterEach(async () => {
  await channels?.close();
  channels = undefined;
  await slack.stop();
  store.close();
});

const sandbox = (name: string, repo = "/src/app") => store.createSandbox({ name, repo, backend: "fake" });
/** Slack reaches the listener through the public URL's tunnel; here, straight on loopback with the public Host. */
const requestUrl = () => `${channels!.status().listener!.origin}/hooks/slack/interact`;
const stateOf = (id: number) => store.getApproval(id)!.state;

function blocked(sb: { id: number; name: string }, host: string) {
  const a = store.recordPending(sb.id, host, 443, `not-allowed: ${host} is not on the allowlist`)!;
  bus.publish({ kind: "egress", at: Date.now(), sandbox: { id: sb.id, name: sb.name }, action: "denied", method: "CONNECT", host, port: 443, reason: "not-allowed", suggest: host, approvalId: a.id, count: a.count });
  return a;
}

async function posted(host: string): Promise<SlackMessage> {
  return slack.waitFor(() => slack.messages.find((m) => m.text.includes(host)));
}

describe("slack-approvals: notices", () => {
  test("a pending approval is posted once to the channel with Allow and Deny; a listed member's click decides it and the message shows who", async () => {
    start();
    const sb = sandbox("demo");
    const a = blocked(sb, "example.org");
    blocked(sb, "example.org");
    const m = await posted("example.org");
    await channels!.idle();
    expect(slack.messages).toHaveLength(1);
    expect(m.channel).toBe(CHANNEL);
    const buttons = m.blocks.find((b) => b.type === "actions")!.elements!;
    expect(buttons.map((b) => b.action_id)).toEqual(["sbx_allow", "sbx_deny"]);
    expect(JSON.parse(buttons[0]!.value!)).toEqual({ a: a.id, s: sb.id });
    expect(JSON.stringify(m.blocks)).toContain("*demo* (app) asks to `example.org:443`");

    const r = await slack.click(requestUrl(), { user: ALICE, message: m, action: "sbx_allow" });
    expect(r.status).toBe(200);
    expect(store.getApproval(a.id)).toMatchObject({ state: "allowed", decidedBy: `slack:${ALICE}` });
    expect(store.listAllow(sb.id).map((e) => e.pattern)).toEqual(["example.org"]);
    await slack.waitFor(() => m.updates.length > 0);
    expect(JSON.stringify(m.updates.at(-1)!.blocks)).toContain(`allowed for *demo* by <@${ALICE}>`);
    expect(JSON.stringify(m.updates.at(-1)!.blocks)).not.toContain("sbx_allow");
    // Nothing of the token or the signing secret in what was logged or shown.
    expect(JSON.stringify([logs, channels!.status()])).not.toContain(TOKEN);
    expect(JSON.stringify([logs, channels!.status()])).not.toContain(SIGNING);
  });

  test("answered elsewhere (the CLI), the message is updated: its buttons go", async () => {
    start();
    const sb = sandbox("demo");
    const a = blocked(sb, "example.org");
    const m = await posted("example.org");
    await channels!.idle();
    new PolicyService({ store, publish: (e) => bus.publish(e) }).decide(a.id, "deny", "cli:alice");
    await slack.waitFor(() => m.updates.length > 0);
    expect(JSON.stringify(m.updates[0]!.blocks)).toContain("denied for *demo* by `cli:alice`");
  });

  test("text from the sandbox reaches Slack inert: no mention, no link, no closing the code span", async () => {
    start();
    const sb = sandbox("demo");
    const a = store.recordPending(sb.id, "x.test", 443, "not-allowed: <!channel> <https://evil.test|click> `code` & more")!;
    bus.publish({ kind: "egress", at: Date.now(), sandbox: { id: sb.id, name: sb.name }, action: "denied", method: "CONNECT", host: "x.test", port: 443, reason: "not-allowed", approvalId: a.id, count: 1 });
    const m = await posted("x.test");
    const text = JSON.stringify(m.blocks);
    expect(text).not.toContain("<!channel>");
    expect(text).not.toContain("<https://evil.test");
    expect(text).toContain("&lt;!channel&gt;");
  });

  test("Slack's rate limit (429, Retry-After) is waited out and the notice still posted", async () => {
    start();
    slack.rateLimit(1);
    blocked(sandbox("demo"), "example.org");
    await posted("example.org");
    expect(slack.calls.map((c) => c.error ?? "ok").slice(0, 2)).toEqual(["ratelimited", "ok"]);
  }, 10_000);

  test("a channel the app was not invited to is said in the status, not retried", async () => {
    await slack.stop();
    slack = startFakeSlack({ token: TOKEN, signingSecret: SIGNING, channels: { [CHANNEL]: { member: false } } });
    start();
    blocked(sandbox("demo"), "example.org");
    await slack.waitFor(() => slack.calls.length >= 1);
    await channels!.idle();
    expect(slack.calls).toHaveLength(1);
    expect(channels!.status().slack).toMatchObject({ failed: 1, lastError: "Slack refused chat.postMessage: not_in_channel" });
  });
});

describe("slack-approvals: clicks that are not a listed member's own are refused", () => {
  async function setup() {
    start();
    const sb = sandbox("demo");
    const a = blocked(sb, "example.org");
    return { sb, a, m: await posted("example.org") };
  }

  test("a forged signature: signed with another secret, a body changed after signing, no signature", async () => {
    const { a, m } = await setup();
    expect((await slack.click(requestUrl(), { user: ALICE, message: m, action: "sbx_allow", secret: "0000000000000000deadbeefdeadbeef" })).status).toBe(401);
    const ts = String(Math.floor(Date.now() / 1000));
    const honest = await slack.click(requestUrl(), { user: MALLORY, message: m, action: "sbx_deny", timestamp: Number(ts) });
    expect(honest.status).toBe(200); // Mallory's own click: signed by Slack, but Mallory is not listed
    // Mallory's captured request, edited to be Alice's: the signature no longer matches the body.
    const edited = honest.sent.body.replaceAll(MALLORY, ALICE).replaceAll(MALLORY.toLowerCase(), ALICE.toLowerCase());
    expect((await slack.resend(requestUrl(), { ...honest.sent, body: edited })).status).toBe(401);
    const { "x-slack-signature": _sig, ...unsigned } = honest.sent.headers;
    expect((await slack.resend(requestUrl(), { body: edited, headers: unsigned })).status).toBe(401);
    expect(stateOf(a.id)).toBe("pending");
    expect(slack.ephemerals.map((e) => e.user)).toEqual([MALLORY]);
  });

  test("a stale timestamp: a well-signed click more than five minutes old (or ahead) is refused", async () => {
    const { a, m } = await setup();
    const now = Math.floor(Date.now() / 1000);
    // Well past the bound (a second boundary crossed between here and the check would make 301 exactly 300).
    for (const ts of [now - 330, now + 330]) {
      const r = await slack.click(requestUrl(), { user: ALICE, message: m, action: "sbx_allow", timestamp: ts });
      expect({ ts: ts - now, status: r.status, text: r.text }).toEqual({ ts: ts - now, status: 401, text: expect.stringContaining("more than 5 minutes") });
    }
    expect(stateOf(a.id)).toBe("pending");
  });

  test("a replayed click: the same request again is refused; edited to name another approval, its signature fails", async () => {
    const { sb } = await setup();
    const b = blocked(sb, "b.example.org");
    const mb = await posted("b.example.org");
    const deny = await slack.click(requestUrl(), { user: ALICE, message: mb, action: "sbx_deny" });
    expect(deny.status).toBe(200);
    expect(stateOf(b.id)).toBe("denied");
    expect((await slack.resend(requestUrl(), deny.sent)).status).toBe(409);
    // Replayed with its signature intact but another button value: the signature covers the body, so it fails too.
    const swapped = deny.sent.body.replace(encodeURIComponent(`\\"a\\":${b.id}`), encodeURIComponent(`\\"a\\":${b.id - 1}`));
    expect(swapped).not.toBe(deny.sent.body);
    expect((await slack.resend(requestUrl(), { ...deny.sent, body: swapped })).status).toBe(401);
    expect(stateOf(b.id - 1)).toBe("pending");
  });

  test("a click naming another sandbox's approval changes nothing, whatever the id", async () => {
    const { sb, m } = await setup();
    const other = sandbox("other", "/src/other");
    const theirs = blocked(other, "secret.example.org");
    await posted("secret.example.org");
    // Alice clicks Allow on demo's notice, its button carrying the other sandbox's approval id but demo's sandbox.
    const r = await slack.click(requestUrl(), { user: ALICE, message: m, action: "sbx_allow", value: JSON.stringify({ a: theirs.id, s: sb.id }) });
    expect(r.status).toBe(200);
    expect(stateOf(theirs.id)).toBe("pending");
    expect(store.listAllow(other.id)).toEqual([]);
    expect(store.listAllow(sb.id)).toEqual([]);
    const told = await slack.waitFor(() => slack.ephemerals.find((e) => e.user === ALICE));
    expect(told.text).toContain("not the named sandbox's");
  });

  test("a member not listed, and a click from another channel, decide nothing", async () => {
    const { a, m } = await setup();
    expect((await slack.click(requestUrl(), { user: MALLORY, message: m, action: "sbx_allow" })).status).toBe(200);
    const told = await slack.waitFor(() => slack.ephemerals.find((e) => e.user === MALLORY));
    expect(told.text).toContain("only from the members its owner listed");
    expect((await slack.click(requestUrl(), { user: ALICE, message: m, action: "sbx_allow", channel: "C0ELSEWHERE" })).status).toBe(403);
    expect(stateOf(a.id)).toBe("pending");
  });

  test("a body over the listener's limit is refused unread", async () => {
    start();
    const body = `payload=${"x".repeat(70 * 1024)}`;
    const ts = String(Math.floor(Date.now() / 1000));
    const r = await fetch(requestUrl(), { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", "x-slack-request-timestamp": ts, "x-slack-signature": slackSign(SIGNING, ts, body) }, body });
    expect(r.status).toBe(413);
  });
});
