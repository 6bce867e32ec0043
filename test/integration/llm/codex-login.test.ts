// no-secret-inside for Codex's ChatGPT sign-in: the LLM proxy's Codex route adds the host's access token and account id
// on the way to ChatGPT's backend, refreshes the token on the host when it is about to expire (writing auth.json back as
// Codex does), answers Codex's own refresh from inside with placeholders, and prefers an API key when the host has one.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CodexRefresher, jwtClaims, readCodexLogin } from "../../../src/llm/codex-login";
import { createLlmHandler } from "../../../src/llm/handler";
import { llmServer } from "../../support/llm-server";
import { startFakeAgentLlm, type FakeAgentLlm } from "../../support/fake-agent-llm";

const dir = mkdtempSync(join(tmpdir(), "sbx-codex-login-"));
const authFile = join(dir, "auth.json");
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
const jwt = (claims: Record<string, unknown>) => `${b64({ alg: "RS256" })}.${b64(claims)}.sig`;
const HOST_ACCOUNT = "acct-host-1234";
const idToken = jwt({ email: "ann@example.com", "https://api.openai.com/auth": { chatgpt_plan_type: "pro", chatgpt_account_id: HOST_ACCOUNT } });

function writeLogin(expInSeconds: number, extra: Record<string, unknown> = {}): string {
  const access = jwt({ exp: Math.floor(Date.now() / 1000) + expInSeconds, who: "host" });
  writeFileSync(authFile, JSON.stringify({ OPENAI_API_KEY: null, tokens: { id_token: idToken, access_token: access, refresh_token: "rt-host-secret", account_id: HOST_ACCOUNT }, last_refresh: "2026-01-01T00:00:00Z", ...extra }), { mode: 0o600 });
  return access;
}

let llm: FakeAgentLlm;
let proxy: Server;
let base = "";
let env: Record<string, string> = {};
/** The refresher's clock: each test starts two minutes after the last, past the once-a-minute bound on forced refreshes. */
let clock = Date.now();

beforeAll(async () => {
  llm = await startFakeAgentLlm();
  const handler = createLlmHandler({
    keys: () => ({ env, codexAuthFile: authFile }),
    upstreams: { codex: `${llm.url}/v1`, chatgpt: `${llm.url}/backend-api/codex` },
    codex: new CodexRefresher({ file: authFile, tokenUrl: `${llm.url}/oauth/token`, now: () => clock }),
  });
  proxy = llmServer(handler);
  await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", () => r()));
  const a = proxy.address();
  base = `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}`;
});
afterAll(async () => {
  await new Promise<void>((r) => proxy.close(() => r()));
  await llm.stop();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  clock += 120_000;
  env = {};
  llm.requests.length = 0;
  llm.issued.length = 0;
});

/** What Codex inside sends: its placeholders. */
const post = (path: string) =>
  fetch(`${base}${path}`, { method: "POST", headers: { authorization: "Bearer sbx-placeholder-jwt", "chatgpt-account-id": "sbx-placeholder", "content-type": "application/json" }, body: '{"model":"m","stream":false}' });

