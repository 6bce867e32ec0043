// Live ref sync end to end on Docker: commits made inside appear on the host with no command typed, host branches appear inside, and `sbx rm --force` keeps the sandbox's refs.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";
import type { Fixture } from "../docker/fixture";
import { acquireFixture, canRun, containerOf, dexec, docker, makeRepo, must, releaseFixture, removeRepoImages, skipReason, waitFor } from "./harness";

const tag = Math.random().toString(36).slice(2, 8);
const GIT_ID = ["-c", "user.email=agent@example.invalid", "-c", "user.name=agent"];

let f: Fixture;
let repo: string;
let ctr = "";

function hostRef(ref: string): string | undefined {
  const r = f.git(["rev-parse", "--verify", "-q", ref], repo);
  return r.code === 0 ? r.stdout.trim() : undefined;
}

describe.skipIf(!canRun)(`ref sync end to end on Docker${skipReason ? ` (skipped: ${skipReason})` : ""}`, () => {
  beforeAll(() => {
    f = acquireFixture();
    repo = makeRepo(f, `refsync-${tag}`);
    must(f.sbx(["create", "r"], { cwd: repo }), "sbx create r");
    ctr = containerOf(realpathSync(repo), "r");
  }, 180_000);

  afterAll(() => {
    if (repo) {
      f.sbx(["rm", "--force", "r"], { cwd: repo });
      const left = docker(["ps", "--all", "--quiet", "--filter", `label=sbx.repo=${realpathSync(repo)}`]).stdout.split("\n").filter(Boolean);
      if (left.length) docker(["rm", "--force", ...left]);
      removeRepoImages(repo);
    }
    if (f) releaseFixture();
  }, 60_000);

  test("a commit made inside is on the host as sandbox-r/<branch> by itself, with no command typed (how soon is printed: the bench's to judge)", async () => {
    must(dexec(f, ctr, ["sh", "-c", `git checkout -q -b work && echo inside > w.txt && git add w.txt && git ${GIT_ID.join(" ")} commit -qm inside`], { workdir: repo }), "commit inside");
    const sha = must(dexec(f, ctr, ["git", "rev-parse", "HEAD"], { workdir: repo }), "rev-parse").stdout.trim();
    const t0 = Date.now();
    const seen = await waitFor(() => (hostRef("refs/remotes/sandbox-r/work") === sha ? Date.now() - t0 : undefined), 20_000);
    console.log(`ref sync: a commit inside was on the host after ${seen} ms`);
    expect(seen).toBeDefined();
  }, 30_000);

  test("a host branch commit appears inside as a remote-tracking ref (host/<branch>) by itself (how soon is printed)", async () => {
    must(f.git(["checkout", "-q", "-b", `feat-${tag}`], repo), "host checkout");
    must(f.git(["commit", "-q", "--allow-empty", "-m", "host work"], repo), "host commit");
    const sha = hostRef("HEAD")!;
    must(f.git(["checkout", "-q", "main"], repo), "host checkout main");
    const t0 = Date.now();
    const seen = await waitFor(() => {
      const r = dexec(f, ctr, ["git", "rev-parse", "--verify", "-q", `refs/remotes/host/feat-${tag}`], { workdir: repo });
      return r.stdout.trim() === sha ? Date.now() - t0 : undefined;
    }, 20_000);
    console.log(`ref sync: a host commit was inside after ${seen} ms`);
    expect(seen).toBeDefined();
  }, 30_000);

  test("sbx stop takes a last sync; sbx rm --force keeps refs/remotes/sandbox-r/*, their objects move into the host's own, and its store goes", () => {
    must(dexec(f, ctr, ["sh", "-c", `echo late >> w.txt && git ${GIT_ID.join(" ")} commit -qam late`], { workdir: repo }), "late commit");
    const late = must(dexec(f, ctr, ["git", "rev-parse", "HEAD"], { workdir: repo }), "rev-parse").stdout.trim();
    must(f.sbx(["stop", "r"], { cwd: repo }), "sbx stop");
    expect(hostRef("refs/remotes/sandbox-r/work")).toBe(late);
    must(f.sbx(["rm", "--force", "r"], { cwd: repo }), "sbx rm --force");
    expect(docker(["ps", "--all", "--quiet", "--filter", `label=sbx.repo=${realpathSync(repo)}`]).stdout.trim()).toBe("");
    expect(hostRef("refs/remotes/sandbox-r/work")).toBe(late);
    expect(f.git(["log", "--format=%s", "-1", "sandbox-r/work"], repo).stdout.trim()).toBe("late");
    expect(f.git(["config", "--get", "remote.sandbox-r.url"], repo).code).not.toBe(0);
    expect(existsSync(join(repo, ".git", "sbx", "r.git"))).toBe(false);
    expect(readFileSync(join(repo, ".git", "objects", "info", "alternates"), "utf8")).not.toContain("r.git");
    // the-users-git-stays-safe: gc with nothing left to borrow from keeps every commit a host ref reaches
    must(f.git(["gc", "-q", "--prune=now"], repo), "git gc");
    expect(f.git(["log", "--format=%s", "-1", "sandbox-r/work"], repo).stdout.trim()).toBe("late");
    must(f.git(["fsck", "--connectivity-only", "--no-dangling"], repo), "git fsck");
  }, 60_000);

  test("a new sandbox named r moves the old one's kept refs to refs/sbx-retired/r/<time>/*, says so, and its first sync deletes nothing", async () => {
    const late = hostRef("refs/remotes/sandbox-r/work");
    expect(late).toBeDefined();
    const c = must(f.sbx(["create", "r"], { cwd: repo }), "sbx create r (again)");
    expect(c.stderr).toMatch(/kept as refs\/sbx-retired\/r\/\d{8}T\d{6}Z\/\*/);
    const list = f.git(["for-each-ref", "--format=%(objectname) %(refname)", "refs/sbx-retired/r/"], repo).stdout.trim().split("\n");
    expect(list.some((l) => l.startsWith(`${late} `) && l.endsWith("/work"))).toBe(true);
    // The new sandbox's first sync has run: the old branch is gone from sandbox-r/*, kept aside.
    const main = hostRef("refs/heads/main");
    expect(await waitFor(() => (hostRef("refs/remotes/sandbox-r/main") === main ? true : undefined), 5000)).toBe(true);
    expect(hostRef("refs/remotes/sandbox-r/work")).toBeUndefined();
    expect(f.git(["log", "--format=%s", "-1", list.find((l) => l.endsWith("/work"))!.split(" ")[1]!], repo).stdout.trim()).toBe("late");
  }, 120_000);
});
