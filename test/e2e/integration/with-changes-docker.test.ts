// A new sandbox starts from the last commit, and says how much of the working tree stays behind; `--with-changes`
// carries tracked changes (staged, unstaged, deleted, binary) and untracked, not ignored files in as uncommitted
// changes. The host never follows a link while it does: an untracked link to a secret outside the repo arrives as a
// link, and the secret's bytes never enter the sandbox. Real CLI, real engine, a real second uid.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chownSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Fixture } from "../docker/fixture";
import { acquireFixture, canRun, putFile, makeRepo, must, releaseFixture, removeRepoImages, skipReason } from "./harness";

const tag = Math.random().toString(36).slice(2, 8);
const SECRET = `host-secret-${tag}-do-not-carry`;
let f: Fixture;
let repo = "";
let secretFile = "";
const sbx = (args: string[]) => f.sbx(args, { cwd: repo });
const put = (rel: string, data: string | Uint8Array) => putFile(f, repo, rel, data);

describe.skipIf(!canRun)(`--with-changes on Docker${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  beforeAll(() => {
    f = acquireFixture();
    repo = makeRepo(f, `changes-${tag}`);
    put("tracked.txt", "one\n");
    put("gone.txt", "to be deleted\n");
    put("blob.bin", new Uint8Array([0, 1, 2, 3, 255]));
    put(".gitignore", "*.log\n");
    must(f.git(["add", "-A"], repo), "git add");
    must(f.git(["commit", "-qm", "files"], repo), "git commit");
    // The working tree: an unstaged edit, a staged edit of a binary, a deletion, untracked files, an ignored one, and
    // an untracked link to a secret of the host's, outside the repo.
    put("tracked.txt", "one\ntwo\n");
    put("blob.bin", new Uint8Array([9, 8, 7, 0, 255, 254]));
    must(f.git(["add", "blob.bin"], repo), "git add blob");
    rmSync(join(repo, "gone.txt"));
    put("new/dir/untracked.txt", "fresh\n");
    put("build.log", "ignored\n");
    secretFile = join(f.user.home, `.secret-${tag}`);
    writeFileSync(secretFile, `${SECRET}\n`, { mode: 0o600 });
    chownSync(secretFile, f.user.uid, f.user.gid);
    symlinkSync(secretFile, join(repo, "new/secret-link"));
  }, 60_000);

  afterAll(() => {
    if (repo) {
      for (const n of ["plain", "carry"]) sbx(["rm", "--force", n]);
      removeRepoImages(repo);
    }
    rmSync(secretFile, { force: true });
    releaseFixture();
  }, 60_000);

  test("without it: the sandbox has the last commit, and create says how many changed files stay behind", () => {
    const c = must(sbx(["create", "plain"]), "create");
    expect(c.stderr).toContain("note: 5 changed files in your working tree are not in plain (it starts from the last commit); `--with-changes` carries them in");
    expect(must(sbx(["exec", "plain", "--", "git", "status", "--short"]), "status").stdout).toBe("");
  }, 300_000);

  test("with it: every change arrives uncommitted, the binary byte for byte, the ignored file not at all", () => {
    const c = must(sbx(["create", "--with-changes", "carry"]), "create");
    expect(c.stderr).toContain("carried in 5 changed files as uncommitted changes");
    const st = must(sbx(["exec", "carry", "--", "git", "status", "--short", "--untracked-files=all"]), "status").stdout;
    expect(st.split("\n").filter(Boolean).sort()).toEqual([" D gone.txt", " M blob.bin", " M tracked.txt", "?? new/dir/untracked.txt", "?? new/secret-link"]);
    expect(must(sbx(["exec", "carry", "--", "cat", "tracked.txt", "new/dir/untracked.txt"]), "cat").stdout).toBe("one\ntwo\nfresh\n");
    expect(must(sbx(["exec", "carry", "--", "od", "-An", "-tu1", "blob.bin"]), "od").stdout.trim().split(/\s+/)).toEqual(["9", "8", "7", "0", "255", "254"]);
    expect(sbx(["exec", "carry", "--", "test", "-e", "build.log"]).code).not.toBe(0);
  }, 300_000);

  test("an untracked link to a secret outside the repo arrives as a link; the secret's bytes are nowhere inside", () => {
    expect(must(sbx(["exec", "carry", "--", "readlink", "new/secret-link"]), "readlink").stdout.trim()).toBe(secretFile);
    const read = sbx(["exec", "carry", "--", "cat", "new/secret-link"]);
    expect(read.code).not.toBe(0);
    expect(read.stdout).not.toContain(SECRET);
    const grep = sbx(["exec", "carry", "--", "grep", "-r", "-l", SECRET, ".", "/tmp"]);
    expect(grep.stdout).toBe("");
  }, 300_000);

  test("on an existing sandbox it is refused (64), never ignored", () => {
    const r = sbx(["run", "--with-changes", "carry", "--", "true"]);
    expect(r.code).toBe(64);
    expect(r.stderr).toContain("--with-changes set up a new sandbox, and carry exists");
  }, 60_000);
});
