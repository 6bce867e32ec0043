// What `balanced` reads of a repo (package files, .npmrc, remotes), what each level holds, and how long an allow lasts
// (--for, --once, and the chat's words for them): pure.
import { describe, expect, test } from "bun:test";
import { parseFor, spanText, termOf } from "../../../src/core/allow-term";
import { parseChatCommand } from "../../../src/core/chat-commands";
import { forgesOf, levelAgents, levelLists, levelNamed, levelOf, NO_FACTS, npmrcRegistryHosts, registriesOf } from "../../../src/core/levels";
import { PRESETS } from "../../../src/core/presets";

describe("what balanced reads of a repo", () => {
  test("package files name their registries, at any depth, the shortest path first; a dependency's own files do not", () => {
    expect(registriesOf(["web/package.json", "package-lock.json", "tools/requirements-dev.txt", "Cargo.toml", "svc/go.mod", "README.md"])).toEqual([
      { preset: "crates", file: "Cargo.toml" },
      { preset: "npm", file: "package-lock.json" },
      { preset: "go", file: "svc/go.mod" },
      { preset: "pypi", file: "tools/requirements-dev.txt" },
    ]);
    expect(registriesOf(["node_modules/x/package.json", "vendor/y/go.mod", ".venv/lib/site-packages/z/setup.py", "notpackage.json.bak", "my-package.json"])).toEqual([]);
    expect(registriesOf(["Gemfile", "app/build.gradle.kts"]).map((r) => r.preset)).toEqual(["rubygems", "maven"]);
  });

  test(".npmrc: registry hosts by name only; addresses, other schemes and garbage are left out", () => {
    const rc = ["registry=https://npm.corp.example/", "@acme:registry=https://npm.acme.example:8443/repo/", "registry=http://10.0.0.9/", "registry=http://[::1]:4873/", "registry=file:///etc", "//npm.corp.example/:_authToken=xyz", "registry=not a url", "; registry=https://commented.example/"].join("\n");
    expect(npmrcRegistryHosts(rc)).toEqual(["npm.corp.example", "npm.acme.example:8443"]);
  });

  test("forges: each network remote's host, never a local path, file://, an address or a one-label name; credentials never kept", () => {
    const f = forgesOf({
      origin: "https://user:tok3n@github.com/acme/app.git",
      fork: "git@github.com:me/app.git",
      lab: "ssh://git@gitlab.com:2222/acme/app.git",
      corp: "git.corp.example:team/app.git",
      local: "/srv/git/app.git",
      rel: "../app",
      file: "file:///srv/git/app.git",
      meta: "git@169.254.169.254:x.git",
      v6: "ssh://[fd00::1]/x.git",
      short: "myserver:repo.git",
      ext: "ext::sh -c touch% /tmp/pwned",
    });
    expect(f).toEqual([
      { host: "git.corp.example", remote: "corp" },
      { host: "github.com", remote: "fork" },
      { host: "gitlab.com", remote: "lab" },
    ]);
    expect(JSON.stringify(f)).not.toContain("tok3n");
  });
});

