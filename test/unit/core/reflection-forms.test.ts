// never-reflected (pure): each spelling of a value an upstream may answer with is paired with the same spelling of the
// placeholder, as many bytes on both sides (an answer's length goes on as the upstream gave it), and decodes to it.
import { describe, expect, test } from "bun:test";
import { MIN_BASE64_RUN, reflectionForms } from "../../../src/core/reflection-forms";
import { placeholderFor } from "../../../src/core/placeholder";
import { replaceAll } from "../../../src/core/stream-replace";

const random = (n: number) => crypto.getRandomValues(new Uint8Array(n));
const VALUE = "q8Zr/Tm3Kx+Vb7Np/Wd2Lc9Hs+Fj4Gy6Ae1Ru5Oi0P";
const PLACEHOLDER = placeholderFor(VALUE, random);

describe("never-reflected: the spellings of a value", () => {
  test("every pair is as many bytes on both sides, and no spelling is listed twice", () => {
    for (const value of [VALUE, "sk_live_R3alV4lueN0tForS4ndb0x", "pässwörd-ünïcode-1234567890-ÄÖÜ", "a&b<c>d\"e'f`g=h?i#j 1234567890"]) {
      const forms = reflectionForms(value, placeholderFor(value, random));
      for (const f of forms) expect(Buffer.byteLength(f.to)).toBe(Buffer.byteLength(f.from));
      expect(new Set(forms.map((f) => f.from)).size).toBe(forms.length);
    }
  });
  test("no placeholder given out: every spelling comes back as '*'", () => {
    for (const f of reflectionForms(VALUE, null)) expect(f.to).toBe("*".repeat(Buffer.byteLength(f.from)));
  });
  test("letters and digits only: the value itself and its base64 runs, nothing else to spell", () => {
    const value = "AbCdEfGh0123456789IjKlMnOp";
    const forms = reflectionForms(value, placeholderFor(value, random)).map((f) => f.from);
    expect(forms[0]).toBe(value);
    expect(forms.slice(1).every((f) => /^[A-Za-z0-9+/_-]+$/.test(f) && f.length >= MIN_BASE64_RUN)).toBe(true);
  });
  test("a value too short for a base64 run of MIN_BASE64_RUN characters gets no base64 spelling", () => {
    // 11 bytes: 14 characters of its own at each alignment.
    expect(reflectionForms("short-valu1", null).map((f) => f.from)).toEqual(["short-valu1", "short\\u002Dvalu1", "short\\u002dvalu1"]);
    expect(reflectionForms("short-valu12", null).some((f) => f.from === Buffer.from("short-valu12").toString("base64"))).toBe(true);
  });
  test("masked text decodes to the placeholder: JSON as PHP, .NET and Go write it, URLs, HTML, base64 at each alignment", () => {
    const forms = reflectionForms(VALUE, PLACEHOLDER);
    const mask = (text: string) => replaceAll(text, forms).text;
    const inner = (s: string) => s.slice(1, -1);
    const cases: [string, (t: string) => string, (s: string) => string][] = [
      ["php json", (t) => JSON.stringify(t).replaceAll("/", "\\/"), (s) => JSON.parse(s)],
      [".net json", (t) => `"${t.replaceAll("+", "\\u002B")}"`, (s) => JSON.parse(s)],
      ["percent", (t) => encodeURIComponent(t), decodeURIComponent],
      ["percent lower", (t) => encodeURIComponent(t).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()), decodeURIComponent],
      ["html", (t) => t.replaceAll("/", "&#x2F;"), (s) => s.replaceAll("&#x2F;", "/")],
      ...[0, 1, 2].map((a): [string, (t: string) => string, (s: string) => string] => [`base64 @${a}`, (t) => Buffer.from(`${"u:".slice(0, a)}${t}!`).toString("base64"), (s) => Buffer.from(s, "base64").toString()]),
      ...[0, 1, 2].map((a): [string, (t: string) => string, (s: string) => string] => [`base64url @${a}`, (t) => Buffer.from(`${"u:".slice(0, a)}${t}!`).toString("base64url"), (s) => Buffer.from(s, "base64url").toString()]),
    ];
    for (const [name, encode, decode] of cases) {
      const shown = decode(mask(encode(VALUE)));
      expect({ name, leaks: shown.includes(inner(VALUE)) }).toEqual({ name, leaks: false });
      expect({ name, placeholder: shown.includes(inner(PLACEHOLDER)) }).toEqual({ name, placeholder: true });
    }
  });
});
