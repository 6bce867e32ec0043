// The signed webhook against a receiver on loopback that checks signatures as the docs say: what is delivered, and
// every way an answer that is not the person's own is refused (forged, stale, replayed, for another sandbox, a link
// used twice or previewed); a dead receiver is retried a bounded number of times and said in the status.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { buildApprovalsConfig, type ApprovalsConfig } from "../../../src/chat/channels-config";
import { startApprovalChannels, type Channels } from "../../../src/chat/channels";
import { subjectText } from "../../../src/core/bridge-settings";
import { createEventBus, type EventBus, type FeedEvent } from "../../../src/events/feed";
import { PolicyService } from "../../../src/policy/service";
import { Store } from "../../../src/store/store";
import { sbxSign, signedDecision, startFakeWebhook, type Delivery, type FakeWebhook } from "../../support/fake-webhook";

const SECRET = "whsec-0123456789abcdef0123456789abcdef";

let store: Store;
let bus: EventBus;
let hook: FakeWebhook;
let channels: Channels | undefined;
let logs: string[];
let clock: { ms: number | null };

function start(over: Partial<ApprovalsConfig["webhook"] & object> = {}): Channels {
  const config = buildApprovalsConfig({ listen: "127.0.0.1:0", webhook: { url: hook.url, secret: SECRET, timeoutMs: 500, ...over } }, "");
  const line = (m: string, f?: Record<string, unknown>) => void logs.push(`${m} ${JSON.stringify(f ?? {})}`);
  channels = startApprovalChannels({ configDir: "/nonexistent", config, source: { store, events: bus }, log: { info: line, warn: line }, now: () => clock.ms ?? Date.now() });
  return channels;
}

beforeEach(() => {
  store = new Store(":memory:");
  bus = createEventBus();
  hook = startFakeWebhook(SECRET);
  logs = [];
  clock = { ms: null };
});

afterEach(async () => {
  await channels?.close();
  channels = undefined;
  await hook.stop();
  store.close();
});

const sandbox = (name: string, repo = "/src/app") => store.createSandbox({ name, repo, backend: "fake" });

/** What the proxy does on a denial: a pending approval, then its event on the bus. */
function blocked(sb: { id: number; name: string }, host: string, port = 443) {
  const a = store.recordPending(sb.id, host, port, `not-allowed: ${host} is not on the allowlist`)!;
  const e: FeedEvent = { kind: "egress", at: Date.now(), sandbox: { id: sb.id, name: sb.name }, action: "denied", method: "CONNECT", host, port, reason: "not-allowed", suggest: host, approvalId: a.id, count: a.count };
  bus.publish(e);
  return a;
}

const pendingFor = (id: number) => (ds: Delivery[]) => ds.find((d) => d.event === "approval.pending" && (d.body.approval as { id: number }).id === id);
const decideUrl = () => channels!.status().listener!.origin + "/hooks/v1/decide";
const stateOf = (id: number) => store.getApproval(id)!.state;
const nonce = () => crypto.randomUUID().replace(/-/g, "");

