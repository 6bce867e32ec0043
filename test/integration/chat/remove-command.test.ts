// `sbx chat remove` takes away what `sbx chat setup` saved (the config and its key), says so (or that nothing was set up, exit 0), answers --json, and a running daemon stops its bot at once; a daemon started later has none.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../../support/cli";
import { type DaemonProc, killDaemonProc, makeWorld, startDaemonProc, type World } from "../../support/daemon-proc";
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

async function until(pred: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(25);
  }
}

/** A world with chat set up through the CLI against a fake Zulip. */
async function chatWorld(): Promise<{ world: World; z: FakeZulip; file: string }> {
  const world = (w = makeWorld());
  const z = (zulip = startFakeZulip({ accounts: { [BOT]: KEY, [ALICE]: "alice-key" }, heartbeatMs: 200 }));
  const keyFile = join(world.root, "key");
  writeFileSync(keyFile, KEY, { mode: 0o600 });
  const setup = await runCli(["chat", "setup", "zulip", "--site", z.site, "--email", BOT, "--key-file", keyFile, "--stream", "sandboxes", "--allow-sender", ALICE], { vars: world.env });
  expect(setup.code).toBe(0);
  const file = join(world.paths.configDir, "chat.json");
  expect(existsSync(file)).toBe(true);
  return { world, z, file };
}

/** Alice asks the bot for /status in a topic; resolves whether the bot answered within ms. */
async function botAnswers(z: FakeZulip, ms: number): Promise<boolean> {
  const before = z.messages.filter((m) => m.sender_email === BOT).length;
  z.say(ALICE, "sandboxes", "general", "/status");
  try {
    await z.waitFor((all) => all.filter((m) => m.sender_email === BOT).length > before, ms);
    return true;
  } catch {
    return false;
  }
}

describe("sbx chat remove", () => {
  test("removes the config and its key, says what it removed; again: nothing set up, exit 0; --json both ways", async () => {
    const { world, file } = await chatWorld();
    const r = await runCli(["chat", "remove"], { vars: world.env });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`removed ${file}: bot ${BOT} on ${zulip!.site}, stream 'sandboxes', and its API key\n`);
    expect(r.stderr).toContain("still works on Zulip until you generate a new one there");
    expect(r.stderr).toContain("no daemon is running");
    expect(r.stdout + r.stderr).not.toContain(KEY);
    expect(existsSync(file)).toBe(false);
    expect((await runCli(["chat", "show"], { vars: world.env })).code).toBe(66);

    const again = await runCli(["chat", "remove"], { vars: world.env });
    expect(again.code).toBe(0);
    expect(again.stdout).toBe(`chat is not set up: nothing to remove (no ${file})\n`);
    const json = await runCli(["chat", "rm", "--json"], { vars: world.env });
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ removed: false, file, config: null, daemon: { running: false } });
  });

  test("--json says what was removed, without the key", async () => {
    const { world, file } = await chatWorld();
    const r = await runCli(["chat", "remove", "--json"], { vars: world.env });
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain(KEY);
    expect(JSON.parse(r.stdout)).toEqual({
      removed: true,
      file,
      config: { provider: "zulip", site: zulip!.site, email: BOT, stream: "sandboxes", allowSenders: [ALICE] },
      daemon: { running: false },
    });
  });

  test("a running daemon stops its bot at once: no more answers in the stream; a daemon started later has no bot", async () => {
    const { world, z } = await chatWorld();
    d = await startDaemonProc(world);
    await until(async () => (await world.client.status()).chat?.connected === true, "the bot to connect");
    expect(await botAnswers(z, 5000)).toBe(true);
    const registered = z.registrations();

    const r = await runCli(["chat", "remove", "--json"], { vars: world.env });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ removed: true, daemon: { running: true, chat: { configured: false, connected: false } } });
    expect((await world.client.status()).chat).toEqual({ configured: false, connected: false });
    // The bot is gone, not just reported gone: nobody reads the stream any more (heartbeats are 200 ms, so 1.5 s is plenty).
    expect(await botAnswers(z, 1500)).toBe(false);
    const pollsAfter = z.calls.length;
    await Bun.sleep(600);
    expect(z.calls.slice(pollsAfter).filter((c) => c.who === BOT)).toEqual([]);

    await killDaemonProc(d);
    d = await startDaemonProc(world);
    expect((await world.client.status()).chat).toEqual({ configured: false, connected: false });
    await Bun.sleep(300);
    expect(z.registrations()).toBe(registered);
    expect(d.log()).not.toContain(KEY);
  }, 30_000);

  test("an unknown provider is a usage error; removing another provider (slack) leaves Zulip's config", async () => {
    const { world, file } = await chatWorld();
    const r = await runCli(["chat", "remove", "teams"], { vars: world.env });
    expect(r.code).toBe(64);
    expect(r.stderr).toContain("hint:");
    expect(existsSync(file)).toBe(true);
    const slack = await runCli(["chat", "remove", "slack"], { vars: world.env });
    expect(slack.code).toBe(0);
    expect(slack.stdout).toContain("slack is not set up");
    expect(existsSync(file)).toBe(true);
  });
});
