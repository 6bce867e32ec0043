// The agent table and its renderers: every row complete and consistent, the launcher run by a real sh (the image's
// agent first, sbx's cached one else, nothing a variable holds ever evaluated), the instruction section as the proxy speaks.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AGENT_NAMES,
  AGENTS,
  agentSetupPlan,
  defaultAgentSandboxName,
  fillTemplate,
  instructionSection,
  renderLauncher,
  shExpand,
  VERSION_RE,
  type AgentName,
} from "../../../src/core/agents";
import { NAME_PATTERN } from "../../../src/core/names";
import { PRESETS } from "../../../src/core/presets";
import { blockedPhrase } from "../../../src/proxy/refusal";
import { allowCommand } from "../../../src/core/egress";

const tmp = mkdtempSync(join(tmpdir(), "sbx-agents-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("the agent table", () => {
  test("covers Claude Code, Codex CLI, Gemini CLI, OpenCode and aider, each row complete", () => {
    expect([...AGENT_NAMES].sort()).toEqual(["aider", "claude", "codex", "gemini", "opencode"]);
    for (const n of AGENT_NAMES) {
      const a = AGENTS[n];
      expect(a.binary).toMatch(/^[a-z][a-z0-9-]*$/);
      expect(Object.hasOwn(PRESETS, a.preset)).toBe(true);
      expect(a.routes.length).toBeGreaterThan(0);
      expect(a.instructions.startsWith("/") || a.instructions.includes("..")).toBe(false);
      expect(a.prompt.length).toBeGreaterThan(0);
      expect(a.login.never.length).toBeGreaterThan(0);
      for (const s of a.setup) expect(s.path.startsWith("/") || s.path.includes("..")).toBe(false);
    }
  });

  test("npm packages resolve per platform: Claude's and OpenCode's by name, Codex's by version, Gemini's as is", () => {
    const p = { os: "linux", arch: "x64" } as const;
    const pkg = (n: AgentName) => {
      const i = AGENTS[n].install;
      if (i.kind !== "npm") throw new Error("not npm");
      return [fillTemplate(i.from.name, p, "1.2.3"), fillTemplate(i.from.version, p, "1.2.3"), fillTemplate(i.entry, p, "1.2.3")];
    };
    expect(pkg("claude")).toEqual(["@anthropic-ai/claude-code-linux-x64", "1.2.3", "claude"]);
    expect(pkg("codex")).toEqual(["@openai/codex", "1.2.3-linux-x64", "vendor/x86_64-unknown-linux-musl/bin/codex"]);
    expect(pkg("opencode")).toEqual(["opencode-linux-x64", "1.2.3", "bin/opencode"]);
    expect(pkg("gemini")).toEqual(["@google/gemini-cli", "1.2.3", "bundle/gemini.js"]);
    expect(fillTemplate("{triple}", { os: "linux", arch: "arm64" }, "")).toBe("aarch64-unknown-linux-musl");
  });

  test("a version is digits and dots with an optional tag: nothing that could name a path", () => {
    for (const ok of ["2.1.332", "0.169.0", "1.0.0-beta.1"]) expect(VERSION_RE.test(ok)).toBe(true);
    for (const bad of ["latest", "../../x", "1.2", "1.2.3/../../x", "1.2.3 ", "1.2.3-a/b", ""]) expect(VERSION_RE.test(bad)).toBe(false);
  });

  test("the default sandbox name is the agent and the repo's dir, always a valid name and never an agent's", () => {
    for (const [repo, want] of [["app", "claude-app"], ["My Repo!", "claude-my-repo"], ["---", "claude-sandbox"], ["x".repeat(80), `claude-${"x".repeat(40)}`]] as const) {
      const n = defaultAgentSandboxName("claude", repo);
      expect(n).toBe(want);
      expect(NAME_PATTERN.test(n)).toBe(true);
    }
  });
});

describe("shExpand", () => {
  test("${NAME} is expanded at run time, everything else is literal (quotes, $(…), backticks)", () => {
    const v = `a'b "c" $(touch ${tmp}/pwned) \`id\` \${HOME}/x`;
    const r = Bun.spawnSync(["sh", "-c", `printf %s ${shExpand(v)}`], { env: { HOME: "/h" } });
    expect(r.stdout.toString()).toBe(`a'b "c" $(touch ${tmp}/pwned) \`id\` /h/x`);
  });
});

/** A fake agent that prints its argv and the variables the launcher sets or unsets. */
function fakeAgent(path: string, label: string): void {
  writeFileSync(path, `#!/bin/sh\necho "${label}" "$@"\necho "API_KEY=\${ANTHROPIC_API_KEY-unset} TRAFFIC=\${CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC-}"\n`);
  chmodSync(path, 0o755);
}

