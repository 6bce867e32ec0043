// .dockerignore read as the docker CLI reads it: moby/patternmatcher's own cases (MatchesOrParentMatches, the rule
// the CLI walks a context dir with), and ignorefile's parsing. sbx makes the build context itself, so a pattern it read
// otherwise would send what the person left out, or leave out what the Dockerfile copies.
import { describe, expect, test } from "bun:test";
import { cleanPath, dockerignoreMatcher, parseDockerignore } from "../../../src/core/dockerignore";

// [pattern, path, left out?]: patternmatcher_test.go's TestMatches, an "inexact" case counting as left out (a parent matched).
const CASES: Array<[string, string, boolean]> = [
  ["**", "file", true], ["**", "dir/file", true], ["**/", "dir/file", true], ["**/**", "dir/file", true],
  ["dir/**", "dir/file", true], ["dir/**", "dir/dir2/file", true], ["**/dir", "dir", true], ["**/dir", "dir/file", true],
  ["**/dir2/*", "dir/dir2/file", true], ["**/dir2/**", "dir/dir2/dir3/file", true], ["**file", "file", true],
  ["**file", "dir/file", true], ["**/file", "dir/dir/file", true], ["**/file*", "dir/dir/file.txt", true],
  ["**/file*txt", "dir/dir/file.txt", true], ["**/file*.txt", "dir/dir/file.txt", true], ["**/**/*.txt", "dir/dir/file.txt", true],
  ["**/**/*.txt2", "dir/dir/file.txt", false], ["**/*.txt", "file.txt", true], ["**/**/*.txt", "file.txt", true],
  ["a**/*.txt", "a/file.txt", true], ["a**/*.txt", "a/dir/dir/file.txt", true], ["a/*.txt", "a/dir/file.txt", false],
  ["a/*.txt", "a/file.txt", true], ["a/*.txt**", "a/file.txt", true], ["a[b-d]e", "ae", false], ["a[b-d]e", "ace", true],
  ["a[b-d]e", "aae", false], ["a[^b-d]e", "aze", true], [".*", ".foo", true], [".*", "foo", false], ["abc.def", "abcdef", false],
  ["abc.def", "abc.def", true], ["abc?def", "abcZdef", true], ["abc?def", "abcdef", false], ["**/foo/bar", "foo/bar", true],
  ["**/foo/bar", "dir/dir2/foo/bar", true], ["abc/**", "abc", false], ["abc/**", "abc/def/ghi", true], ["**/.foo", ".foo", true],
  ["**/.foo", "bar.foo", false], ["a(b)c/def", "a(b)c/def", true], ["a(b)c/def", "a(b)c/xyz", false],
  ["a.|)$(}+{bc", "a.|)$(}+{bc", true], ["dist/*.whl", "dist/proxy.py-2.4.0rc3.dev36+g08acad9-py3-none-any.whl", true],
  ["a\\\\", "a\\", true], ["a\\*b", "a*b", true], ["a\\*b", "ab", false], ["a*/b", "a/c/b", false], ["a*b", "a/b", false],
  ["*", "fileutils.go", true], ["*.go", "fileutils.go", true],
  // Parent dirs: a dir's pattern leaves out everything under it.
  [".git", ".git/config", true], ["node_modules", "node_modules/x/y.js", true], ["*.pem", "keys/deploy.pem", false],
];

describe("dockerignore: a path is left out as the docker CLI leaves it out", () => {
  test.each(CASES)("%j leaves out %j: %p", (pattern, path, out) => {
    expect(dockerignoreMatcher([pattern])(path)).toBe(out);
  });

  test("the last matching pattern decides; an exception brings a file back from a left-out dir", () => {
    expect(dockerignoreMatcher(["docs", "!docs/README.md"])("docs/README.md")).toBe(false);
    expect(dockerignoreMatcher(["docs/*", "!docs/README.md"])("docs/README.md")).toBe(false);
    expect(dockerignoreMatcher(["docs", "!docs/README.md"])("docs/other.md")).toBe(true);
    expect(dockerignoreMatcher(["!fileutils.go", "*.go"])("fileutils.go")).toBe(true);
    expect(dockerignoreMatcher(["*.go", "!fileutils.go"])("fileutils.go")).toBe(false);
    expect(dockerignoreMatcher(["**", "!util/docker/web"])("util/docker/web/foo")).toBe(false);
    expect(dockerignoreMatcher(["**", "!util/docker/web", "util/docker/web/foo"])("util/docker/web/foo")).toBe(true);
  });

  test("'.' is never left out; no patterns leave out nothing; '!' alone and a broken class are refused (78)", () => {
    expect(dockerignoreMatcher(["*"])(".")).toBe(false);
    expect(dockerignoreMatcher([])("a/b")).toBe(false);
    expect(() => dockerignoreMatcher(["!"])).toThrow(/not a pattern/);
    expect(() => dockerignoreMatcher(["["])).toThrow(/not a valid pattern/);
  });
});

describe("dockerignore: the file is parsed as ignorefile.ReadAll does", () => {
  test("comments, blanks, spaces, a BOM, leading slashes, ./ and .. are cleaned; exceptions kept", () => {
    expect(parseDockerignore("\uFEFF# comment\n\n  .env  \n/secrets/\n./build/../dist\n! keep.txt\r\n #not a comment\n")).toEqual([".env", "secrets", "dist", "!keep.txt", "#not a comment"]);
  });

  test("cleanPath is Go's path.Clean", () => {
    expect(["", ".", "a//b", "a/./b/", "a/../..", "/../a", "/", "a/b/../../c"].map(cleanPath)).toEqual([".", ".", "a/b", "a/b", "..", "/a", "/", "c"]);
  });
});
