// parent-proxy for `sbx chat setup` (issue 39): the CLI's check of a Zulip key goes out through the host's parent proxy
// as the config file's `proxy` names it (credentials a stored secret), like the daemon's bot, not only through the
// environment's proxy variables (all Bun's fetch reads). The fake Zulip stands at a port where nothing listens: only
// the fake company proxy knows where it really is, so a check that went straight out could not reach it.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { secretsFile, setSecret } from "../../../src/secrets/store";
import { runCli } from "../../support/cli";
import { startFakeParent, type FakeParent } from "../../support/fake-parent";
import { startFakeZulip, type FakeZulip } from "../../support/fake-zulip";

const BOT = "sbx-bot@corp.zulipchat.com";
const KEY = "zulip-api-key-0123456789ABCDEF";
const PASSWORD = "corp-Pa55-w0rd";
let zulip: FakeZulip | undefined;
let parent: FakeParent | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await zulip?.stop();
  await parent?.close();
  zulip = undefined;
  parent = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function deadPort(): Promise<number> {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = s.port!;
  await s.stop(true);
  return port;
}

async function company(config: boolean) {
  zulip = startFakeZulip({ accounts: { [BOT]: KEY }, names: { [BOT]: "sbx approvals" } });
  parent = await startFakeParent({ sites: { "127.0.0.1": Number(new URL(zulip.site).port) }, credentials: `corp:${PASSWORD}` });
  const root = mkdtempSync(join(tmpdir(), "sbx-chat-parent-"));
  dirs.push(root);
  const configDir = join(root, "config", "sbx");
  mkdirSync(configDir, { recursive: true, mode: 0o700 });
  if (config) writeFileSync(join(configDir, "config.json"), JSON.stringify({ proxy: { url: parent.url, credentials: "PROXY_LOGIN" } }), { mode: 0o600 });
  setSecret(secretsFile(configDir), "PROXY_LOGIN", `corp:${PASSWORD}`);
  const keyFile = join(root, "key");
  writeFileSync(keyFile, `${KEY}\n`, { mode: 0o600 });
  const vars = { HOME: join(root, "home"), XDG_CONFIG_HOME: join(root, "config"), XDG_STATE_HOME: join(root, "state"), XDG_RUNTIME_DIR: join(root, "run"), HTTPS_PROXY: undefined, HTTP_PROXY: undefined, https_proxy: undefined, http_proxy: undefined, NO_PROXY: undefined, no_proxy: undefined };
  const site = `http://127.0.0.1:${await deadPort()}`;
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
