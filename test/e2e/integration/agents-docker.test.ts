// `sbx run AGENT` end to end with the real agents from their public npm packages (Claude Code, Codex CLI, Gemini CLI,
// OpenCode), in a real sandbox, each answering one prompt from a fake LLM provider on loopback: the provider sees the
// host's real key, the sandbox holds no trace of it (environment, files, process arguments), the agent prints the answer.
// Claude Code's first interactive run reaches its prompt with no API-key question and no login screen.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chownSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Fixture } from "../docker/fixture";
import { CLI } from "../docker/fixture";
import { FAKE_ANSWER, startFakeAgentLlm, type FakeAgentLlm } from "../../support/fake-agent-llm";
import { acquireFixture, canRun, containerOf, dexec, docker, done, makeRepo, must, releaseFixture, removeRepoImages, skipReason, stopDaemon } from "./harness";

const tag = Math.random().toString(36).slice(2, 8);
const KEYS = {
  anthropic: `sk-ant-api03-agent${tag}${"a".repeat(24)}`,
  openai: `sk-proj-agent${tag}${"o".repeat(30)}`,
  google: `AIzaSyAgent${tag}${"g".repeat(22)}`,
};
const npmReachable =
  Bun.spawnSync([process.execPath, "-e", 'const r = await fetch("https://registry.npmjs.org/@anthropic-ai%2fclaude-code/latest", { signal: AbortSignal.timeout(10000) }); process.exit(r.ok ? 0 : 1)']).exitCode === 0;
const hasTmux = Bun.spawnSync(["sh", "-c", "command -v tmux"]).exitCode === 0;
const run = canRun && npmReachable;
const why = !canRun ? skipReason : "the npm registry does not answer (the agents come from their public packages)";

let f: Fixture;
let repo = "";
let llm: FakeAgentLlm;
let env: Record<string, string>;
let box = "";

function sbxAsync(args: string[]) {
  return done(f.spawnSbx(args, { cwd: repo, env }));
}

/** The requests the fake provider got while `fn` ran. */
async function during<T>(fn: () => Promise<T>): Promise<{ result: T; got: FakeAgentLlm["requests"] }> {
  const before = llm.requests.length;
  const result = await fn();
  return { result, got: llm.requests.slice(before) };
}

