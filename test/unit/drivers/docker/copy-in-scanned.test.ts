// copy-in-scanned: everything sbx copies or overlays into a Docker sandbox (~/.claude.json, the ~/.claude view, the
// fish config and other overlays, the seeded home) is scanned whole (every field, every encoding the push scan knows)
// each time it is built, and a hit is removed and reported (file and field, never the value) rather than copied in.
// Hostile: the host's files are the person's, but what is in them (an MCP server's token, a key pasted into a
// transcript, a token line in config.fish) is what a sandboxed agent would read and send away.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { secretsFile, setSecret } from "../../../../src/secrets/store";
import { dockerCliWorld, type DockerCliWorld } from "../../../support/docker-cli-world";
import { tarEntries, tarText } from "../../../support/tar-read";

/** A GitHub token's shape: found by shape and, once in the secrets file, by value. */
const TOKEN = "ghp_0123456789abcdefABCDEF0123456789abcd";
/** A host secret with no shape: found only as the host's own value, in any of its forms. */
const PLAIN = "correct-horse-battery-staple-42";
/** Not the host's and of no known shape: found only by where it sits (a credential's flag, header or query). */
const UNKNOWN = "zq81Rt0pLmW4nXc7Vb2s";

let x: DockerCliWorld;
let home: string;
beforeEach(async () => {
  x = await dockerCliWorld();
  home = x.w.env.vars.HOME;
  const cfg = join(x.w.root, "config", "sbx");
  setSecret(secretsFile(cfg), "GH_TOKEN", TOKEN);
  setSecret(secretsFile(cfg), "SERVICE_PASSWORD", PLAIN);
});
afterEach(async () => {
  await x.close();
});

const hex = (s: string) => Buffer.from(s).toString("hex");
const b64 = (s: string) => Buffer.from(s).toString("base64");
/** Every form of every secret this file plants: none may be inside. */
const FORMS = [TOKEN, PLAIN, UNKNOWN, hex(PLAIN), b64(PLAIN), b64(TOKEN)];
const leaks = (text: string) => FORMS.filter((f) => text.includes(f));

/** The sandbox's one container (sbx-<id>), as the fake engine holds it. */
function container(name: string) {
  const c = [...x.engine.containers.values()].find((k) => k.labels["sbx.name"] === name);
  if (!c) throw new Error(`no container for ${name}`);
  return c;
}

/** ~/.claude.json as the last seed put it into the sandbox's container. */
function seededClaudeJson(name: string): string | null {
  const c = container(name);
  const tar = c.archives.at(-1);
  return tar ? tarText(tar, `${home.slice(1)}/.claude.json`) : null;
}

/** The lower dir of the overlay volume the sandbox's container mounts at `target` (what the sandbox sees there). */
function lowerOf(name: string, target: string): string {
  const v = container(name).volumeAt.get(target);
  const o = (v && x.engine.volumesByName.get(v)?.opts.o) || "";
  const lower = /(?:^|,)lowerdir=((?:\\.|[^,])*)/.exec(o)?.[1]?.replace(/\\(.)/g, "$1");
  if (!lower) throw new Error(`no overlay of ${target} in ${name}'s container`);
  return lower;
}

/** Every file under `dir`, relative path → text. */
function filesUnder(dir: string, rel = ""): Record<string, string> {
  const out: Record<string, string> = {};
  if (!existsSync(join(dir, rel))) return out;
  for (const e of readdirSync(join(dir, rel), { withFileTypes: true })) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) Object.assign(out, filesUnder(dir, r));
    else if (e.isFile()) out[r] = readFileSync(join(dir, r), "utf8");
  }
  return out;
}

function put(rel: string, text: string): void {
  mkdirSync(join(home, rel, ".."), { recursive: true });
  writeFileSync(join(home, rel), text);
}

