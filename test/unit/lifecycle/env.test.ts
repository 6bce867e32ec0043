// The sandbox environment: terminal and locale variables, SANDBOX, the proxy/LLM/socket/shim variables; nothing else of the host leaks in.
import { expect, test } from "bun:test";
import { SANDBOX_PATH, sandboxEnv, terminalVars } from "../../../src/lifecycle/env";

const host = {
  TERM: "xterm-256color", COLORTERM: "truecolor", FORCE_COLOR: "1", NO_COLOR: "1", LANG: "en_US.UTF-8", LC_ALL: "C.UTF-8",
  LC_TIME: "de_DE", GH_TOKEN: "ghp_secret", ANTHROPIC_API_KEY: "sk-ant", SSH_AUTH_SOCK: "/tmp/agent", PATH: "/usr/bin",
  HOME: "/home/ann", AWS_SECRET_ACCESS_KEY: "x", LCX: "no",
};

test("terminalVars passes only terminal and locale variables", () => {
  expect(terminalVars(host)).toEqual({
    COLORTERM: "truecolor", FORCE_COLOR: "1", LANG: "en_US.UTF-8", LC_ALL: "C.UTF-8", LC_TIME: "de_DE", NO_COLOR: "1",
    TERM: "xterm-256color",
  });
});

test("golden: the full environment of a sandbox on the default forwarder port", () => {
  expect(sandboxEnv({ TERM: "xterm" }, "demo")).toEqual({
    TERM: "xterm",
    SANDBOX: "demo",
    HTTP_PROXY: "http://127.0.0.1:3128",
    HTTPS_PROXY: "http://127.0.0.1:3128",
    http_proxy: "http://127.0.0.1:3128",
    https_proxy: "http://127.0.0.1:3128",
    ALL_PROXY: "http://127.0.0.1:3128",
    all_proxy: "http://127.0.0.1:3128",
    NO_PROXY: "localhost,127.0.0.1",
    no_proxy: "localhost,127.0.0.1",
    NODE_USE_ENV_PROXY: "1",
    ANTHROPIC_BASE_URL: "http://127.0.0.1:3128/llm/anthropic",
    ANTHROPIC_API_KEY: "sbx-placeholder",
    OPENAI_BASE_URL: "http://127.0.0.1:3128/llm/openai/v1",
    OPENAI_API_KEY: "sbx-placeholder",
    GOOGLE_GEMINI_BASE_URL: "http://127.0.0.1:3128/llm/google",
    GEMINI_API_KEY: "sbx-placeholder",
    GOOGLE_API_KEY: "sbx-placeholder",
    SBX_PROXY_SOCKET: "/run/sbx/proxy.sock",
    SBX_BRIDGE_SOCKET: "/run/sbx/bridge.sock",
    SBX_BUN: "/opt/sbx/bin/bun",
    PATH: SANDBOX_PATH,
  });
  expect(SANDBOX_PATH.split(":")[0]).toBe("/opt/sbx/shims");
});

test("no host secret, agent socket or host PATH goes in", () => {
  const env = sandboxEnv(host, "demo");
  const values = Object.values(env).join("\n");
  for (const v of ["ghp_secret", "sk-ant", "/tmp/agent"]) expect(values).not.toContain(v);
  expect(env.PATH).toBe(SANDBOX_PATH);
  expect(env.ANTHROPIC_API_KEY).toBe("sbx-placeholder");
});

test("the user's entries cannot point a client around the proxy or replace sbx's sockets", () => {
  const env = sandboxEnv({}, "d", { proxyPort: 4000, user: { HTTPS_PROXY: "http://evil:1", SBX_BRIDGE_SOCKET: "/tmp/x", EDITOR: "vi" } });
  expect(env.HTTPS_PROXY).toBe("http://127.0.0.1:4000");
  expect(env.SBX_BRIDGE_SOCKET).toBe("/run/sbx/bridge.sock");
  expect(env.EDITOR).toBe("vi");
});
