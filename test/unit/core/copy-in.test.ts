// copy-in-scanned, the scanner: what it finds in a field (host values in every form, shapes, and in config where a
// credential sits), what it removes from JSON and transcripts, and the MCP rules for args and URLs. Each case is a way
// a credential sits in a real file; each "kept" case is a real setting that must survive.
import { describe, expect, test } from "bun:test";
import { CopyInScanner, credentialArgs, credentialName, REMOVED_TEXT, tokenLike, urlWithoutCredentials } from "../../../src/core/copy-in";
import { claudeJsonView, mayBeProjectDir, transcriptOwner } from "../../../src/core/claude-json";

const PLAIN = "correct-horse-battery-staple-42";
const TOKEN = "ghp_0123456789abcdefABCDEF0123456789abcd";
const scanner = () => new CopyInScanner({ SERVICE_PASSWORD: PLAIN });

describe("copy-in-scanned: what the scanner finds", () => {
  test.each([
    ["the value", PLAIN],
    ["hex", Buffer.from(PLAIN).toString("hex")],
    ["base64 inside text", `x=${Buffer.from(`pw:${PLAIN}`).toString("base64")}`],
    ["percent-encoded", encodeURIComponent(`a b ${PLAIN}`).replace(/-/g, "%2D")],
    ["UTF-16", [...PLAIN].map((c) => `${c}\0`).join("")],
    ["reversed", [...PLAIN].reverse().join("")],
    ["a GitHub token's shape", TOKEN],
    ["a shape, base64", Buffer.from(TOKEN).toString("base64")],
  ])("strict: %s", (_what, text) => {
    expect(scanner().find(text, "strict")).toBeDefined();
  });

  test.each([
    ["an assignment", "export LINEAR_API_KEY=lin_api_abcdefghij"],
    ["fish's set", "set -gx SERVICE_TOKEN abcdef123456"],
    ["YAML", "password: hunter22hunter"],
    ["a bearer header", "curl -H 'Authorization: Bearer abcdefghijkl'"],
    ["a URL's password", "postgres://me:s3cretpass@db.local/x"],
    ["a URL's key", "https://api.example/v1?api_key=abcdef123456"],
  ])("config: %s (no shape, not the host's)", (_what, text) => {
    const s = scanner();
    expect(s.find(text, "strict")).toBeUndefined();
    expect(s.find(text, "config")).toBeDefined();
  });

  test.each([
    ["a reference", "export GH_TOKEN=$(gh auth token)"],
    ["a variable", "set -gx GITHUB_TOKEN $GH"],
    ["a placeholder", "API_KEY=<your key>"],
    ["prose", "the author wrote a token-free guide"],
    ["a path", "set -gx EDITOR /usr/bin/vim"],
    ["a header name alone", "--header Authorization:${AUTH_HEADER}"],
  ])("config keeps: %s", (_what, text) => {
    expect(scanner().find(text, "config")).toBeUndefined();
  });

  test("credential names: variables, keys, flags; not their look-alikes", () => {
    for (const n of ["GH_TOKEN", "apiKey", "api-key", "client_secret", "PASSWORD", "Authorization", "x_auth", "COOKIE"]) expect({ n, yes: credentialName(n) }).toEqual({ n, yes: true });
    for (const n of ["AUTHOR", "tokens", "input_tokens", "passwordHash", "keyboard", "monkey", "theme"]) expect({ n, yes: credentialName(n) }).toEqual({ n, yes: false });
  });
});

