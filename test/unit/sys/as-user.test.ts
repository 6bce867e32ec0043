// Running git as root over another person's repo: exactly that repo is marked safe.
import { describe, expect, test } from "bun:test";
import { safeRepoExec } from "../../../src/sys/as-user";
import { FakeExec } from "../../fakes/exec";

describe("Exec wrappers", () => {
  test("safeRepoExec: exactly the host repo is marked safe, after any config the caller passed", async () => {
    const exec = new FakeExec().always(() => true);
    const e = safeRepoExec(exec, "/home/alice/proj");
    await e.run(["git", "config", "--get-regexp", "x"], { env: { GIT_CONFIG_COUNT: "1", GIT_CONFIG_KEY_0: "a.b", GIT_CONFIG_VALUE_0: "c" } });
    expect(exec.calls[0]!.opts.env).toMatchObject({ GIT_CONFIG_COUNT: "2", GIT_CONFIG_KEY_0: "a.b", GIT_CONFIG_KEY_1: "safe.directory", GIT_CONFIG_VALUE_1: "/home/alice/proj" });
  });
});
