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
    const rest = { repos: [], pushTo: [], prefix: null, ghTargets: [], pushRemote: null };
    expect(JSON.parse(set.stdout)).toEqual({ name: "a", settings: { allow: ["delete", "ci-files"], protect: ["release/*"], ...rest }, changed: true });
    expect(x.daemon.store.findSandbox(x.w.repo, "a")!.identity.bridge).toEqual({ allow: ["delete", "ci-files"], protect: ["release/*"], ...rest });
    const repo = await x.cli(["bridge", "a", "--allow-repo", "https://github.com/acme/shared.git", "--json"]);
    expect(JSON.parse(repo.stdout).settings.repos).toEqual(["https://github.com/acme/shared"]);
    expect((await x.cli(["bridge", "a", "--allow-repo", "https://x:tok@github.com/acme/shared"])).code).toBe(64);
    const back = await x.cli(["bridge", "a", "--disallow", "delete", "--unprotect", "release/*", "--disallow-repo", "https://github.com/acme/shared", "--json"]);
    expect(JSON.parse(back.stdout).settings).toEqual({ allow: ["ci-files"], protect: [], ...rest });
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
    expect(bad.stderr).toContain("push-anywhere, force-push, delete, ci-files, gh-api, gh-gist, gh-write");
    const pat = await x.cli(["bridge", "a", "--protect", "../x"]);
    expect(pat.code).toBe(64);
    expect(x.daemon.store.findSandbox(x.w.repo, "a")!.identity.bridge).toBeUndefined();
    expect((await x.cli(["bridge", "nope"])).code).toBe(66);
  });

  test("--push-remote names one of the repo's remotes (a fork); an unknown one is a usage error; '' puts it back", async () => {
    expect((await x.cli(["create", "a"])).code).toBe(0);
    expect((await x.cli(["bridge", "a", "--push-remote", "fork"])).code).toBe(64);
    expect((await x.cli(["bridge", "a", "--push-remote", "-x"])).code).toBe(64);
    Bun.spawnSync(["git", "-C", x.w.repo, "remote", "add", "fork", "https://github.com/me/proj.git"]);
    const set = await x.cli(["bridge", "a", "--push-remote", "fork"]);
    expect(set.code).toBe(0);
    expect(set.stdout).toContain("every push goes to: fork");
    expect(x.daemon.store.findSandbox(x.w.repo, "a")!.identity.bridge).toMatchObject({ pushRemote: "fork" });
    const back = await x.cli(["bridge", "a", "--push-remote", "", "--json"]);
    expect(JSON.parse(back.stdout).settings.pushRemote).toBeNull();
  });

  test("the CLI's list of switches is the bridge's", async () => {
    const { ALLOWS } = await import("../../../src/cli/commands/bridge");
    const { BRIDGE_ALLOWS } = await import("../../../src/core/bridge-settings");
    expect(ALLOWS).toEqual([...BRIDGE_ALLOWS]);
  });
});