describe("approval-channel: deliveries", () => {
  test("each new pending approval is POSTed once, signed as documented, with a one-time link and the decision API; a repeat is not", async () => {
    start();
    const sb = sandbox("demo");
    const a = blocked(sb, "example.org");
    blocked(sb, "example.org"); // seen again: counted, not delivered again
    const bridge = store.recordPending(sb.id, subjectText({ kind: "push", ref: "main" }), 0, "a push to main, outside sbx/demo/", "bridge")!;
    bus.publish({ kind: "bridge", at: Date.now(), sandbox: { id: sb.id, name: sb.name }, command: ["git", "push", "origin", "main"], outcome: "refused", approvalId: bridge.id, count: 1 });
    const d = await hook.waitFor(pendingFor(a.id));
    const b = await hook.waitFor(pendingFor(bridge.id));
    await channels!.idle();
    expect(hook.deliveries.filter((x) => x.event === "approval.pending")).toHaveLength(2);
    expect(d.verified).toBe(true);
    expect(d.signature).toMatch(/^v1=[0-9a-f]{64}$/);
    expect(d.body).toMatchObject({
      type: "approval.pending",
      delivery: d.delivery,
      approval: { id: a.id, kind: "egress", subject: "example.org", asks: "reach example.org:443", host: "example.org", port: 443 },
      sandbox: { id: sb.id, name: "demo", repoDir: "app" },
      choices: ["allow-sandbox", "deny"],
      decideUrl: decideUrl(),
    });
    expect((d.body.link as { url: string }).url).toStartWith(`${channels!.status().listener!.origin}/a/`);
    expect(b.body).toMatchObject({ approval: { id: bridge.id, kind: "bridge", asks: "push to main (outside its branch prefix)" } });
    // The host's repo path stays on the host; the secret is in nothing sent, shown or logged.
    expect(JSON.stringify(hook.deliveries)).not.toContain("/src/app");
    expect(JSON.stringify([hook.deliveries, channels!.status(), logs])).not.toContain(SECRET);
    expect(channels!.status().webhook).toMatchObject({ delivered: 2, failed: 0, dropped: 0, queued: 0 });
  });

  test("an approval answered anywhere (here: the CLI's policy service) is told as decided", async () => {
    start();
    const sb = sandbox("demo");
    const a = blocked(sb, "example.org");
    await hook.waitFor(pendingFor(a.id));
    new PolicyService({ store, publish: (e) => bus.publish(e) }).decide(a.id, "allow-sandbox", "cli:alice");
    const d = await hook.waitFor((ds) => ds.find((x) => x.event === "approval.decided"));
    expect(d.verified).toBe(true);
    expect(d.body).toMatchObject({ type: "approval.decided", approval: { id: a.id, state: "allowed", decidedBy: "cli:alice" }, sandbox: { id: sb.id, name: "demo" } });
  });

  test("a receiver that fails is tried three times, then the failure is counted and said in the status and the log", async () => {
    start();
    hook.mode("fail");
    const sb = sandbox("demo");
    blocked(sb, "example.org");
    await hook.waitFor((ds) => ds.length >= 3, 15_000);
    await channels!.idle();
    expect(hook.deliveries).toHaveLength(3);
    // The same delivery each time, signed afresh.
    expect(new Set(hook.deliveries.map((d) => d.delivery)).size).toBe(1);
    expect(hook.deliveries.every((d) => d.verified)).toBe(true);
    expect(channels!.status().webhook).toMatchObject({ delivered: 0, failed: 1, lastError: expect.stringContaining("HTTP 500 (after 3 tries)") });
    expect(logs.some((l) => l.startsWith("webhook: delivery failed"))).toBe(true);
  }, 20_000);

  test("a receiver that refuses (4xx) is not retried: the same request would be refused again", async () => {
    start();
    hook.mode("refuse");
    blocked(sandbox("demo"), "example.org");
    await hook.waitFor((ds) => ds.length >= 1);
    await channels!.idle();
    expect(hook.deliveries).toHaveLength(1);
    expect(channels!.status().webhook).toMatchObject({ failed: 1, lastError: expect.stringContaining("HTTP 401") });
  });
});

