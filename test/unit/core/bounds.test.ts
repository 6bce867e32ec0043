// bounded: the pure helpers every bound is applied with: a text cut that says so, a detail kept within its bytes, a
// per-key token bucket, an in-order pacer.
import { describe, expect, test } from "bun:test";
import { boundDetail, Budget, byteLength, cutText, Pacer } from "../../../src/core/bounds";

describe("bounded: helpers", () => {
  test("cutText keeps what fits and says how much was cut", () => {
    expect(cutText("abc", 5)).toBe("abc");
    const c = cutText("x".repeat(1000), 100);
    expect(c.length).toBe(100);
    expect(c).toEndWith("…[+913 chars]");
    expect(c.length - "…[+913 chars]".length + 913).toBe(1000);
  });

  test("boundDetail: as it is when it fits; cut step by step within the bytes when not; a note of its keys at worst", () => {
    expect(boundDetail({ a: 1, b: "two" })).toEqual({ a: 1, b: "two" });
    const big = { args: Array.from({ length: 256 }, () => "é".repeat(4096)), nested: { deeper: { deepest: { x: "y".repeat(9000) } } } };
    const d = boundDetail(big, 4096);
    expect(byteLength(JSON.stringify(d))).toBeLessThanOrEqual(4096);
    expect(Array.isArray(d.args)).toBe(true);
    const keys = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${"z".repeat(200)}${i}`, "v".repeat(100)]));
    expect(byteLength(JSON.stringify(boundDetail(keys, 512)))).toBeLessThanOrEqual(512);
  });

  test("byteLength counts UTF-8 as encoded", () => {
    for (const s of ["", "abc", "é", "€", "😀", "a😀é€"]) expect(byteLength(s)).toBe(Buffer.byteLength(s));
  });

  test("Budget: a burst, then the rate, per key; a key's budget is its own", () => {
    const b = new Budget(3, 2);
    expect([b.take(1, 0), b.take(1, 0), b.take(1, 0), b.take(1, 0)]).toEqual([true, true, true, false]);
    expect(b.take(2, 0)).toBe(true);
    expect(b.take(1, 400)).toBe(false);
    expect(b.take(1, 500)).toBe(true);
    expect(b.take(1, 10_000)).toBe(true);
  });

  test("Pacer: a burst at once, then one per step, in the order asked, whatever the clock says meanwhile", () => {
    const p = new Pacer(3, 10);
    expect([p.delay(1000), p.delay(1000), p.delay(1000), p.delay(1000), p.delay(1000)]).toEqual([0, 0, 0, 100, 200]);
    expect(p.delay(1050)).toBe(250);
    // Idle long enough, the burst is back (never more).
    expect([p.delay(5000), p.delay(5000), p.delay(5000), p.delay(5000)]).toEqual([0, 0, 0, 100]);
  });
});
