// Claude Code's macOS login (the Keychain item) through the executor: read at most once a minute, its token added to
// Anthropic requests like the credentials file's, a missing item or a locked Keychain read as no login.
import { describe, expect, test } from "bun:test";
import { ClaudeKeychain } from "../../../src/llm/claude-keychain";
import { credentialFor, knownSecretValues } from "../../../src/llm/keys";
import { FakeExec } from "../../fakes/exec";

const ITEM = ["security", "find-generic-password", "-a", "alice", "-s", "Claude Code-credentials", "-w"];

describe("ClaudeKeychain", () => {
  test("the item's token is the Anthropic credential (with the OAuth beta), read once a minute", async () => {
    let t = 0;
    const exec = new FakeExec().expect(ITEM, { stdout: `${JSON.stringify({ claudeAiOauth: { accessToken: "sk-ant-oat01-keychain" } })}\n` }, 2);
    const k = new ClaudeKeychain(exec, "alice", () => t);
    await k.load();
    await k.load();
    expect(exec.calls.length).toBe(1);
    const src = { env: {}, claudeKeychain: () => k.value() };
    expect(credentialFor("anthropic", src)).toEqual({ headers: { authorization: "Bearer sk-ant-oat01-keychain", "anthropic-beta": "oauth-2025-04-20" }, source: "claude-keychain", kind: "anthropic-oauth" });
    expect(knownSecretValues(src)).toContain("sk-ant-oat01-keychain");
    t = 61_000;
    await k.load();
    expect(exec.calls.length).toBe(2);
  });

  test("an API key wins over the Keychain login; no item (exit 44) or a locked Keychain: no credential", async () => {
    const k = new ClaudeKeychain(new FakeExec().expect(ITEM, { exitCode: 44, stderr: "The specified item could not be found in the keychain." }), "alice");
    await k.load();
    expect(k.value()).toBeUndefined();
    expect(credentialFor("anthropic", { env: {}, claudeKeychain: () => k.value() })).toBeUndefined();
    expect(credentialFor("anthropic", { env: { ANTHROPIC_API_KEY: "sk-ant-api" }, claudeKeychain: () => '{"claudeAiOauth":{"accessToken":"x"}}' })?.source).toBe("ANTHROPIC_API_KEY");
  });
});
