// Workspace isolation on real Docker, tried as a hostile sandbox would: the host never reads a clone (whatever it plants),
// one sandbox never sees another's commits, and the person's own git stays safe. The canary is a repo of the same host
// user outside every mount: what a host process reading the clone would reach, and what the sandbox itself cannot.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { realpathSync } from "node:fs";
import { join } from "node:path";
import type { Fixture } from "../docker/fixture";
import { acquireFixture, canRun, containerOf, dexec, docker, makeRepo, must, releaseFixture, removeRepoImages, skipReason, waitFor } from "./harness";

const tag = Math.random().toString(36).slice(2, 8);
const ID = "-c user.email=agent@example.invalid -c user.name=agent";

let f: Fixture;
let repo = "";
let canary = "";
let canarySha = "";
let ctrA = "";
let ctrB = "";
let link = "";

const hostRef = (ref: string): string | undefined => {
  const r = f.git(["rev-parse", "--verify", "-q", ref], repo);
  return r.code === 0 ? r.stdout.trim() : undefined;
};
const inA = (script: string) => dexec(f, ctrA, ["sh", "-c", script], { workdir: repo });
const inB = (script: string) => dexec(f, ctrB, ["sh", "-c", script], { workdir: repo });

describe.skipIf(!canRun)(`workspace isolation on Docker${skipReason ? ` (skipped: ${skipReason})` : ""}`, () => {
  beforeAll(() => {
    f = acquireFixture();
    repo = realpathSync(makeRepo(f, `iso-${tag}`));
    canary = realpathSync(makeRepo(f, `canary-${tag}`));
    must(f.git(["commit", "-q", "--allow-empty", "-m", "canary secret"], canary), "canary commit");
    canarySha = f.git(["rev-parse", "HEAD"], canary).stdout.trim();
    must(f.sbx(["create", "a"], { cwd: repo }), "sbx create a");
    must(f.sbx(["create", "b"], { cwd: repo }), "sbx create b");
    ctrA = containerOf(repo, "a");
    ctrB = containerOf(repo, "b");
    // Where the clone's alternates lead inside (the sandbox dir's link to the host repo).
    link = must(inA("cat .git/objects/info/alternates"), "alternates").stdout.trim().replace(/\/\.git\/objects$/, "");
  }, 240_000);

  afterAll(() => {
    if (repo) {
      for (const n of ["a", "b"]) f.sbx(["rm", "--force", n], { cwd: repo });
      const left = docker(["ps", "--all", "--quiet", "--filter", `label=sbx.repo=${repo}`]).stdout.split("\n").filter(Boolean);
      if (left.length) docker(["rm", "--force", ...left]);
      removeRepoImages(repo);
    }
    if (f) releaseFixture();
  }, 120_000);

  test("the-host-never-reads-a-clone: alternates, symlinked refs and packed-refs planted in a clone bring nothing of the canary repo to the host", async () => {
    const clone = join(realpathSync(join(link, "..")), "clone");
    // Plant, from inside, every way a host git in the clone would be led to the canary.
    must(inA(`echo ${canary}/.git/objects >> .git/objects/info/alternates`), "plant alternates");
    must(inA(`ln -s ${canary}/.git/refs/heads/main .git/refs/heads/canary-link`), "plant ref symlink");
    must(inA(`ln -sf ${canary}/.git/packed-refs .git/packed-refs`), "plant packed-refs symlink");
    // A commit on top of the canary's, made without reading it (the sandbox cannot): its parent is only a name.
    const tree = must(inA("git mktree </dev/null"), "mktree").stdout.trim();
    const bait = must(inA(`printf 'tree ${tree}\\nparent ${canarySha}\\nauthor a <a@x> 1 +0000\\ncommitter a <a@x> 1 +0000\\n\\nbait\\n' | git hash-object -t commit -w --stdin`), "bait").stdout.trim();
    must(inA(`git update-ref refs/heads/bait ${bait}`), "bait ref");

    // Control: the host user's own git, run in that clone, does reach the canary through what was planted.
    expect(f.git(["-C", clone, "cat-file", "-e", canarySha], repo).code).toBe(0);

    // What sbx does with it: a stop takes the last sync, as the sandbox, which cannot read the canary either: its own
    // git fails to pack the bait (or, had it sent a pack without the parent, the host would refuse it as incomplete).
    const stop = f.sbx(["stop", "a"], { cwd: repo });
    expect(`${stop.stdout}${stop.stderr}`).toMatch(/packing new commits in sandbox a failed|incomplete/);
    expect(f.git(["cat-file", "-e", canarySha], repo).code).not.toBe(0);
    expect(f.git(["--git-dir", join(repo, ".git", "sbx", "a.git"), "cat-file", "-e", canarySha], repo).code).not.toBe(0);
    expect(hostRef("refs/remotes/sandbox-a/bait")).toBeUndefined();
    expect(hostRef("refs/remotes/sandbox-a/canary-link")).toBeUndefined();
    const all = f.git(["for-each-ref", "--format=%(objectname)"], repo).stdout;
    expect(all).not.toContain(canarySha);
    // rm will not take the sandbox's word either: what it holds cannot be told, so it asks for --force.
    const rm = f.sbx(["rm", "a"], { cwd: repo });
    expect(rm.code).not.toBe(0);

    // Undone inside, the sandbox syncs again.
    must(f.sbx(["shell", "a", "--", "true"], { cwd: repo }), "start a again");
    ctrA = containerOf(repo, "a");
    must(inA(`rm -f .git/refs/heads/canary-link .git/packed-refs && git update-ref -d refs/heads/bait && sed -i '\\#${canary}#d' .git/objects/info/alternates`), "undo");
    must(inA(`git checkout -q -b work && echo inside > w.txt && git add w.txt && git ${ID} commit -qm inside`), "work");
    const work = must(inA("git rev-parse HEAD"), "rev-parse").stdout.trim();
    expect(await waitFor(() => (hostRef("refs/remotes/sandbox-a/work") === work ? true : undefined), 5000)).toBe(true);
  }, 180_000);

  test("a-sandbox-sees-only-its-own-work: b cannot read a's synced commit by any path, until the person puts it on a branch of theirs", async () => {
    const work = hostRef("refs/remotes/sandbox-a/work")!;
    expect(work).toBeDefined();
    expect(inB(`git cat-file -e ${work}`).code).not.toBe(0);
    expect(inB("git cat-file --batch-all-objects --batch-check='%(objectname)'").stdout).not.toContain(work);
    // Of the host's .git only its objects are there, and their list of alternates (the stores) is empty.
    const linkB = must(inB("cat .git/objects/info/alternates"), "b's alternates").stdout.trim().replace(/\/\.git\/objects$/, "");
    expect(inB(`ls -A ${linkB}/.git`).stdout.trim()).toBe("objects");
    expect(inB(`cat ${linkB}/.git/objects/info/alternates`).stdout).toBe("");
    expect(inB(`test -e ${linkB}/.git/config || test -e ${linkB}/.git/hooks || test -e ${linkB}/.git/sbx`).code).not.toBe(0);
    // Nor does a path of the host repo, or a's sandbox dir, lead anywhere from b.
    expect(inB(`ls ${repo}/.git/sbx 2>/dev/null; ls ${link}/.git 2>/dev/null; ls ${join(link, "..", "clone")} 2>/dev/null`).stdout.trim()).toBe("");
    expect(inB(`git for-each-ref --format='%(objectname)'`).stdout).not.toContain(work);

    // The person takes a's work onto main: b sees it as host/main, objects and all, and still after the person's gc.
    must(f.git(["merge", "-q", "--ff-only", "sandbox-a/work"], repo), "host merge");
    expect(hostRef("refs/heads/main")).toBe(work);
    expect(await waitFor(() => (inB("git rev-parse refs/remotes/host/main").stdout.trim() === work ? true : undefined), 5000)).toBe(true);
    must(inB(`git cat-file -e ${work} && git log --format=%s -1 host/main`), "b reads main");
    must(f.git(["gc", "-q", "--prune=now"], repo), "host gc");
    expect(inB(`git log --format=%s -1 ${work}`).stdout.trim()).toBe("inside");
  }, 120_000);

  test("the-users-git-stays-safe: no remote leads into a clone; fetch --all, log --all, gc and fsck work, and every sandbox ref resolves", () => {
    expect(f.git(["remote"], repo).stdout.trim()).toBe("");
    expect(f.git(["config", "--get-regexp", "^remote\\."], repo).stdout).toBe("");
    must(f.git(["fetch", "--all", "-q"], repo), "git fetch --all");
    must(f.git(["log", "--all", "--oneline"], repo), "git log --all");
    must(f.git(["gc", "-q", "--prune=now"], repo), "git gc");
    must(f.git(["fsck", "--connectivity-only", "--no-dangling"], repo), "git fsck");
    const refs = f.git(["for-each-ref", "--format=%(refname)", "refs/remotes/"], repo).stdout.split("\n").filter(Boolean);
    expect(refs).toContain("refs/remotes/sandbox-a/work");
    for (const ref of refs) {
      must(f.git(["log", "-1", "--format=%H", ref], repo), `log ${ref}`);
    }
  }, 60_000);
});
