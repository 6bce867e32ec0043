// credential-scope through the real LLM handler: every credential it holds (each provider's API key, the Anthropic
// sign-in, Codex's ChatGPT sign-in, Gemini CLI's Google sign-in) reaches only its declared endpoints, judged on the
// request target the upstream received (a fake on 127.0.0.1 that records it raw), for every spelling a sandbox can
// write on the wire (`\`, escaped separators and dots, `;`, `//`, controls, overlong UTF-8, …).
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLlmHandler } from "../../../src/llm/handler";
import { llmServer } from "../../support/llm-server";
import type { KeySources } from "../../../src/llm/keys";
import { startFakeLlm, type FakeLlm } from "../../support/fake-llm";
import { rng } from "../../support/rng";

const dir = mkdtempSync(join(tmpdir(), "sbx-llm-scope-"));
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
const jwt = (claims: Record<string, unknown>) => `${b64({ alg: "RS256" })}.${b64(claims)}.sig`;

/** The host's credentials, one per kind; each test picks the sources that make the handler choose one. */
const SECRET = {
  anthropicKey: "sk-ant-api03-HOSTKEY-scope-0123456789abcdef",
  anthropicOauth: "sk-ant-oat01-HOSTOAUTH-scope-0123456789abcdef",
  openaiKey: "sk-proj-HOSTOPENAI-scope-0123456789abcdef",
  chatgpt: jwt({ exp: Math.floor(Date.now() / 1000) + 86_400, who: "HOSTCHATGPT" }),
  geminiKey: "AIzaHOSTGEMINI-scope-0123456789abcdef",
  google: "ya29.HOSTGOOGLE-scope-0123456789abcdef",
};
const files = {
  claude: join(dir, "credentials.json"),
  codex: join(dir, "auth.json"),
  gemini: join(dir, "oauth_creds.json"),
};
writeFileSync(files.claude, JSON.stringify({ claudeAiOauth: { accessToken: SECRET.anthropicOauth, refreshToken: "r", expiresAt: 1 } }));
writeFileSync(files.codex, JSON.stringify({ OPENAI_API_KEY: null, tokens: { id_token: jwt({}), access_token: SECRET.chatgpt, refresh_token: "rt", account_id: "acct-host" } }));
writeFileSync(files.gemini, JSON.stringify({ access_token: SECRET.google, refresh_token: "1//r", expiry_date: Date.now() + 86_400_000 }));

type Kind = "anthropic-api-key" | "anthropic-oauth" | "openai-api-key" | "chatgpt-sign-in" | "gemini-api-key" | "google-sign-in";

/** What makes the handler pick each kind (nothing else is there to fall back on). */
const SOURCES: Record<Kind, KeySources> = {
  "anthropic-api-key": { env: { ANTHROPIC_API_KEY: SECRET.anthropicKey } },
  "anthropic-oauth": { env: {}, claudeCredentialsFile: files.claude },
  "openai-api-key": { env: { OPENAI_API_KEY: SECRET.openaiKey } },
  "chatgpt-sign-in": { env: {}, codexAuthFile: files.codex },
  "gemini-api-key": { env: { GEMINI_API_KEY: SECRET.geminiKey } },
  "google-sign-in": { env: {}, geminiOauthFile: files.gemini },
};
const VALUE: Record<Kind, string> = {
  "anthropic-api-key": SECRET.anthropicKey,
  "anthropic-oauth": SECRET.anthropicOauth,
  "openai-api-key": SECRET.openaiKey,
  "chatgpt-sign-in": SECRET.chatgpt,
  "gemini-api-key": SECRET.geminiKey,
  "google-sign-in": SECRET.google,
};

/**
 * The oracle, written here independently of the module under test: the endpoints each credential may reach, as the
 * upstream routes them (method, then an exact path or a prefix ending in `/` or `:`).
 */
