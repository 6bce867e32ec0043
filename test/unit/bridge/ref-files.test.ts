// The refs of a host-owned repository read from its files say what `git for-each-ref` says (loose over packed, tags,
// nested names, the namespaces a caller leaves out), and leave to git what they cannot read whole.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PACKED_REFS_MAX_BYTES, readRefFiles, REF_FILES_MAX } from "../../../src/bridge/ref-files";
import { isUserRef } from "../../../src/core/user-refs";

const root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-ref-files-")));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function git(cwd: string, ...args: string[]): string {
  const r = Bun.spawnSync(["git", "-c", "user.name=t", "-c", "user.email=t@x", ...args], { cwd, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null", HOME: root } });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString();
}
const sorted = (s: string | undefined) => (s ?? "").split("\n").filter(Boolean).sort();

describe("readRefFiles: a repository's refs from its files, as for-each-ref gives them", () => {
  const repo = join(root, "repo");
  mkdirSync(repo);
  git(repo, "init", "-q", "-b", "main");
  git(repo, "commit", "-q", "--allow-empty", "-m", "one");
  git(repo, "tag", "light");
  git(repo, "tag", "-a", "-m", "annotated", "v1");
  git(repo, "branch", "deep/er/branch");
  git(repo, "update-ref", "refs/remotes/origin/main", "HEAD");
  git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main");
  git(repo, "update-ref", "refs/remotes/sandbox-demo/work", "HEAD");
  git(repo, "pack-refs", "--all");
  // After packing: a loose ref over a packed one of its name, and a new loose one.
  git(repo, "commit", "-q", "--allow-empty", "-m", "two");
  git(repo, "branch", "loose-only");
  const gitDir = join(repo, ".git");

  test("all refs: the same lines as git's, whatever is packed or loose", () => {
    expect(sorted(readRefFiles(gitDir, "refs/"))).toEqual(sorted(git(repo, "for-each-ref", "--format=%(objectname) %(refname)")).filter((l) => !l.endsWith(" refs/remotes/origin/HEAD")));
  });

  test("a prefix, and a namespace the caller leaves out (not read at all)", () => {
    expect(sorted(readRefFiles(gitDir, "refs/remotes/"))).toEqual(sorted(git(repo, "for-each-ref", "--format=%(objectname) %(refname)", "refs/remotes/")).filter((l) => !l.endsWith("/HEAD")));
    const mine = sorted(readRefFiles(gitDir, "refs/", isUserRef));
    expect(mine.some((l) => l.includes("sandbox-demo"))).toBe(false);
    expect(mine.some((l) => l.endsWith(" refs/heads/main"))).toBe(true);
  });

  test("a ref being written (name.lock) and a name git refuses are no refs; nor is what a broken loose file hides", () => {
    const head = git(repo, "rev-parse", "HEAD").trim();
    writeFileSync(join(gitDir, "refs/heads/main.lock"), `${"e".repeat(40)}\n`);
    mkdirSync(join(gitDir, "refs/heads/.hidden"), { recursive: true });
    writeFileSync(join(gitDir, "refs/heads/.hidden/x"), `${"e".repeat(40)}\n`);
    const lines = sorted(readRefFiles(gitDir, "refs/heads/"));
    expect(lines.some((l) => l.startsWith("e".repeat(40)))).toBe(false);
    expect(lines).toContain(`${head} refs/heads/main`);
    rmSync(join(gitDir, "refs/heads/main.lock"));
    rmSync(join(gitDir, "refs/heads/.hidden"), { recursive: true });
    // A packed tag under a broken loose file of its name: git leaves it out too.
    writeFileSync(join(gitDir, "refs/tags/light"), "not an id\n");
    const git_ = sorted(git(repo, "for-each-ref", "--format=%(objectname) %(refname)", "refs/tags/"));
    expect(git_.some((l) => l.endsWith(" refs/tags/light"))).toBe(false);
    expect(sorted(readRefFiles(gitDir, "refs/tags/"))).toEqual(git_);
    rmSync(join(gitDir, "refs/tags/light"));
  });

  test("left to git: a reftable repository, a packed-refs over the bound, more loose refs than the bound", () => {
    const other = join(root, "other");
    mkdirSync(join(other, "refs", "heads"), { recursive: true });
    mkdirSync(join(other, "reftable"));
    expect(readRefFiles(other, "refs/")).toBeUndefined();
    rmSync(join(other, "reftable"), { recursive: true });
    writeFileSync(join(other, "packed-refs"), "x".repeat(PACKED_REFS_MAX_BYTES + 1));
    expect(readRefFiles(other, "refs/")).toBeUndefined();
    rmSync(join(other, "packed-refs"));
    for (let i = 0; i <= REF_FILES_MAX; i++) writeFileSync(join(other, "refs", "heads", `b${i}`), `${"1".repeat(40)}\n`);
    expect(readRefFiles(other, "refs/")).toBeUndefined();
    expect(readRefFiles(join(root, "none"), "refs/")).toBe("");
  });
});
