// credential-scope as pure functions: the one reading of a request target (checked against a generated corpus of
// spellings and the URL parser's own reading), path patterns, the scope check, the one table, and forge tokens per host.
import { describe, expect, test } from "bun:test";
import {
  canonicalPath,
  checkScope,
  FORGE_TOKENS,
  forgeTokenFor,
  forgeTokenNames,
  hostTokenName,
  LLM_CREDENTIAL_SCOPES,
  pathMatches,
  remoteHosts,
  scopeThrough,
  type LlmCredentialKind,
} from "../../../src/core/credential-scope";
import { rng } from "../../support/rng";

describe("credential-scope: canonicalPath refuses every target with more than one reading", () => {
  const refused: Array<[string, RegExp]> = [
    ["/backend-api/codex/..\\..\\me", /'\\'/],
    ["/a\\b", /'\\'/],
    ["/a/%5c../b", /%5c/],
    ["/a/%5C../b", /%5c/],
    ["/a/%2f../b", /%2f/],
    ["/a/%2F../b", /%2f/],
    ["/a/%2e%2e/b", /'\.\.'/],
    ["/a/%2E%2E/b", /'\.\.'/],
    ["/a/.%2e/b", /'\.\.'/],
    ["/a/%2e./b", /'\.\.'/],
    ["/a/../b", /'\.\.'/],
    ["/a/./b", /'\.\.'|'\.'/],
    ["/a/.../b", /'\.'/],
    ["/a/%2e", /'\.'/],
    ["/a/..;/b", /';'/],
    ["/a;jsessionid=1/b", /';'/],
    ["/a/%3b/b", /%3b/],
    ["/a//b", /'\/\/'/],
    ["//evil.example/x", /'\/\/'/],
    ["/a/%252e%252e/b", /%25/],
    ["/a/%252f/b", /%25/],
    ["/a/%00/b", /control/],
    ["/a/%0a/b", /control/],
    ["/a/%09", /control/],
    ["/a/%7f", /control/],
    ["/a/%c0%af/b", /non-ASCII/],
    ["/a/%e0%80%af/b", /non-ASCII/],
    ["/a/%ef%bc%8f/b", /non-ASCII/],
    ["/a/%c3%a9", /non-ASCII/],
    ["/a/%zz", /invalid %-escape/],
    ["/a/%", /invalid %-escape/],
    ["/a/%2", /invalid %-escape/],
    ["/a/%u002e", /invalid %-escape/],
    ["/a/%3f/b", /'\?'/],
    ["/a/%23/b", /'\?'|'#'/],
    ["/a/b#frag", /fragment/],
    ["/a/\u00e9", /printable ASCII/],
    ["/a/b c", /printable ASCII/],
    ["/a/b\tc", /printable ASCII/],
    ["/a/b\u0000", /printable ASCII/],
    ["/a/b\r\nX: y", /printable ASCII/],
    ["/a/<b>", /not allowed in a path/],
    ["/a/{b}", /not allowed in a path/],
    ["a/b", /starting with '\/'/],
    ["http://host/a", /starting with '\/'/],
    ["*", /starting with '\/'/],
    ["", /starting with '\/'/],
    ["/a?x=%zz", /query/],
    ["/a?x=%e0%a4", /UTF-8/],
    [`/${"a".repeat(9000)}`, /over 8192/],
  ];
  for (const [t, why] of refused) {
    test(JSON.stringify(t.slice(0, 60)), () => {
      const c = canonicalPath(t);
      expect(c.ok).toBe(false);
      if (!c.ok) expect(c.reason).toMatch(why);
    });
  }
});