const ALLOWED: Record<Kind, Array<[string[], string]>> = {
  "anthropic-api-key": [[["POST"], "/v1/messages"], [["POST"], "/v1/messages/count_tokens"], [["POST"], "/v1/messages/cache_touch"], [["GET"], "/v1/models"], [["GET"], "/v1/models/"]],
  "anthropic-oauth": [[["POST"], "/v1/messages"], [["POST"], "/v1/messages/count_tokens"], [["POST"], "/v1/messages/cache_touch"], [["GET"], "/v1/models"], [["GET"], "/v1/models/"]],
  "openai-api-key": [[["POST"], "/v1/chat/completions"], [["POST"], "/v1/completions"], [["POST"], "/v1/embeddings"], [["GET", "POST"], "/v1/responses"], [["GET", "POST"], "/v1/responses/"], [["GET"], "/v1/models"], [["GET"], "/v1/models/"]],
  "chatgpt-sign-in": [[["GET", "POST"], "/backend-api/codex"], [["GET", "POST"], "/backend-api/codex/"]],
  "gemini-api-key": [[["GET", "POST"], "/v1beta/models"], [["GET", "POST"], "/v1beta/models/"], [["GET", "POST"], "/v1/models"], [["GET", "POST"], "/v1/models/"]],
  "google-sign-in": [[["GET", "POST"], "/v1internal:"], [["GET"], "/v1internal/"]],
};

/** Where the upstream would act: its URL parser's reading of the raw target (`\` as `/`, dot segments resolved), decoded. */
function actedOn(raw: string): string {
  const p = new URL(raw, "http://upstream.invalid").pathname;
  try {
    return decodeURIComponent(p);
  } catch {
    return p;
  }
}

function allowed(kind: Kind, method: string, path: string): boolean {
  return ALLOWED[kind].some(([ms, p]) => ms.includes(method) && (p.endsWith("/") || p.endsWith(":") ? path.startsWith(p) && path.length > p.length : path === p));
}

let fake: FakeLlm;
let server: Server;
let port = 0;
let sources: KeySources = { env: {} };

beforeAll(async () => {
  fake = await startFakeLlm();
  const handler = createLlmHandler({
    keys: () => sources,
    upstreams: { anthropic: fake.url, openai: fake.url, google: fake.url, codex: `${fake.url}/v1`, chatgpt: `${fake.url}/backend-api/codex`, codeassist: fake.url },
  });
  server = llmServer(handler);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const a = server.address();
  port = typeof a === "object" && a ? a.port : 0;
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  await fake.stop();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  fake.requests.length = 0;
});

/** Sends one request with its target exactly as written (fetch would resolve `..` and `\` itself); the status line's code. */
function raw(method: string, target: string, headers: Record<string, string> = {}): Promise<{ status: number; head: string }> {
  return new Promise((resolve, reject) => {
    const s = connect(port, "127.0.0.1", () => {
      const head = Object.entries({ host: "127.0.0.1", "content-type": "application/json", "content-length": "2", connection: "close", authorization: "Bearer sbx-placeholder", ...headers })
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join("");
      s.write(Buffer.concat([Buffer.from(`${method} `), Buffer.from(target, "latin1"), Buffer.from(` HTTP/1.1\r\n${head}\r\n{}`)]));
    });
    let out = "";
    s.on("data", (d) => (out += d.toString("latin1")));
    s.on("close", () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(out)?.[1] ?? 0), head: out.slice(0, out.indexOf("\r\n\r\n")).toLowerCase() }));
    s.on("error", reject);
    s.setTimeout(5000, () => s.destroy());
  });
}

/** Every request the upstream got with the credential in it: where it acted, and whether it was allowed there. */
function leaks(kind: Kind): Array<{ raw: string; acted: string; method: string }> {
  return fake.requests
    .filter((q) => JSON.stringify(q.headers).includes(VALUE[kind]))
    .map((q) => ({ raw: q.path, acted: actedOn(q.path.split("?")[0]!), method: q.method }))
    .filter((q) => !allowed(kind, q.method, q.acted) || q.raw.split("?")[0] !== new URL(q.raw, "http://u.invalid").pathname);
}

