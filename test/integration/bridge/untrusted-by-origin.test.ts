// untrusted-by-origin: a commit counts as the user's only when a ref the user made reaches it (or the upstream has it).
// Refs sbx keeps on a sandbox's behalf (an earlier sandbox's refs set aside when its name is used again, the live
// sandboxes' `sandbox-<name>/*`, any `refs/sbx-*` bookkeeping) make nothing "already known": a commit only they reach is
// scanned and CI-checked like any new one. Real bridge, real shim, a token-demanding git server on 127.0.0.1.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { commitOn, git, makeHarness, refIn, type Harness } from "./harness";

// Built at run time so this file holds no key-shaped literal.
const KEY = "AKIA" + "ZXCVBNMASDFGHJKL";
let h: Harness;
beforeAll(async () => {
  h = await makeHarness();
});
afterAll(async () => {
  await h.stop();
});

/**
 * A commit the "old sandbox" made, which sbx then kept on the host under `ref` (as rm + setAsideRetiredRefs leave it):
 * its objects are in the host repo, and the clone (the new sandbox of the same name) has it too, as an attacker who
 * made it again byte for byte would.
 */
async function leftOnHost(ref: string, branch: string, files: Record<string, string>): Promise<string> {
  await git(h.clone, "checkout", "-q", "-B", branch, await refIn(h.upstreamRepo, "refs/heads/main"));
  const sha = await commitOn(h.clone, branch, files, "old sandbox's work");
  await git(h.host, "fetch", "-q", h.clone, `+${sha}:${ref}`);
  expect(await git(h.host, "rev-parse", ref)).toBe(sha);
  return sha;
}

const SBX_REFS = [
  "refs/sbx-retired/demo/20260101T000000Z/feature",
  "refs/remotes/sandbox-other/feature",
  "refs/sbx-seen/x",
  "refs/sbx-created/origin/heads/x",
];

describe("untrusted-by-origin: what sbx keeps for a sandbox is not the user's", () => {
  for (const [i, ref] of SBX_REFS.entries()) {
    const where = ref.replace(/\/[^/]+$/, "/…");
    test(`a CI-file commit only ${where} reaches is CI-checked`, async () => {
      const branch = `ci-${i}`;
      await leftOnHost(ref, branch, { ".github/workflows/steal.yml": "on: push\njobs: {}\n" });
      const r = await h.shim(["push", "origin", `${branch}:sbx/demo/${branch}`]);
      expect(r.stderr).toContain(".github/workflows/steal.yml");
      expect(r.code).toBe(77);
      expect(await refIn(h.upstreamRepo, `refs/heads/sbx/demo/${branch}`)).toBe("");
    });

    test(`a secret only ${where} reaches is scanned`, async () => {
      const branch = `key-${i}`;
      await leftOnHost(`${ref}-key`, branch, { "cfg.txt": `aws=${KEY}\n` });
      const r = await h.shim(["push", "origin", `${branch}:sbx/demo/${branch}`]);
      expect(r.stderr).toContain("AWS access key id");
      expect(r.code).toBe(77);
      expect(await refIn(h.upstreamRepo, `refs/heads/sbx/demo/${branch}`)).toBe("");
    });
  }

  test("a commit on a branch the user made is the user's: their own CI change goes out unchecked", async () => {
    await git(h.host, "checkout", "-q", "-B", "user-ci", "main");
    await Bun.write(join(h.host, ".gitlab-ci.yml"), "test: {script: [make]}\n");
    await git(h.host, "add", ".gitlab-ci.yml");
    await git(h.host, "commit", "-q", "-m", "the user's own CI change");
    const sha = await git(h.host, "rev-parse", "HEAD");
    await git(h.host, "checkout", "-q", "main");
    await git(h.clone, "fetch", "-q", h.host, "user-ci");
    await git(h.clone, "checkout", "-q", "-B", "on-user-ci", sha);
    const mine = await commitOn(h.clone, "on-user-ci", { "more.txt": "more\n" });
    const r = await h.shim(["push", "origin", "on-user-ci:sbx/demo/on-user-ci"]);
    expect(r.stderr).not.toContain("refused");
    expect(r.code).toBe(0);
    expect(await refIn(h.upstreamRepo, "refs/heads/sbx/demo/on-user-ci")).toBe(mine);
  });
});

describe("untrusted-by-origin: what the upstream has is judged per upstream", () => {
  test("commits the sandbox fetched from another remote (a third party's CI change) are checked when pushed to origin", async () => {
    // The host repo also tracks a third party's repository, which the person never fetched.
    const other = await h.upstream.createRepo("vendor");
    await git(h.host, "remote", "add", "vendor", h.upstream.repoUrl("vendor"));
    await git(h.clone, "remote", "add", "vendor", h.upstream.repoUrl("vendor"));
    const url = h.upstream.repoUrl("vendor").replace("http://", `http://x:${h.token}@`);
    const side = join(h.root, "vendor-work");
    await git(h.root, "init", "-q", "-b", "main", side);
    const theirs = await commitOn(side, "main", { ".github/workflows/theirs.yml": "on: push\njobs: {}\n", "lib.txt": "x\n" }, "vendor's CI");
    await git(side, "push", "-q", url, "main");
    expect(await refIn(other, "refs/heads/main")).toBe(theirs);
    // The sandbox fetches it through the bridge (the gate now knows what vendor has) and pushes it to origin.
    expect((await h.shim(["fetch", "vendor"])).code).toBe(0);
    await git(h.clone, "checkout", "-q", "-B", "vendored", theirs);
    const r = await h.shim(["push", "origin", "vendored:sbx/demo/vendored"]);
    expect(r.stderr).toContain("CI or automation files (.github/workflows/theirs.yml)");
    expect(r.code).toBe(77);
    expect(await refIn(h.upstreamRepo, "refs/heads/sbx/demo/vendored")).toBe("");
  }, 30_000);
});

describe("untrusted-by-origin: a fetch is cut by what the sandbox has, never by another sandbox's refs", () => {
  test("an upstream commit only another sandbox's ref reaches on the host still comes in the fetch", async () => {
    // A colleague pushes U upstream; sandbox "other" fetched it and ref sync copied its branch to the host.
    const url = h.upstream.repoUrl("proj").replace("http://", `http://x:${h.token}@`);
    const side = join(h.root, "colleague");
    await git(h.root, "clone", "-q", url, side);
    const u = await commitOn(side, "colleague-work", { "c.txt": "from a colleague\n" }, "colleague's commit");
    await git(side, "push", "-q", "origin", "colleague-work");
    await git(h.host, "fetch", "-q", side, `+${u}:refs/remotes/sandbox-other/colleague-work`);
    rmSync(side, { recursive: true, force: true });
    // This sandbox does not see the other's store: a clone of its own objects only (no alternates), which lacks U.
    const own = join(h.clone, "own");
    await git(h.root, "clone", "-q", "--no-local", h.host, own);
    await git(own, "remote", "set-url", "origin", h.upstream.repoUrl("proj"));
    expect((await Bun.spawn(["git", "-C", own, "cat-file", "-e", u]).exited) === 0).toBe(false);
    const r = await h.shim(["fetch", "origin"], { cwd: own });
    expect(r.stderr).not.toContain("fatal");
    expect(r.code).toBe(0);
    expect(await git(own, "rev-parse", "refs/remotes/origin/colleague-work")).toBe(u);
    expect(await git(own, "cat-file", "-t", u)).toBe("commit");
  }, 30_000);
});
