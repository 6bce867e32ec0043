// A branch a sandbox pushes runs the repository's `on: push` workflows with the repository's secrets. sbx cannot stop
// the forge; it says so on the sandbox's first push (and records it in the audit log), naming the workflows and the two
// ways out. Real bridge, real shim, a token-demanding git server on 127.0.0.1.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { NO_BRIDGE_SETTINGS, type BridgeSettings } from "../../../src/core/bridge-settings";
import { commitOn, git, makeHarness, refIn, type Harness } from "./harness";

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/** The upstream's main (and the host's) carries these workflows; the sandbox's clone has them too. */
async function withWorkflows(files: Record<string, string>, settings: BridgeSettings = NO_BRIDGE_SETTINGS): Promise<Harness> {
  const x = await makeHarness({ settings: () => settings });
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(join(x.host, p, ".."), { recursive: true });
    await Bun.write(join(x.host, p), text);
    await git(x.host, "add", p);
  }
  await git(x.host, "commit", "-q", "-m", "CI");
  await git(x.host, "push", "-q", x.upstream.repoUrl("proj").replace("http://", `http://x:${x.token}@`), "main");
  await git(x.clone, "pull", "-q", "--ff-only", x.host, "main");
  return x;
}

describe("the first push says which workflows a sandbox branch starts", () => {
  test("on: push for every branch: the first push names the workflow and both ways out, once; the audit keeps it", async () => {
    h = await withWorkflows({ ".github/workflows/ci.yml": "on: push\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps: [{run: make test}]\n", ".github/workflows/docs.yml": "on:\n  push:\n    branches: [main]\n" });
    await commitOn(h.clone, "sbx/demo/one", { "a.txt": "a\n" });
    const r = await h.shim(["push", "origin", "sbx/demo/one"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(".github/workflows/ci.yml: on: push, for every branch");
    expect(r.stderr).not.toContain("docs.yml");
    expect(r.stderr).toContain("branches-ignore: ['sbx/**']");
    expect(r.stderr).toContain("sbx bridge demo --push-remote");
    expect(h.audit.at(-1)!.note).toContain(".github/workflows/ci.yml");
    await commitOn(h.clone, "sbx/demo/two", { "b.txt": "b\n" });
    const again = await h.shim(["push", "origin", "sbx/demo/two"]);
    expect(again.code).toBe(0);
    expect(again.stderr).not.toContain("workflows");
    expect(again.stderr).not.toContain("ci.yml");
  }, 30_000);

  test("workflows that skip sandbox branches (branches-ignore: ['sbx/**']) say nothing", async () => {
    h = await withWorkflows({ ".github/workflows/ci.yml": "on:\n  push:\n    branches-ignore: ['sbx/**']\n", ".forgejo/workflows/x.yaml": "on:\n  push:\n    tags: ['v*']\n" });
    await commitOn(h.clone, "sbx/demo/one", { "a.txt": "a\n" });
    const r = await h.shim(["push", "origin", "sbx/demo/one"]);
    expect(r.code).toBe(0);
    expect(r.stderr).not.toContain("CI");
    expect(await refIn(h.upstreamRepo, "refs/heads/sbx/demo/one")).not.toBe("");
  }, 30_000);

  test("another service's file (GitLab) is named too", async () => {
    h = await withWorkflows({ ".gitlab-ci.yml": "test:\n  script: [make]\n" });
    await commitOn(h.clone, "sbx/demo/one", { "a.txt": "a\n" });
    const r = await h.shim(["push", "origin", "sbx/demo/one"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(".gitlab-ci.yml: builds every pushed branch");
  }, 30_000);
});
