// The sandboxes' stores with real git: listed in the host's alternates in place, promoted when the person takes a
// sandbox's work onto a branch of theirs, and retired by rm without losing anything a host ref reaches.
import { afterEach, describe, expect, test } from "bun:test";
import { appendFileSync, existsSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { importSandbox } from "../../../src/sync/import";
import { ensureStore, hostViewDir, promoteStores, retireStore, storeAlternate, storeDir, STORE_ALTERNATES } from "../../../src/sync/store";
import { isViewOf } from "../../../src/sync/object-view";
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
    // It borrows a view of the host's own objects (their packs and loose dirs, not their list of alternates).
    expect(readFileSync(join(dir, "objects", "info", "alternates"), "utf8")).toBe(`${STORE_ALTERNATES}\n`);
    expect(isViewOf(hostViewDir(f.host), "../../objects")).toBe(true);
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

  test("retireStore: the host keeps what its refs reach (sandbox-<name>/* readable, after gc too); the store's line goes; the user's own lines stay", async () => {
    f = makeFixture();
    appendFileSync(alternates(f.host), "/the/users/own/alternate\n");
    const a = f.commitInside("kept after rm", "feature");
    await importSandbox({ repo: f.host, name: NAME, sandboxGit: f.sandboxGit, exec });
    expect(await retireStore({ exec, repo: f.host }, NAME)).toBeGreaterThan(0);
    expect(existsSync(storeDir(f.host, NAME))).toBe(false);
    expect(readFileSync(alternates(f.host), "utf8").split("\n")).not.toContain(storeAlternate(NAME));
    expect(readFileSync(alternates(f.host), "utf8").split("\n")).toContain("/the/users/own/alternate");
    ok(f.host, ["gc", "-q", "--prune=now"]);
    expect(ok(f.host, ["log", "--format=%s", "-1", `${REMOTE}/feature`])).toBe("kept after rm");
    expect(ok(f.host, ["rev-parse", `${REMOTE}/feature`])).toBe(a);
    ok(f.host, ["fsck", "--connectivity-only", "--no-dangling"]);
    // A second retire (a crash midway, prune after it) is fine.
    expect(await retireStore({ exec, repo: f.host }, NAME)).toBe(0);
  });
});

describe("gone-when-removed: a removed sandbox's objects reach another sandbox only through a ref the person made", () => {
  test("after rm, the host's own objects (what every sandbox reads, its list of alternates masked) hold nothing of the removed sandbox's unmerged work", async () => {
    f = makeFixture();
    const secret = f.commitInside("unpushed work of the removed sandbox", "feature");
    await importSandbox({ repo: f.host, name: NAME, sandboxGit: f.sandboxGit, exec });
    await retireStore({ exec, repo: f.host }, NAME);
    // The host still reads it under the refs rm kept, and a gc keeps it.
    ok(f.host, ["gc", "-q", "--prune=now"]);
    expect(ok(f.host, ["rev-parse", `${REMOTE}/feature`])).toBe(secret);
    ok(f.host, ["cat-file", "-e", secret]);
    // What a sandbox reads: by id, or by listing every object there is.
    expect(ownHas(f.host, secret)).toBe(false);
    const saved = readFileSync(alternates(f.host), "utf8");
    writeFileSync(alternates(f.host), "");
    try {
      expect(ok(f.host, ["cat-file", "--batch-all-objects", "--batch-check=%(objectname)"])).not.toContain(secret);
    } finally {
      writeFileSync(alternates(f.host), saved);
    }
    // Only what the person takes onto a branch of theirs becomes readable to sandboxes: promotion reaches the retired work.
    ok(f.host, ["branch", "taken", `${REMOTE}/feature`]);
    expect(await promoteStores({ exec, repo: f.host })).toBeGreaterThan(0);
    expect(ownHas(f.host, secret)).toBe(true);
  });

  test("with other stores beside it, a branch the person makes on the retired work is promoted, and no store's sync fails on the tip it cannot see yet", async () => {
    f = makeFixture();
    const secret = f.commitInside("work of the removed sandbox", "feature");
    await importSandbox({ repo: f.host, name: NAME, sandboxGit: f.sandboxGit, exec });
    await retireStore({ exec, repo: f.host }, NAME);
    // Another sandbox's store (its own, empty), and one more made after the person's branch: each sees only the host's
    // own objects and its own, so neither can record a tip on the retired work before promotion copies it.
    await ensureStore({ exec, repo: f.host }, "other");
    ok(f.host, ["merge", "-q", "--ff-only", `${REMOTE}/feature`]);
    await ensureStore({ exec, repo: f.host }, "later");
    expect(await promoteStores({ exec, repo: f.host })).toBeGreaterThan(0);
    expect(ownHas(f.host, secret)).toBe(true);
    // Every store recorded the tip once it could see it: nothing is walked again.
    expect(await promoteStores({ exec, repo: f.host })).toBe(0);
    for (const s of ["other", "later"]) expect(ok(storeDir(f.host, s), ["for-each-ref", "--format=%(objectname)", "refs/sbx-seen/"])).toContain(secret);
  });

  test("rm of a sandbox whose work the person already took: the taken commit is the host's own, the rest is not", async () => {
    f = makeFixture();
    const taken = f.commitInside("taken by the person", "feature");
    const left = f.commitInside("left in the sandbox", "feature");
    await importSandbox({ repo: f.host, name: NAME, sandboxGit: f.sandboxGit, exec });
    ok(f.host, ["branch", "taken", taken]);
    await retireStore({ exec, repo: f.host }, NAME);
    expect(ownHas(f.host, taken)).toBe(true);
    expect(ownHas(f.host, left)).toBe(false);
    expect(ok(f.host, ["rev-parse", `${REMOTE}/feature`])).toBe(left);
  });
});