function launch(agent: AgentName, opts: { cached: string | null; node?: string | null; path: string; env?: Record<string, string> }, args: string[] = []) {
  const bin = join(tmp, `bin-${agent}-${Math.random().toString(36).slice(2)}`);
  mkdirSync(bin);
  const file = join(bin, AGENTS[agent].binary);
  writeFileSync(file, renderLauncher({ agent, cached: opts.cached, node: opts.node ?? null, binDir: bin }));
  chmodSync(file, 0o555);
  const r = Bun.spawnSync([file, ...args], { env: { PATH: `${bin}:${opts.path}`, HOME: tmp, ...opts.env }, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

describe("the launcher, run by a real sh", () => {
  test("the image's own agent on PATH wins over sbx's cached one, with the agent's environment; the launcher never runs itself", () => {
    const img = join(tmp, "img");
    mkdirSync(img);
    fakeAgent(join(img, "claude"), "image");
    const cached = join(tmp, "cached-claude");
    fakeAgent(cached, "cached");
    const r = launch("claude", { cached, path: `${img}:/usr/bin:/bin`, env: { ANTHROPIC_API_KEY: "sbx-placeholder" } }, ["-p", "hi there"]);
    expect(r.code).toBe(0);
    expect(r.out).toBe("image -p hi there\nAPI_KEY=unset TRAFFIC=1\n");
  });

  test("no agent on PATH: sbx's cached one, with the agent's arguments first", () => {
    const cached = join(tmp, "cached-codex");
    fakeAgent(cached, "cached");
    const r = launch("codex", { cached, path: "/usr/bin:/bin", env: { SBX_CODEX_BASE_URL: "http://127.0.0.1:3128/llm/codex" } }, ["exec", "x"]);
    expect(r.code).toBe(0);
    const first = r.out.split("\n")[0]!;
    expect(first).toContain('model_providers.sbx={name="OpenAI through sbx",base_url="http://127.0.0.1:3128/llm/codex"');
    expect(first.endsWith(" exec x")).toBe(true);
  });

  test("a JavaScript agent runs on the cached Node.js", () => {
    const node = join(tmp, "fake-node");
    writeFileSync(node, '#!/bin/sh\necho node "$@"\n');
    chmodSync(node, 0o755);
    const r = launch("gemini", { cached: "/opt/sbx/agents/pkg/gemini/1.0.0/package/bundle/gemini.js", node, path: "/usr/bin:/bin" }, ["-p", "q"]);
    expect(r.out.split("\n")[0]).toBe("node --disable-warning=UNDICI-EHPA /opt/sbx/agents/pkg/gemini/1.0.0/package/bundle/gemini.js -p q");
  });

  const realNode = Bun.which("node");
  test.skipIf(!realNode)(`quiet-node: the proxy agent's UNDICI-EHPA warning is not printed by sbx's Node.js, other warnings are${realNode ? "" : " (skipped: no node on PATH)"}`, () => {
    const agent = join(tmp, "warns.js");
    writeFileSync(agent, 'process.emitWarning("EnvHttpProxyAgent is experimental", { code: "UNDICI-EHPA" }); process.emitWarning("kept", { code: "OTHER" }); console.log("ran", process.argv.slice(2).join(" "));\n');
    const r = launch("gemini", { cached: agent, node: realNode!, path: "/usr/bin:/bin" }, ["-p", "q"]);
    expect(r.out).toContain("ran -p q");
    expect(r.err).not.toContain("UNDICI-EHPA");
    expect(r.err).toContain("[OTHER] Warning: kept");
  });

  test("neither: exit 127 and a message saying how to install it", () => {
    const r = launch("opencode", { cached: null, path: "/usr/bin:/bin" });
    expect(r.code).toBe(127);
    expect(r.err).toContain("sbx: OpenCode is not installed here; on the host, `sbx run opencode` installs it");
  });

  test("aider without python3 in the image: exit 127 and what to add", () => {
    const r = launch("aider", { cached: null, path: join(tmp, "empty-path") });
    expect(r.code).toBe(127);
    expect(r.err).toContain("aider needs python3");
  });

  test("a value the sandbox controls (SBX_CODEX_BASE_URL) is passed as data, never run", () => {
    const cached = join(tmp, "cached-codex2");
    fakeAgent(cached, "cached");
    const r = launch("codex", { cached, path: "/usr/bin:/bin", env: { SBX_CODEX_BASE_URL: `$(touch ${tmp}/pwned2)\`touch ${tmp}/pwned3\`` } });
    expect(r.code).toBe(0);
    expect(Bun.spawnSync(["test", "-e", join(tmp, "pwned2")]).exitCode).toBe(1);
    expect(Bun.spawnSync(["test", "-e", join(tmp, "pwned3")]).exitCode).toBe(1);
  });
});

describe("the instruction section", () => {
  const s = instructionSection("demo");

  test("about twenty lines, between markers, one text for every agent", () => {
    const lines = s.trimEnd().split("\n");
    expect(lines[0]!.startsWith("<!-- sbx:begin")).toBe(true);
    expect(lines.at(-1)).toBe("<!-- sbx:end -->");
    expect(lines.length).toBeLessThanOrEqual(22);
    for (const a of AGENT_NAMES) expect(agentSetupPlan(a, "demo", "/w").instructions.section).toBe(s);
  });

  test("quotes the proxy's refusal as the proxy writes it, and says how to ask", () => {
    const phrase = blockedPhrase("HOST:443", allowCommand("HOST", "demo"));
    expect(s.replace(/\n\s+/g, " ")).toContain(phrase);
    expect(s).toContain("sbx-egress ask HOST");
    expect(s).toContain("sbx/demo/");
  });

  test("Claude's first-run settings name the sandbox's workdir", () => {
    const plan = agentSetupPlan("claude", "demo", "/home/ann/src/app");
    expect(plan.instructions.path).toBe(".claude/CLAUDE.md");
    expect(JSON.stringify(plan.setup)).toContain('"/home/ann/src/app":{"hasTrustDialogAccepted":true}');
  });
});
