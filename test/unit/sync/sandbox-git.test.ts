// What a sandbox says about its own refs is parsed as hostile input: every line checked, nothing raw kept.
import { describe, expect, test } from "bun:test";
import { isValidRefName, packObjectCount, parseSandboxRefs } from "../../../src/sync/sandbox-git";

const A = "a".repeat(40);
const B = "b".repeat(64);

describe("parseSandboxRefs", () => {
  test("branches and HEAD are taken; everything else is left out with a reason", () => {
    const text = [
      `${A} HEAD`,
      `${A} refs/heads/main`,
      `${B} refs/heads/feat/x`,
      `${A} refs/tags/v1`,
      `${A} refs/heads/evil\x1b]52;c;cGF5bG9hZA==\x07`,
      `${A} refs/heads/bidi\u202eexe.txt`,
      `${A} refs/heads/sp ace`,
      `${A} refs/heads/dots..x`,
      `${A} refs/heads/x.lock`,
      `${A} refs/heads/HEAD`,
      `not-a-sha refs/heads/y`,
      `${A}`,
      "",
    ].join("\n");
    const r = parseSandboxRefs(text);
    expect(r.head).toBe(A);
    expect(Object.fromEntries(r.branches)).toEqual({ main: A, "feat/x": B });
    expect(r.skipped).toHaveLength(9);
    // The reasons show names escaped: no control or bidi character reaches a log or terminal raw.
    for (const s of r.skipped) expect(s).not.toMatch(/[\x00-\x1f\x7f\u202e]/);
  });

  test("a flood of branches is cut at the bound, and says so", () => {
    const text = Array.from({ length: 12 }, (_, i) => `${A} refs/heads/b${i}`).join("\n");
    const r = parseSandboxRefs(text, 10);
    expect(r.branches.size).toBe(10);
    expect(r.skipped).toEqual(["more than 10 branches: the rest left out"]);
  });

  test("ref names: git's rules, and printable ASCII only", () => {
    for (const ok of ["refs/heads/main", "refs/heads/a-b_c.d/e+f@g"]) expect(isValidRefName(ok)).toBe(true);
    for (const bad of ["", "refs/heads/", "refs/heads/a..b", "refs/heads/a@{1}", "refs/heads/.hidden", "refs/heads/a.lock", "refs/heads/a b", "refs/heads/ü", "refs/heads/a\tb", "refs/heads/a~1", "refs/heads/a:b", "refs/heads/a\\b"]) {
      expect(isValidRefName(bad)).toBe(false);
    }
  });
});

describe("packObjectCount", () => {
  test("reads a pack header's count; anything else is not a pack", () => {
    expect(packObjectCount(new Uint8Array([0x50, 0x41, 0x43, 0x4b, 0, 0, 0, 2, 0, 0, 1, 2]))).toBe(258);
    expect(packObjectCount(new Uint8Array([0x50, 0x41, 0x43, 0x4b, 0, 0, 0, 2, 0, 0]))).toBeNull();
    expect(packObjectCount(new TextEncoder().encode("<html>not a pack"))).toBeNull();
  });
});
