// parent-proxy for `sbx chat setup` (issue 39): the CLI's check of a Zulip key (and Slack's auth.test, and the webhook's
// signed ping) goes out through the host's parent proxy
// as the config file's `proxy` names it (credentials a stored secret), like the daemon's bot, not only through the
// environment's proxy variables (all Bun's fetch reads). The fake Zulip stands at a port where nothing listens: only
// the fake company proxy knows where it really is, so a check that went straight out could not reach it.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readApprovalsConfig } from "../../../src/chat/channels-config";
import { secretsFile, setSecret } from "../../../src/secrets/store";
import { runCli } from "../../support/cli";
import { startFakeParent, type FakeParent } from "../../support/fake-parent";
import { startFakeSlack, type FakeSlack } from "../../support/fake-slack";
import { startFakeWebhook, type FakeWebhook } from "../../support/fake-webhook";
import { startFakeZulip, type FakeZulip } from "../../support/fake-zulip";

const BOT = "sbx-bot@corp.zulipchat.com";
const KEY = "zulip-api-key-0123456789ABCDEF";
const PASSWORD = "corp-Pa55-w0rd";
let zulip: FakeZulip | undefined;
let parent: FakeParent | undefined;
let slack: FakeSlack | undefined;
let hook: FakeWebhook | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await zulip?.stop();
  await slack?.stop();
  await hook?.stop();
  await parent?.close();
  zulip = slack = hook = undefined;
  parent = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function deadPort(): Promise<number> {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = s.port!;
  await s.stop(true);
  return port;
}

/** A home whose config names the company proxy (or not), the proxy knowing `127.0.0.1` only as `port`. */
async function home(config: boolean, port: number) {
  parent = await startFakeParent({ sites: { "127.0.0.1": port }, credentials: `corp:${PASSWORD}` });
  const root = mkdtempSync(join(tmpdir(), "sbx-chat-parent-"));
  dirs.push(root);
  const configDir = join(root, "config", "sbx");
  mkdirSync(configDir, { recursive: true, mode: 0o700 });
  if (config) writeFileSync(join(configDir, "config.json"), JSON.stringify({ proxy: { url: parent.url, credentials: "PROXY_LOGIN" } }), { mode: 0o600 });
  setSecret(secretsFile(configDir), "PROXY_LOGIN", `corp:${PASSWORD}`);
  const file = (name: string, text: string) => {
    const p = join(root, name);
    writeFileSync(p, `${text}\n`, { mode: 0o600 });
    return p;
  };
  const vars = { HOME: join(root, "home"), XDG_CONFIG_HOME: join(root, "config"), XDG_STATE_HOME: join(root, "state"), XDG_RUNTIME_DIR: join(root, "run"), HTTPS_PROXY: undefined, HTTP_PROXY: undefined, https_proxy: undefined, http_proxy: undefined, NO_PROXY: undefined, no_proxy: undefined };
  return { vars, file, configDir, site: `http://127.0.0.1:${await deadPort()}` };
}

async function company(config: boolean) {
  zulip = startFakeZulip({ accounts: { [BOT]: KEY }, names: { [BOT]: "sbx approvals" } });
  const h = await home(config, Number(new URL(zulip.site).port));
  const keyFile = h.file("key", KEY);
  const { vars, site } = h;
  return { vars, argv: ["chat", "setup", "zulip", "--site", site, "--email", BOT, "--key-file", keyFile, "--stream", "sandboxes", "--allow-sender", "alice@corp.example"] };
}

