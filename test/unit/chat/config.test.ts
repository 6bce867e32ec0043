// removeChatConfig takes away everything a setup wrote (chat.json and a crashed setup's temp file, so the key), nothing else; with nothing there it says so; an unreadable config goes all the same.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildZulipConfig, removeChatConfig, writeChatConfig } from "../../../src/chat/config";

const made: string[] = [];
afterAll(() => made.forEach((d) => rmSync(d, { recursive: true, force: true })));
const configDir = () => {
  const d = mkdtempSync(join(tmpdir(), "sbx-chat-config-"));
  made.push(d);
  return join(d, "sbx");
};
const CFG = buildZulipConfig({ site: "https://acme.zulipchat.com", email: "bot@acme.zulipchat.com", apiKey: "k".repeat(32), stream: "sandboxes", allowSenders: ["alice@example.com"] });

describe("removeChatConfig", () => {
  test("removes chat.json and says what it held, without the key", () => {
    const dir = configDir();
    const file = writeChatConfig(dir, CFG);
    const r = removeChatConfig(dir);
    expect(r).toEqual({
      file,
      removed: true,
      config: { provider: "zulip", site: "https://acme.zulipchat.com", email: "bot@acme.zulipchat.com", stream: "sandboxes", allowSenders: ["alice@example.com"] },
    });
    expect(JSON.stringify(r)).not.toContain("kkkk");
    expect(existsSync(file)).toBe(false);
  });

  test("a crashed setup's temp file (the key in it) goes too; the other files of the config dir stay", () => {
    const dir = configDir();
    writeChatConfig(dir, CFG);
    writeFileSync(join(dir, "chat.json.4242.tmp"), "{}", { mode: 0o600 });
    writeFileSync(join(dir, "secrets.json"), "{}", { mode: 0o600 });
    writeFileSync(join(dir, "config.json"), "{}");
    writeFileSync(join(dir, "chat.json.bak"), "mine");
    expect(removeChatConfig(dir).removed).toBe(true);
    expect(readdirSync(dir).sort()).toEqual(["chat.json.bak", "config.json", "secrets.json"]);
    const leftoverOnly = configDir();
    mkdirSync(leftoverOnly, { recursive: true });
    writeFileSync(join(leftoverOnly, "chat.json.7.tmp"), "{}");
    expect(removeChatConfig(leftoverOnly)).toMatchObject({ removed: true, config: null });
  });

  test("nothing set up: removed false, no error (and no config dir at all is the same)", () => {
    const dir = configDir();
    expect(removeChatConfig(dir)).toEqual({ file: join(dir, "chat.json"), removed: false, config: null });
    mkdirSync(dir, { recursive: true });
    expect(removeChatConfig(dir).removed).toBe(false);
  });

  test("a config others can read, or one that is not JSON, is removed all the same (not described)", () => {
    const dir = configDir();
    const file = writeChatConfig(dir, CFG);
    chmodSync(file, 0o644);
    expect(removeChatConfig(dir)).toMatchObject({ removed: true, config: null });
    writeFileSync(file, "not json", { mode: 0o600 });
    expect(removeChatConfig(dir)).toMatchObject({ removed: true, config: null });
    expect(existsSync(file)).toBe(false);
  });
});
