// sbx bridge: the per-sandbox switches, shown and changed through the daemon, kept in the sandbox's identity.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { dockerCliWorld, type DockerCliWorld } from "../../support/docker-cli-world";

let x: DockerCliWorld;
beforeEach(async () => {
  x = await dockerCliWorld();
});
afterEach(async () => {
  await x.close();
});

describe("sbx bridge", () => {
  test("shows the defaults; --allow and --protect change them, kept in the identity; --disallow and --unprotect take them back", async () => {
    expect((await x.cli(["create", "a"])).code).toBe(0);
    const shown = await x.cli(["bridge", "a"]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain("allowed: nothing beyond the default");
    expect(shown.stdout).toContain("the default branch, main, master");
    const set = await x.cli(["bridge", "a", "--allow", "ci-files", "--allow", "delete", "--protect", "release/*", "--json"]);
    expect(set.code).toBe(0);
    expect(JSON.parse(set.stdout)).toEqual({ name: "a", settings: { allow: ["delete", "ci-files"], protect: ["release/*"], repos: [], pushTo: [], prefix: null }, changed: true });
    expect(x.daemon.store.findSandbox(x.w.repo, "a")!.identity.bridge).toEqual({ allow: ["delete", "ci-files"], protect: ["release/*"], repos: [], pushTo: [], prefix: null });
    const repo = await x.cli(["bridge", "a", "--allow-repo", "https://github.com/acme/shared.git", "--json"]);
    expect(JSON.parse(repo.stdout).settings.repos).toEqual(["https://github.com/acme/shared"]);
    expect((await x.cli(["bridge", "a", "--allow-repo", "https://x:tok@github.com/acme/shared"])).code).toBe(64);
    const back = await x.cli(["bridge", "a", "--disallow", "delete", "--unprotect", "release/*", "--disallow-repo", "https://github.com/acme/shared", "--json"]);
    expect(JSON.parse(back.stdout).settings).toEqual({ allow: ["ci-files"], protect: [], repos: [], pushTo: [], prefix: null });
    expect(shown.stdout).toContain("pushes without asking to: sbx/a/…");
    const push = await x.cli(["bridge", "a", "--allow-push", "fix/*", "--branch-prefix", "agents/a/", "--json"]);
    expect(JSON.parse(push.stdout).settings).toMatchObject({ pushTo: ["fix/*"], prefix: "agents/a/" });
    expect((await x.cli(["bridge", "a", "--branch-prefix", "no-slash"])).code).toBe(64);
    expect((await x.cli(["bridge", "a", "--allow-push", "a..b"])).code).toBe(64);
    const reset = await x.cli(["bridge", "a", "--disallow-push", "fix/*", "--branch-prefix", "", "--json"]);
    expect(JSON.parse(reset.stdout).settings).toMatchObject({ pushTo: [], prefix: null });
    const logs = await x.cli(["logs", "--json", "--kind", "lifecycle"]);
    expect(logs.stdout).toContain('"bridge"');
  });

  test("an unknown switch or a bad branch pattern is a usage error (64), and nothing changes", async () => {
    expect((await x.cli(["create", "a"])).code).toBe(0);
    const bad = await x.cli(["bridge", "a", "--allow", "root"]);
    expect(bad.code).toBe(64);
    expect(bad.stderr).toContain("push-anywhere, force-push, delete, ci-files, gh-api, gh-gist");
    const pat = await x.cli(["bridge", "a", "--protect", "../x"]);
    expect(pat.code).toBe(64);
    expect(x.daemon.store.findSandbox(x.w.repo, "a")!.identity.bridge).toBeUndefined();
    expect((await x.cli(["bridge", "nope"])).code).toBe(66);
  });
});