describe.skipIf(!run)(`sbx run AGENT with the real agents on Docker${run ? "" : ` — skipped: ${why}`}`, () => {
  beforeAll(async () => {
    f = acquireFixture();
    repo = makeRepo(f, `agents-${tag}`);
    llm = await startFakeAgentLlm();
    await stopDaemon(f.user);
    env = {
      SBX_TEST_ONLY_LLM_UPSTREAMS: JSON.stringify({ anthropic: llm.url, openai: llm.url, google: llm.url, codex: `${llm.url}/v1`, chatgpt: `${llm.url}/backend-api/codex`, "openai-auth": `${llm.url}/oauth/token`, codeassist: llm.url }),
    };
    must(f.sbx(["secret", "set", "ANTHROPIC_API_KEY"], { cwd: repo, env, stdin: KEYS.anthropic }), "secret ANTHROPIC_API_KEY");
    must(f.sbx(["secret", "set", "OPENAI_API_KEY"], { cwd: repo, env, stdin: KEYS.openai }), "secret OPENAI_API_KEY");
    must(f.sbx(["secret", "set", "GEMINI_API_KEY"], { cwd: repo, env, stdin: KEYS.google }), "secret GEMINI_API_KEY");
  }, 120_000);

  afterAll(async () => {
    if (repo) {
      f.sbx(["rm", "--force", box || `claude-agents-${tag}`], { cwd: repo, env });
      f.sbx(["rm", "--force", "typed"], { cwd: repo, env });
      const left = docker(["ps", "--all", "--quiet", "--filter", `label=sbx.repo=${realpathSync(repo)}`]).stdout.split("\n").filter(Boolean);
      if (left.length) docker(["rm", "--force", ...left]);
      removeRepoImages(repo);
      for (const k of ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"]) f.sbx(["secret", "rm", k], { cwd: repo, env });
    }
    await llm?.stop();
    if (f) await stopDaemon(f.user);
    if (f) releaseFixture();
  }, 60_000);

  test("claude: `sbx run claude -- -p` makes sandbox claude-<repo dir>, installs Claude Code, and the provider sees the host's key", async () => {
    const { result: r, got } = await during(() => sbxAsync(["run", "claude", "--", "-p", "say hi"]));
    expect(r.stderr).toMatch(/fetching @anthropic-ai\/claude-code-linux-(x64|arm64)@\d+\.\d+\.\d+/);
    expect(r.stderr).toContain(`created sandbox claude-agents-${tag}`);
    expect(r.stdout).toContain(FAKE_ANSWER);
    expect(r.code).toBe(0);
    box = `claude-agents-${tag}`;
    const msgs = got.filter((q) => q.path.startsWith("/v1/messages"));
    expect(msgs.length).toBeGreaterThan(0);
    for (const q of msgs) {
      expect(q.headers["x-api-key"]).toBe(KEYS.anthropic);
      expect(JSON.stringify(q.headers)).not.toContain("sbx-placeholder");
    }
  }, 300_000);

  test("codex: `sbx run codex NAME -- exec` in the same sandbox; the OpenAI route, over HTTP, with the host's key", async () => {
    const { result: r, got } = await during(() => sbxAsync(["run", "codex", box, "--", "exec", "--skip-git-repo-check", "say hi"]));
    expect(r.stdout).toContain(FAKE_ANSWER);
    expect(r.code).toBe(0);
    const posts = got.filter((q) => q.path === "/v1/responses" && q.method === "POST");
    expect(posts.length).toBeGreaterThan(0);
    for (const q of posts) expect(q.headers.authorization).toBe(`Bearer ${KEYS.openai}`);
    // No WebSocket attempt: the provider sbx configures speaks HTTP only.
    expect(got.filter((q) => q.method === "GET").length).toBe(0);
  }, 300_000);

  test("codex signed in to ChatGPT on the host: its expired token refreshed on the host, ChatGPT's backend gets it, the sandbox only placeholders", async () => {
    must(f.sbx(["secret", "rm", "OPENAI_API_KEY"], { cwd: repo, env }), "secret rm OPENAI_API_KEY");
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
    const jwt = (c: Record<string, unknown>) => `${b64({ alg: "RS256" })}.${b64(c)}.sig${tag}`;
    const account = `acct-${tag}-host`;
    const expired = jwt({ exp: Math.floor(Date.now() / 1000) - 60, host: tag });
    const refresh = `rt-host-${tag}-secret`;
    const idToken = jwt({ email: "ann@example.com", "https://api.openai.com/auth": { chatgpt_plan_type: "plus", chatgpt_account_id: account } });
    const dir = join(f.user.home, ".codex");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "auth.json"), JSON.stringify({ OPENAI_API_KEY: null, tokens: { id_token: idToken, access_token: expired, refresh_token: refresh, account_id: account }, last_refresh: "2026-01-01T00:00:00Z" }), { mode: 0o600 });
    chownSync(dir, f.user.uid, f.user.gid);
    chownSync(join(dir, "auth.json"), f.user.uid, f.user.gid);
    try {
      const { result: r, got } = await during(() => sbxAsync(["run", "codex", box, "--", "exec", "--skip-git-repo-check", "say hi"]));
      expect(r.stdout).toContain(FAKE_ANSWER);
      expect(r.code).toBe(0);
      expect(llm.issued.length).toBeGreaterThan(0);
      const fresh = llm.issued.at(-1)!;
      const posts = got.filter((q) => q.path === "/backend-api/codex/responses" && q.method === "POST");
      expect(posts.length).toBeGreaterThan(0);
      for (const q of posts) {
        expect(q.headers.authorization).toBe(`Bearer ${fresh}`);
        expect(q.headers["chatgpt-account-id"]).toBe(account);
      }
      // The host's file holds the refreshed token, as Codex itself would have written it.
      expect(JSON.parse(readFileSync(join(dir, "auth.json"), "utf8")).tokens.access_token).toBe(fresh);
      const ctr = containerOf(realpathSync(repo), box);
      const inside = dexec(f, ctr, ["sh", "-c", 'cat "$HOME/.codex/auth.json"; grep -rsl -F -e "$1" -e "$2" -e "$3" -e "$4" / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev; true', "scan", fresh, expired, refresh, account], { timeoutMs: 120_000 });
      expect(inside.stdout).toContain('"refresh_token": "sbx-placeholder"');
      for (const s of [fresh, expired, refresh, account, "rt-refreshed"]) expect(inside.stdout + r.stdout + r.stderr).not.toContain(s);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      must(f.sbx(["secret", "set", "OPENAI_API_KEY"], { cwd: repo, env, stdin: KEYS.openai }), "secret OPENAI_API_KEY");
    }
  }, 300_000);

  test("gemini: on the cached Node.js; the Gemini route with the host's key", async () => {
    const { result: r, got } = await during(() => sbxAsync(["run", "gemini", box, "--", "-m", "gemini-2.5-flash", "-p", "say hi"]));
    expect(r.stdout).toContain(FAKE_ANSWER);
    expect(r.code).toBe(0);
    const calls = got.filter((q) => q.path.includes(":streamGenerateContent") || q.path.includes(":generateContent"));
    expect(calls.length).toBeGreaterThan(0);
    for (const q of calls) {
      expect(q.headers["x-goog-api-key"]).toBe(KEYS.google);
      expect(q.path).not.toContain("key=");
    }
  }, 300_000);

  test("gemini signed in with Google on the host: Code Assist gets the host's token, the sandbox a placeholder", async () => {
    must(f.sbx(["secret", "rm", "GEMINI_API_KEY"], { cwd: repo, env }), "secret rm GEMINI_API_KEY");
    // Gemini CLI looks its Google account up at www.googleapis.com (allowed by its preset): refused here, so this
    // test sends nothing off the machine; Gemini CLI goes on without it.
    must(f.sbx(["deny", "www.googleapis.com", "--sandbox", box], { cwd: repo, env }), "deny www.googleapis.com");
    const token = `ya29.host-${tag}-access`;
    const refresh = `1//host-${tag}-refresh`;
    const dir = join(f.user.home, ".gemini");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "oauth_creds.json"), JSON.stringify({ access_token: token, refresh_token: refresh, token_type: "Bearer", expiry_date: Date.now() + 3_600_000 }), { mode: 0o600 });
    chownSync(dir, f.user.uid, f.user.gid);
    chownSync(join(dir, "oauth_creds.json"), f.user.uid, f.user.gid);
    try {
      const { result: r, got } = await during(() => sbxAsync(["run", "gemini", box, "--", "-m", "gemini-2.5-flash", "-p", "say hi"]));
      expect(r.stdout).toContain(FAKE_ANSWER);
      expect(r.code).toBe(0);
      const calls = got.filter((q) => q.path.startsWith("/v1internal:"));
      expect(calls.map((q) => q.path)).toContain("/v1internal:streamGenerateContent?alt=sse");
      for (const q of calls) expect(q.headers.authorization).toBe(`Bearer ${token}`);
      const ctr = containerOf(realpathSync(repo), box);
      const inside = dexec(f, ctr, ["sh", "-c", 'cat "$HOME/.gemini/settings.json"; grep -rsl -F -e "$1" -e "$2" / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev; true', "scan", token, refresh], { timeoutMs: 120_000 });
      expect(inside.stdout).toContain('"selectedType": "oauth-personal"');
      for (const s of [token, refresh]) expect(inside.stdout + r.stdout + r.stderr).not.toContain(s);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      must(f.sbx(["secret", "set", "GEMINI_API_KEY"], { cwd: repo, env, stdin: KEYS.google }), "secret GEMINI_API_KEY");
    }
  }, 300_000);

  test("opencode: `opencode run` through the Anthropic route with the host's key", async () => {
    const { result: r, got } = await during(() => sbxAsync(["run", "opencode", box, "--", "run", "-m", "anthropic/claude-sonnet-4-5", "say hi"]));
    expect(r.stdout).toContain(FAKE_ANSWER);
    expect(r.code).toBe(0);
    const msgs = got.filter((q) => q.path === "/v1/messages");
    expect(msgs.length).toBeGreaterThan(0);
    for (const q of msgs) expect(q.headers["x-api-key"]).toBe(KEYS.anthropic);
  }, 300_000);

  test("no-secret-inside: no host key in the sandbox's environment, files or any process's arguments or environment", async () => {
    const ctr = containerOf(realpathSync(repo), box);
    // Sampled while an agent runs: every process's argv and environment.
    const watcher = Bun.spawn(["docker", "exec", "--user", `${f.user.uid}:${f.user.gid}`, ctr, "sh", "-c", "for i in $(seq 60); do cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null; sleep 0.1; done"], { stdout: "pipe", stderr: "ignore" });
    const r = await sbxAsync(["run", "claude", box, "--", "-p", "again"]);
    expect(r.code).toBe(0);
    const seen = await new Response(watcher.stdout).text();
    await watcher.exited;
    expect(seen).toContain("sbx-placeholder"); // the sampling saw the agents' own environment
    const files = dexec(f, ctr, ["sh", "-c", 'grep -rsl -F -e "$1" -e "$2" -e "$3" / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev; true', "scan", KEYS.anthropic, KEYS.openai, KEYS.google], { timeoutMs: 120_000 });
    for (const k of Object.values(KEYS)) {
      expect(seen).not.toContain(k);
      expect(files.stdout + files.stderr).not.toContain(k);
      expect(r.stdout + r.stderr).not.toContain(k);
    }
    expect(files.stdout.trim()).toBe("");
  }, 300_000);

  test("telemetry and update checks are off: every agent's run made no connection out but to the LLM proxy", () => {
    const r = must(f.sbx(["logs", "--sandbox", box, "--kind", "egress", "--json", "-n", "1000"], { cwd: repo, env }), "sbx logs");
    const rows = r.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l) as { action: string; detail: { host?: string } });
    // Allowed, or tried and failed: either is a connection the proxy set out to make.
    const out = rows.filter((e) => e.action !== "denied");
    expect(out.map((e) => e.detail.host)).toEqual([]);
    // The log is read right: Gemini's account lookup, refused above, is in it.
    expect(rows.some((e) => e.action === "denied" && e.detail.host === "www.googleapis.com")).toBe(true);
  }, 60_000);

  test("a real client refused inside (the cached Node.js 22's fetch): what it shows, and sbx-egress status saying what and why", () => {
    const ctr = containerOf(realpathSync(repo), box);
    const node = dexec(f, ctr, ["sh", "-c", 'n=$(ls /opt/sbx/agents/node/*/package/bin/node | head -1); "$n" -e \'fetch("https://refused.example.invalid/x").then((r) => console.log("status", r.status), (e) => console.log(String(e), "|", String(e.cause)))\''], { timeoutMs: 60_000 });
    // undici drops the 403 and its reason: all Node shows is this (the README's table of clients says so too).
    expect(node.stdout).toContain("TypeError: fetch failed | Error: Request was cancelled.");
    const status = dexec(f, ctr, ["sbx-egress", "status"]);
    expect(status.stdout).toContain("refused.example.invalid:443 — not-allowlisted: refused.example.invalid is not on the allowlist");
    expect(status.stdout).toContain("sbx-egress ask HOST");
  }, 60_000);

  test("the sandbox cannot change the agents it runs: the cache is mounted read-only (launchers, packages, Node.js)", () => {
    const ctr = containerOf(realpathSync(repo), box);
    const r = dexec(f, ctr, ["sh", "-c", 'for p in /opt/sbx/agents/bin/claude /opt/sbx/agents/versions.json $(ls -d /opt/sbx/agents/pkg/claude/*/package/claude) $(ls /opt/sbx/agents/node/*/package/bin/node); do if echo x >> "$p" 2>/dev/null; then echo "wrote $p"; fi; done; touch /opt/sbx/agents/bin/planted 2>/dev/null && echo planted; mv /opt/sbx/agents/bin/claude /tmp/x 2>/dev/null && echo moved; chmod u+w /opt/sbx/agents/bin /opt/sbx/agents/bin/claude 2>/dev/null && echo chmodded; echo done']);
    // The files are the sandbox's own uid's (the host user's cache), read-only by mode too: the chmod is what only the
    // read-only mount refuses.
    expect(r.stdout).toBe("done\n");
  }, 60_000);

  test("the agent knows where it is: sbx's section in each agent's user-level instruction file, none in the repo", () => {
    const ctr = containerOf(realpathSync(repo), box);
    const r = dexec(f, ctr, ["sh", "-c", 'for p in .claude/CLAUDE.md .codex/AGENTS.md .gemini/GEMINI.md .config/opencode/AGENTS.md; do grep -c "sbx:begin" "$HOME/$p"; done; git status --porcelain'], { workdir: realpathSync(repo) });
    expect(r.stdout).toBe("1\n1\n1\n1\n");
  }, 60_000);

  test("the preset of each agent run is allowed for that sandbox only", () => {
    const r = must(f.sbx(["allowlist", "--sandbox", box, "--json"], { cwd: repo, env }), "allowlist");
    const view = JSON.parse(r.stdout) as { sandbox: { patterns: { pattern: string; addedBy: string }[] }; global: { pattern: string }[] };
    const mine = view.sandbox.patterns.map((p) => p.pattern);
    for (const h of ["claude.ai", "api.openai.com", "generativelanguage.googleapis.com", "models.dev"]) expect(mine).toContain(h);
    expect(view.sandbox.patterns.find((p) => p.pattern === "claude.ai")?.addedBy).toBe("sbx run claude");
    expect(view.global.map((p) => p.pattern)).not.toContain("claude.ai");
  }, 60_000);

  test("sbx agents: versions cached, the sandboxes that ran each, and where the host's login comes from (never its value)", () => {
    const r = must(f.sbx(["agents", "--json"], { cwd: repo, env }), "sbx agents --json");
    const list = JSON.parse(r.stdout) as Array<{ name: string; version: string | null; cached: string[]; sandboxes: { name: string; version: string }[]; login: { ok: boolean; via: string[] } }>;
    const by = Object.fromEntries(list.map((a) => [a.name, a]));
    for (const n of ["claude", "codex", "gemini", "opencode"]) {
      expect(by[n]!.version).toMatch(/^\d+\.\d+\.\d+/);
      expect(by[n]!.cached).toContain(by[n]!.version!);
      expect(by[n]!.sandboxes.map((s) => s.name)).toContain(box);
      expect(by[n]!.login.ok).toBe(true);
    }
    expect(by.claude!.login.via).toEqual(["ANTHROPIC_API_KEY"]);
    expect(by.aider!.sandboxes).toEqual([]);
    for (const k of Object.values(KEYS)) expect(r.stdout).not.toContain(k);
    const table = must(f.sbx(["agents"], { cwd: repo, env }), "sbx agents");
    expect(table.stdout).toMatch(/^claude \(Claude Code\)\s+\d+\.\d+\.\d+/m);
  }, 60_000);

  test("create refuses an agent's name as a sandbox name (exit 64), with what to do", () => {
    const r = f.sbx(["create", "codex"], { cwd: repo, env });
    expect(r.code).toBe(64);
    expect(r.stderr).toContain("'codex' is an agent's name");
  }, 60_000);

  test.skipIf(!hasTmux)("claude interactive, first run in a terminal: its prompt, with no 'use this API key?' question and no login screen", async () => {
    const session = `sbx-agents-${process.pid}`;
    const tmux = (...a: string[]) => Bun.spawnSync(["tmux", ...a], { stdout: "pipe", stderr: "pipe" }).stdout.toString();
    const inner = [...f.user.prefix({ ...env, TERM: "xterm-256color" }), "bun", CLI, "run", "claude", "typed"].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
    tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40", "sh", "-c", `cd '${repo}' && ${inner}; sleep 30`);
    try {
      const pane = () => tmux("capture-pane", "-p", "-t", session);
      let screen = "";
      for (let i = 0; i < 600 && !/^\s*❯\s*$/m.test(screen); i++) {
        await Bun.sleep(100);
        screen = pane();
      }
      expect(screen).toMatch(/^\s*❯\s*$/m);
      expect(screen).not.toMatch(/API key/i);
      expect(screen).not.toMatch(/log ?in|sign ?in|Select login method/i);
      tmux("send-keys", "-t", session, "-l", "hello there");
      await Bun.sleep(300);
      tmux("send-keys", "-t", session, "Enter");
      for (let i = 0; i < 300 && !pane().includes(FAKE_ANSWER); i++) await Bun.sleep(100);
      expect(pane()).toContain(FAKE_ANSWER);
    } finally {
      tmux("kill-session", "-t", session);
    }
  }, 180_000);
});
