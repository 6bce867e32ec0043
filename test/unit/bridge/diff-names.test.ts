// Paths read back from git's diff headers: the one path a `diff --git` line names without renames, however git quoted it
// and whatever the path holds.
import { describe, expect, test } from "bun:test";
import { diffGitPath } from "../../../src/bridge/diff-names";

describe("diffGitPath: a `diff --git` line's path (no renames: both sides one path)", () => {
  test("as it is, and as git quotes it (a quote, a tab, a non-ASCII letter)", () => {
    expect(diffGitPath("a/src/x.ts b/src/x.ts")).toBe("src/x.ts");
    expect(diffGitPath('"a/.github/workflows/a\\"b.yml" "b/.github/workflows/a\\"b.yml"')).toBe('.github/workflows/a"b.yml');
    expect(diffGitPath('"a/t\\tb.yml" "b/t\\tb.yml"')).toBe("t\tb.yml");
    expect(diffGitPath('"a/\\303\\274.yml" "b/\\303\\274.yml"')).toBe("\u00fc.yml");
  });

  test("a path that holds ' b/' or ' a/' is split at the middle, not at the first ' b/'", () => {
    expect(diffGitPath("a/docs b/.travis.yml b/docs b/.travis.yml")).toBe("docs b/.travis.yml");
    expect(diffGitPath("a/x a/y b/z b/x a/y b/z")).toBe("x a/y b/z");
    expect(diffGitPath("a/ b/ b/ b/")).toBe(" b/");
  });

  test("a line of any other shape (two paths, no prefixes, half quoted) names none", () => {
    expect(diffGitPath("a/one b/two")).toBeUndefined();
    expect(diffGitPath("one two")).toBeUndefined();
    expect(diffGitPath("a/x b/xy")).toBeUndefined();
    expect(diffGitPath('"a/x" b/x')).toBeUndefined();
    expect(diffGitPath('"a/x" "b/y"')).toBeUndefined();
    expect(diffGitPath("")).toBeUndefined();
    expect(diffGitPath("a/ b/")).toBeUndefined();
  });
});