describe("approval-channel: the signed decision API", () => {
  test("a correctly signed decision decides that approval for its sandbox, recorded as webhook:api", async () => {
    start();
    const sb = sandbox("demo");
    const a = blocked(sb, "example.org");
    const r = await signedDecision(decideUrl(), SECRET, { approval: a.id, sandbox: sb.id, choice: "allow-sandbox", nonce: nonce() });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ ok: true, approval: a.id, sandbox: "demo", action: "allow", pattern: "example.org" });
    expect(store.getApproval(a.id)).toMatchObject({ state: "allowed", decidedBy: "webhook:api" });
    expect(store.listAllow(sb.id).map((e) => e.pattern)).toEqual(["example.org"]);
  });

  test("a forged signature decides nothing: a wrong secret, a body changed after signing, no signature at all", async () => {
    start();
    const sb = sandbox("demo");
    const a = blocked(sb, "example.org");
    const body = { approval: a.id, sandbox: sb.id, choice: "allow-sandbox", nonce: nonce() };
    const wrong = await signedDecision(decideUrl(), "not-the-secret-0123456789abcdef0123", body);
    expect(wrong.status).toBe(401);
    expect(String(wrong.json.message)).toContain("signature does not match");
    const ts = String(Math.floor(Date.now() / 1000));
    const signedDeny = sbxSign(SECRET, ts, JSON.stringify({ ...body, choice: "deny" }));
    const tampered = await signedDecision(decideUrl(), SECRET, body, { timestamp: Number(ts), signature: signedDeny });
    expect(tampered.status).toBe(401);
    const res = await fetch(decideUrl(), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    expect(res.status).toBe(401);
    expect(stateOf(a.id)).toBe("pending");
    expect(store.listAllow(sb.id)).toEqual([]);
  });

  test("a stale timestamp is refused, however well signed: more than five minutes old, or ahead", async () => {
    start();
    const sb = sandbox("demo");
    const a = blocked(sb, "example.org");
    const now = Math.floor(Date.now() / 1000);
    for (const ts of [now - 301, now + 301, now - 86_400]) {
      const r = await signedDecision(decideUrl(), SECRET, { approval: a.id, sandbox: sb.id, choice: "allow-sandbox", nonce: nonce() }, { timestamp: ts });
      expect({ ts: ts - now, status: r.status, msg: String(r.json.message) }).toEqual({ ts: ts - now, status: 401, msg: expect.stringContaining("more than 5 minutes") });
    }
    expect(stateOf(a.id)).toBe("pending");
    const ok = await signedDecision(decideUrl(), SECRET, { approval: a.id, sandbox: sb.id, choice: "deny", nonce: nonce() }, { timestamp: now - 250 });
    expect(ok.status).toBe(200);
  });

  test("a replayed decision is refused: the same request again, its nonce with another approval, and after a restart", async () => {
    start();
    const sb = sandbox("demo");
    const a = blocked(sb, "a.example.org");
    const b = blocked(sb, "b.example.org");
    const first = await signedDecision(decideUrl(), SECRET, { approval: a.id, sandbox: sb.id, choice: "deny", nonce: "nonce-0123456789abcdef" });
    expect(first.status).toBe(200);
    const replay = await fetch(decideUrl(), { method: "POST", headers: first.sent.headers, body: first.sent.body });
    expect(replay.status).toBe(409);
    expect(((await replay.json()) as { message: string }).message).toContain("nonce was used already");
    const reused = await signedDecision(decideUrl(), SECRET, { approval: b.id, sandbox: sb.id, choice: "allow-sandbox", nonce: "nonce-0123456789abcdef" });
    expect(reused.status).toBe(409);
    expect(stateOf(b.id)).toBe("pending");
    // A restarted daemon has no nonce memory: the decision it replays is for an approval already answered.
    await channels!.close();
    start();
    const again = await fetch(decideUrl(), { method: "POST", headers: first.sent.headers, body: first.sent.body });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { message: string }).message).toContain("already answered");
    expect(store.getApproval(a.id)).toMatchObject({ state: "denied", decidedBy: "webhook:api" });
  });

  test("a decision names its sandbox: another sandbox's approval is not decided through it, whatever the id", async () => {
    start();
    const mine = sandbox("demo");
    const other = sandbox("other", "/src/other");
    const theirs = blocked(other, "example.org");
    const r = await signedDecision(decideUrl(), SECRET, { approval: theirs.id, sandbox: mine.id, choice: "allow-sandbox", nonce: nonce() });
    expect(r.status).toBe(403);
    expect(String(r.json.message)).toContain("not the named sandbox's");
    expect(stateOf(theirs.id)).toBe("pending");
    expect(store.listAllow(other.id)).toEqual([]);
    expect(store.listAllow(mine.id)).toEqual([]);
    // Nor a choice channels do not offer: allowing for every sandbox stays the dashboard's and the CLI's.
    const global = await signedDecision(decideUrl(), SECRET, { approval: theirs.id, sandbox: other.id, choice: "allow-global", nonce: nonce() });
    expect(global.status).toBe(400);
    expect(store.listAllow(null)).toEqual([]);
  });
});