describe("copy-in-scanned: JSON and transcripts, field by field", () => {
  test("config JSON: a hit value, a hit key, a credential-named text field are removed at any depth; numbers and the rest stay; each said by path", () => {
    const s = scanner();
    const v = s.json("~/.claude/settings.json", {
      theme: "dark",
      env: { GH_TOKEN: "anything-at-all", EDITOR: "vim", OTHER: Buffer.from(PLAIN).toString("base64") },
      hooks: [{ command: `curl -H 'Authorization: Bearer ${"a".repeat(20)}' x` }, { command: "make lint" }],
      [TOKEN]: 1,
      stats: { input_tokens: 123 },
      apiKeyHelper: "$HOME/bin/key",
    }, "config");
    expect(v).toEqual({ theme: "dark", env: { EDITOR: "vim" }, hooks: [{}, { command: "make lint" }], stats: { input_tokens: 123 }, apiKeyHelper: "$HOME/bin/key" });
    expect(s.findings.map((f) => f.field).sort()).toEqual(["a key", "env.GH_TOKEN", "env.OTHER", "hooks[0].command"].sort());
    // A key that is itself the secret is said by where it was, never by name.
    expect(JSON.stringify(s.findings)).not.toContain(PLAIN);
    expect(JSON.stringify(s.findings)).not.toContain(TOKEN);
  });

  test("strict JSON (sbx's own placeholders): a credential-named key alone is not a hit", () => {
    const s = scanner();
    expect(s.json("plan", { access_token: "sbx-placeholder.x.y", OPENAI_API_KEY: "sbx-placeholder" }, "strict")).toEqual({ access_token: "sbx-placeholder.x.y", OPENAI_API_KEY: "sbx-placeholder" });
    expect(s.count).toBe(0);
  });

  test("a transcript: a hit's text is replaced in its place, the line still parses, the rest of the line and file are as they were", () => {
    const s = scanner();
    const a = JSON.stringify({ type: "user", cwd: "/r", message: { content: `my token is ${TOKEN}` } });
    const b = JSON.stringify({ type: "assistant", cwd: "/r", message: { content: "ok" } });
    const out = s.jsonLines("t.jsonl", `${a}\n${b}\n`);
    const [l1, l2] = out.split("\n");
    expect(JSON.parse(l1!)).toEqual({ type: "user", cwd: "/r", message: { content: REMOVED_TEXT } });
    expect(l2).toBe(b);
    expect(s.findings).toEqual([{ file: "t.jsonl", field: "line 1: message.content", what: "GitHub token" }]);
  });

  test("a transcript line that is not JSON and holds a secret is dropped; one that hides it across an escape JSON undoes is dropped too", () => {
    const s = scanner();
    const escaped = `{"x":"${[...PLAIN].map((c) => `\\u00${c.charCodeAt(0).toString(16).padStart(2, "0")}`).join("")}"}`;
    expect(JSON.parse(escaped)).toEqual({ x: PLAIN });
    const out = s.jsonLines("t.jsonl", `not json ${TOKEN}\n${escaped}\n{"ok":1}\n`);
    expect(out).not.toContain(TOKEN);
    expect(out.split("\n").map((l) => (l === "" ? l : JSON.parse(l)))).toEqual([{ x: REMOVED_TEXT }, { ok: 1 }, ""]);
  });
});

test("a finding never says a secret that sits in a name: a file's path is cut before it, a field is said by where it was", () => {
  const s = scanner();
  s.report({ file: `~/.config/x/${TOKEN}/y.txt`, field: `mcpServers.${TOKEN}.args[1]`, what: "w" });
  expect(s.findings).toEqual([{ file: "~/.config/x/… (a name that holds a secret)", field: "a place whose name holds a secret", what: "w" }]);
});

test("a transcript line is judged by its text without parsing it, yet a value JSON spells otherwise (a quote, a slash as \\/, \\u escapes) is still found", () => {
  const odd = 'pa"ss/wo\\rd-1234567';
  const s = new CopyInScanner({ ODD: odd });
  for (const line of [JSON.stringify({ t: `x ${odd} y` }), JSON.stringify({ t: odd }).replaceAll("/", "\\/"), `{"t":"${[...odd].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("")}"}`]) {
    const out = s.jsonLines("t.jsonl", `${line}\n`);
    expect({ line, kept: out === `${line}\n` }).toEqual({ line, kept: false });
  }
  expect(s.count).toBe(3);
});

