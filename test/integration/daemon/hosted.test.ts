// The daemon hosts the dashboard, the Zulip bot and desktop notifications: a request its real proxy blocks reaches notify-send (once per host), the chat topic and the live feed; status shows them; SIGTERM closes them; no launch secret in the log.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { topicFor } from "../../../src/chat/commands";
import { buildZulipConfig, writeChatConfig } from "../../../src/chat/config";
import { uiLaunch } from "../../../src/client/hosted";
import { type DaemonProc, killDaemonProc, makeWorld, seedSandbox, startDaemonProc, type World, startSandbox } from "../../support/daemon-proc";
import { startFakeZulip, type FakeZulip } from "../../support/fake-zulip";

const BOT = "sbx-bot@zulip.test";
const KEY = "bot-key-0123456789abcdef";
const ALICE = "alice@example.com";

let w: World | undefined;
let d: DaemonProc | undefined;
let zulip: FakeZulip | undefined;
afterEach(async () => {
  await killDaemonProc(d);
  d = undefined;
  await zulip?.stop();
  zulip = undefined;
  w?.cleanup();
  w = undefined;
});

/** An absolute-URI request through the proxy socket, as the in-sandbox forwarder sends it. */
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

async function until(pred: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(25);
  }
}

/** A notify-send that records each call's argv (one JSON array a line). */
function fakeNotifySend(world: World): string {
  const bin = join(world.root, "bin");
  mkdirSync(bin, { recursive: true });
  const rec = join(world.root, "notify.log");
  writeFileSync(
    join(bin, "notify-send"),
    `#!/usr/bin/env bun\nrequire("node:fs").appendFileSync(${JSON.stringify(rec)}, JSON.stringify(process.argv.slice(2)) + "\\n");\n`,
    { mode: 0o755 },
  );
  world.env.PATH = `${bin}:${world.env.PATH}`;
  return rec;
}

const calls = (rec: string): string[][] => (existsSync(rec) ? readFileSync(rec, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as string[]) : []);

describe("the daemon hosts the dashboard, the chat bot and notifications", () => {
  test("a blocked request is notified on the desktop once per host, posted to the sandbox's topic, and shown in the feed", async () => {
    w = makeWorld();
    const rec = fakeNotifySend(w);
    zulip = startFakeZulip({ accounts: { [BOT]: KEY, [ALICE]: "alice-key" }, heartbeatMs: 200 });
    writeChatConfig(w.paths.configDir, buildZulipConfig({ site: zulip.site, email: BOT, apiKey: KEY, stream: "sandboxes", allowSenders: [ALICE] }));
    const sid = seedSandbox(w, "demo", undefined, "/src/webapp");
    d = await startDaemonProc(w, 10_000, "real-proxy", "notify");
    await startSandbox(w, "demo");

    const st = await w.client.status();
    expect(st.ui?.origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    await until(() => zulip!.registrations() >= 1, "the bot to register");
    for (let i = 0; i < 100 && !(await w.client.status()).chat?.connected; i++) await Bun.sleep(50);
    expect((await w.client.status()).chat).toMatchObject({ configured: true, connected: true, stream: "sandboxes", site: zulip.site });

    // The live feed, as the dashboard's browser sees it.
    const launch = await uiLaunch(w.client, 60_000);
    const login = await fetch(launch.url, { redirect: "manual" });
    expect(login.status).toBe(303);
    const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0]!;
    // The dashboard shows the sandbox's state as the daemon sees it, in sbx's one word (never the store's "active").
    const state = (await (await fetch(`${launch.origin}api/state`, { headers: { cookie } })).json()) as { sandboxes: { name: string; state: string }[] };
    expect(state.sandboxes.map((s) => [s.name, s.state])).toEqual([["demo", "running"]]);
    const sse = await fetch(`${launch.origin}api/events`, { headers: { cookie } });
    const reader = sse.body!.getReader();
    let feed = "";
    void (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        feed += new TextDecoder().decode(value);
      }
    })().catch(() => undefined);
    await until(() => feed.includes("event: hello"), "the feed to open");

    const proxy = join(w.paths.runtimeDir, "sb", sid, "proxy.sock");
    expect(await viaProxy(proxy, "http://blocked.test:8080/")).toBe(403);
    expect(await viaProxy(proxy, "http://blocked.test:8080/again")).toBe(403);
    expect(await viaProxy(proxy, "http://other.test/")).toBe(403);

    await until(() => calls(rec).length >= 2, "two desktop notifications");
    await until(() => feed.includes("other.test"), "the feed to show the second host");
    await until(() => zulip!.messages.filter((m) => m.sender_email === BOT).length >= 2, "two chat notices");
    await Bun.sleep(300);
    // Rate-limited per sandbox and host: the repeat to blocked.test notified nobody again.
    const n = calls(rec);
    expect(n).toHaveLength(2);
    expect(n[0]!.slice(0, 3)).toEqual(["--app-name=sbx", "--urgency=normal", "sbx: demo was refused blocked.test"]);
    expect(n[0]![3]).toContain("sbx allow blocked.test:8080 --sandbox demo");
    expect(n[1]![2]).toBe("sbx: demo was refused other.test");
    const notices = zulip.messages.filter((m) => m.sender_email === BOT);
    expect(notices.map((m) => m.subject)).toEqual([topicFor({ name: "demo", repo: "/src/webapp" }), topicFor({ name: "demo", repo: "/src/webapp" })]);
    expect(notices[0]!.content).toContain("blocked.test:8080");
    const events = feed.split("\n").filter((l) => l.startsWith("data: ") && l.includes('"egress"')).map((l) => JSON.parse(l.slice(6)));
    expect(events.filter((e) => e.host === "blocked.test").map((e) => [e.action, e.count])).toEqual([["denied", 1], ["denied", 2]]);
    await reader.cancel();

    // No launch secret in the daemon's log, ever.
    expect(d.log()).not.toContain(launch.ticket);
    expect(d.log()).not.toContain("ticket=");
    expect(d.log()).not.toContain("token=");
    expect(d.log()).not.toContain(KEY);
  }, 30_000);

  test("SIGTERM closes the dashboard and the bot; the daemon exits 0", async () => {
    w = makeWorld();
    zulip = startFakeZulip({ accounts: { [BOT]: KEY }, heartbeatMs: 200 });
    writeChatConfig(w.paths.configDir, buildZulipConfig({ site: zulip.site, email: BOT, apiKey: KEY, stream: "sandboxes", allowSenders: [] }));
    d = await startDaemonProc(w);
    const origin = (await w.client.status()).ui!.origin;
    expect((await fetch(origin)).status).toBe(401);
    await until(() => zulip!.registrations() >= 1, "the bot to register");
    d.proc.kill("SIGTERM");
    expect(await d.exited).toBe(0);
    d = undefined;
    let refused = false;
    try {
      await fetch(origin, { signal: AbortSignal.timeout(1000) });
    } catch {
      refused = true;
    }
    expect(refused).toBe(true);
  }, 20_000);
});
