// `sbx chat setup zulip …` checks the key with the server (a fake Zulip on loopback) and only then writes a 0600 config with the key from --key-file (never echoed); a refused key, another organisation, a deactivated bot or a silent server save nothing; bad sites and missing flags fail with a hint.
import { afterEach, describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkZulipKey } from "../../../src/chat/check";
import { readChatConfig } from "../../../src/chat/config";
import { runCli } from "../../support/cli";
import { startFakeZulip, type FakeZulip } from "../../support/fake-zulip";

const BOT = "sbx-bot@acme.zulipchat.com";
const KEY = "zulip-api-key-0123456789ABCDEF";
const dirs: string[] = [];
let zulip: FakeZulip | undefined;
afterEach(async () => {
  await zulip?.stop();
  zulip = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function setup(key = KEY) {
  const root = mkdtempSync(join(tmpdir(), "sbx-chat-"));
  dirs.push(root);
  const keyFile = join(root, "key");
  writeFileSync(keyFile, `${key}\n`, { mode: 0o600 });
  const vars = { HOME: join(root, "home"), XDG_CONFIG_HOME: join(root, "config"), XDG_STATE_HOME: join(root, "state"), XDG_RUNTIME_DIR: join(root, "run") };
  return { root, keyFile, vars, configDir: join(root, "config", "sbx") };
}

const base = (keyFile: string, site: string, email = BOT) => ["chat", "setup", "zulip", "--site", site, "--email", email, "--key-file", keyFile, "--stream", "sandboxes"];

/** A port on loopback where nothing listens (a server's, stopped). */
async function deadPort(): Promise<number> {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = s.port!;
  await s.stop(true);
  return port;
}

describe("sbx chat setup zulip", () => {
  test("asks the server who the key is, then writes the config mode 0600 with the key from the file, and never prints the key", async () => {
    zulip = startFakeZulip({ accounts: { [BOT]: KEY }, names: { [BOT]: "sbx approvals" } });
    const { keyFile, vars, configDir } = setup();
    const r = await runCli([...base(keyFile, `${zulip.site}/`), "--allow-sender", "Alice@Example.com", "bob@example.com"], { vars });
    expect(r.code).toBe(0);
    expect(zulip.calls).toEqual([{ method: "GET", path: "/api/v1/users/me", who: BOT, status: 200 }]);
    expect(r.stderr).toContain(`the server accepts the key: bot 'sbx approvals' (${BOT})`);
    const file = join(configDir, "chat.json");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(configDir).mode & 0o077).toBe(0);
    expect(readChatConfig(configDir)).toEqual({
      provider: "zulip",
      site: zulip.site,
      email: BOT,
      apiKey: KEY,
      stream: "sandboxes",
      allowSenders: ["alice@example.com", "bob@example.com"],
    });
    expect(r.stdout + r.stderr).not.toContain(KEY);
    const shown = await runCli(["chat", "show", "--json"], { vars });
    expect(shown.code).toBe(0);
    expect(shown.stdout).not.toContain(KEY);
    expect(JSON.parse(shown.stdout)).toMatchObject({ site: zulip.site, stream: "sandboxes" });
  });

  test("a key the server refuses (401) is not saved, and an earlier good config stays as it was (exit 77)", async () => {
    zulip = startFakeZulip({ accounts: { [BOT]: KEY } });
    const good = setup();
    expect((await runCli(base(good.keyFile, zulip.site), { vars: good.vars })).code).toBe(0);
    const before = readFileSync(join(good.configDir, "chat.json"), "utf8");
    const wrongKey = join(good.root, "wrong-key");
    writeFileSync(wrongKey, "not-the-key-0000000000000000\n", { mode: 0o600 });
    const r = await runCli(base(wrongKey, zulip.site), { vars: good.vars });
    expect(r.code).toBe(77);
    expect(r.stderr).toContain(`the Zulip server at ${zulip.site} refused the key for ${BOT} (HTTP 401: Invalid API key)`);
    expect(r.stderr).toContain("hint:");
    expect(r.stderr).toContain("Nothing was saved");
    expect(r.stderr).not.toContain("not-the-key");
    expect(r.stdout).not.toContain("wrote");
    expect(readFileSync(join(good.configDir, "chat.json"), "utf8")).toBe(before);
  });

  test("a bot of another organisation on the same server (wrong realm) is not saved (exit 78)", async () => {
    zulip = startFakeZulip({ accounts: {}, otherRealm: { [BOT]: KEY } });
    const { keyFile, vars, configDir } = setup();
    const r = await runCli(base(keyFile, zulip.site), { vars });
    expect(r.code).toBe(78);
    expect(r.stderr).toContain(`${BOT} is not in the Zulip organisation at ${zulip.site}`);
    expect(r.stderr).toContain("--site");
    expect(readChatConfig(configDir)).toBeNull();
  });

  test("a deactivated bot is not saved (exit 77, says to reactivate it)", async () => {
    zulip = startFakeZulip({ accounts: { [BOT]: KEY }, deactivated: [BOT] });
    const { keyFile, vars, configDir } = setup();
    const r = await runCli(base(keyFile, zulip.site), { vars });
    expect(r.code).toBe(77);
    expect(r.stderr).toContain("Reactivate");
    expect(readChatConfig(configDir)).toBeNull();
  });

  test("a server that does not answer is refused with the URL asked (exit 69), nothing saved", async () => {
    const site = `http://127.0.0.1:${await deadPort()}`;
    const { keyFile, vars, configDir } = setup();
    const r = await runCli(base(keyFile, site), { vars });
    expect(r.code).toBe(69);
    expect(r.stderr).toContain(`no answer from the Zulip server at ${site}/api/v1/users/me (connection refused)`);
    expect(readChatConfig(configDir)).toBeNull();
  });

  test("a server that accepts the connection but never answers is given up on after the timeout", async () => {
    const hang = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, fetch: () => new Promise<Response>(() => {}) });
    try {
      const site = `http://127.0.0.1:${hang.port}`;
      const e = await checkZulipKey({ site, email: BOT, apiKey: KEY }, { timeoutMs: 300 }).then(() => null, (x: unknown) => x as Error);
      expect(e?.message).toBe(`no answer from the Zulip server at ${site}/api/v1/users/me (no answer within 300 ms)`);
    } finally {
      await hang.stop(true);
    }
  });

  test("a person's key works, with a note that messages will be posted as that person", async () => {
    const ME = "alice@acme.zulipchat.com";
    zulip = startFakeZulip({ accounts: { [ME]: KEY }, people: [ME] });
    const { keyFile, vars } = setup();
    const r = await runCli(base(keyFile, zulip.site, ME), { vars });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`note: ${ME} is a person's account, not a bot`);
  });

  test("an http site is refused unless it is loopback, before anything is sent", async () => {
    zulip = startFakeZulip({ accounts: { [BOT]: KEY } });
    const { keyFile, vars, configDir } = setup();
    const r = await runCli(base(keyFile, "http://acme.zulipchat.com"), { vars });
    expect(r.code).toBe(64);
    expect(r.stderr).toContain("https");
    expect(readChatConfig(configDir)).toBeNull();
    expect((await runCli(base(keyFile, zulip.site), { vars })).code).toBe(0);
  });

  test("there is no way to pass the key on the command line; missing flags and a missing key file say what to do", async () => {
    zulip = startFakeZulip({ accounts: { [BOT]: KEY } });
    const { root, keyFile, vars } = setup();
    expect((await runCli([...base(keyFile, zulip.site), "--key", KEY], { vars })).code).toBe(64);
    const noStream = await runCli(base(keyFile, zulip.site).slice(0, -2), { vars });
    expect(noStream.code).toBe(64);
    expect(noStream.stderr).toContain("--stream");
    const noFile = await runCli(base(join(root, "nope"), zulip.site), { vars });
    expect(noFile.code).toBe(66);
    expect(noFile.stderr).toContain("hint:");
    expect(zulip.calls).toEqual([]);
  });

  test("a config file others can read is refused", async () => {
    zulip = startFakeZulip({ accounts: { [BOT]: KEY } });
    const { keyFile, vars, configDir } = setup();
    expect((await runCli(base(keyFile, zulip.site), { vars })).code).toBe(0);
    chmodSync(join(configDir, "chat.json"), 0o644);
    const r = await runCli(["chat", "show"], { vars });
    expect(r.code).toBe(77);
    expect(r.stderr).toContain("chmod 600");
    expect(readFileSync(join(configDir, "chat.json"), "utf8")).toContain(KEY);
  });
});
