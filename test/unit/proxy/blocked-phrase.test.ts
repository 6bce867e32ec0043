// The reason phrase of a refusal carries the hint a client shows, and nothing a sandbox chose can end the status line.
import { expect, test } from "bun:test";
import { blockedPhrase } from "../../../src/proxy/refusal";

test("printable ASCII only, bounded; CR/LF and escapes a sandbox put in a host never survive", () => {
  expect(blockedPhrase("a.test:443", "sbx allow a.test --sandbox s")).toBe("sbx: a.test:443 is not allowed (sbx allow a.test --sandbox s)");
  const evil = blockedPhrase("x\r\nSet-Cookie: a=b\u001b[2J:443", null);
  expect(evil).not.toMatch(/[\r\n\u001b]/);
  expect(evil).toBe("sbx: x??Set-Cookie: a=b?[2J:443 is not allowed (it cannot be allowed)");
  expect(blockedPhrase("h".repeat(500), null).length).toBe(200);
});
