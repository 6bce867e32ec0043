// gone-when-removed (Docker), tried as a hostile sandbox would: after `sbx rm a`, sandbox b (made before or after the rm,
// or a new sandbox with a's name) cannot read a's unmerged work by id or by listing every object it reaches; the host
// keeps a's commits under its refs (nothing-lost), and b sees them once the person puts them on a branch of theirs.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { realpathSync } from "node:fs";
import { createTestUser, type RunResult, type TestUser } from "../../support/test-user";
import { BASE_IMAGE, canRun, CLI, ownRepo, removeOwnWorld, skipReason } from "./fixture";
import { userRecipe } from "../../../src/workspace/init";

const ID = "-c user.email=agent@example.invalid -c user.name=agent";

describe.skipIf(!canRun)(`gone-when-removed: a removed sandbox's objects reach no other sandbox (Docker)${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  let user: TestUser;
  let repo = "";
  const sbx = (args: string[]): RunResult => user.run(["bun", CLI, ...args], { cwd: repo });
  const git = (args: string[]): RunResult => user.run(["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", ...args], { cwd: repo });
  const must = (r: RunResult, what: string): RunResult => {
    if (r.code !== 0) throw new Error(`${what} exited ${r.code}: ${r.stderr}${r.stdout}`);
    return r;
  };
  /** A command in sandbox `name`, as its agent would run it (through sbx, in the repo's path inside). */
  const inside = (name: string, script: string): RunResult => sbx(["shell", name, "--", "sh", "-c", script]);
  const hostRef = (ref: string): string | undefined => {
    const r = git(["rev-parse", "--verify", "-q", ref]);
    return r.code === 0 ? r.stdout.trim() : undefined;
  };
  /** Every way b could read `sha`: by id, and by listing every object its git reaches. */
  const reads = (name: string, sha: string): string[] => {
    const out: string[] = [];
    if (inside(name, `git cat-file -e ${sha}`).code === 0) out.push("cat-file -e");
    if (inside(name, "git cat-file --batch-all-objects --batch-check='%(objectname)'").stdout.includes(sha)) out.push("batch-all-objects");
    if (inside(name, `git log -1 --format=%s ${sha}`).stdout.includes("unmerged")) out.push("log");
    return out;
  };

  beforeAll(() => {
    user = createTestUser();
    repo = realpathSync(ownRepo(user, "gone", `FROM ${BASE_IMAGE}\n${userRecipe()}`));
    must(sbx(["create", "a"]), "sbx create a");
    must(sbx(["create", "b"]), "sbx create b");
  }, 300_000);

  afterAll(async () => {
    if (user) await removeOwnWorld(user, repo, () => void ["a", "b", "c"].forEach((n) => sbx(["rm", "--force", n])));
  }, 120_000);

  let work = "";

  test("after `sbx rm a` (its unmerged commit kept by the host), b and a sandbox made later read nothing of it", async () => {
    must(inside("a", `git checkout -q -b work && echo secret > a.txt && git add a.txt && git ${ID} commit -qm 'unmerged work of a'`), "commit in a");
    work = must(inside("a", "git rev-parse HEAD"), "rev-parse").stdout.trim();
    // The stop takes the last sync: the host has it under sandbox-a/*; b cannot read it while a lives (control).
    must(sbx(["stop", "a"]), "sbx stop a");
    expect(hostRef("refs/remotes/sandbox-a/work")).toBe(work);
    expect(reads("b", work)).toEqual([]);

    // rm refuses (the work is only a's), then --force: the host keeps it under sandbox-a/*.
    expect(sbx(["rm", "a"]).code).toBe(65);
    must(sbx(["rm", "--force", "a"]), "sbx rm --force a");
    expect(hostRef("refs/remotes/sandbox-a/work")).toBe(work);
    must(git(["gc", "-q", "--prune=now"]), "host gc");
    expect(must(git(["log", "-1", "--format=%s", "sandbox-a/work"]), "host log").stdout.trim()).toBe("unmerged work of a");
    must(git(["fsck", "--connectivity-only", "--no-dangling"]), "host fsck");

    // b, and c made after the rm, reach the host's objects: nothing of a's is there.
    expect(reads("b", work)).toEqual([]);
    must(sbx(["create", "c"]), "sbx create c");
    expect(reads("c", work)).toEqual([]);
    // Nor does a new sandbox that takes a's name.
    must(sbx(["create", "a"]), "sbx create a again");
    expect(reads("a", work)).toEqual([]);
    // The old refs are set aside, still on the host.
    const aside = git(["for-each-ref", "--format=%(objectname)", "refs/sbx-retired/a/"]).stdout;
    expect(aside).toContain(work);
  }, 300_000);

  test("once the person puts the removed sandbox's commit on a branch of theirs, b reads it (and still after the person's gc)", async () => {
    expect(work).not.toBe("");
    must(git(["merge", "-q", "--ff-only", work]), "host merge");
    let seen = false;
    for (let i = 0; i < 100 && !seen; i++) {
      seen = inside("b", `git cat-file -e ${work}`).code === 0;
      if (!seen) await Bun.sleep(100);
    }
    expect(seen).toBe(true);
    must(git(["gc", "-q", "--prune=now"]), "host gc");
    expect(inside("b", `git log -1 --format=%s ${work}`).stdout.trim()).toBe("unmerged work of a");
  }, 120_000);
});
