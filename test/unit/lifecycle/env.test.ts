// The sandbox environment: terminal and locale variables and SANDBOX; nothing else of the host leaks in.
import { expect, test } from "bun:test";
import { sandboxEnv } from "../../../src/lifecycle/env";

test("passes only terminal and locale variables, adds SANDBOX", () => {
  const host = {
    TERM: "xterm-256color", COLORTERM: "truecolor", FORCE_COLOR: "1", NO_COLOR: "1", LANG: "en_US.UTF-8", LC_ALL: "C.UTF-8",
    LC_TIME: "de_DE", GH_TOKEN: "ghp_secret", ANTHROPIC_API_KEY: "sk-ant", SSH_AUTH_SOCK: "/tmp/agent", PATH: "/usr/bin",
    HOME: "/home/ann", AWS_SECRET_ACCESS_KEY: "x", LCX: "no",
  };
  expect(sandboxEnv(host, "demo")).toEqual({
    COLORTERM: "truecolor", FORCE_COLOR: "1", LANG: "en_US.UTF-8", LC_ALL: "C.UTF-8", LC_TIME: "de_DE", NO_COLOR: "1",
    TERM: "xterm-256color", SANDBOX: "demo",
  });
});

test("what other pieces add is applied last", () => {
  expect(sandboxEnv({ TERM: "x" }, "d", { HTTPS_PROXY: "http://127.0.0.1:3128" })).toEqual({
    TERM: "x", SANDBOX: "d", HTTPS_PROXY: "http://127.0.0.1:3128",
  });
});