describe("copy-in-scanned: MCP servers' args and URLs", () => {
  test.each([
    [["run", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN=xyz123abc", "img"], [1, 2]],
    [["--env", "API_KEY=abcdef"], [0, 1]],
    [["srv", "--token", "abcdef123"], [1, 2]],
    [["srv", "--api-key=abcdef123"], [1]],
    [["srv", "--client-secret", "abcdef123"], [1, 2]],
    [["mcp-remote", "https://x", "--header", "Authorization: Bearer abcdefghij"], [2, 3]],
    [["srv", "X-Api-Key: abcdef123"], [1]],
    [["srv", "SLACK_BOT_TOKEN=xoxb-1"], [1]],
  ])("%j: removes %j", (args, idx) => {
    expect(credentialArgs(args).map((d) => d.index)).toEqual(idx);
  });

  test.each([
    [["-y", "@modelcontextprotocol/server-filesystem", "/srv"]],
    [["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "img"]],
    [["--token", "$GH_TOKEN"]],
    [["mcp-remote", "https://x", "--header", "Authorization:${AUTH_HEADER}"]],
    [["--author", "ann", "--verbose"]],
  ])("%j: kept whole", (args) => {
    expect(credentialArgs(args)).toEqual([]);
  });

  test("URLs: userinfo, key-named parameters and the fragment go, the rest stays; a key in the path drops the URL", () => {
    expect(urlWithoutCredentials("https://u:p@h.example/sse?team=a&api_key=k&token=t#access_token=z")).toEqual({
      url: "https://h.example/sse?team=a",
      removed: ["its user and password", "its api_key parameter", "its token parameter", "its fragment"],
    });
    expect(urlWithoutCredentials("https://mcp.example/api/mcp/s/Zk3pQ9rT2vW8xY1aB4cD/mcp").url).toBeNull();
    expect(urlWithoutCredentials("https://mcp.linear.app/sse")).toEqual({ url: "https://mcp.linear.app/sse", removed: [] });
    expect(urlWithoutCredentials("not a url")).toEqual({ url: "not a url", removed: [] });
    for (const seg of ["sse", "v1", "mcp", "server-filesystem", "my-long-project-name"]) expect({ seg, t: tokenLike(seg) }).toEqual({ seg, t: false });
    for (const seg of ["Zk3pQ9rT2vW8xY1aB4cD", "123e4567-e89b-12d3-a456-426614174000"]) expect({ seg, t: tokenLike(seg) }).toEqual({ seg, t: true });
  });

  test("claudeJsonView: every removal said by field; env and headers never copied; a clean server whole", () => {
    const said: string[] = [];
    const v = claudeJsonView(
      JSON.stringify({ mcpServers: { a: { command: "npx", args: ["srv", "--token", "abcdef123"], env: { K: "v" } }, b: { type: "http", url: "https://h/x?key=abcdef", headers: { A: "b" } }, c: { command: "c", args: ["https://u:p@h/y"] } } }),
      "/r",
      (f, w) => said.push(`${f}: ${w}`),
    );
    expect(v).toEqual({ mcpServers: { a: { command: "npx", args: ["srv"] }, b: { type: "http", url: "https://h/x" }, c: { command: "c", args: ["https://h/y"] } } });
    expect(said).toEqual([
      "mcpServers.a.args[1]: a credential flag (--token)",
      "mcpServers.a.args[2]: a credential flag's value (--token)",
      "mcpServers.b.url: its key parameter",
      "mcpServers.c.args[0]: a URL's user and password",
    ]);
  });
});

describe("copy-in-scanned: whose a ~/.claude/projects entry is", () => {
  const line = (cwd: string) => `${JSON.stringify({ type: "user", cwd })}\n`;
  test("mine only when every cwd is the exact path or under it; another path sharing the key is other; no cwd proves nothing", () => {
    expect(transcriptOwner(`{"type":"summary"}\n${line("/a/b-c")}${line("/a/b-c/sub")}`, "/a/b-c")).toBe("mine");
    expect(transcriptOwner(line("/a/b/c"), "/a/b-c")).toBe("other");
    expect(transcriptOwner(line("/a/b-cd"), "/a/b-c")).toBe("other");
    expect(transcriptOwner(`${line("/a/b-c")}${line("/a/b/c")}`, "/a/b-c")).toBe("other");
    expect(transcriptOwner('{"type":"summary"}\nnot json\n', "/a/b-c")).toBe("unproven");
  });

  test("the dirs that may be a repo's: its key, or for a path past 200 characters the key's first 200 and a hash", () => {
    expect(mayBeProjectDir("-a-b-c", "/a/b-c")).toBe(true);
    expect(mayBeProjectDir("-a-b-c", "/a/b/c")).toBe(true);
    expect(mayBeProjectDir("-a-b-cd", "/a/b-c")).toBe(false);
    const long = `/${"x".repeat(250)}`;
    const cut = `-${"x".repeat(199)}`;
    expect(mayBeProjectDir(`${cut}-1a2b3c`, long)).toBe(true);
    expect(mayBeProjectDir(`${cut}-1a2b3c/../x`, long)).toBe(false);
    expect(mayBeProjectDir(cut, long)).toBe(false);
  });
});
