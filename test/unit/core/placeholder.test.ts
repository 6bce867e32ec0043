// A placeholder looks like its secret to a client (prefix, length, character classes) and carries nothing else of it.
import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { knownPrefix, placeholderFor, randomLength } from "../../../src/core/placeholder";

const random = (n: number) => new Uint8Array(randomBytes(n));
const classOf = (c: string) => (/[a-z]/.test(c) ? "a" : /[A-Z]/.test(c) ? "A" : /[0-9]/.test(c) ? "9" : c);

describe("placeholder: shaped like the real value", () => {
  const values = [
    "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "sk-ant-api03-abcDEF123_xyz-789ABCdefGHIjklMNOpqr",
    "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQ",
    "npm_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
    "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx",
    "AKIAIOSFODNN7EXAMPLE",
    "0f3a9c2e-7b1d-4c8e-9a6f-2d5b8e1c4a7f",
  ];
  for (const v of values) {
    test(`${v.slice(0, 12)}…: same prefix, length and class at every position`, () => {
      const p = placeholderFor(v, random);
      expect(p.length).toBe(v.length);
      expect(p.startsWith(knownPrefix(v))).toBe(true);
      expect([...p].map(classOf).join("")).toBe([...v].map(classOf).join(""));
      expect(p).not.toBe(v);
    });
  }
});

describe("placeholder: nothing of the secret beyond its shape", () => {
  test("an unknown prefix is not kept: a UUID's first group, a hex token's letters are the secret's own", () => {
    const v = "deadbeef-cafe-babe-f00d-0123456789ab";
    expect(knownPrefix(v)).toBe("");
    const p = placeholderFor(v, random);
    expect(p.slice(0, 8)).not.toBe("deadbeef");
  });

  test("characters after the prefix are drawn anew: across 200 placeholders no position keeps the secret's character more often than chance", () => {
    const v = "sk_live_4eC39HqLyjWDarjtT1zdp7dc";
    const same = new Array(v.length).fill(0);
    for (let i = 0; i < 200; i++) {
      const p = placeholderFor(v, random);
      for (let k = 8; k < v.length; k++) if (p[k] === v[k]) same[k]++;
    }
    // Chance is 1/26 for a letter and 1/10 for a digit: 20 for digits over 200 tries; 60 would be far past it.
    for (let k = 8; k < v.length; k++) expect(same[k]).toBeLessThan(60);
  });

  test("two sandboxes' placeholders of one secret differ", () => {
    const v = "sk_live_4eC39HqLyjWDarjtT1zdp7dc";
    expect(placeholderFor(v, random)).not.toBe(placeholderFor(v, random));
  });

  test("randomLength counts the characters drawn; a value with none is refused", () => {
    expect(randomLength("ghp_abc123")).toBe(6);
    expect(randomLength("abc-1")).toBe(4);
    expect(() => placeholderFor("ghp_---", random)).toThrow();
  });

  test("a random source that repeats the value's own characters still never returns the value", () => {
    // Every draw picks index 0 of its class: "a", "A", "0". A value made of those would come out equal: it loops until it differs.
    let n = 0;
    const biased = (k: number) => new Uint8Array(k).map(() => (n++ < 64 ? 0 : (n * 37) & 0xff));
    const v = "sk_live_aaaaAAAA0000aaaaAAAA";
    expect(placeholderFor(v, biased)).not.toBe(v);
  });
});
