// The one sandbox environment: terminal and locale variables, SANDBOX, the proxy/LLM/socket/shim variables, the same
// for every kind of sandbox; every LLM base URL is a route the proxy serves; nothing else of the host leaks in.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { userSpec } from "../../../src/drivers/user-account";
import { PROVIDERS, upstreamFor } from "../../../src/llm/handler";
import { SANDBOX_PATH } from "../../../src/drivers/docker/args";
import { LLM_ROUTES, sandboxEnv, terminalVars } from "../../../src/drivers/env";
import type { Sandbox } from "../../../src/core/schemas";
import type { Paths } from "../../../src/sys/paths";

const host = {
  TERM: "xterm-256color", COLORTERM: "truecolor", FORCE_COLOR: "1", NO_COLOR: "1", LANG: "en_US.UTF-8", LC_ALL: "C.UTF-8",
  LC_TIME: "de_DE", GH_TOKEN: "ghp_secret", ANTHROPIC_API_KEY: "sk-ant", SSH_AUTH_SOCK: "/tmp/agent", PATH: "/usr/bin",
  HOME: "/home/ann", AWS_SECRET_ACCESS_KEY: "x", LCX: "no",
};
const container = { proxyPort: 3128, proxySocket: "/run/sbx/proxy.sock", bridgeSocket: "/run/sbx/bridge.sock", bun: "/opt/sbx/bin/bun", path: SANDBOX_PATH };

test("terminalVars passes only terminal and locale variables", () => {
  expect(terminalVars(host)).toEqual({
    COLORTERM: "truecolor", FORCE_COLOR: "1", LANG: "en_US.UTF-8", LC_ALL: "C.UTF-8", LC_TIME: "de_DE", NO_COLOR: "1",
    TERM: "xterm-256color",
  });
});

test("golden: the full environment of a container sandbox on the forwarder's port", () => {
  expect(sandboxEnv("demo", container, { terminal: { TERM: "xterm" } })).toEqual({
    TERM: "xterm",
    SANDBOX: "demo",
    HTTP_PROXY: "http://127.0.0.1:3128",
    HTTPS_PROXY: "http://127.0.0.1:3128",
    http_proxy: "http://127.0.0.1:3128",
    https_proxy: "http://127.0.0.1:3128",
    ALL_PROXY: "http://127.0.0.1:3128",
    all_proxy: "http://127.0.0.1:3128",
    NO_PROXY: "localhost,127.0.0.1,::1,0.0.0.0",
    no_proxy: "localhost,127.0.0.1,::1,0.0.0.0",
    NODE_USE_ENV_PROXY: "1",
    npm_config_proxy: "http://127.0.0.1:3128",
    npm_config_https_proxy: "http://127.0.0.1:3128",
    npm_config_noproxy: "localhost,127.0.0.1,::1,0.0.0.0",
    JAVA_TOOL_OPTIONS: "-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=3128 -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=3128 -Dhttp.nonProxyHosts=localhost|127.*|[::1]|0.0.0.0",
    ANTHROPIC_BASE_URL: "http://127.0.0.1:3128/llm/anthropic",
    ANTHROPIC_AUTH_TOKEN: "sbx-placeholder",
    OPENAI_BASE_URL: "http://127.0.0.1:3128/llm/openai/v1",
    OPENAI_API_KEY: "sbx-placeholder",
    GOOGLE_GEMINI_BASE_URL: "http://127.0.0.1:3128/llm/google",
    GEMINI_API_KEY: "sbx-placeholder",
    GOOGLE_API_KEY: "sbx-placeholder",
    SBX_CODEX_BASE_URL: "http://127.0.0.1:3128/llm/codex",
    CODE_ASSIST_ENDPOINT: "http://127.0.0.1:3128/llm/codeassist",
    SBX_PROXY_SOCKET: "/run/sbx/proxy.sock",
    SBX_BRIDGE_SOCKET: "/run/sbx/bridge.sock",
    SBX_BUN: "/opt/sbx/bin/bun",
    PATH: SANDBOX_PATH,
  });
  expect(SANDBOX_PATH.split(":")[0]).toBe("/opt/sbx/shims");
});

describe("every LLM base URL is a route the proxy serves", () => {
  // The handler's own table decides; a base URL naming a route it does not serve (once: /llm/gemini) fails here.
  test("the same providers on both sides", () => {
    expect(Object.keys(LLM_ROUTES).sort()).toEqual(Object.keys(PROVIDERS).sort());
  });
  const env = sandboxEnv("demo", container);
  for (const [provider, r] of Object.entries(LLM_ROUTES)) {
    test(`${r.base} reaches the ${provider} route`, () => {
      const path = new URL(env[r.base]!).pathname;
      const t = upstreamFor(`${path}/models`, PROVIDERS);
      expect(t !== null && !("malformed" in t) ? t.provider : t).toBe(provider as keyof typeof PROVIDERS);
    });
  }
});

