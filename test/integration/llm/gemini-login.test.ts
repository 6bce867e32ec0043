// no-secret-inside for Gemini CLI's Google sign-in: the Code Assist route adds the host's access token; one about to
// expire is refreshed on the host (Gemini CLI's OAuth client, a form POST as Google takes it) and written back as
// Gemini CLI writes it; a refresh that fails says what to do and is not retried on every request.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GEMINI_CLIENT_ID, GEMINI_CLIENT_SECRET, GeminiRefresher } from "../../../src/llm/gemini-login";
import { createLlmHandler } from "../../../src/llm/handler";
import { llmServer } from "../../support/llm-server";

const dir = mkdtempSync(join(tmpdir(), "sbx-gemini-login-"));
const credsFile = join(dir, "oauth_creds.json");

let clock = Date.now();
let tokenAnswer: { status: number; body: unknown } = { status: 200, body: {} };
const tokenCalls: Record<string, string>[] = [];
const upstreamAuth: (string | undefined)[] = [];
const servers: Server[] = [];
let base = "";
let tokenUrl = "";

function listen(s: Server): Promise<string> {
  servers.push(s);
  return new Promise((r) =>
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      r(`http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}`);
    }),
  );
}

function writeCreds(expiresInMs: number, extra: Record<string, unknown> = {}): void {
  writeFileSync(
    credsFile,
    JSON.stringify({ access_token: "ya29.host-old", refresh_token: "1//host-refresh", scope: "https://www.googleapis.com/auth/cloud-platform", token_type: "Bearer", expiry_date: clock + expiresInMs, ...extra }),
    { mode: 0o600 },
  );
}

beforeAll(async () => {
  tokenUrl = `${await listen(
    createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        tokenCalls.push({ ...Object.fromEntries(new URLSearchParams(body)), contentType: req.headers["content-type"] ?? "" });
        res.writeHead(tokenAnswer.status, { "content-type": "application/json" });
        res.end(JSON.stringify(tokenAnswer.body));
      });
    }),
  )}/token`;
  const upstream = await listen(
    createServer((req, res) => {
      upstreamAuth.push(req.headers.authorization);
      req.resume();
      req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end('{"response":{"candidates":[]}}'));
    }),
  );
  const handler = createLlmHandler({
    keys: () => ({ env: {}, geminiOauthFile: credsFile }),
    upstreams: { codeassist: upstream },
    gemini: new GeminiRefresher({ file: credsFile, tokenUrl, now: () => clock }),
  });
  base = await listen(llmServer(handler));
});
afterAll(async () => {
  for (const s of servers) await new Promise<void>((r) => s.close(() => r()));
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  // Each test two minutes after the last: past the minute a failed refresh is not retried.
  clock += 120_000;
  tokenCalls.length = 0;
  upstreamAuth.length = 0;
  tokenAnswer = { status: 200, body: { access_token: "ya29.host-new", expires_in: 3599, scope: "https://www.googleapis.com/auth/cloud-platform", token_type: "Bearer" } };
});

/** What Gemini CLI inside sends: its placeholder. */
const post = () =>
  fetch(`${base}/llm/codeassist/v1internal:generateContent`, { method: "POST", headers: { authorization: "Bearer sbx-placeholder", "content-type": "application/json" }, body: "{}" });

describe("the host's Gemini sign-in, kept fresh on the host", () => {
  test("an access token with an hour left goes as it is: no refresh", async () => {
    writeCreds(3_600_000);
    const r = await post();
    expect(r.status).toBe(200);
    expect(upstreamAuth).toEqual(["Bearer ya29.host-old"]);
    expect(tokenCalls).toEqual([]);
  });

  test("about to expire: refreshed once with Gemini CLI's client (a form POST), the new token sent, the file written back as Gemini writes it", async () => {
    writeCreds(120_000, { id_token: "eyJ.kept" });
    const rs = await Promise.all([post(), post(), post()]);
    expect(rs.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(tokenCalls).toEqual([
      { client_id: GEMINI_CLIENT_ID, client_secret: GEMINI_CLIENT_SECRET, grant_type: "refresh_token", refresh_token: "1//host-refresh", contentType: "application/x-www-form-urlencoded" },
    ]);
    expect(upstreamAuth).toEqual(["Bearer ya29.host-new", "Bearer ya29.host-new", "Bearer ya29.host-new"]);
    const after = JSON.parse(readFileSync(credsFile, "utf8")) as Record<string, unknown>;
    expect(after).toEqual({
      access_token: "ya29.host-new",
      refresh_token: "1//host-refresh",
      scope: "https://www.googleapis.com/auth/cloud-platform",
      token_type: "Bearer",
      id_token: "eyJ.kept",
      expiry_date: clock + 3_599_000,
    });
    expect(statSync(credsFile).mode & 0o777).toBe(0o600);
  });

  test("nothing of the host's login reaches the sandbox: the answer carries none of its tokens", async () => {
    writeCreds(60_000);
    const r = await post();
    const text = await r.text();
    for (const secret of ["ya29.host-old", "ya29.host-new", "1//host-refresh", GEMINI_CLIENT_SECRET]) expect(text).not.toContain(secret);
  });

  test("a refresh Google refuses: 502 that says to sign in on the host, the file untouched, and not tried again within the minute", async () => {
    writeCreds(60_000);
    const before = readFileSync(credsFile, "utf8");
    tokenAnswer = { status: 400, body: { error: "invalid_grant" } };
    const r = await post();
    expect(r.status).toBe(502);
    const body = (await r.json()) as { error: string; message: string; hint: string };
    expect(body.error).toBe("login_expired");
    expect(JSON.stringify(body)).toContain("run `gemini` and sign in with Google again");
    expect(JSON.stringify(body)).not.toContain("1//host-refresh");
    expect(readFileSync(credsFile, "utf8")).toBe(before);
    const again = await post();
    expect(again.status).toBe(502);
    expect(tokenCalls.length).toBe(1);
    expect(upstreamAuth).toEqual([]);
  });

  test("expired with no refresh token: no refresh tried; no credential, with what to do", async () => {
    // Expired by the wall clock too (the route's own check reads it).
    writeFileSync(credsFile, JSON.stringify({ access_token: "ya29.dead", expiry_date: Date.now() - 1000 }), { mode: 0o600 });
    const r = await post();
    expect(r.status).toBe(503);
    expect(tokenCalls).toEqual([]);
    expect(upstreamAuth).toEqual([]);
  });
});
