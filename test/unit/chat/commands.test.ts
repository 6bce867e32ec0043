// What the chat bot posts when a sandbox is refused: a proxy denial offers /allow; a raw connection the firewall dropped offers nothing to allow.
import { describe, expect, test } from "bun:test";
import { blockedNotice } from "../../../src/chat/commands";

const base = { kind: "egress" as const, action: "denied" as const, at: 0, sandbox: { id: 1, name: "demo" }, method: "CONNECT", host: "example.com", port: 443, suggest: null };

describe("blockedNotice", () => {
  test("a proxy denial names the host and the /allow and /deny replies", () => {
    const t = blockedNotice({ ...base, reason: "not in allowlist" } as Parameters<typeof blockedNotice>[0]);
    expect(t).toContain("`example.com:443`");
    expect(t).toContain("/allow example.com");
    expect(t).toContain("/deny example.com");
  });

  test("a raw connection dropped by the firewall offers no /allow (an allowlist entry would not let it out) and points at sbx logs", () => {
    const t = blockedNotice({ ...base, method: "TCP", host: "203.0.113.7", reason: "blocked-raw" } as Parameters<typeof blockedNotice>[0]);
    expect(t).toContain("tried to connect around its proxy");
    expect(t).toContain("`TCP 203.0.113.7:443`");
    expect(t).not.toContain("/allow");
    expect(t).toContain("sbx logs --sandbox demo");
  });

  test("a backquote from inside the sandbox cannot close the code span", () => {
    const t = blockedNotice({ ...base, host: "a`b.example", reason: "blocked-raw" } as Parameters<typeof blockedNotice>[0]);
    expect(t).toContain("a'b.example");
  });
});