describe("credential-scope: canonicalPath puts a target with one reading in one form", () => {
  const cases: Array<[string, string, string, boolean?]> = [
    ["/v1/messages?beta=true", "/v1/messages", "beta=true"],
    ["/v1/messages/count_tokens", "/v1/messages/count_tokens", ""],
    ["/v1/m%65ssages", "/v1/messages", ""],
    ["/v1%2Fmessages".replace("%2F", "/"), "/v1/messages", ""],
    ["/v1internal%3AgenerateContent", "/v1internal:generateContent", ""],
    ["/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", "/v1beta/models/gemini-2.5-pro:streamGenerateContent", "alt=sse"],
    ["/a/%7euser", "/a/~user", ""],
    ["/a/.b/c.", "/a/.b/c.", ""],
    ["/a/b%20c", "/a/b%20c", ""],
    ["/a/b%5bc%5d", "/a/b%5Bc%5D", ""],
    ["/a/", "/a/", ""],
    ["/", "/", ""],
    ["/a?x=..\\..&y=%2e%2e", "/a", "x=..\\..&y=%2e%2e"],
    ["/V1/Messages", "/V1/Messages", ""],
    ["/V1/Mess%41ges", "/v1/messages", "", true],
  ];
  for (const [t, path, query, foldCase] of cases) {
    test(`${t}${foldCase ? " (server folds case)" : ""}`, () => {
      expect(canonicalPath(t, { foldCase: foldCase ?? false })).toEqual({ ok: true, path, query });
    });
  }
});

/** Pieces a sandbox would write: separators, dots, escapes of each, parameters, controls, overlong and wide forms. */
const PIECES = [
  "a", "b", "v1", "codex", "messages", "A", "~", "-", "_", ":", "@", "+", "!", "=",
  "/", "//", "\\", ".", "..", "...", ";", ";x=1", "?", "#", " ", "\t", "\u0000", "\u00e9",
  "%2f", "%2F", "%5c", "%5C", "%2e", "%2E", "%2e%2e", "%3b", "%25", "%252e", "%252f", "%00", "%0a", "%09", "%20",
  "%41", "%7e", "%3a", "%40", "%c0%af", "%c0%ae", "%e0%80%af", "%ef%bc%8f", "%e2%88%95", "%c3%a9", "%zz", "%", "%2",
];

function corpus(seed: number, n: number): string[] {
  const r = rng(seed);
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    let t = "/";
    const len = 1 + Math.floor(r() * 8);
    for (let j = 0; j < len; j++) t += PIECES[Math.floor(r() * PIECES.length)]!;
    out.push(t);
  }
  return out;
}

/** Full decoding, twice over (a server that decodes twice), or null when the escapes do not decode. */
function decodedTwice(p: string): string | null {
  try {
    const once = decodeURIComponent(p);
    try {
      return decodeURIComponent(once);
    } catch {
      return once;
    }
  } catch {
    return null;
  }
}

