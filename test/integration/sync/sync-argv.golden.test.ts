// Golden test of every command line ref sync renders for the host (pure builders; nothing is run here).
import { describe, expect, test } from "bun:test";
import {
  cloneToHostFetchArgv,
  hostGitEnv,
  hostRefsArgv,
  parseHostRefs,
  retireRemoteArgv,
  shellQuote,
  uploadPackCommand,
} from "../../../src/sync/git-argv";

describe("ref sync argv (golden)", () => {
  test("clone → host fetch", () => {
    expect(cloneToHostFetchArgv({ hostRepo: "/h/repo", clonePath: "/s/demo/clone", remote: "sandbox-demo" })).toEqual([
      "git",
      "-c", "core.fsmonitor=false",
      "-c", "core.hooksPath=/dev/null",
      "-c", "protocol.allow=never",
      "-c", "protocol.file.allow=always",
      "-c", "fetch.writeCommitGraph=false",
      "-c", "fetch.recurseSubmodules=false",
      "-C", "/h/repo",
      "fetch", "--quiet", "--prune", "--no-tags", "--no-recurse-submodules", "--no-auto-gc", "--no-auto-maintenance",
      "--no-write-fetch-head",
      "--upload-pack=git -c core.fsmonitor=false -c core.hooksPath=/dev/null -c core.alternateRefsCommand=true -c 'safe.directory=/s/demo/clone/.git' upload-pack",
      "--",
      "/s/demo/clone",
      "+refs/heads/*:refs/remotes/sandbox-demo/*",
    ]);
  });

  test("upload-pack quoting survives quotes and spaces in the clone path", () => {
    expect(shellQuote("a b'c")).toBe(`'a b'\\''c'`);
    expect(uploadPackCommand("/x y/it's/.git")).toContain(`'safe.directory=/x y/it'\\''s/.git'`);
  });

  test("host snapshot, retire", () => {
    expect(hostRefsArgv("/h")).toEqual([
      "git", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-C", "/h", "for-each-ref", "--format=%(objectname) %(refname)",
    ]);
    expect(retireRemoteArgv("/h", "sandbox-demo")).toEqual([
      "git", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-C", "/h", "config", "--remove-section", "remote.sandbox-demo",
    ]);
    expect(() => retireRemoteArgv("/h", "origin")).toThrow(/not a sandbox remote name/);
  });

  test("the host snapshot leaves out every sandbox's remote-tracking refs", () => {
    const a = "a".repeat(40);
    const b = "b".repeat(40);
    const m = parseHostRefs(`${a} refs/heads/main\n${b} refs/remotes/sandbox-demo/main\n${b} refs/remotes/origin/main\n${a} refs/tags/v1\n`);
    expect([...m.keys()]).toEqual(["refs/heads/main", "refs/remotes/origin/main", "refs/tags/v1"]);
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
