// A sandbox's pushes can go to a fork instead of the upstream (`sbx bridge NAME --push-remote fork`): its branches then
// never run the upstream's `on: push` workflows with the upstream's secrets. Real bridge, real shim, a token-demanding
// git server on 127.0.0.1 holding the upstream and the fork.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { NO_BRIDGE_SETTINGS, type BridgeSettings } from "../../../src/core/bridge-settings";
import { commitOn, git, makeHarness, refIn, type Harness } from "./harness";

let h: Harness;
let fork = "";
let settings: BridgeSettings = { ...NO_BRIDGE_SETTINGS, pushRemote: "fork" };
beforeAll(async () => {
  h = await makeHarness({ settings: () => settings });
  fork = await h.upstream.createRepo("fork");
  await git(h.host, "remote", "add", "fork", h.upstream.repoUrl("fork"));
  await git(h.host, "push", "-q", h.upstream.repoUrl("fork").replace("http://", `http://x:${h.token}@`), "main");
});
afterAll(async () => {
  await h.stop();
});

describe("push remote: the sandbox's branches go to the fork the person named", () => {
  test("git push origin … lands in the fork, says so, and the upstream gets nothing", async () => {
    const sha = await commitOn(h.clone, "work", { "w.txt": "work\n" });
    const r = await h.shim(["push", "origin", "work:sbx/demo/work"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("go to fork");
    expect(await refIn(fork, "refs/heads/sbx/demo/work")).toBe(sha);
    expect(await refIn(h.upstreamRepo, "refs/heads/sbx/demo/work")).toBe("");
    // The clone's tracking ref says where it went.
    expect(await git(h.clone, "rev-parse", "refs/remotes/fork/sbx/demo/work")).toBe(sha);
  });

  test("the prefix rule and the checks still apply on the fork", async () => {
    await commitOn(h.clone, "ci", { ".github/workflows/x.yml": "on: push\n" });
    const r = await h.shim(["push", "origin", "ci:sbx/demo/ci"]);
    expect(r.code).toBe(77);
    expect(await refIn(fork, "refs/heads/sbx/demo/ci")).toBe("");
    const outside = await h.shim(["push", "origin", "work:main"]);
    expect(outside.code).toBe(77);
  });

  test("a push remote the host repo does not have refuses every push, and nothing goes anywhere", async () => {
    settings = { ...NO_BRIDGE_SETTINGS, pushRemote: "gone" };
    await commitOn(h.clone, "work2", { "w2.txt": "w\n" });
    const r = await h.shim(["push", "origin", "work2:sbx/demo/work2"]);
    expect(r.code).toBe(77);
    expect(r.stderr).toContain("gone");
    expect(await refIn(h.upstreamRepo, "refs/heads/sbx/demo/work2")).toBe("");
    expect(await refIn(fork, "refs/heads/sbx/demo/work2")).toBe("");
    settings = { ...NO_BRIDGE_SETTINGS, pushRemote: "fork" };
  });
});
