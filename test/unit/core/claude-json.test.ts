// Overlays carry no credentials: the sandbox's ~/.claude.json keeps settings and this project's entry only, and an
// overlay that would show a credential location is named.
import { describe, expect, test } from "bun:test";
import { credentialsUnder, sandboxClaudeJson } from "../../../src/core/claude-json";

const HOST = {
  numStartups: 42,
  theme: "dark",
  hasCompletedOnboarding: true,
  primaryApiKey: "sk-ant-api03-secret",
  customApiKeyResponses: { approved: ["abcdefghijklmnopqrst"] },
  oauthAccount: { emailAddress: "me@example.com", accountUuid: "u" },
  mcpServers: {
    linear: { type: "http", url: "https://user:pass@mcp.example/sse", headers: { Authorization: "Bearer tok" } },
    local: { command: "npx", args: ["srv"], env: { GITHUB_TOKEN: "ghp_secret" } },
  },
  projects: {
    "/home/me/src/app": { allowedTools: ["Bash"], history: [{ display: "hi" }], mcpServers: { p: { command: "x", env: { K: "v" } } } },
    "/home/me/src/other": { history: [{ display: "other project's secret plans" }] },
  },
};

describe("the sandbox's ~/.claude.json", () => {
  const out = JSON.parse(sandboxClaudeJson(JSON.stringify(HOST), "/home/me/src/app")!) as Record<string, unknown>;

  test("no key, key fingerprint, account or MCP secret reaches it", () => {
    const text = JSON.stringify(out);
    for (const secret of ["sk-ant-api03-secret", "abcdefghijklmnopqrst", "me@example.com", "Bearer tok", "ghp_secret", "user:pass", '"K":"v"']) {
      expect({ secret, present: text.includes(secret) }).toEqual({ secret, present: false });
    }
  });

  test("settings stay, MCP servers stay without their env and headers, and only this project's entry", () => {
    expect(out).toMatchObject({ numStartups: 42, theme: "dark", hasCompletedOnboarding: true });
    expect(out.mcpServers).toEqual({ linear: { type: "http", url: "https://mcp.example/sse" }, local: { command: "npx", args: ["srv"] } });
    expect(Object.keys(out.projects as object)).toEqual(["/home/me/src/app"]);
    expect((out.projects as Record<string, { mcpServers: unknown }>)["/home/me/src/app"]!.mcpServers).toEqual({ p: { command: "x" } });
  });

  test("a file that is not a JSON object is not copied at all", () => {
    expect(sandboxClaudeJson("{not json", "/r")).toBeNull();
    expect(sandboxClaudeJson("[1]", "/r")).toBeNull();
  });
});

describe("credential locations an overlay would show", () => {
  const home = "/home/me";
  test("the location, a dir inside it, and a dir that holds it are all named; others are not", () => {
    expect(credentialsUnder("/home/me/.ssh", home)).toEqual([".ssh"]);
    expect(credentialsUnder("/home/me/.config/gh/hosts", home)).toEqual([".config/gh"]);
    expect(credentialsUnder("/home/me/.config", home)).toEqual([".config/gh", ".config/gcloud", ".config/hub", ".config/sbx"]);
    expect(credentialsUnder("/home/me/.config/nvim", home)).toEqual([]);
    expect(credentialsUnder("/opt/tools", home)).toEqual([]);
  });
});
