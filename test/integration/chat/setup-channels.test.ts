// `sbx chat setup webhook|slack`: secrets come from files and are never printed; the webhook gets one signed ping (its
// failure said, the config saved: the receiver may come later); Slack's token is checked with auth.test first and a
// refused one saves nothing; both go into one 0600 approvals.json, `show` prints no secret, `remove P` takes one.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readApprovalsConfig } from "../../../src/chat/channels-config";
import { runCli } from "../../support/cli";
import { startFakeSlack, type FakeSlack } from "../../support/fake-slack";
import { startFakeWebhook, type FakeWebhook } from "../../support/fake-webhook";

const SECRET = "whsec-0123456789abcdef0123456789abcdef";
const TOKEN = "xoxb-1111-2222-abcdefABCDEF";
const SIGNING = "0123456789abcdef0123456789abcdef";
const dirs: string[] = [];
let hook: FakeWebhook | undefined;
let slack: FakeSlack | undefined;
afterEach(async () => {
  await hook?.stop();
  await slack?.stop();
  hook = slack = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function world() {
  const root = mkdtempSync(join(tmpdir(), "sbx-channels-"));
  dirs.push(root);
  const file = (name: string, text: string) => {
    const p = join(root, name);
    writeFileSync(p, `${text}\n`, { mode: 0o600 });
    return p;
  };
  const vars = { HOME: join(root, "home"), XDG_CONFIG_HOME: join(root, "config"), XDG_STATE_HOME: join(root, "state"), XDG_RUNTIME_DIR: join(root, "run") };
  return { file, vars, configDir: join(root, "config", "sbx") };
}

describe("sbx chat setup webhook", () => {
  test("sends one signed ping the receiver verifies, writes approvals.json 0600, and never prints the secret", async () => {
    hook = startFakeWebhook(SECRET);
    const w = world();
    const r = await runCli(["chat", "setup", "webhook", "--url", `${hook.url}?key=abc`, "--secret-file", w.file("secret", SECRET)], { vars: w.vars });
    expect(r.code).toBe(0);
    expect(hook.deliveries.map((d) => [d.event, d.verified])).toEqual([["ping", true]]);
    expect(r.stderr).toContain("the webhook accepted the ping");
    const file = join(w.configDir, "approvals.json");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readApprovalsConfig(w.configDir)).toMatchObject({ listen: "127.0.0.1:8750", webhook: { url: `${hook.url}?key=abc`, secret: SECRET } });
    expect(r.stdout + r.stderr).not.toContain(SECRET);
    // The URL's query may hold a key of the receiver's: shown elided.
    expect(r.stdout).toContain(`${hook.url}?…`);
    const shown = await runCli(["chat", "show", "--json"], { vars: w.vars });
    expect(JSON.parse(shown.stdout)).toEqual({ approvals: { listen: "127.0.0.1:8750", webhook: { url: `${hook.url}?…`, timeoutMs: 5000, linkMinutes: 60 } } });
  });

  test("a receiver that refuses the ping is said, and the config saved all the same; plain http to another host is refused", async () => {
    hook = startFakeWebhook(SECRET);
    hook.mode("refuse");
    const w = world();
    const secret = w.file("secret", SECRET);
    const r = await runCli(["chat", "setup", "webhook", "--url", hook.url, "--secret-file", secret], { vars: w.vars });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("warning: the ping failed");
    expect(r.stderr).toContain("HTTP 401");
    const http = await runCli(["chat", "setup", "webhook", "--url", "http://hooks.example.com/sbx", "--secret-file", secret], { vars: w.vars });
    expect(http.code).toBe(64);
    expect(http.stderr).toContain("must use https");
    const short = await runCli(["chat", "setup", "webhook", "--url", hook.url, "--secret-file", w.file("short", "tooshort")], { vars: w.vars });
    expect(short.code).toBe(64);
    expect(short.stderr).toContain("shorter than 32 characters");
  });
});

describe("sbx chat setup slack", () => {
  const args = (w: ReturnType<typeof world>, token: string) => [
    "chat", "setup", "slack",
    "--token-file", w.file("token", token),
    "--signing-secret-file", w.file("signing", SIGNING),
    "--channel", "C0SANDBOX01",
    "--allow-user", "U0ALICE0001",
    "--public-url", "https://sbx.example.test/",
    "--api-base", slack!.api,
  ];

  test("a token Slack refuses saves nothing (exit 77)", async () => {
    slack = startFakeSlack({ token: TOKEN, signingSecret: SIGNING, channels: { C0SANDBOX01: { member: true } } });
    const w = world();
    const r = await runCli(args(w, "xoxb-9999-wrong-token00"), { vars: w.vars });
    expect(r.code).toBe(77);
    expect(r.stderr).toContain("Slack refused the bot token (invalid_auth)");
    expect(readApprovalsConfig(w.configDir)).toBeNull();
  });

  test("a token Slack accepts is saved beside the webhook; show prints neither secret; remove slack leaves the webhook", async () => {
    slack = startFakeSlack({ token: TOKEN, signingSecret: SIGNING, channels: { C0SANDBOX01: { member: true } } });
    hook = startFakeWebhook(SECRET);
    const w = world();
    expect((await runCli(["chat", "setup", "webhook", "--url", hook.url, "--secret-file", w.file("secret", SECRET)], { vars: w.vars })).code).toBe(0);
    const r = await runCli(args(w, TOKEN), { vars: w.vars });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Slack app 'sbx' in Acme, channel C0SANDBOX01");
    expect(r.stderr).toContain("Request URL: https://sbx.example.test/hooks/slack/interact");
    const c = readApprovalsConfig(w.configDir)!;
    expect(c).toMatchObject({ publicUrl: "https://sbx.example.test", webhook: { secret: SECRET }, slack: { botToken: TOKEN, signingSecret: SIGNING, channel: "C0SANDBOX01", allowUsers: ["U0ALICE0001"] } });
    const shown = await runCli(["chat", "show"], { vars: w.vars });
    for (const s of [SECRET, TOKEN, SIGNING]) expect(shown.stdout + r.stdout + r.stderr).not.toContain(s);
    expect(shown.stdout).toContain("slack     channel C0SANDBOX01, clicks obeyed from U0ALICE0001");
    const rm = await runCli(["chat", "remove", "slack"], { vars: w.vars });
    expect(rm.code).toBe(0);
    expect(readApprovalsConfig(w.configDir)).toMatchObject({ webhook: { secret: SECRET } });
    expect(readApprovalsConfig(w.configDir)!.slack).toBeUndefined();
    expect((await runCli(["chat", "remove"], { vars: w.vars })).code).toBe(0);
    expect(readApprovalsConfig(w.configDir)).toBeNull();
  });

  test("Slack without a public URL is refused: its clicks have nowhere to come back to", async () => {
    slack = startFakeSlack({ token: TOKEN, signingSecret: SIGNING, channels: {} });
    const w = world();
    const a = args(w, TOKEN);
    const i = a.indexOf("--public-url");
    a.splice(i, 2);
    const r = await runCli(a, { vars: w.vars });
    expect(r.code).toBe(64);
    expect(r.stderr).toContain("--public-url");
    expect(slack.calls).toEqual([]);
  });
});
