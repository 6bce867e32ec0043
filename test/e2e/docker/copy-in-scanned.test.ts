// copy-in-scanned on a real engine: what a container gets of the host's files (~/.claude.json, the ~/.claude view, the
// fish config) holds none of the host's secrets, in any form, at the create and after a rebuild made a new container
// from files that changed since; looked for from inside, as the agent would (grep over its home, its environment).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chownSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { secretsFile, setSecret } from "../../../src/secrets/store";
import { acquireFixture, canRun, CLAUDE_JSON, mustCreate, releaseFixture, skipReason, type Fixture } from "./fixture";

/** A host secret with no known shape: only its value (in any form) gives it away. */
const PLAIN = "correct-horse-battery-staple-42";
const TOKEN = "ghp_0123456789abcdefABCDEF0123456789abcd";
const FORMS = [PLAIN, TOKEN, Buffer.from(PLAIN).toString("hex"), Buffer.from(PLAIN).toString("base64")];

describe.skipIf(!canRun)(`copy-in-scanned (Docker)${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  let f: Fixture;
  const made: string[] = [];
  /** Writes a file in the user's home as the user would have it. */
  const put = (rel: string, text: string) => {
    const p = join(f.user.home, rel);
    mkdirSync(dirname(p), { recursive: true });
    for (let d = dirname(p); d.startsWith(`${f.user.home}/`); d = dirname(d)) chownSync(d, f.user.uid, f.user.gid);
    writeFileSync(p, text);
    chownSync(p, f.user.uid, f.user.gid);
    made.push(p);
  };
  /** What an agent inside finds of the secrets: every form, anywhere in its home's copied files or its environment. */
  const inside = (name: string) => {
    const r = f.sbx(["shell", name, "--", "sh", "-c", `cat ~/.claude.json; find ~/.claude ~/.config/fish -type f -exec cat {} + 2>/dev/null; env`]);
    expect(r.code).toBe(0);
    return { text: r.stdout, leaks: FORMS.filter((x) => r.stdout.includes(x)) };
  };

  beforeAll(() => {
    f = acquireFixture();
    const cfg = join(f.user.home, ".config", "sbx");
    put(".config/sbx/.keep", "");
    setSecret(secretsFile(cfg), "SERVICE_PASSWORD", PLAIN);
    for (const p of [cfg, secretsFile(cfg)]) chownSync(p, f.user.uid, f.user.gid);
    put(".claude.json", JSON.stringify({ ...JSON.parse(CLAUDE_JSON), mcpServers: { gh: { command: "docker", args: ["run", "-e", `GITHUB_PERSONAL_ACCESS_TOKEN=${TOKEN}`, "img"] }, svc: { type: "http", url: `https://mcp.example.invalid/sse?api_key=${PLAIN}` } } }));
    put(".config/fish/config.fish", "set -gx EDITOR vim\n");
    mustCreate(f, "scanned");
  }, 120_000);
  afterAll(() => {
    f?.sbx(["rm", "--force", "scanned"]);
    for (const p of made) rmSync(p, { force: true });
    rmSync(join(f.user.home, ".config", "fish"), { recursive: true, force: true });
    writeFileSync(join(f.user.home, ".claude.json"), CLAUDE_JSON);
    releaseFixture();
  }, 60_000);

  test("at the create: ~/.claude.json's MCP servers reach it without their token (args and URL), the rest as it was", () => {
    const seen = inside("scanned");
    expect(seen.leaks).toEqual([]);
    expect(seen.text).toContain('"img"');
    expect(seen.text).toContain("https://mcp.example.invalid/sse");
    expect(seen.text).toContain("set -gx EDITOR vim");
  }, 60_000);

  test("after the host's files changed, a rebuild's new container gets them scanned: the token lines are left out, and said", () => {
    put(".config/fish/config.fish", `set -gx EDITOR vim\nset -gx GH_TOKEN ${TOKEN}\n`);
    put(".claude/settings.json", JSON.stringify({ host: true, env: { SERVICE: Buffer.from(PLAIN).toString("base64") } }));
    put(".claude/CLAUDE.md", `be brief; the password in hex is ${Buffer.from(PLAIN).toString("hex")}\n`);
    const r = f.sbx(["rebuild", "scanned"]);
    expect({ code: r.code, err: r.stderr }).toMatchObject({ code: 0 });
    expect(r.stderr).toContain("~/.config/fish/config.fish: line 2");
    expect(r.stderr).toContain("~/.claude/settings.json: env.SERVICE");
    expect(FORMS.filter((x) => `${r.stdout}${r.stderr}`.includes(x))).toEqual([]);
    const seen = inside("scanned");
    expect(seen.leaks).toEqual([]);
    expect(seen.text).not.toContain("set -gx EDITOR vim");
    expect(seen.text).toContain('"host": true');
    // The host's files are as they were: the view is a copy, never the dir.
    expect(readFileSync(join(f.user.home, ".config", "fish", "config.fish"), "utf8")).toContain(TOKEN);
  }, 180_000);
});