describe("copy-in-scanned: ~/.claude.json carries no credential in any field", () => {
  test("MCP servers' args (-e NAME=…, --token …, --api-key=…, an Authorization header) and URLs (userinfo, ?api_key=…, a token in the path) are removed and reported; a clean server stays whole", async () => {
    const repo = realpathSync(x.w.repo);
    put(
      ".claude.json",
      JSON.stringify({
        theme: "dark",
        hasCompletedOnboarding: true,
        mcpServers: {
          github: { command: "docker", args: ["run", "-i", "--rm", "-e", `GITHUB_PERSONAL_ACCESS_TOKEN=${TOKEN}`, "ghcr.io/github/github-mcp-server"] },
          flag: { command: "npx", args: ["-y", "some-mcp", "--token", UNKNOWN] },
          eq: { command: "npx", args: ["-y", "some-mcp", `--api-key=${UNKNOWN}`] },
          header: { command: "npx", args: ["mcp-remote", "https://mcp.example.invalid/sse", "--header", `Authorization: Bearer ${UNKNOWN}`] },
          query: { type: "http", url: `https://mcp.example.invalid/sse?team=core&api_key=${UNKNOWN}` },
          path: { type: "http", url: `https://mcp.example.invalid/api/mcp/s/${UNKNOWN}Q9rT2vW8/mcp` },
          user: { type: "sse", url: `https://me:${UNKNOWN}@mcp.example.invalid/sse` },
          files: { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv/data"] },
        },
        projects: {
          [repo]: { allowedTools: ["Bash"], note: hex(PLAIN), mcpServers: { p: { command: "tool", args: [`--password=${UNKNOWN}`] } } },
        },
      }),
    );
    const r = await x.cli(["create", "c"]);
    expect({ code: r.code, err: r.stderr }).toMatchObject({ code: 0 });
    const seeded = seededClaudeJson("c");
    expect(seeded).not.toBeNull();
    expect(leaks(seeded!)).toEqual([]);
    const j = JSON.parse(seeded!) as { theme: string; mcpServers: Record<string, { args?: string[]; url?: string; command?: string }> };
    expect(j.theme).toBe("dark");
    expect(j.mcpServers.files).toEqual({ command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv/data"] });
    expect(j.mcpServers.github?.args).toEqual(["run", "-i", "--rm", "ghcr.io/github/github-mcp-server"]);
    expect(j.mcpServers.query?.url).toBe("https://mcp.example.invalid/sse?team=core");
    // Reported by file and field, never the value.
    expect(r.stderr).toContain("~/.claude.json: mcpServers.github.args[4]");
    expect(r.stderr).toContain("mcpServers.flag.args");
    expect(r.stderr).toContain(`projects[${JSON.stringify(repo)}].note`);
    expect(leaks(r.stderr + r.stdout)).toEqual([]);
  }, 30_000);

  test("of `projects`, only the exact path's entry: a path with the same dashed key (/a/b-c beside /a/b/c) is not this project", async () => {
    const repo = realpathSync(x.w.repo);
    const twin = repo.replace(/\/([^/]*)$/, "-$1");
    put(".claude.json", JSON.stringify({ projects: { [repo]: { allowedTools: ["Bash"] }, [twin]: { history: [{ display: "the other project's plans" }] } } }));
    expect((await x.cli(["create", "c"])).code).toBe(0);
    const j = JSON.parse(seededClaudeJson("c")!) as { projects: Record<string, unknown> };
    expect(Object.keys(j.projects)).toEqual([repo]);
  }, 30_000);
});

describe("copy-in-scanned: the ~/.claude view is scanned each time it is built", () => {
  test("a secret written into ~/.claude after the create is not in the view a new container gets (sbx rebuild), and is reported", async () => {
    put(".claude/settings.json", JSON.stringify({ theme: "dark" }));
    expect((await x.cli(["create", "c"])).code).toBe(0);
    put(".claude/settings.json", JSON.stringify({ theme: "dark", env: { GH_TOKEN: TOKEN, HELPER: b64(PLAIN) } }));
    put(".claude/CLAUDE.md", `be brief\nthe service password, hex: ${hex(PLAIN)}\n`);
    put(".claude/commands/deploy.md", "deploy it\n");
    const r = await x.cli(["rebuild", "c"]);
    expect({ code: r.code, err: r.stderr }).toMatchObject({ code: 0 });
    const view = filesUnder(lowerOf("c", join(home, ".claude")));
    expect(Object.keys(view).sort()).toEqual(["commands/deploy.md", "settings.json"]);
    expect(leaks(Object.values(view).join("\n"))).toEqual([]);
    expect(JSON.parse(view["settings.json"]!)).toEqual({ theme: "dark", env: {} });
    expect(r.stderr).toContain("~/.claude/settings.json: env.GH_TOKEN");
    expect(r.stderr).toContain("~/.claude/CLAUDE.md");
    expect(leaks(r.stderr + r.stdout)).toEqual([]);
  }, 30_000);

  test("a file whose name holds a secret is not copied", async () => {
    put(`.claude/commands/${TOKEN}.md`, "run it\n");
    expect((await x.cli(["create", "c"])).code).toBe(0);
    expect(leaks(Object.keys(filesUnder(lowerOf("c", join(home, ".claude")))).join("\n"))).toEqual([]);
  }, 30_000);

  test("a transcript is this project's only when every cwd in it is this exact path (or under it): a colliding key's transcripts, and files that prove nothing, are left out and said", async () => {
    const repo = realpathSync(x.w.repo);
    const twin = repo.replace(/\/([^/]*)$/, "-$1");
    const key = repo.replace(/[^A-Za-z0-9]/g, "-");
    expect(twin.replace(/[^A-Za-z0-9]/g, "-")).toBe(key);
    const line = (cwd: string, text: string) => `${JSON.stringify({ type: "user", cwd, sessionId: "s", message: { role: "user", content: text } })}\n`;
    put(`.claude/projects/${key}/mine.jsonl`, `{"type":"summary","summary":"x"}\n${line(repo, "this project")}${line(join(repo, "sub"), "still this project")}`);
    put(`.claude/projects/${key}/mine/subagents/agent-1.jsonl`, line(repo, "a subagent of this project"));
    put(`.claude/projects/${key}/twin.jsonl`, line(twin, "the other project's secret plans"));
    put(`.claude/projects/${key}/mixed.jsonl`, `${line(repo, "here")}${line(twin, "and there")}`);
    put(`.claude/projects/${key}/memory/MEMORY.md`, "whose memory is this?\n");
    const r = await x.cli(["create", "c"]);
    expect(r.code).toBe(0);
    const view = filesUnder(lowerOf("c", join(home, ".claude")));
    expect(Object.keys(view).sort()).toEqual([`projects/${key}/mine.jsonl`, `projects/${key}/mine/subagents/agent-1.jsonl`]);
    expect(Object.values(view).join("")).not.toContain("other project");
    expect(r.stderr).toContain("not provably this project's");
  }, 30_000);
});

describe("copy-in-scanned: the fish config and other overlays are scanned each time they are built", () => {
  test("a token line added to config.fish after the create does not reach a new container; the rest of the dir does", async () => {
    put(".config/fish/config.fish", "set -gx EDITOR vim\n");
    put(".config/fish/functions/hi.fish", "function hi; echo hi; end\n");
    expect((await x.cli(["create", "c"])).code).toBe(0);
    put(".config/fish/config.fish", `set -gx EDITOR vim\nset -gx GH_TOKEN ${TOKEN}\n`);
    put(".config/fish/conf.d/svc.fish", `set -gx SVC ${b64(PLAIN)}\n`);
    const r = await x.cli(["rebuild", "c"]);
    expect(r.code).toBe(0);
    const lower = lowerOf("c", join(home, ".config", "fish"));
    expect(lower.startsWith(home)).toBe(false);
    const seen = filesUnder(lower);
    expect(Object.keys(seen).sort()).toEqual(["functions/hi.fish"]);
    expect(r.stderr).toContain("~/.config/fish/config.fish");
    expect(r.stderr).toContain("~/.config/fish/conf.d/svc.fish");
    expect(leaks(r.stderr + r.stdout)).toEqual([]);
  }, 30_000);

  test("an --overlay dir holding a host secret in a form (hex) is created without that file, which is reported; the create does not refuse", async () => {
    put(".config/nvim/init.lua", `vim.g.k = "${hex(PLAIN)}"\n`);
    put(".config/nvim/lua/ok.lua", "return {}\n");
    const r = await x.cli(["create", "c", "--overlay", "~/.config/nvim"]);
    expect({ code: r.code, err: r.stderr }).toMatchObject({ code: 0 });
    expect(Object.keys(filesUnder(lowerOf("c", join(home, ".config", "nvim"))))).toEqual(["lua/ok.lua"]);
    expect(r.stderr).toContain("~/.config/nvim/init.lua");
  }, 30_000);
});

describe("copy-in-scanned: the seeded home", () => {
  test("every file the seed puts in is one the scan passed (no host secret in any entry)", async () => {
    put(".claude.json", JSON.stringify({ theme: b64(PLAIN), tipsHistory: { [TOKEN]: 1 } }));
    expect((await x.cli(["create", "c"])).code).toBe(0);
    const all = container("c").archives.flatMap((t) => tarEntries(t).map((e) => `${e.path}\n${new TextDecoder().decode(e.content)}`));
    expect(leaks(all.join("\n"))).toEqual([]);
  }, 30_000);
});