describe("what each level holds", () => {
  const repo = { registries: [{ preset: "npm", file: "package.json" }], registryHosts: [{ host: "npm.corp.example", file: ".npmrc" }], forges: [{ host: "github.com", remote: "origin" }, { host: "git.corp.example", remote: "corp" }] };

  test("locked holds nothing, open holds no pattern but opens, balanced holds the agents', the registries' and the forges' hosts with why", () => {
    expect(levelLists({ level: "locked", repo, at: 0 }, ["claude"])).toEqual({ name: "locked", parts: [], open: false });
    expect(levelLists({ level: "open", repo, at: 0 }, ["claude"])).toEqual({ name: "open", parts: [], open: true });
    const b = levelLists({ level: "balanced", repo, at: 0 }, ["claude", "codex"]);
    const patterns = b.parts.map((p) => p.pattern);
    expect(patterns).toEqual(expect.arrayContaining(["api.anthropic.com", ...PRESETS.claude, ...PRESETS.openai, ...PRESETS.npm, "npm.corp.example", ...PRESETS.github, "git.corp.example"]));
    expect(new Set(patterns).size).toBe(patterns.length);
    expect(b.parts.find((p) => p.pattern === "registry.npmjs.org")?.why).toBe("npm registry (package.json)");
    expect(b.parts.find((p) => p.pattern === "git.corp.example")?.why).toBe("forge of remote corp (git.corp.example)");
    expect(b.open).toBe(false);
  });

  test("a stored fact the allowlist would refuse (too broad, an address) never becomes a pattern", () => {
    const bad = { registries: [{ preset: "no-such", file: "x" }], registryHosts: [{ host: "*.com", file: ".npmrc" }, { host: "10.1.1.1", file: ".npmrc" }], forges: [{ host: "*", remote: "o" }, { host: "[::1]", remote: "p" }] };
    const b = levelLists({ level: "balanced", repo: bad, at: 0 }, []);
    expect(b.parts).toEqual([]);
  });

  test("the agents: those the sandbox ran, else Claude Code's; names that are no agent are ignored", () => {
    expect(levelAgents({})).toEqual(["claude"]);
    expect(levelAgents({ agents: { codex: "1", gemini: "2", "not-an-agent": "3" } })).toEqual(["codex", "gemini"]);
    expect(levelAgents({ agents: ["claude"] })).toEqual(["claude"]);
  });

  test("levelOf: none is none; what does not read back is locked", () => {
    expect(levelOf({})).toBeNull();
    expect(levelOf({ policy: { level: "open", repo: NO_FACTS, at: 5 } })).toEqual({ level: "open", repo: NO_FACTS, at: 5 });
    expect(levelOf({ policy: { level: "OPEN" } })?.level).toBe("locked");
    expect(levelOf({ policy: { level: "balanced", repo: { forges: "github.com" } } })?.level).toBe("locked");
  });

  test("a level typed by a person: any case; anything else a usage error listing the levels", () => {
    expect(levelNamed(" Balanced ", "--policy")).toBe("balanced");
    expect(() => levelNamed("permissive", "--policy")).toThrow(/not a level/);
    expect(() => levelNamed("__proto__", "--policy")).toThrow(/not a level/);
  });
});

describe("how long an allow lasts", () => {
  test("--for takes s, m, h, d and their sums, from 1s to 90d", () => {
    expect(parseFor("30m")).toBe(30 * 60_000);
    expect(parseFor("1h30m")).toBe(90 * 60_000);
    expect(parseFor("2D")).toBe(2 * 86_400_000);
    for (const bad of ["", "30", "m", "0s", "-5m", "1.5h", "91d", "30 m", "1w", "999999999d"]) expect({ bad, ms: parseFor(bad) }).toEqual({ bad, ms: null });
    expect(spanText(90 * 60_000)).toBe("1h30m");
  });

  test("--once and --for together, or a bad time, is a usage error", () => {
    expect(termOf({})).toEqual({ kind: "good" });
    expect(termOf({ once: true })).toEqual({ kind: "once" });
    expect(termOf({ for: "45s" })).toEqual({ kind: "for", ms: 45_000 });
    expect(() => termOf({ once: true, for: "1h" })).toThrow(/both/);
    expect(() => termOf({ for: "soon" })).toThrow(/not a time/);
  });

  test("chat: `/approve N for 30m`, `/approve N once`, `/allow HOST --for 30m`, `/allow HOST --once`", () => {
    expect(parseChatCommand("/approve 7 for 30m")).toEqual({ ok: true, command: { op: "decide", id: 7, allow: true, term: { kind: "for", ms: 1_800_000 } } });
    expect(parseChatCommand("/approve 7 ONCE")).toEqual({ ok: true, command: { op: "decide", id: 7, allow: true, term: { kind: "once" } } });
    expect(parseChatCommand("/approve 7")).toEqual({ ok: true, command: { op: "decide", id: 7, allow: true } });
    expect(parseChatCommand("/allow a.example --for 2h")).toEqual({ ok: true, command: { op: "allow", patterns: ["a.example"], scope: "sandbox", term: { kind: "for", ms: 7_200_000 } } });
    expect(parseChatCommand("/allow a.example --once")).toEqual({ ok: true, command: { op: "allow", patterns: ["a.example"], scope: "sandbox", term: { kind: "once" } } });
    for (const bad of ["/approve 7 for", "/approve 7 for ever", "/approve 7 twice", "/reject 7 once", "/approve 7 for 30m extra", "/allow a.example --for", "/allow a.example --for 1y", "/deny a.example --once"]) {
      expect({ bad, ok: parseChatCommand(bad)?.ok }).toEqual({ bad, ok: false });
    }
  });
});
