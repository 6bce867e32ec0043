// Pushes cannot damage what the user protects: forced updates of protected branches, deleting what the sandbox did not
// create, and changes to CI files are refused by default, each with the switch that allows it for one sandbox. Real
// bridge, real shim, a token-demanding git server on 127.0.0.1.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { NO_BRIDGE_SETTINGS, type BridgeSettings } from "../../../src/core/bridge-settings";
import { commitOn, git, makeHarness, refIn, type Harness } from "./harness";

let h: Harness;
let settings: BridgeSettings = { ...NO_BRIDGE_SETTINGS, allow: ["push-anywhere"], protect: [] };
beforeAll(async () => {
  h = await makeHarness({ settings: () => settings });
});
afterAll(async () => {
  await h.stop();
});

/** A branch or tag on the upstream made from elsewhere (a colleague), not through the sandbox. */
async function upstreamRef(ref: string): Promise<string> {
  const url = h.upstream.repoUrl("proj").replace("http://", `http://x:${h.token}@`);
  await git(h.host, "push", "-q", url, `main:${ref}`);
  return refIn(h.upstreamRepo, ref);
}

describe("push protections", () => {
  test("a forced push to main (the default branch) is refused, with the switch named; the upstream keeps its main", async () => {
    const main = await refIn(h.upstreamRepo, "refs/heads/main");
    await git(h.clone, "checkout", "-q", "-B", "main", main);
    await git(h.clone, "commit", "-q", "--amend", "-m", "rewritten history");
    for (const args of [["push", "--force", "origin", "main"], ["push", "origin", "+main"], ["push", "--force-with-lease", "origin", "main"]]) {
      const r = await h.shim(args);
      expect(r.code).toBe(77);
      expect(r.stderr).toContain("a forced push to main");
      expect(r.stderr).toContain("sbx bridge demo --allow force-push");
    }
    expect(await refIn(h.upstreamRepo, "refs/heads/main")).toBe(main);
  });

  test("a protected pattern (release/*) is protected too; a forced push to the sandbox's own branch is not", async () => {
    settings = { ...NO_BRIDGE_SETTINGS, allow: ["push-anywhere"], protect: ["release/*"] };
    await upstreamRef("refs/heads/release/1");
    await commitOn(h.clone, "release/1", { "r.txt": "r\n" });
    expect((await h.shim(["push", "--force", "origin", "release/1"])).code).toBe(77);
    const mine = await commitOn(h.clone, "agent-work", { "a.txt": "1\n" });
    expect((await h.shim(["push", "--force", "origin", "agent-work"])).code).toBe(0);
    expect(await refIn(h.upstreamRepo, "refs/heads/agent-work")).toBe(mine);
    settings = { ...NO_BRIDGE_SETTINGS, allow: ["push-anywhere"], protect: [] };
  });

  test("deleting a branch or tag the sandbox did not create is refused; one it pushed new, it may delete", async () => {
    const theirs = await upstreamRef("refs/heads/colleague");
    await upstreamRef("refs/tags/v1");
    for (const args of [["push", "origin", "--delete", "colleague"], ["push", "origin", ":colleague"], ["push", "origin", ":refs/tags/v1"]]) {
      const r = await h.shim(args);
      expect(r.code).toBe(77);
      expect(r.stderr).toContain("which this sandbox did not create");
      expect(r.stderr).toContain("--allow delete");
    }
    expect(await refIn(h.upstreamRepo, "refs/heads/colleague")).toBe(theirs);
    expect(await refIn(h.upstreamRepo, "refs/tags/v1")).not.toBe("");
    await commitOn(h.clone, "scratch", { "s.txt": "s\n" });
    expect((await h.shim(["push", "origin", "scratch"])).code).toBe(0);
    expect((await h.shim(["push", "origin", "--delete", "scratch"])).code).toBe(0);
    expect(await refIn(h.upstreamRepo, "refs/heads/scratch")).toBe("");
  });

  test("commits that change CI files are refused, also when the change hides in a merge; with the switch they go", async () => {
    await git(h.clone, "checkout", "-q", "-B", "ci-edit", await refIn(h.upstreamRepo, "refs/heads/main"));
    await commitOn(h.clone, "ci-edit", { [".github/workflows/ci.yml"]: "on: push\njobs: {}\n", "ok.txt": "fine\n" });
    const r = await h.shim(["push", "origin", "ci-edit"]);
    expect(r.code).toBe(77);
    expect(r.stderr).toContain(".github/workflows/ci.yml");
    expect(r.stderr).toContain("--allow ci-files");
    expect(await refIn(h.upstreamRepo, "refs/heads/ci-edit")).toBe("");

    // An "evil merge": the merge commit itself brings a CODEOWNERS neither parent has.
    const base = await refIn(h.upstreamRepo, "refs/heads/main");
    await git(h.clone, "checkout", "-q", "-B", "m1", base);
    await commitOn(h.clone, "m1", { "a1.txt": "1\n" });
    await git(h.clone, "checkout", "-q", "-B", "m2", base);
    await commitOn(h.clone, "m2", { "a2.txt": "2\n" });
    await git(h.clone, "merge", "-q", "--no-commit", "m1");
    await Bun.write(join(h.clone, "CODEOWNERS"), "* @attacker\n");
    await git(h.clone, "add", "CODEOWNERS");
    await git(h.clone, "commit", "-q", "-m", "merge m1");
    const m = await h.shim(["push", "origin", "m2"]);
    expect(m.code).toBe(77);
    expect(m.stderr).toContain("CODEOWNERS");

    settings = { ...NO_BRIDGE_SETTINGS, allow: ["push-anywhere", "ci-files"], protect: [] };
    expect((await h.shim(["push", "origin", "ci-edit"])).code).toBe(0);
    settings = { ...NO_BRIDGE_SETTINGS, allow: ["push-anywhere"], protect: [] };
  });

  test("least-privilege: a protected branch in another letter case is protected (a case-folding server holds one ref)", async () => {
    const main = await refIn(h.upstreamRepo, "refs/heads/main");
    await git(h.clone, "checkout", "-q", "-B", "main", main);
    await git(h.clone, "commit", "-q", "--amend", "--allow-empty", "-m", "rewritten under another case");
    for (const dst of ["MAIN", "Main", "Master"]) {
      const r = await h.shim(["push", "--force", "origin", `main:${dst}`]);
      expect([dst, r.code]).toEqual([dst, 77]);
      expect(r.stderr).toContain("protected");
    }
    settings = { ...NO_BRIDGE_SETTINGS, allow: ["push-anywhere"], protect: ["Release/*"] };
    await upstreamRef("refs/heads/release/9");
    expect((await h.shim(["push", "--force", "origin", "main:release/9"])).code).toBe(77);
    settings = { ...NO_BRIDGE_SETTINGS, allow: ["push-anywhere"], protect: [] };
    expect(await refIn(h.upstreamRepo, "refs/heads/main")).toBe(main);
  });

  test("least-privilege: deleting a protected branch needs what a forced push to it needs, not only --allow delete", async () => {
    settings = { ...NO_BRIDGE_SETTINGS, allow: ["push-anywhere", "delete"], protect: [] };
    const main = await refIn(h.upstreamRepo, "refs/heads/main");
    for (const args of [["push", "origin", ":main"], ["push", "origin", "--delete", "main"], ["push", "origin", ":refs/heads/master"]]) {
      const r = await h.shim(args);
      expect([args.join(" "), r.code]).toEqual([args.join(" "), 77]);
      expect(r.stderr).toContain("--allow force-push");
    }
    expect(await refIn(h.upstreamRepo, "refs/heads/main")).toBe(main);
    settings = { ...NO_BRIDGE_SETTINGS, allow: ["push-anywhere"], protect: [] };
  });

  test("with force-push and delete allowed for this sandbox, they go", async () => {
    settings = { ...NO_BRIDGE_SETTINGS, allow: ["push-anywhere", "force-push", "delete"], protect: [] };
    await git(h.clone, "checkout", "-q", "-B", "main", await refIn(h.upstreamRepo, "refs/heads/main"));
    await git(h.clone, "commit", "-q", "--amend", "--allow-empty", "-m", "allowed rewrite of the upstream's tip");
    const sha = await git(h.clone, "rev-parse", "HEAD");
    expect((await h.shim(["push", "--force", "origin", "main"])).code).toBe(0);
    expect(await refIn(h.upstreamRepo, "refs/heads/main")).toBe(sha);
    expect((await h.shim(["push", "origin", "--delete", "colleague"])).code).toBe(0);
    settings = { ...NO_BRIDGE_SETTINGS, allow: ["push-anywhere"], protect: [] };
  });
});
