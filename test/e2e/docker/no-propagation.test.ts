// no-propagation: writes inside to ~/.claude, ~/.config/fish, ~/.claude.json and the host repo never change the host.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CLAUDE_JSON, acquireFixture, canRun, mustCreate, releaseFixture, skipReason, type Fixture } from "./fixture";

describe.skipIf(!canRun)(`no-propagation (Docker)${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  let f: Fixture;
  beforeAll(() => {
    f = acquireFixture();
    mustCreate(f, "noprop");
  }, 60_000);
  afterAll(() => {
    f?.sbx(["rm", "--force", "noprop"]);
    releaseFixture();
  }, 60_000);

  test("~/.claude is the host's content, writable inside, unchanged on the host", () => {
    const r = f.sbx(["shell", "noprop", "--", "sh", "-c",
      'cat ~/.claude/settings.json && echo changed > ~/.claude/settings.json && echo new > ~/.claude/added && rm -f ~/.claude/settings.json && cat ~/.claude/added']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('{"host":true}\nnew\n');
    expect(readFileSync(join(f.user.home, ".claude", "settings.json"), "utf8")).toBe('{"host":true}\n');
    expect(readdirSync(join(f.user.home, ".claude"))).toEqual(["settings.json"]);
  }, 60_000);

  test("overlays-carry-no-credentials: of ~/.claude only settings and this project's transcripts are inside, never another project's or the prompt history", () => {
    const host = join(f.user.home, ".claude");
    const key = realpathSync(f.repo).replace(/[^A-Za-z0-9]/g, "-");
    const made = [join(host, "projects", key), join(host, "projects", "-home-other-project")];
    for (const d of made) mkdirSync(d, { recursive: true });
    // Claude Code writes each line's cwd: that is what proves a transcript is this project's (dir names collide).
    writeFileSync(join(made[0]!, "s1.jsonl"), `${JSON.stringify({ type: "user", cwd: realpathSync(f.repo), text: "this project" })}\n`);
    writeFileSync(join(made[0]!, "s3.jsonl"), `${JSON.stringify({ type: "user", cwd: `${realpathSync(f.repo)}-twin`, text: "a twin path's transcript" })}\n`);
    writeFileSync(join(made[1]!, "s2.jsonl"), "another project's secret transcript\n");
    writeFileSync(join(host, "history.jsonl"), "every prompt ever\n");
    for (const p of [join(host, "projects"), ...made, join(made[0]!, "s1.jsonl"), join(made[0]!, "s3.jsonl"), join(made[1]!, "s2.jsonl"), join(host, "history.jsonl")]) chownSync(p, f.user.uid, f.user.gid);
    try {
      mustCreate(f, "claudeview");
      const r = f.sbx(["shell", "claudeview", "--", "sh", "-c", "ls -A ~/.claude ~/.claude/projects; cat ~/.claude/projects/*/*.jsonl"]);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain("this project");
      expect(r.stdout).toContain(key);
      expect(r.stdout).not.toContain("another project");
      expect(r.stdout).not.toContain("twin");
      expect(r.stdout).not.toContain("-home-other-project");
      expect(r.stdout).not.toContain("history.jsonl");
    } finally {
      f.sbx(["rm", "--force", "claudeview"]);
      rmSync(join(host, "projects"), { recursive: true, force: true });
      rmSync(join(host, "history.jsonl"), { force: true });
    }
  }, 120_000);

  test("a missing ~/.config/fish is an empty writable dir inside and is never made on the host", () => {
    const r = f.sbx(["shell", "noprop", "--", "sh", "-c", 'ls -A ~/.config/fish | wc -l && echo "set x 1" > ~/.config/fish/config.fish && cat ~/.config/fish/config.fish']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("0\nset x 1\n");
    expect(existsSync(join(f.user.home, ".config", "fish"))).toBe(false);
  }, 60_000);

  test("~/.claude.json is a copy without credentials (no key, no MCP server env), and changes stay inside", () => {
    const r = f.sbx(["shell", "noprop", "--", "sh", "-c", 'cat ~/.claude.json && echo "{}" > ~/.claude.json.tmp && mv ~/.claude.json.tmp ~/.claude.json && cat ~/.claude.json']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${JSON.stringify({ numStartups: 1, mcpServers: { gh: { command: "gh-mcp" } } }, null, 2)}\n{}\n`);
    expect(r.stdout).not.toContain("not_inside");
    expect(r.stdout).not.toContain("not-inside");
    expect(readFileSync(join(f.user.home, ".claude.json"), "utf8")).toBe(CLAUDE_JSON);
  }, 60_000);

  test("the host repo's objects are read-only inside, and nothing else of its .git is there; work in the clone never touches the host checkout", () => {
    const link = join(f.sandboxDir("noprop"), "repo", ".git");
    const before = f.git(["rev-parse", "HEAD"]).stdout;
    const r = f.sbx(["shell", "noprop", "--", "sh", "-c",
      `echo inside > README; git -c user.email=a@example.invalid -c user.name=a commit -qam x; git --git-dir=${link} update-ref refs/heads/evil HEAD 2>/dev/null && echo ref-written; touch ${link}/hooks/post-checkout 2>/dev/null && echo hook-written; echo done`]);
    expect(r.stdout.trim()).toBe("done");
    expect(readFileSync(join(f.repo, "README"), "utf8")).toBe("test repo\n");
    expect(f.git(["rev-parse", "HEAD"]).stdout).toBe(before);
    expect(f.git(["branch", "--list", "evil"]).stdout).toBe("");
  }, 60_000);

  test("overlay state survives a stop and start (it lives in the sandbox dir)", () => {
    expect(f.sbx(["shell", "noprop", "--", "sh", "-c", "echo kept > ~/.claude/persist"]).code).toBe(0);
    expect(f.sbx(["stop", "noprop"]).code).toBe(0);
    const r = f.sbx(["shell", "noprop", "--", "cat", join(f.user.home, ".claude", "persist")]);
    expect(r.stdout).toBe("kept\n");
    expect(existsSync(join(f.user.home, ".claude", "persist"))).toBe(false);
  }, 60_000);
});
