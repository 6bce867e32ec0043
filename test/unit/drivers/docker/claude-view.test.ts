// overlays-carry-no-credentials for ~/.claude: the sandbox's view holds settings and this project's transcripts only.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { claudeProjectKey } from "../../../../src/core/claude-json";
import { fillClaudeView } from "../../../../src/drivers/docker/claude-view";
import { CopyIn } from "../../../../src/secrets/copy-in";

/** The door with no host secrets (shapes only): these tests are about what the view selects. */
const door = () => new CopyIn({}, { home: "/nonexistent" });

let root = "";
afterEach(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

describe("fillClaudeView", () => {
  test("settings, instructions, commands, agents and this project's transcripts; never the login, history, other projects or a symlink's target", () => {
    root = mkdtempSync(join(tmpdir(), "sbx-claude-view-"));
    const host = join(root, ".claude");
    const repo = "/home/ann/src/my.app";
    const put = (rel: string, text: string) => {
      mkdirSync(join(host, rel, ".."), { recursive: true });
      writeFileSync(join(host, rel), text);
    };
    put("settings.json", '{"theme":"dark"}\n');
    put("CLAUDE.md", "be brief\n");
    put("commands/review.md", "review it\n");
    put("agents/tester.md", "test it\n");
    put(`projects/${claudeProjectKey(repo)}/s1.jsonl`, `${JSON.stringify({ cwd: repo, text: "this project" })}\n`);
    put("projects/-home-ann-src-other/s2.jsonl", "another project's transcript\n");
    put("history.jsonl", "every prompt of every project\n");
    put(".credentials.json", '{"token":"secret"}\n');
    put("todos/t.json", "[]\n");
    writeFileSync(join(root, "outside-secret"), "host file\n");
    symlinkSync(join(root, "outside-secret"), join(host, "commands", "evil.md"));
    symlinkSync(root, join(host, "output-styles"));
    const view = join(root, "view");
    mkdirSync(view);
    writeFileSync(join(view, "stale"), "from an earlier container\n");

    const r = fillClaudeView(door(), host, view, repo);
    expect(claudeProjectKey(repo)).toBe("-home-ann-src-my-app");
    expect(readdirSync(view).sort()).toEqual(["CLAUDE.md", "agents", "commands", "projects", "settings.json"]);
    expect(readdirSync(join(view, "projects"))).toEqual([claudeProjectKey(repo)]);
    expect(readFileSync(join(view, "projects", claudeProjectKey(repo), "s1.jsonl"), "utf8")).toBe(`${JSON.stringify({ cwd: repo, text: "this project" })}\n`);
    expect(readdirSync(join(view, "commands"))).toEqual(["review.md"]);
    expect(existsSync(join(view, ".credentials.json"))).toBe(false);
    expect(existsSync(join(view, "history.jsonl"))).toBe(false);
    expect(r.skipped.sort()).toEqual([`${host}/commands/evil.md: not a plain file or dir`, `${host}/output-styles: not a plain file or dir`]);
  });

  test("--claude-auth overlay (the person's choice, warned): the login is in the view too", () => {
    root = mkdtempSync(join(tmpdir(), "sbx-claude-view-"));
    mkdirSync(join(root, ".claude"));
    writeFileSync(join(root, ".claude", ".credentials.json"), "{}\n");
    fillClaudeView(door(), join(root, ".claude"), join(root, "view"), "/r", { login: true });
    expect(readdirSync(join(root, "view")).sort()).toEqual([".credentials.json", "projects"]);
  });

  test("no ~/.claude on the host: an empty view with an empty projects dir", () => {
    root = mkdtempSync(join(tmpdir(), "sbx-claude-view-"));
    const view = join(root, "view");
    expect(fillClaudeView(door(), join(root, "none"), view, "/r").copied).toBe(0);
    expect(readdirSync(view)).toEqual(["projects"]);
  });
});
