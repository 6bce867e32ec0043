// `sbx chat setup zulip …` writes a 0600 config with the key from --key-file (never echoed); bad sites, missing flags and `sbx ui` without --serve fail with a hint.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readChatConfig } from "../../../src/chat/config";
import { runCli } from "../../support/cli";

const KEY = "zulip-api-key-0123456789ABCDEF";
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function setup() {
  const root = mkdtempSync(join(tmpdir(), "sbx-chat-"));
  dirs.push(root);
  const keyFile = join(root, "key");
  writeFileSync(keyFile, `${KEY}\n`, { mode: 0o600 });
  const vars = { HOME: join(root, "home"), XDG_CONFIG_HOME: join(root, "config"), XDG_STATE_HOME: join(root, "state"), XDG_RUNTIME_DIR: join(root, "run") };
  return { root, keyFile, vars, configDir: join(root, "config", "sbx") };
}

const base = (keyFile: string, site = "https://acme.zulipchat.com/") => [
  "chat", "setup", "zulip", "--site", site, "--email", "sbx-bot@acme.zulipchat.com", "--key-file", keyFile, "--stream", "sandboxes",
];

describe("sbx chat setup zulip", () => {
  test("writes the config mode 0600 with the key from the file, and never prints the key", async () => {
    const { keyFile, vars, configDir } = setup();
    const r = await runCli([...base(keyFile), "--allow-sender", "Alice@Example.com", "bob@example.com"], { vars });
    expect(r.code).toBe(0);
    const file = join(configDir, "chat.json");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(configDir).mode & 0o077).toBe(0);
    expect(readChatConfig(configDir)).toEqual({
      provider: "zulip",
      site: "https://acme.zulipchat.com",
      email: "sbx-bot@acme.zulipchat.com",
      apiKey: KEY,
      stream: "sandboxes",
      allowSenders: ["alice@example.com", "bob@example.com"],
    });
    expect(r.stdout + r.stderr).not.toContain(KEY);
    const shown = await runCli(["chat", "show", "--json"], { vars });
    expect(shown.code).toBe(0);
    expect(shown.stdout).not.toContain(KEY);
    expect(JSON.parse(shown.stdout)).toMatchObject({ site: "https://acme.zulipchat.com", stream: "sandboxes" });
  });

  test("an http site is refused unless it is loopback", async () => {
    const { keyFile, vars, configDir } = setup();
    const r = await runCli(base(keyFile, "http://acme.zulipchat.com"), { vars });
    expect(r.code).toBe(64);
    expect(r.stderr).toContain("https");
    expect(readChatConfig(configDir)).toBeNull();
    expect((await runCli(base(keyFile, "http://127.0.0.1:9991"), { vars })).code).toBe(0);
  });

  test("there is no way to pass the key on the command line; missing flags and a missing key file say what to do", async () => {
    const { root, keyFile, vars } = setup();
    expect((await runCli([...base(keyFile), "--key", KEY], { vars })).code).toBe(64);
    const noStream = await runCli(base(keyFile).slice(0, -2), { vars });
    expect(noStream.code).toBe(64);
    expect(noStream.stderr).toContain("--stream");
    const noFile = await runCli(base(join(root, "nope")), { vars });
    expect(noFile.code).toBe(66);
    expect(noFile.stderr).toContain("hint:");
  });

  test("a config file others can read is refused", async () => {
    const { keyFile, vars, configDir } = setup();
    expect((await runCli(base(keyFile), { vars })).code).toBe(0);
    chmodSync(join(configDir, "chat.json"), 0o644);
    const r = await runCli(["chat", "show"], { vars });
    expect(r.code).toBe(77);
    expect(r.stderr).toContain("chmod 600");
    expect(readFileSync(join(configDir, "chat.json"), "utf8")).toContain(KEY);
  });
});
