// The sandboxes' stores with real git: listed in the host's alternates in place, promoted when the person takes a
// sandbox's work onto a branch of theirs, and retired by rm without losing anything a host ref reaches.
import { afterEach, describe, expect, test } from "bun:test";
import { appendFileSync, existsSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { importSandbox } from "../../../src/sync/import";
import { ensureStore, promoteStores, retireStore, storeAlternate, storeDir } from "../../../src/sync/store";
import { createExec } from "../../../src/sys/exec";
import { git, makeFixture, NAME, REMOTE, type SyncFixture } from "./fixture";

let f: SyncFixture | null = null;
afterEach(() => {
  f?.cleanup();
  f = null;
});
const exec = createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" });
const ok = (cwd: string, args: string[]) => {
  const r = git(cwd, args, "test");
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
  return r.stdout.trim();
};
const alternates = (host: string) => join(host, ".git", "objects", "info", "alternates");
/** Whether the host reads `oid` from its own objects alone (every alternate taken away for the check). */
function ownHas(host: string, oid: string): boolean {
  const file = alternates(host);
  const saved = readFileSync(file, "utf8");
  writeFileSync(file, "");
  try {
    return git(host, ["cat-file", "-e", oid], "test").exitCode === 0;
  } finally {
    writeFileSync(file, saved);
  }
}

describe("stores", () => {
  test("ensureStore: a bare repo in .git/sbx borrowing the host's objects, listed once in the host's alternates, edited in place", async () => {
    f = makeFixture();
    appendFileSync(alternates(f.host), "/the/users/own/alternate\n");
    const inode = statSync(alternates(f.host)).ino;
    const dir = await ensureStore({ exec, repo: f.host }, NAME);
    await ensureStore({ exec, repo: f.host }, NAME);
    expect(dir).toBe(storeDir(f.host, NAME));
    expect(readFileSync(join(dir, "objects", "info", "alternates"), "utf8")).toBe("../../../objects\n");
    expect(readFileSync(alternates(f.host), "utf8")).toBe(`/the/users/own/alternate\n${storeAlternate(NAME)}\n`);
    // The same file: a mask bind-mounted over it inside a sandbox stays over it.
    expect(statSync(alternates(f.host)).ino).toBe(inode);
    expect(ok(dir, ["for-each-ref", "--format=%(refname)", "refs/sbx-seen/"])).toContain(ok(f.host, ["rev-parse", "main"]));
  });

  test("promotion: what the person puts on a branch of theirs becomes the host's own objects, kept through gc; nothing else does", async () => {
    f = makeFixture();
    const a = f.commitInside("sandbox work", "feature");
    f.commitInside("not taken", "other");
    const other = f.cloneRef("refs/heads/other")!;
    await importSandbox({ repo: f.host, name: NAME, sandboxGit: f.sandboxGit, exec });
    expect(ok(f.host, ["rev-parse", `${REMOTE}/feature`])).toBe(a);
    expect(ownHas(f.host, a)).toBe(false);
    expect(await promoteStores({ exec, repo: f.host })).toBe(0);
    ok(f.host, ["merge", "-q", "--ff-only", `${REMOTE}/feature`]);
    expect(await promoteStores({ exec, repo: f.host })).toBeGreaterThan(0);
    expect(await promoteStores({ exec, repo: f.host })).toBe(0); // nothing new: nothing walked again
    ok(f.host, ["gc", "-q", "--prune=now"]);
    expect(ownHas(f.host, a)).toBe(true);
    expect(ownHas(f.host, other)).toBe(false);
    expect(readdirSync(join(f.host, ".git", "objects", "pack")).some((p) => p.endsWith(".keep"))).toBe(true);
  });

  test("retireStore: what any host ref reaches is copied first; then the line and the store go; the user's own lines stay; gc loses nothing", async () => {
    f = makeFixture();
    appendFileSync(alternates(f.host), "/the/users/own/alternate\n");
    const a = f.commitInside("kept after rm", "feature");
    await importSandbox({ repo: f.host, name: NAME, sandboxGit: f.sandboxGit, exec });
    expect(await retireStore({ exec, repo: f.host }, NAME)).toBeGreaterThan(0);
    expect(existsSync(storeDir(f.host, NAME))).toBe(false);
    expect(readFileSync(alternates(f.host), "utf8")).toBe("/the/users/own/alternate\n");
    ok(f.host, ["gc", "-q", "--prune=now"]);
    expect(ok(f.host, ["log", "--format=%s", "-1", `${REMOTE}/feature`])).toBe("kept after rm");
    expect(ok(f.host, ["rev-parse", `${REMOTE}/feature`])).toBe(a);
    // A second retire (a crash midway, prune after it) is fine.
    expect(await retireStore({ exec, repo: f.host }, NAME)).toBe(0);
  });
});