test("a user-account sandbox gets the same variables as a container, but for where things are", () => {
  const row = {
    id: 1, name: "demo", repo: "/home/ann/proj", backend: "linux-user", state: "active", createdAt: 0, updatedAt: 0, lastUsedAt: null,
    identity: { kind: "user", id: "abc123def456", dir: "/var/cache/d", proxyPort: 21000, hostUser: { name: "ann", uid: 1000, gid: 1000, home: "/home/ann", shell: "/bin/bash" } },
  } as Sandbox;
  const user = userSpec({ runtimeDir: "/run/user/0/sbx" } as Paths, row).env;
  const docker = sandboxEnv("demo", container);
  // Where things are: the port, the bridge socket's path; a container also has its proxy socket, Bun and PATH set.
  const perKind = new Set(["SBX_PROXY_SOCKET", "SBX_BUN", "PATH", "SBX_BRIDGE_SOCKET"]);
  const same = (e: Record<string, string>) =>
    Object.fromEntries(Object.entries(e).filter(([k]) => !perKind.has(k)).map(([k, v]) => [k, v.replace(/127\.0\.0\.1:\d+/, "127.0.0.1:PORT").replace(/proxyPort=\d+/g, "proxyPort=PORT")]));
  expect(same(user)).toEqual(same(docker));
  expect(user.HTTPS_PROXY).toBe("http://127.0.0.1:21000");
  expect(user.SBX_BRIDGE_SOCKET).toBe("/run/user/0/sbx/sb/abc123def456/bridge.sock");
});

test("no other file builds a sandbox's proxy or LLM variables", () => {
  // One builder: the variables that route a sandbox's traffic are set in src/drivers/env.ts and nowhere else.
  const root = join(import.meta.dir, "../../../src");
  const glob = new Bun.Glob("**/*.ts");
  const offenders: string[] = [];
  for (const f of glob.scanSync(root)) {
    if (f === "drivers/env.ts") continue;
    // The host's own git and gh, lent the parent proxy per call (issue 39): a host tool's variables, never a sandbox's.
    if (f === "core/parent-proxy.ts") continue;
    const text = readFileSync(join(root, f), "utf8");
    if (/\b(HTTPS_PROXY|ANTHROPIC_BASE_URL|OPENAI_BASE_URL|GOOGLE_GEMINI_BASE_URL|NODE_USE_ENV_PROXY)\s*:/.test(text)) offenders.push(f);
  }
  expect(offenders).toEqual([]);
});

test("no host secret, agent socket or host PATH goes in", () => {
  const env = sandboxEnv("demo", container, { terminal: host });
  const values = Object.values(env).join("\n");
  for (const v of ["ghp_secret", "sk-ant", "/tmp/agent"]) expect(values).not.toContain(v);
  expect(env.PATH).toBe(SANDBOX_PATH);
  expect(env.ANTHROPIC_AUTH_TOKEN).toBe("sbx-placeholder");
});

test("the user's entries cannot point a client around the proxy or replace sbx's sockets", () => {
  const env = sandboxEnv("d", { ...container, proxyPort: 4000 }, { user: { HTTPS_PROXY: "http://evil:1", NO_PROXY: "*", SBX_BRIDGE_SOCKET: "/tmp/x", EDITOR: "vi" } });
  expect(env.HTTPS_PROXY).toBe("http://127.0.0.1:4000");
  expect(env.NO_PROXY).toBe("localhost,127.0.0.1,::1,0.0.0.0");
  expect(env.SBX_BRIDGE_SOCKET).toBe("/run/sbx/bridge.sock");
  expect(env.EDITOR).toBe("vi");
});

test("the sandbox's own hostname is kept direct only where it is given (a container with the transparent path)", () => {
  const env = sandboxEnv("demo", { ...container, hostname: "demo" });
  expect(env.NO_PROXY).toBe("localhost,127.0.0.1,::1,0.0.0.0,demo");
  expect(env.no_proxy).toBe(env.NO_PROXY);
  expect(env.npm_config_noproxy).toBe(env.NO_PROXY);
  expect(env.JAVA_TOOL_OPTIONS).toContain("-Dhttp.nonProxyHosts=localhost|127.*|[::1]|0.0.0.0|demo");
  // Not given: a name like a top-level domain (`dev`) would send every host under it around the proxy.
  expect(sandboxEnv("dev", container).NO_PROXY).toBe("localhost,127.0.0.1,::1,0.0.0.0");
  expect(sandboxEnv("dev", container).JAVA_TOOL_OPTIONS).not.toContain("|dev");
});