describe("the Codex route", () => {
  test("signed in to ChatGPT: to ChatGPT's backend with the host's access token and account id, the placeholders dropped", async () => {
    const access = writeLogin(3600);
    const r = await post("/llm/codex/responses");
    expect(r.status).toBe(200);
    const up = llm.requests.filter((q) => q.path === "/backend-api/codex/responses");
    expect(up.length).toBe(1);
    expect(up[0]!.headers.authorization).toBe(`Bearer ${access}`);
    expect(up[0]!.headers["chatgpt-account-id"]).toBe(HOST_ACCOUNT);
    expect(JSON.stringify(up[0]!.headers)).not.toContain("sbx-placeholder");
    expect(llm.issued).toEqual([]); // an hour left: no refresh
  });

  test("an access token about to expire is refreshed on the host first, and auth.json is written back (mode kept)", async () => {
    const old = writeLogin(60);
    const r = await post("/llm/codex/responses");
    expect(r.status).toBe(200);
    expect(llm.issued.length).toBe(1);
    const refresh = llm.requests.find((q) => q.path === "/oauth/token")!;
    expect(JSON.parse(refresh.body)).toMatchObject({ grant_type: "refresh_token", refresh_token: "rt-host-secret", client_id: "app_EMoamEEZ73f0CkXaXp7hrann" });
    const up = llm.requests.find((q) => q.path === "/backend-api/codex/responses")!;
    expect(up.headers.authorization).toBe(`Bearer ${llm.issued[0]}`);
    expect(up.headers.authorization).not.toBe(`Bearer ${old}`);
    const saved = JSON.parse(readFileSync(authFile, "utf8"));
    expect(saved.tokens.access_token).toBe(llm.issued[0]);
    expect(saved.tokens.refresh_token).toBe("rt-refreshed-1");
    expect(saved.tokens.id_token).toBe(idToken);
    expect(Date.parse(saved.last_refresh)).toBeGreaterThan(Date.now() - 60_000);
    expect(statSync(authFile).mode & 0o777).toBe(0o600);
    expect(readCodexLogin(authFile)?.kind).toBe("chatgpt");
  });

  test("requests at once while the token is due share one refresh", async () => {
    writeLogin(-10);
    const rs = await Promise.all([post("/llm/codex/responses"), post("/llm/codex/responses"), post("/llm/codex/responses")]);
    expect(rs.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(llm.issued.length).toBe(1);
  });

  test("a refresh the auth server refuses: 502 with what to do on the host, and nothing sent upstream", async () => {
    writeFileSync(authFile, JSON.stringify({ tokens: { id_token: idToken, access_token: jwt({ exp: 1 }), refresh_token: "rt", account_id: HOST_ACCOUNT } }), { mode: 0o600 });
    const bad = createLlmHandler({ keys: () => ({ env: {}, codexAuthFile: authFile }), upstreams: { chatgpt: `${llm.url}/backend-api/codex` }, codex: new CodexRefresher({ file: authFile, tokenUrl: `${llm.url}/nowhere` }) });
    const s = llmServer(bad);
    await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
    const a = s.address();
    const r = await fetch(`http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}/llm/codex/responses`, { method: "POST", body: "{}" });
    await new Promise<void>((r2) => s.close(() => r2()));
    expect(r.status).toBe(502);
    expect(((await r.json()) as { hint: string }).hint).toContain("codex login");
    expect(llm.requests.filter((q) => q.path.includes("/responses")).length).toBe(0);
  });

  test("Codex's own refresh from inside: the host refreshes, the sandbox gets placeholders only", async () => {
    writeLogin(3600);
    const r = await fetch(`${base}/llm/codex-token`, { method: "POST", body: JSON.stringify({ refresh_token: "sbx-placeholder", grant_type: "refresh_token" }) });
    expect(r.status).toBe(200);
    const body = (await r.json()) as Record<string, string>;
    expect(llm.issued.length).toBe(1);
    const saved = JSON.parse(readFileSync(authFile, "utf8"));
    const text = JSON.stringify(body);
    for (const secret of [saved.tokens.access_token, saved.tokens.refresh_token, "rt-host-secret", HOST_ACCOUNT, idToken]) expect(text).not.toContain(secret);
    expect(body.refresh_token).toBe("sbx-placeholder");
    expect(jwtClaims(body.id_token!)?.["https://api.openai.com/auth"]).toMatchObject({ chatgpt_plan_type: "pro", chatgpt_account_id: "sbx-placeholder" });
  });

  test("Codex's refresh from inside, asked for again and again: the host refreshes at most once a minute", async () => {
    writeLogin(3600);
    for (let i = 0; i < 5; i++) {
      const r = await fetch(`${base}/llm/codex-token`, { method: "POST", body: "{}" });
      expect(r.status).toBe(200);
    }
    expect(llm.issued.length).toBe(1);
  });

  test("a host API key wins over the ChatGPT sign-in: to the OpenAI API with the key", async () => {
    writeLogin(3600);
    env = { OPENAI_API_KEY: "sk-host-key-1" };
    const r = await post("/llm/codex/responses");
    expect(r.status).toBe(200);
    const up = llm.requests.find((q) => q.path === "/v1/responses")!;
    expect(up.headers.authorization).toBe("Bearer sk-host-key-1");
    expect(up.headers["chatgpt-account-id"]).toBeUndefined();
  });
});
