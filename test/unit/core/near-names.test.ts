// typo-guard: the names one edit away (Damerau-Levenshtein ≤ 1, or only the case), checked against a plain
// dynamic-programming distance on many random pairs, so the fast check is the distance it claims to be.
import { describe, expect, test } from "bun:test";
import { nearNames, oneEditAway } from "../../../src/core/near-names";

/** Optimal string alignment distance, the textbook table. */
function osa(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

describe("typo-guard: one edit away", () => {
  test("each kind of slip", () => {
    expect(oneEditAway("demx", "demo")).toBe(true); // changed
    expect(oneEditAway("dem", "demo")).toBe(true); // dropped
    expect(oneEditAway("demoo", "demo")).toBe(true); // added
    expect(oneEditAway("deom", "demo")).toBe(true); // swapped
    expect(oneEditAway("Demo", "demo")).toBe(true); // case
    expect(oneEditAway("DEMO-API", "demo-api")).toBe(true); // case only, however many letters
    expect(oneEditAway("demo", "demo")).toBe(false);
    expect(oneEditAway("dmeox", "demo")).toBe(false);
    expect(oneEditAway("work", "demo")).toBe(false);
  });

  test("property: agrees with the distance table on random names over a small alphabet", () => {
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const word = () => Array.from({ length: rand(6) }, () => "ab-"[rand(3)]).join("");
    for (let k = 0; k < 5000; k++) {
      const a = word();
      const b = word();
      expect({ a, b, near: oneEditAway(a, b) }).toEqual({ a, b, near: a !== b && osa(a, b) <= 1 });
    }
  });

  test("nearNames: none for an existing name, else every near one", () => {
    expect(nearNames("demo", ["demo", "demx"])).toEqual([]);
    expect(nearNames("demx", ["demo", "dema", "work"])).toEqual(["demo", "dema"]);
    // Two-letter names are all one edit apart: those are taken as meant.
    expect(nearNames("b", ["a"])).toEqual([]);
    expect(nearNames("ab", ["ac", "abc"])).toEqual([]);
    expect(nearNames("abd", ["abc"])).toEqual(["abc"]);
  });
});