describe("credential-scope: the Codex route's ChatGPT sign-in stays under /backend-api/codex/", () => {
  beforeEach(() => {
    sources = SOURCES["chatgpt-sign-in"];
  });

  test("`\\` (which URL parsers read as `/`) does not walk out of the prefix", async () => {
    for (const t of ["/llm/codex/..\\..\\me", "/llm/codex/a\\..\\..\\..\\api\\auth\\session", "/llm/codex/..\\..\\backend-api\\me"]) {
      const r = await raw("GET", t);
      expect({ t, status: r.status }).toEqual({ t, status: 400 });
    }
    expect(fake.requests).toEqual([]);
  });

  test("Codex's own requests still go, with the host's token", async () => {
    expect((await raw("POST", "/llm/codex/responses")).status).toBe(200);
    expect((await raw("GET", "/llm/codex/models?client_version=0.171.0")).status).toBe(200);
    expect(fake.requests.map((q) => q.path)).toEqual(["/backend-api/codex/responses", "/backend-api/codex/models?client_version=0.171.0"]);
    expect(fake.requests.every((q) => q.headers.authorization === `Bearer ${SECRET.chatgpt}`)).toBe(true);
  });
});

describe("credential-scope: the Anthropic sign-in reaches only the inference endpoints", () => {
  beforeEach(() => {
    sources = SOURCES["anthropic-oauth"];
  });

  test("what Claude Code sends goes (measured: POST /v1/messages?beta=true and /v1/messages/count_tokens?beta=true)", async () => {
    expect((await raw("POST", "/llm/anthropic/v1/messages?beta=true")).status).toBe(200);
    expect((await raw("POST", "/llm/anthropic/v1/messages/count_tokens?beta=true")).status).toBe(200);
    expect(fake.requests.map((q) => `${q.method} ${q.path}`)).toEqual(["POST /v1/messages?beta=true", "POST /v1/messages/count_tokens?beta=true"]);
    expect(fake.requests.every((q) => q.headers.authorization === `Bearer ${SECRET.anthropicOauth}`)).toBe(true);
  });

  test("the account, key-minting, batch, file and admin endpoints are refused before anything is sent", async () => {
    const out: Array<[string, string]> = [
      ["GET", "/llm/anthropic/api/oauth/profile"],
      ["POST", "/llm/anthropic/api/oauth/claude_cli/create_api_key"],
      ["GET", "/llm/anthropic/v1/organizations/me"],
      ["GET", "/llm/anthropic/v1/messages/batches"],
      ["POST", "/llm/anthropic/v1/files"],
      ["GET", "/llm/anthropic/v1/messages"],
      ["DELETE", "/llm/anthropic/v1/messages"],
      ["POST", "/llm/anthropic/v1/messagesX"],
      ["POST", "/llm/anthropic/v1/messages/count_tokens/x"],
      ["POST", "/llm/anthropic/"],
    ];
    for (const [m, t] of out) {
      const r = await raw(m, t);
      expect({ m, t, status: r.status }).toEqual({ m, t, status: 403 });
      expect(r.head).toContain("x-sbx-error: out_of_scope");
    }
    expect(fake.requests).toEqual([]);
  });
});