describe("approval-channel: one-time links", () => {
  async function linkOf(id: number): Promise<string> {
    const d = await hook.waitFor(pendingFor(id));
    return (d.body.link as { url: string }).url;
  }
  const post = (url: string, choice: string) => fetch(url, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: `choice=${choice}` });

  test("a link's page (a chat's link preview) decides nothing; its POST decides its own approval once; a second use is refused", async () => {
    start();
    const sb = sandbox("demo");
    const a = blocked(sb, "a.example.org");
    const b = blocked(sb, "b.example.org");
    const link = await linkOf(a.id);
    const page = await fetch(link);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain("form-action 'self'");
    const html = await page.text();
    expect(html).toContain("a.example.org:443");
    expect(html).toContain('<form method="post">');
    await fetch(link, { method: "HEAD" });
    expect(stateOf(a.id)).toBe("pending");
    const r = await post(link, "allow-sandbox");
    expect(r.status).toBe(200);
    expect(await r.text()).toContain("Allowed for demo: a.example.org");
    expect(store.getApproval(a.id)).toMatchObject({ state: "allowed", decidedBy: "webhook:link" });
    expect(stateOf(b.id)).toBe("pending");
    // Used: refused both ways, and nothing more changes.
    expect((await post(link, "deny")).status).toBe(410);
    expect((await fetch(link)).status).toBe(410);
    expect(store.getApproval(a.id)!.state).toBe("allowed");
  });

  test("a link decides only the approval it was made for: another token, a guessed one or a changed one decide nothing", async () => {
    start();
    const mine = sandbox("demo");
    const other = sandbox("other", "/src/other");
    const a = blocked(mine, "a.example.org");
    const b = blocked(other, "b.example.org");
    const linkA = await linkOf(a.id);
    await linkOf(b.id);
    const base = linkA.slice(0, linkA.lastIndexOf("/") + 1);
    const token = linkA.slice(base.length);
    for (const forged of [`${token.slice(0, -1)}${token.endsWith("A") ? "B" : "A"}`, "x".repeat(43), token.toUpperCase(), ""]) {
      const r = await post(`${base}${forged}`, "allow-sandbox");
      expect({ forged, status: r.status }).toEqual({ forged, status: 404 });
    }
    expect(stateOf(b.id)).toBe("pending");
    expect((await post(linkA, "deny")).status).toBe(200);
    expect(stateOf(a.id)).toBe("denied");
    expect(stateOf(b.id)).toBe("pending");
  });

  test("an expired link is refused; an approval answered elsewhere makes its link say so", async () => {
    clock.ms = Date.now();
    start({ linkMinutes: 1 });
    const sb = sandbox("demo");
    const a = blocked(sb, "a.example.org");
    const b = blocked(sb, "b.example.org");
    const linkA = await linkOf(a.id);
    const linkB = await linkOf(b.id);
    new PolicyService({ store }).decide(b.id, "deny", "cli:alice");
    const answered = await fetch(linkB);
    expect(answered.status).toBe(409);
    expect(await answered.text()).toContain("denied by cli:alice");
    clock.ms += 61_000;
    expect((await post(linkA, "allow-sandbox")).status).toBe(410);
    expect(stateOf(a.id)).toBe("pending");
  });

  test("the listener answers only for its own names (no DNS rebinding onto it)", async () => {
    start();
    const origin = channels!.status().listener!.origin;
    const r = await fetch(`${origin}/a/x`, { headers: { host: "evil.example:80" } });
    expect(r.status).toBe(421);
  });
});

const haveTools = ["openssl", "curl", "bash"].every((t) => Bun.which(t) !== null);

describe.skipIf(!haveTools)("approval-channel: the help topic's shell recipe (needs openssl, curl, bash)", () => {
  test("the signed decision exactly as `sbx help chat-setup` writes it is accepted", async () => {
    const { mkdtempSync, writeFileSync, rmSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const { topicText } = await import("../../../src/cli/topics");
    start();
    const sb = sandbox("demo");
    blocked(sb, "decoy.example.org");
    const a = blocked(sb, "example.org");
    const doc = topicText("chat-setup").split("\n");
    const from = doc.findIndex((l) => l.includes("secret=$(cat ~/sbx-webhook.secret)"));
    const recipe = doc.slice(from, doc.findIndex((l, i) => i > from && !l.trimEnd().endsWith("\\") && l.includes('-d "$body"')) + 1).map((l) => l.trim()).join("\n");
    const dir = mkdtempSync(join(tmpdir(), "sbx-recipe-"));
    try {
      writeFileSync(join(dir, "secret"), `${SECRET}\n`, { mode: 0o600 });
      const script = recipe
        .replace("~/sbx-webhook.secret", join(dir, "secret"))
        .replace("https://sbx.example.com/hooks/v1/decide", decideUrl())
        .replace('"approval":12', `"approval":${a.id}`)
        .replace('"sandbox":3', `"sandbox":${sb.id}`);
      // Not spawnSync: the listener answering curl runs in this process.
      const p = Bun.spawn(["bash", "-euc", script], { stdout: "pipe", stderr: "pipe" });
      const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
      expect(err).toBe("");
      expect(JSON.parse(out)).toMatchObject({ ok: true, approval: a.id, action: "allow" });
      expect(store.getApproval(a.id)).toMatchObject({ state: "allowed", decidedBy: "webhook:api" });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
