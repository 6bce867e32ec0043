// approval-channel: a webhook and a Slack that never answer cost the proxy, the CLI and the dashboard nothing. Measured
// on the real daemon (its real proxy refusing through the socket the forwarder uses), first with no channel, then with
// both hanging: each delivery holds a request for its 5 s timeout, so anything that waited on one would take ≥ 5 s.
import { afterEach, expect, test } from "bun:test";
import { join } from "node:path";
import { buildApprovalsConfig, writeApprovalsConfig } from "../../../src/chat/channels-config";
import { chatReload, uiLaunch } from "../../../src/client/hosted";
import { killDaemonProc, makeWorld, seedSandbox, startDaemonProc, startSandbox, type DaemonProc, type World } from "../../support/daemon-proc";
import { startFakeSlack, type FakeSlack } from "../../support/fake-slack";
import { startFakeWebhook, type FakeWebhook } from "../../support/fake-webhook";
import { connect } from "node:net";
import { runCli } from "../../support/cli";

const SECRET = "whsec-0123456789abcdef0123456789abcdef";
const TOKEN = "xoxb-1111-2222-abcdefABCDEF";
const SIGNING = "8f742231b10e8888abcd99yyyzzz85a5";

let w: World | undefined;
let d: DaemonProc | undefined;
let hook: FakeWebhook | undefined;
let slack: FakeSlack | undefined;
afterEach(async () => {
  await killDaemonProc(d);
  await hook?.stop();
  await slack?.stop();
  w?.cleanup();
  w = d = hook = slack = undefined;
});

/** An absolute-URI request through the proxy socket, as the in-sandbox forwarder sends it; its status. */
function viaProxy(socket: string, url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    let data = "";
    const s = connect({ path: socket });
    s.on("connect", () => s.write(`GET ${url} HTTP/1.1\r\nHost: ${new URL(url).host}\r\nConnection: close\r\n\r\n`));
    s.on("data", (b) => (data += b.toString()));
    s.on("error", reject);
    s.on("close", () => resolve(Number(/^HTTP\/1\.[01] (\d{3})/.exec(data)?.[1] ?? 0)));
  });
}

async function timed<T>(f: () => Promise<T>): Promise<[number, T]> {
  const t = performance.now();
  const v = await f();
  return [performance.now() - t, v];
}

const summary = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: Math.round(s[Math.floor(s.length / 2)]! * 10) / 10, max: Math.round(s.at(-1)! * 10) / 10 };
};

test("approval-channel: a webhook and a Slack that hang delay neither the proxy's refusals, nor the CLI's calls, nor the dashboard", async () => {
  w = makeWorld();
  hook = startFakeWebhook(SECRET);
  hook.mode("hang");
  slack = startFakeSlack({ token: TOKEN, signingSecret: SIGNING, channels: { C0SANDBOX01: { member: true } } });
  slack.hang(true);
  const sid = seedSandbox(w, "demo", undefined, "/src/webapp");
  d = await startDaemonProc(w, 10_000, "real-proxy");
  await startSandbox(w, "demo");
  const proxy = join(w.paths.runtimeDir, "sb", sid, "proxy.sock");
  const launch = await uiLaunch(w.client, 60_000);
  const cookie = ((await fetch(launch.url, { redirect: "manual" })).headers.get("set-cookie") ?? "").split(";")[0]!;

  const round = async (tag: string) => {
    const m = { refuse: [] as number[], status: [] as number[], approvals: [] as number[], decide: [] as number[], dashboard: [] as number[] };
    for (let i = 0; i < 20; i++) {
      const [t, code] = await timed(() => viaProxy(proxy, `http://n${i}.${tag}.test/`));
      expect(code).toBe(403);
      m.refuse.push(t);
      m.status.push((await timed(() => w!.client.status()))[0]);
      const [ta, list] = await timed(() => w!.client.approvals());
      m.approvals.push(ta);
      const mine = list.pending.find((a) => a.host === `n${i}.${tag}.test`)!;
      if (i % 2 === 0) m.decide.push((await timed(() => w!.client.decide(mine.id, "deny")))[0]);
      m.dashboard.push((await timed(async () => (await fetch(`${launch.origin}api/state`, { headers: { cookie } })).status))[0]);
    }
    return Object.fromEntries(Object.entries(m).map(([k, v]) => [k, summary(v)])) as Record<keyof typeof m, { p50: number; max: number }>;
  };

  const before = await round("base");
  writeApprovalsConfig(
    w.paths.configDir,
    buildApprovalsConfig(
      { listen: "127.0.0.1:0", publicUrl: "https://sbx.example.test", webhook: { url: hook.url, secret: SECRET }, slack: { botToken: TOKEN, signingSecret: SIGNING, channel: "C0SANDBOX01", allowUsers: [], apiBase: slack.api } },
      "",
    ),
  );
  await chatReload(w.client);
  const during = await round("hang");
  // The receivers were holding requests all along, and the rest waits in a bounded queue.
  expect(hook.hanging()).toBeGreaterThanOrEqual(1);
  expect(slack.held()).toBeGreaterThanOrEqual(1);
  const st = (await w.client.status()).approvals!;
  expect(st.webhook!.queued + st.webhook!.dropped).toBeGreaterThan(5);
  expect(st.webhook!.queued).toBeLessThanOrEqual(100);
  // `sbx status` says where each posts and that nothing was delivered yet (the query of a URL never shown).
  const shown = await runCli(["status"], { vars: w.env });
  expect(shown.stdout).toMatch(/approvals listener: http:\/\/127\.0\.0\.1:\d+ \(public https:\/\/sbx\.example\.test\)/);
  expect(shown.stdout).toContain(`webhook: ${hook.url}, ok (0 delivered, 0 failed`);
  expect(shown.stdout).toContain("slack: channel C0SANDBOX01, ok (0 delivered");
  process.stderr.write(`approval-channel hang (ms, p50/max) before: ${JSON.stringify(before)}\n                          during: ${JSON.stringify(during)}\n`);
  for (const [k, v] of Object.entries(during)) {
    // A wait on a delivery would cost its 5 s timeout; 1 s leaves room for a loaded machine.
    expect({ k, max: v.max < 1000 }).toEqual({ k, max: true });
  }
  // The secrets never reach the daemon's log.
  expect(d.log()).not.toContain(SECRET);
  expect(d.log()).not.toContain(TOKEN);
  expect(d.log()).not.toContain(SIGNING);
  // Nor do they hold up the daemon's own stop: the deliveries under way are abandoned, not waited for.
  const [stopMs, code] = await timed(() => (d!.proc.kill("SIGTERM"), d!.exited));
  expect(code).toBe(0);
  expect(stopMs).toBeLessThan(3000);
  d = undefined;
}, 60_000);