describe("credential-scope: each credential reaches only its endpoints, whatever the spelling", () => {
  /** Per kind: the route prefix the sandbox writes, an endpoint inside its scope, and a target outside it. */
  const CASES: Record<Kind, { route: string; inside: string; outside: string[] }> = {
    "anthropic-api-key": { route: "/llm/anthropic/", inside: "v1/messages", outside: ["v1/organizations/me", "api/oauth/profile", "v1/files"] },
    "anthropic-oauth": { route: "/llm/anthropic/", inside: "v1/messages", outside: ["api/oauth/claude_cli/create_api_key", "v1/organizations/api_keys"] },
    "openai-api-key": { route: "/llm/codex/", inside: "responses", outside: ["organization/admin_api_keys", "v1/files", "dashboard/billing"] },
    "chatgpt-sign-in": { route: "/llm/codex/", inside: "responses", outside: ["backend-api/me", "api/auth/session", "backend-api/accounts"] },
    "gemini-api-key": { route: "/llm/google/", inside: "v1beta/models/gemini-2.5-pro:generateContent", outside: ["v1beta/files", "v1beta/cachedContents", "v1/projects/x"] },
    "google-sign-in": { route: "/llm/codeassist/", inside: "v1internal:generateContent", outside: ["v1/projects/x/secrets", "v1/userinfo", "storage/v1/b"] },
  };
  const SEPS = ["/", "\\", "%2f", "%2F", "%5c", "%5C", "%252f", "%c0%af", "%e0%80%af", "%ef%bc%8f", "%e2%88%95", "//", "/./", "/%2e/"];
  const DOTS = ["..", "%2e%2e", "%2E%2E", ".%2e", "%2e.", "%252e%252e", "..;", "..%3b", "..%00", "...", "%c0%ae%c0%ae", "..%09", ".. ", "..;x=1", "%u002e%u002e"];

  /** The generated corpus: from inside the scope, up and out, each part spelled a different way; seeded. */
  function corpus(kind: Kind, seed: number, n: number): string[] {
    const c = CASES[kind];
    const r = rng(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
    const out = new Set<string>();
    for (const o of c.outside) {
      for (const sep of SEPS) for (const dots of ["..", "%2e%2e", "..;"]) out.add(`${c.route}${c.inside}${sep}${dots}${sep}${dots}${sep}${dots}${sep}${o}`);
      for (const dots of DOTS) out.add(`${c.route}${dots}/${dots}/${dots}/${o}`);
      out.add(`${c.route}/${o}`);
      out.add(`${c.route}${o.replace(/\//g, "%2f")}`);
      out.add(`${c.route}${o};${c.inside}`);
      out.add(`${c.route}${o}#/${c.inside}`);
      out.add(`${c.route}${o}\t/${c.inside}`);
      out.add(`${c.route}${o}%00/${c.inside}`);
    }
    while (out.size < n) {
      const depth = 1 + Math.floor(r() * 4);
      let t = c.route + (r() < 0.5 ? c.inside : "");
      for (let i = 0; i < depth; i++) t += pick(SEPS) + pick(DOTS);
      t += pick(SEPS) + pick(c.outside);
      if (r() < 0.3) t = t.replace(/[a-z]/g, (ch) => (r() < 0.3 ? ch.toUpperCase() : ch));
      if (r() < 0.2) t += `?x=${pick(["1", "%2e%2e", "..\\..", "%zz"])}`;
      out.add(t);
    }
    return [...out];
  }

  for (const kind of Object.keys(CASES) as Kind[]) {
    test(`${kind}: nothing the upstream acts on outside the scope ever carries it (seed 35)`, async () => {
      sources = SOURCES[kind];
      const targets = corpus(kind, 35, 300);
      for (const t of targets) await raw("POST", t);
      expect(leaks(kind)).toEqual([]);
      // Control: the endpoint inside the scope still goes, with the credential.
      fake.requests.length = 0;
      expect((await raw("POST", `${CASES[kind].route}${CASES[kind].inside}`)).status).toBe(200);
      expect(JSON.stringify(fake.requests[0]?.headers ?? {})).toContain(VALUE[kind]);
    });
  }
});

describe("credential-scope: a method the scope does not give cannot be asked for another way", () => {
  test("method-override headers never reach the upstream", async () => {
    sources = SOURCES["google-sign-in"];
    const r = await raw("POST", "/llm/codeassist/v1internal:generateContent", { "x-http-method-override": "DELETE", "x-http-method": "DELETE", "x-method-override": "DELETE", "x-original-url": "/v1/projects/x", "x-rewrite-url": "/v1/projects/x" });
    expect(r.status).toBe(200);
    const h = fake.requests[0]!.headers;
    for (const k of ["x-http-method-override", "x-http-method", "x-method-override", "x-original-url", "x-rewrite-url"]) expect(h[k]).toBeUndefined();
  });
});
