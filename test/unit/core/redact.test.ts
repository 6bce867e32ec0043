// Redaction: known values (and their encodings), auth headers, URL credentials and key shapes never survive.
import { describe, expect, test } from "bun:test";
import { REDACTED, redact, redactor, secretForms } from "../../../src/core/redact";

describe("redact", () => {
  test("every known value, wherever it appears", () => {
    const s = "s3cr3t-value-123";
    expect(redact(`a ${s} b ${s}`, [s])).toBe(`a ${REDACTED} b ${REDACTED}`);
  });
  test("base64 and URL-encoded forms of a known value", () => {
    const s = "tok/with+chars=";
    expect(redact(`${btoa(s)} ${encodeURIComponent(s)}`, [s])).toBe(`${REDACTED} ${REDACTED}`);
  });
  test("longest value first when one contains another", () => {
    expect(redact("abcdefgh12345678", ["abcdefgh", "abcdefgh12345678"])).toBe(REDACTED);
  });
  test("short values are not redacted by value", () => {
    expect(redact("the cat sat", ["cat"])).toBe("the cat sat");
  });
  test("auth headers", () => {
    expect(redact("Authorization: Bearer abc.def.ghi\nx-api-key: zzz\nContent-Type: text/plain")).toBe(
      `Authorization: ${REDACTED}\nx-api-key: ${REDACTED}\nContent-Type: text/plain`,
    );
  });
  test("URL credentials", () => {
    expect(redact("fatal: https://x-access-token:abc123@github.com/o/r.git")).toBe(
      `fatal: https://x-access-token:${REDACTED}@github.com/o/r.git`,
    );
    expect(redact("https://tokenonly@host/x")).toBe(`https://${REDACTED}@host/x`);
  });
  test("bearer tokens inline", () => {
    expect(redact("curl -H 'Bearer abcdefghijk'")).toBe(`curl -H 'Bearer ${REDACTED}'`);
  });
  test("secret-shaped strings even when unknown", () => {
    const k = "ghp_" + "x".repeat(36);
    expect(redact(`leaked ${k} here`)).toBe(`leaked ${REDACTED} here`);
  });
  test("ordinary output is unchanged", () => {
    const s = "To https://github.com/o/r.git\n   1234567..89abcde  feature -> feature\n";
    expect(redact(s, ["unrelated-secret"])).toBe(s);
  });
  test("redactor reads the secrets at call time", () => {
    let v = "first-secret-1";
    const r = redactor(() => [v]);
    expect(r("first-secret-1")).toBe(REDACTED);
    v = "second-secret-2";
    expect(r("first-secret-1 second-secret-2")).toBe(`first-secret-1 ${REDACTED}`);
  });
});

describe("a host secret carried out encoded (a formatter, a script inside: whatever printed it)", () => {
  const token = "ghp_R3alTok3nValue0123456789abcdefXYZ";
  const b64at = (k: number, after = "") => Buffer.concat([Buffer.alloc(k, 0x41), Buffer.from(token), Buffer.from(after)]).toString("base64");
  const cases: [string, string][] = [
    ["plain", token],
    ["reversed", [...token].reverse().join("")],
    ["URL-encoded", encodeURIComponent(token)],
    ["hex", Buffer.from(token).toString("hex")],
    ["HEX", Buffer.from(token).toString("hex").toUpperCase()],
    ["base64", Buffer.from(token).toString("base64")],
    ["base64 inside text, offset 1", b64at(1, "xy")],
    ["base64 inside text, offset 2", b64at(2, "z")],
    ["base64url", Buffer.from(token).toString("base64url")],
    ["the first half", token.slice(0, 18)],
    ["a middle piece", token.slice(9, 27)],
  ];
  for (const [name, form] of cases) {
    test(`${name}: never in the output whole`, () => {
      const out = redact(`before ${form} after`, [token]);
      expect(out).toContain("[REDACTED]");
      expect(out).not.toContain(form);
    });
  }
  test("secretForms leaves out forms too short to redact without shredding ordinary output", () => {
    expect(secretForms("abcdefgh").every((f) => f.length >= 8)).toBe(true);
    expect(secretForms("abcdefgh")).toContain("hgfedcba");
  });
});

describe("never-reflected: RedactingLines holds a line to its end, within bounds", () => {
  test("a value cut across pieces is redacted whole; a line end lets what came before go at once", async () => {
    const { RedactingLines } = await import("../../../src/core/redact");
    const r = new RedactingLines(() => ["tok_0123456789abcdef"]);
    expect(r.push("progress 10%\r")).toBe("progress 10%\r");
    expect(r.push("remote: tok_0123")).toBe("");
    expect(r.push("456789abcdef ok\nnext")).toBe("remote: [REDACTED] ok\n");
    expect(r.end()).toBe("next");
  });
  test("a line that never ends is passed on past HELD_LINE_MAX, holding only a tail; a value across that cut is still found", async () => {
    const { HELD_LINE_MAX, RedactingLines } = await import("../../../src/core/redact");
    const value = "tok_0123456789abcdef";
    const r = new RedactingLines(() => [value]);
    const long = "x".repeat(HELD_LINE_MAX + 10);
    const first = r.push(`${long}${value.slice(0, 7)}`);
    expect(first.length).toBeGreaterThan(HELD_LINE_MAX - 5000);
    const rest = r.push(value.slice(7)) + r.end();
    expect(first + rest).toBe(`${long}[REDACTED]`);
  });
});
