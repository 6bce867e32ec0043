// `sbx run AGENT --backend user`, as root, for real: the agent cached under the root-owned runtime dir (readable by the
// guest, written by no one else), run as the guest account through its own proxy port; the fake provider sees the
// host's key; the guest holds no trace of it and cannot write the cache.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { FAKE_ANSWER, startFakeAgentLlm, type FakeAgentLlm } from "../../support/fake-agent-llm";
import { cliWorld, sh, whyNot } from "./harness";

const npmReachable =
  Bun.spawnSync([process.execPath, "-e", 'const r = await fetch("https://registry.npmjs.org/@anthropic-ai%2fclaude-code/latest", { signal: AbortSignal.timeout(10000) }); process.exit(r.ok ? 0 : 1)']).exitCode === 0;
const skip = whyNot() ?? (npmReachable ? undefined : "the npm registry does not answer (the agent comes from its public package)");
const CLI = join(import.meta.dir, "../../../src/cli/main.ts");
const KEY = `sk-ant-api03-useragent${Math.random().toString(36).slice(2, 8)}${"u".repeat(20)}`;

describe.skipIf(skip !== undefined)(`sbx run AGENT --backend user${skip ? ` (skipped: ${skip})` : ""}`, () => {
  let root = "";
  let repo = "";
  let env: Record<string, string> = {};
  let llm: FakeAgentLlm;
  const sbx = async (args: string[], stdin?: string) => {
    const p = Bun.spawn([process.execPath, CLI, ...args], { cwd: repo, env, stdout: "pipe", stderr: "pipe", stdin: stdin === undefined ? "ignore" : new Blob([stdin]) });
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    return { code, out, err };
  };

  beforeAll(async () => {
    llm = await startFakeAgentLlm();
    ({ root, repo, env } = cliWorld("sbx-agentuser", { SBX_TEST_ONLY_LLM_UPSTREAMS: JSON.stringify({ anthropic: llm.url }) }));
    const s = await sbx(["secret", "set", "ANTHROPIC_API_KEY"], KEY);
    if (s.code !== 0) throw new Error(s.err);
  });

  afterAll(async () => {
    await sbx(["rm", "--force", "ua"]);
    const f = join(env.XDG_RUNTIME_DIR ?? "", "sbx", "daemon.pid");
    if (existsSync(f)) {
      const pid = Number(readFileSync(f, "utf8").trim());
      if (pid > 0) sh(["kill", String(pid)]);
    }
    await llm?.stop();
    rmSync(root, { recursive: true, force: true });
  }, 60_000);

  test("claude in a guest account: cached under the runtime dir, run as the guest, the provider sees the host's key", async () => {
    const r = await sbx(["run", "--backend", "user", "claude", "ua", "--", "-p", "say hi"]);
    expect({ code: r.code, err: r.code === 0 ? "" : r.err }).toEqual({ code: 0, err: "" });
    expect(r.out).toContain(FAKE_ANSWER);
    const up = llm.requests.filter((q) => q.path.startsWith("/v1/messages"));
    expect(up.length).toBeGreaterThan(0);
    for (const q of up) expect(q.headers["x-api-key"]).toBe(KEY);
  }, 300_000);

  test("the guest cannot write the cache, finds sbx's section in its own ~/.claude/CLAUDE.md, and holds no trace of the key", async () => {
    const r = await sbx(["exec", "ua", "--", "sh", "-c", 'id -un; f=$(ls -d /var/lib/sbx/runtime/agents/pkg/claude/*/package/claude | head -1); if echo x >> "$f" 2>/dev/null || touch /var/lib/sbx/runtime/agents/bin/x 2>/dev/null; then echo wrote; else echo refused; fi; grep -c "sbx:begin" ~/.claude/CLAUDE.md; grep -rsl -F -e "$1" ~ /tmp 2>/dev/null; env | grep -c -F -e "$1"; true', "scan", KEY]);
    expect(r.code).toBe(0);
    const [who, wrote, section, ...rest] = r.out.trim().split("\n");
    expect(who).toMatch(/^sbx-root-/);
    expect(wrote).toBe("refused");
    expect(section).toBe("1");
    expect(rest).toEqual(["0"]);
  }, 120_000);

  test("`claude` typed in the guest's shell is sbx's launcher (its rc puts the launchers last on PATH)", async () => {
    const r = await sbx(["exec", "ua", "--", "sh", "-c", "command -v claude; claude --version"]);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^\/var\/lib\/sbx\/runtime\/agents\/bin\/claude\n\d+\.\d+\.\d+ \(Claude Code\)/);
  }, 120_000);
});
