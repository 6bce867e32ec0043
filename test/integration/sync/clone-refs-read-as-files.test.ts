// The clone's branches are read as plain files: symlinks never followed, names and values validated, locks ignored.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { checkAlternates, isValidRefName, parsePackedRefs, readCloneBranches } from "../../../src/sync/clone-files";
import { makeFixture, type SyncFixture } from "./fixture";

let f: SyncFixture | null = null;
afterEach(() => {
  f?.cleanup();
  f = null;
});

describe("reading the clone's refs without git", () => {
  test("loose and packed branches, loose wins; lock files, symlinks, bad names and bad values are skipped", () => {
    f = makeFixture();
    const sha = f.commitInside("x", "feature");
    const heads = join(f.clone, ".git", "refs", "heads");
    const a = "a".repeat(40);
    writeFileSync(join(f.clone, ".git", "packed-refs"), `# pack-refs with: peeled fully-peeled sorted \n${a} refs/heads/feature\n${a} refs/heads/only-packed\n^${"c".repeat(40)}\n${a} refs/tags/t\n`);
    writeFileSync(join(heads, "in-flight.lock"), `${a}\n`);
    const secret = join(f.root, "secret");
    writeFileSync(secret, `${"d".repeat(40)}\n`);
    symlinkSync(secret, join(heads, "evil-link"));
    symlinkSync(f.root, join(heads, "evil-dir"));
    writeFileSync(join(heads, "bad value"), `${a}\n`);
    writeFileSync(join(heads, "garbage"), "not a sha\n");
    writeFileSync(join(heads, "sym"), "ref: refs/heads/feature\n");
    mkdirSync(join(heads, "nested", "deeper"), { recursive: true });
    writeFileSync(join(heads, "nested", "deeper", "b"), `${"e".repeat(64)}\n`);
    const r = readCloneBranches(f.clone);
    expect(r.unreadable).toBeUndefined();
    expect(Object.fromEntries(r.refs)).toEqual({
      "refs/heads/feature": sha,
      "refs/heads/main": f.cloneRef("refs/heads/main")!,
      "refs/heads/only-packed": a,
      "refs/heads/sym": "ref: refs/heads/feature",
      "refs/heads/nested/deeper/b": "e".repeat(64),
    });
    expect(r.skipped.sort()).toEqual([
      "refs/heads/bad value: invalid ref name",
      "refs/heads/evil-dir: symlink, not followed",
      "refs/heads/evil-link: symlink, not followed",
      "refs/heads/garbage: not an object id or symbolic ref",
    ]);
  });

  test("a .git or refs dir replaced by a symlink is unreadable, not followed", () => {
    f = makeFixture();
    const refs = join(f.clone, ".git", "refs");
    rmSync(refs, { recursive: true });
    symlinkSync(join(f.host, ".git", "refs"), refs);
    expect(readCloneBranches(f.clone).unreadable).toContain("not a plain directory");
    const other = join(f.root, "other-clone");
    mkdirSync(other);
    symlinkSync(join(f.host, ".git"), join(other, ".git"));
    expect(readCloneBranches(other).unreadable).toContain("is a symlink");
    expect(checkAlternates(other, f.alternates)).toEqual({ ok: false, reason: `${join(other, ".git")} is a symlink` });
  });

  test("ref names and packed-refs lines are validated", () => {
    for (const ok of ["refs/heads/main", "refs/heads/a/b-c_d.e", "refs/heads/ünï"]) expect(isValidRefName(ok)).toBe(true);
    for (const bad of ["", "refs/heads/", "refs/heads/.x", "refs/heads/a..b", "refs/heads/x.lock", "refs/heads/a b", "refs/heads/a~1", "refs/heads/a:b", "refs/heads/a@{1}", "refs//x", "refs/heads/x."]) {
      expect(isValidRefName(bad)).toBe(false);
    }
    const skipped: string[] = [];
    const m = parsePackedRefs(`xyz refs/heads/a\n${"a".repeat(40)} refs/heads/../../etc\n${"a".repeat(40)} refs/heads/ok\n`, "refs/heads/", skipped);
    expect([...m.keys()]).toEqual(["refs/heads/ok"]);
    expect(skipped).toHaveLength(2);
  });

  test("alternates: exact match passes, whitespace-only differences pass, anything else is refused with the reason", () => {
    f = makeFixture();
    expect(checkAlternates(f.clone, f.alternates)).toEqual({ ok: true });
    writeFileSync(join(f.clone, ".git", "objects", "info", "alternates"), `  ${f.alternates.trim()}  \n\n`);
    expect(checkAlternates(f.clone, f.alternates)).toEqual({ ok: true });
    rmSync(join(f.clone, ".git", "objects", "info", "alternates"));
    const gone = checkAlternates(f.clone, f.alternates);
    expect(gone.ok).toBe(false);
    expect(!gone.ok && gone.reason).toContain("missing");
  });
});
