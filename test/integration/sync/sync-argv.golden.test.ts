// Golden test of the command lines ref sync renders for the host (pure builders; nothing is run here).
import { describe, expect, test } from "bun:test";
import { hostGitEnv, retireRemoteArgv } from "../../../src/sync/git-argv";

describe("ref sync argv (golden)", () => {
  test("retire", () => {
    expect(retireRemoteArgv("/h", "sandbox-demo")).toEqual([
      "git", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-C", "/h", "config", "--remove-section", "remote.sandbox-demo",
    ]);
    expect(() => retireRemoteArgv("/h", "origin")).toThrow(/not a sandbox remote name/);
  });

  test("host git environment is whole and config-free", () => {
    expect(hostGitEnv("/bin")).toEqual({
      PATH: "/bin",
      HOME: "/nonexistent",
      LANG: "C",
      LC_ALL: "C",
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_TERMINAL_PROMPT: "0",
      GIT_OPTIONAL_LOCKS: "0",
      GIT_ASKPASS: "/bin/false",
    });
  });
});