describe("credential-scope: every canonical path has exactly one reading (generated corpus, seed 35)", () => {
  const targets = corpus(35, 20_000);

  test("whatever is accepted reads the same to the URL parser, to a decoding server and to one that decodes twice", () => {
    const bad: string[] = [];
    let accepted = 0;
    for (const t of targets) {
      const c = canonicalPath(t);
      if (!c.ok) continue;
      accepted++;
      const { path } = c;
      // It is its own canonical form.
      const again = canonicalPath(path);
      if (!again.ok || again.path !== path) bad.push(`${JSON.stringify(t)}: not a fixed point`);
      // The WHATWG URL parser (what Bun's and Node's clients send) keeps it as it is: no `\`, nothing resolved.
      if (new URL(path, "http://u.invalid").pathname !== path) bad.push(`${JSON.stringify(t)}: the URL parser reads ${new URL(path, "http://u.invalid").pathname}`);
      // The raw target means the same to the URL parser as the canonical path does.
      const rawRead = decodedTwice(new URL(t.split("?")[0]!, "http://u.invalid").pathname);
      if (rawRead !== decodedTwice(path)) bad.push(`${JSON.stringify(t)}: raw reads ${JSON.stringify(rawRead)}, canonical ${JSON.stringify(decodedTwice(path))}`);
      // Decoded (once or twice), it has the same segments, none of them dots, and nothing a server splits or stops at.
      const d = decodedTwice(path);
      if (d === null) bad.push(`${JSON.stringify(t)}: escapes that do not decode`);
      else {
        if (d.split("/").length !== path.split("/").length) bad.push(`${JSON.stringify(t)}: a separator appears when decoded`);
        if (d.split("/").some((s) => /^\.+$/.test(s))) bad.push(`${JSON.stringify(t)}: a dot segment appears when decoded`);
        if (/[\\;\x00-\x1f\x7f?#]|[^\x00-\x7f]/.test(d)) bad.push(`${JSON.stringify(t)}: ${JSON.stringify(d)} holds a character a server treats specially`);
      }
      if (path.split("/").slice(1, -1).includes("")) bad.push(`${JSON.stringify(t)}: an empty segment`);
    }
    expect(bad).toEqual([]);
    // The corpus is not all refusals: a good share has one reading and is kept.
    expect(accepted).toBeGreaterThan(1000);
  });

  test("whatever the URL parser would resolve or re-split differently is refused", () => {
    const missed: string[] = [];
    for (const t of targets) {
      const p = t.split("?")[0]!;
      if (p.includes("#")) continue;
      let parsed: string;
      try {
        parsed = new URL(p, "http://u.invalid").pathname;
      } catch {
        continue;
      }
      const sameSegments = parsed.split("/").length === p.split("/").length && !/(^|\/)\.\.?(\/|$)/.test(p);
      if (!sameSegments && canonicalPath(t).ok) missed.push(JSON.stringify(t));
    }
    expect(missed).toEqual([]);
  });
});

describe("credential-scope: path patterns", () => {
  const cases: Array<[string, string, boolean]> = [
    ["/v1/messages", "/v1/messages", true],
    ["/v1/messages", "/v1/messages/", false],
    ["/v1/messages", "/v1/messagesX", false],
    ["/v1/messages", "/v1/messages/batches", false],
    ["/v1/models/**", "/v1/models", true],
    ["/v1/models/**", "/v1/models/", true],
    ["/v1/models/**", "/v1/models/claude-x", true],
    ["/v1/models/**", "/v1/models/a/b/c", true],
    ["/v1/models/**", "/v1/modelsX", false],
    ["/v1/models/**", "/v1", false],
    ["/backend-api/codex/**", "/backend-api/codex/responses", true],
    ["/backend-api/codex/**", "/backend-api/codexx", false],
    ["/backend-api/codex/**", "/backend-api/me", false],
    ["/v1internal:*", "/v1internal:generateContent", true],
    ["/v1internal:*", "/v1internal:", false],
    ["/v1internal:*", "/v1internal:a/b", false],
    ["/v1internal:*", "/v1internal", false],
    ["/repos/*/*/pulls", "/repos/acme/widgets/pulls", true],
    ["/repos/*/*/pulls", "/repos/acme/pulls", false],
    ["/a.b/*", "/aXb/c", false],
  ];
  for (const [pattern, path, want] of cases) test(`${pattern} ${want ? "matches" : "does not match"} ${path}`, () => expect(pathMatches(pattern, path)).toBe(want));
});

describe("credential-scope: checkScope judges host, method and the canonical path", () => {
  const scope = { host: "chatgpt.com", rules: [{ methods: ["GET", "POST"], path: "/backend-api/codex/**" }] };
  test("inside: the canonical path and query to send", () => {
    expect(checkScope(scope, { method: "post", host: "ChatGPT.com", target: "/backend-api/codex/resp%6fnses?x=1" })).toEqual({ ok: true, path: "/backend-api/codex/responses", query: "x=1" });
  });
  test("another host, another method, a path outside, a path with two readings: refused, each saying why", () => {
    const no = (req: { method: string; host: string; target: string }) => {
      const v = checkScope(scope, req);
      return v.ok ? "allowed" : v.reason;
    };
    expect(no({ method: "POST", host: "chatgpt.com.evil.example", target: "/backend-api/codex/x" })).toContain("not chatgpt.com");
    expect(no({ method: "DELETE", host: "chatgpt.com", target: "/backend-api/codex/x" })).toContain("DELETE /backend-api/codex/x is not one of GET|POST /backend-api/codex/**");
    expect(no({ method: "GET", host: "chatgpt.com", target: "/backend-api/me" })).toContain("is not one of");
    expect(no({ method: "GET", host: "chatgpt.com", target: "/backend-api/codex/..\\..\\me" })).toContain("cannot be read one way only");
  });
});

describe("credential-scope: the one table of LLM credentials", () => {
  const kinds = Object.keys(LLM_CREDENTIAL_SCOPES) as LlmCredentialKind[];
  test("every credential the LLM proxy holds has a scope of its own, with rules", () => {
    expect(kinds.sort()).toEqual(["anthropic-api-key", "anthropic-oauth", "chatgpt-sign-in", "gemini-api-key", "google-sign-in", "openai-api-key"]);
    for (const k of kinds) expect(LLM_CREDENTIAL_SCOPES[k].rules.length).toBeGreaterThan(0);
  });
  test("every rule's path is canonical, and its methods upper case", () => {
    for (const k of kinds) {
      for (const r of LLM_CREDENTIAL_SCOPES[k].rules) {
        const c = canonicalPath(r.path.replace(/\*+/g, "x"));
        expect({ k, path: r.path, ok: c.ok && c.path === r.path.replace(/\*+/g, "x") }).toEqual({ k, path: r.path, ok: true });
        for (const m of r.methods) expect(m).toBe(m.toUpperCase());
      }
    }
  });
  test("no credential reaches its account: keys, organisations, the profile, files, batches", () => {
    const account = ["/v1/organizations/me", "/v1/organizations/api_keys", "/api/oauth/profile", "/api/oauth/claude_cli/create_api_key", "/v1/files", "/v1/messages/batches", "/backend-api/me", "/backend-api/accounts/check", "/v1/projects/p/secrets", "/v1beta/files", "/v1beta/cachedContents", "/organization/admin_api_keys"];
    for (const k of kinds) {
      const d = LLM_CREDENTIAL_SCOPES[k];
      const scope = scopeThrough(d, d.origin, d.origin);
      for (const p of account) for (const method of ["GET", "POST", "DELETE"]) expect({ k, p, method, ok: checkScope(scope, { method, host: new URL(d.origin).host, target: p }).ok }).toEqual({ k, p, method, ok: false });
    }
  });
  test("through the host's own gateway: the same rules under its base path, on its host", () => {
    const d = LLM_CREDENTIAL_SCOPES["openai-api-key"];
    const s = scopeThrough(d, "https://api.openai.com/v1", "https://llm.corp.example/openai/v1/");
    expect(s.host).toBe("llm.corp.example");
    expect(s.rules.map((r) => r.path)).toContain("/openai/v1/responses/**");
    expect(checkScope(s, { method: "POST", host: "llm.corp.example", target: "/openai/v1/responses" }).ok).toBe(true);
    expect(checkScope(s, { method: "POST", host: "llm.corp.example", target: "/v1/responses" }).ok).toBe(false);
  });
  test("a route whose provider is not the credential's gives it no rule at all", () => {
    expect(scopeThrough(LLM_CREDENTIAL_SCOPES["chatgpt-sign-in"], "https://api.openai.com/v1", "https://api.openai.com/v1").rules).toEqual([]);
    expect(scopeThrough(LLM_CREDENTIAL_SCOPES["anthropic-oauth"], "https://api.openai.com", "https://api.openai.com").rules).toEqual([]);
  });
});

describe("credential-scope: a forge token goes only to the hosts named for it", () => {
  const secrets = { GIT_TOKEN: "generic", GH_TOKEN: "gh", GITLAB_TOKEN: "gl", GIT_TOKEN_GHE_EXAMPLE_COM: "ghe", "GIT_TOKEN_127_0_0_1_8443": "local" };
  const own = new Set(["git.corp.example", "github.com"]);
  test("GIT_TOKEN: only a host of the host repo's own remotes; elsewhere it is withheld and named", () => {
    expect(forgeTokenFor("git.corp.example", secrets, own)).toEqual({ name: "GIT_TOKEN", value: "generic" });
    expect(forgeTokenFor("attacker.example", secrets, own)).toEqual({ name: null, withheld: "GIT_TOKEN" });
    expect(forgeTokenFor("git.corp.example.attacker.example", secrets, own)).toEqual({ name: null, withheld: "GIT_TOKEN" });
    expect(forgeTokenFor("attacker.example", {}, own)).toEqual({ name: null });
  });
  test("a host's own token and the forge's usual ones go to that host only, named or not", () => {
    expect(forgeTokenFor("ghe.example.com", secrets, new Set())).toEqual({ name: "GIT_TOKEN_GHE_EXAMPLE_COM", value: "ghe" });
    expect(forgeTokenFor("127.0.0.1:8443", secrets, new Set())).toEqual({ name: "GIT_TOKEN_127_0_0_1_8443", value: "local" });
    expect(forgeTokenFor("github.com", { GH_TOKEN: "gh" }, new Set())).toEqual({ name: "GH_TOKEN", value: "gh" });
    expect(forgeTokenFor("gitlab.com", secrets, new Set())).toEqual({ name: "GITLAB_TOKEN", value: "gl" });
    expect(forgeTokenFor("ghe.example.com.evil", { GH_TOKEN: "gh", GIT_TOKEN_GHE_EXAMPLE_COM: "ghe" }, new Set())).toEqual({ name: null });
    expect(hostTokenName("GHE.example.com:8443")).toBe("GIT_TOKEN_GHE_EXAMPLE_COM_8443");
  });
  test("generated hosts: GIT_TOKEN is never chosen for a host outside the named set (seed 35)", () => {
    const r = rng(35);
    const parts = ["github", "gitlab", "com", "corp", "example", "git", "evil", "127", "0", "1", "ghe", "xn--gthub-7ta"];
    for (let i = 0; i < 2000; i++) {
      const host = Array.from({ length: 2 + Math.floor(r() * 3) }, () => parts[Math.floor(r() * parts.length)]!).join(".") + (r() < 0.2 ? `:${Math.floor(r() * 65535)}` : "");
      const c = forgeTokenFor(host, { GIT_TOKEN: "generic" }, own);
      expect({ host, generic: c.name === "GIT_TOKEN" }).toEqual({ host, generic: own.has(host) || own.has(host.replace(/:\d+$/, "")) });
    }
  });
  test("the remotes' hosts, as the host repo's config names them", () => {
    expect([...remoteHosts(["https://x:tok@GitHub.com/o/r.git", "git@git.corp.example:o/r.git", "ssh://git@ssh.example:2222/o/r", "http://127.0.0.1:8080/r", "/local/path", "file:///x"])].sort()).toEqual(["127.0.0.1:8080", "git.corp.example", "github.com", "ssh.example"]);
  });
  test("the table names every token the bridge looks for", () => {
    const named = FORGE_TOKENS.map((t) => t.name).join(" ");
    for (const n of forgeTokenNames("github.com", new Set(["github.com"]))) expect(named).toContain(n.startsWith("GIT_TOKEN_") ? "GIT_TOKEN_<HOST>" : n);
    for (const n of forgeTokenNames("gitlab.com", new Set())) expect(named).toContain(n.startsWith("GIT_TOKEN_") ? "GIT_TOKEN_<HOST>" : n);
  });
});
