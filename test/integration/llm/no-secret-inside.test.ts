// The LLM key proxy: injects the host's key, strips every credential the sandbox sends, streams SSE unbuffered, reads keys per request.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer, type Server } from "node:http";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLlmHandler } from "../../../src/llm/handler";
import { llmServer } from "../../support/llm-server";
import { PLACEHOLDER_KEY } from "../../../src/drivers/env";
import { readSecrets, setSecret } from "../../../src/secrets/store";
import { startFakeLlm, type FakeLlm } from "../../support/fake-llm";

let fake: FakeLlm;
let server: Server;
let base: string;
let dir: string;
let env: Record<string, string>;
const secretsFile = () => join(dir, "secrets.json");
const claudeFile = () => join(dir, "credentials.json");

beforeAll(async () => {
  fake = await startFakeLlm();
  dir = mkdtempSync(join(tmpdir(), "sbx-llm-"));
  env = { OPENAI_API_KEY: "sk-host-openai-key-123" };
  const handler = createLlmHandler({
    keys: () => ({ env, stored: () => readSecrets(secretsFile()), claudeCredentialsFile: claudeFile() }),
    upstreams: { anthropic: fake.url, openai: fake.url, google: fake.url },
  });
  server = llmServer(handler);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const a = server.address();
  base = `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}`;
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  await fake.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("llm proxy", () => {
  test("injects the host's key and no credential header from the sandbox reaches the upstream", async () => {
    setSecret(secretsFile(), "ANTHROPIC_API_KEY", "sk-ant-host-key-1");
    const r = await fetch(`${base}/llm/anthropic/v1/messages`, {
      method: "POST",
      headers: {
        "x-api-key": PLACEHOLDER_KEY,
        authorization: `Bearer ${PLACEHOLDER_KEY}`,
        "x-goog-api-key": PLACEHOLDER_KEY,
        cookie: "session=sandbox",
        "proxy-authorization": "Basic c2FuZGJveA==",
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
      },
      body: JSON.stringify({ model: "m", stream: false }),
    });
    expect(r.status).toBe(200);
    const got = fake.requests.at(-1)!;
    expect(got.path).toBe("/v1/messages");
    expect(got.headers["x-api-key"]).toBe("sk-ant-host-key-1");
    expect(got.headers.authorization).toBeUndefined();
    expect(got.headers["x-goog-api-key"]).toBeUndefined();
    expect(got.headers.cookie).toBeUndefined();
    expect(got.headers["proxy-authorization"]).toBeUndefined();
    expect(got.headers["anthropic-version"]).toBe("2023-06-01");
    expect(JSON.stringify(got.headers)).not.toContain(PLACEHOLDER_KEY);
  });

  test("a rotated key is used on the next request, with no restart", async () => {
    setSecret(secretsFile(), "ANTHROPIC_API_KEY", "sk-ant-host-key-2");
    await fetch(`${base}/llm/anthropic/v1/messages`, { method: "POST", body: "{}" });
    expect(fake.requests.at(-1)!.headers["x-api-key"]).toBe("sk-ant-host-key-2");
  });

  test("OpenAI gets a bearer key from the host env; Google a header key, and ?key= from the sandbox is dropped", async () => {
    await fetch(`${base}/llm/openai/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${PLACEHOLDER_KEY}` }, body: "{}" });
    expect(fake.requests.at(-1)!.headers.authorization).toBe("Bearer sk-host-openai-key-123");
    env.GEMINI_API_KEY = "AIza-host-gemini";
    await fetch(`${base}/llm/google/v1beta/models/x:generateContent?key=${PLACEHOLDER_KEY}&alt=json`, { method: "POST", body: "{}" });
    const g = fake.requests.at(-1)!;
    expect(g.headers["x-goog-api-key"]).toBe("AIza-host-gemini");
    expect(g.path).toBe("/v1beta/models/x:generateContent?alt=json");
  });

  test("the host's Claude OAuth login is used as a bearer token with the OAuth beta flag", async () => {
    rmSync(secretsFile(), { force: true });
    writeFileSync(claudeFile(), JSON.stringify({ claudeAiOauth: { accessToken: "sk-ant-oat01-host-oauth", refreshToken: "r", expiresAt: 1 } }));
    await fetch(`${base}/llm/anthropic/v1/messages`, { method: "POST", headers: { "x-api-key": PLACEHOLDER_KEY, "anthropic-beta": "tools-2024" }, body: "{}" });
    const got = fake.requests.at(-1)!;
    expect(got.headers.authorization).toBe("Bearer sk-ant-oat01-host-oauth");
    expect(got.headers["x-api-key"]).toBeUndefined();
    expect(got.headers["anthropic-beta"]).toBe("tools-2024,oauth-2025-04-20");
  });

  test("never-reflected: a provider that echoes the host's key (plain, base64, URL- or JSON-escaped) shows the sandbox none of it", async () => {
    const key = "sk-host-openai/key+Zq81xW";
    env.OPENAI_API_KEY = key;
    try {
      const r = await fetch(`${base}/llm/openai/v1/responses/echo-credentials`, { method: "POST", headers: { authorization: `Bearer ${PLACEHOLDER_KEY}` }, body: "{}" });
      expect(r.status).toBe(200);
      expect(fake.requests.at(-1)!.headers.authorization).toBe(`Bearer ${key}`);
      const body = (await r.json()) as { plain: string; b64: string; php: string; url: string };
      const inner = key.slice(1, -1);
      const shown = [body.plain, Buffer.from(body.b64, "base64").toString("latin1"), Buffer.from(body.php.replaceAll("\\/", "/"), "base64").toString("latin1"), decodeURIComponent(body.url), r.statusText, ...r.headers.values()];
      expect(shown.filter((s) => s.includes(inner) || s.includes(Buffer.from(`user:${key}`).toString("base64")))).toEqual([]);
      expect(r.headers.get("x-echo")).toBeNull();
    } finally {
      env.OPENAI_API_KEY = "sk-host-openai-key-123";
    }
  });

  test("SSE is streamed unbuffered: the first event arrives while the upstream still holds the rest", async () => {
    fake.hold = true;
    try {
      const r = await fetch(`${base}/llm/anthropic/v1/messages`, { method: "POST", body: JSON.stringify({ stream: true }) });
      expect(r.headers.get("content-type")).toContain("text/event-stream");
      const reader = r.body!.getReader();
      const first = await Promise.race([reader.read(), Bun.sleep(3000).then(() => "timeout" as const)]);
      expect(first).not.toBe("timeout");
      expect(new TextDecoder().decode((first as { value: Uint8Array }).value)).toContain('data: {"i":0}');
      fake.release();
      let rest = "";
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        rest += new TextDecoder().decode(value);
      }
      expect(rest).toContain("message_stop");
    } finally {
      fake.hold = false;
    }
  });

  test("unknown providers and path tricks are refused; a missing key says how to set one", async () => {
    expect((await fetch(`${base}/llm/evil/x`)).status).toBe(404);
    expect((await fetch(`${base}/other`)).status).toBe(404);
    // A path that cannot be taken as written is a 400, and never takes the handler down: the next request is answered.
    // (fetch itself turns %2e%2e into .. and resolves it: the unit test covers that form.)
    for (const bad of ["/llm/anthropic/%zz/x", "/llm/anthropic/v1/%", "/llm/anthropic/v1/messages?q=%E0%A4%A"]) {
      const r = await fetch(`${base}${bad}`);
      expect({ bad, status: r.status }).toEqual({ bad, status: 400 });
    }
    delete env.OPENAI_API_KEY;
    const r = await fetch(`${base}/llm/openai/v1/models`);
    expect(r.status).toBe(503);
    expect(((await r.json()) as { hint: string }).hint).toContain("sbx secret set OPENAI_API_KEY");
  });
});