describe("parent-proxy: sbx chat setup checks the chat service through the host's proxy", () => {
  test("the config file's proxy carries the key check, with the stored credentials, which are never printed", async () => {
    const c = await company(true);
    const r = await runCli(c.argv, { vars: c.vars });
    expect(r.stderr).toContain("the server accepts the key");
    expect(r.code).toBe(0);
    expect(parent!.seen.map((s) => new URL(s.target).pathname)).toContain("/api/v1/users/me");
    expect(parent!.seen.every((s) => s.authorization === `Basic ${Buffer.from(`corp:${PASSWORD}`).toString("base64")}`)).toBe(true);
    expect(zulip!.calls.map((x) => x.path)).toEqual(["/api/v1/users/me"]);
    expect(r.stdout + r.stderr).not.toContain(PASSWORD);
    expect(r.stdout + r.stderr).not.toContain(Buffer.from(`corp:${PASSWORD}`).toString("base64"));
  });

  test("without a parent the same check goes straight out, and fails, saving nothing (the control: the site is only behind the proxy)", async () => {
    const c = await company(false);
    const r = await runCli(c.argv, { vars: c.vars });
    expect(r.code).not.toBe(0);
    expect(parent!.seen).toEqual([]);
    expect(zulip!.calls).toEqual([]);
  });
});

const SLACK_TOKEN = "xoxb-1111-2222-abcdefABCDEF";
const SIGNING = "0123456789abcdef0123456789abcdef";
const HOOK_SECRET = "whsec-0123456789abcdef0123456789abcdef";

describe("parent-proxy: sbx chat setup slack and webhook check through the host's proxy", () => {
  test("Slack's auth.test goes through the config file's proxy with its stored credentials; without it, the same setup saves nothing", async () => {
    slack = startFakeSlack({ token: SLACK_TOKEN, signingSecret: SIGNING, channels: { C0SANDBOX01: { member: true } } });
    for (const config of [true, false]) {
      await parent?.close();
      const h = await home(config, Number(new URL(slack.api).port));
      const argv = ["chat", "setup", "slack", "--token-file", h.file("token", SLACK_TOKEN), "--signing-secret-file", h.file("signing", SIGNING), "--channel", "C0SANDBOX01", "--allow-user", "U0ALICE0001", "--public-url", "https://sbx.example.test/", "--api-base", `${h.site}/api`];
      const r = await runCli(argv, { vars: h.vars });
      if (config) {
        expect(r.code).toBe(0);
        expect(parent!.seen.map((s) => new URL(s.target).pathname)).toContain("/api/auth.test");
        expect(parent!.seen.every((s) => s.authorization === `Basic ${Buffer.from(`corp:${PASSWORD}`).toString("base64")}`)).toBe(true);
        expect(slack.calls.map((c) => c.method)).toContain("auth.test");
        expect(r.stdout + r.stderr).not.toContain(PASSWORD);
      } else {
        expect(r.code).not.toBe(0);
        expect(parent!.seen).toEqual([]);
        expect(readApprovalsConfig(h.configDir)).toBeNull();
      }
    }
  });

  test("the webhook's signed ping goes through the config file's proxy and is verified by the receiver; without it, the ping fails", async () => {
    hook = startFakeWebhook(HOOK_SECRET);
    for (const config of [true, false]) {
      await parent?.close();
      const h = await home(config, Number(new URL(hook.url).port));
      const r = await runCli(["chat", "setup", "webhook", "--url", `${h.site}/hooks/sbx`, "--secret-file", h.file("secret", HOOK_SECRET)], { vars: h.vars });
      expect(r.code).toBe(0);
      if (config) {
        expect(r.stderr).toContain("the webhook accepted the ping");
        expect(hook.deliveries.map((d) => [d.event, d.verified])).toEqual([["ping", true]]);
        expect(parent!.seen.map((s) => new URL(s.target).pathname)).toEqual(["/hooks/sbx"]);
        expect(r.stdout + r.stderr).not.toContain(PASSWORD);
      } else {
        // The receiver may come later, so the config is saved; the ping could not get out.
        expect(r.stderr).toContain("warning: the ping failed");
        expect(parent!.seen).toEqual([]);
        expect(hook.deliveries).toHaveLength(1);
      }
    }
  });
});

