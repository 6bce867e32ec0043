// Chat commands /allow, /deny, /allowlist parse into the same typed operations as the CLI verbs.
import { describe, expect, test } from "bun:test";
import { parseChatCommand } from "../../../src/core/chat-commands";

describe("parseChatCommand", () => {
  test("/allow <domain> for this sandbox, canonicalised", () => {
    expect(parseChatCommand("/allow Example.COM.")).toEqual({ ok: true, command: { op: "allow", patterns: ["example.com"], scope: "sandbox" } });
  });
  test("/allow several, --global", () => {
    expect(parseChatCommand("  /allow a.example *.b.example --global ")).toEqual({
      ok: true,
      command: { op: "allow", patterns: ["a.example", "*.b.example"], scope: "global" },
    });
  });
  test("/deny <domain>", () => {
    expect(parseChatCommand("/deny x.example")).toEqual({ ok: true, command: { op: "deny", patterns: ["x.example"], scope: "sandbox" } });
  });
  test("/allowlist", () => expect(parseChatCommand("/allowlist")).toEqual({ ok: true, command: { op: "list" } }));
  test("ordinary chat is not a command", () => {
    expect(parseChatCommand("please allow example.com")).toBeNull();
    expect(parseChatCommand("/allowed")).toBeNull();
    expect(parseChatCommand("")).toBeNull();
  });
  test("malformed commands say why", () => {
    expect(parseChatCommand("/allow")).toMatchObject({ ok: false, error: expect.stringContaining("needs a domain") });
    expect(parseChatCommand("/allow *.com")).toMatchObject({ ok: false, error: expect.stringContaining("top-level") });
    expect(parseChatCommand("/allow x.example --sandbox y")).toMatchObject({ ok: false, error: expect.stringContaining("--sandbox") });
    expect(parseChatCommand("/allowlist extra")).toMatchObject({ ok: false });
  });
});
