// Gemini CLI's Google sign-in (~/.gemini/oauth_creds.json): its access token goes to Code Assist while it is valid; an
// expired one is no credential (Gemini CLI on the host renews it), and an API key is a route of its own.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentialFor, hasGeminiSignIn, knownSecretValues } from "../../../src/llm/keys";
import { mergeSet } from "../../../shims/agent-setup";

const dir = mkdtempSync(join(tmpdir(), "sbx-gemini-oauth-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const creds = (name: string, body: unknown) => {
  const f = join(dir, name);
  writeFileSync(f, JSON.stringify(body));
  return f;
};

describe("the Code Assist route's credential", () => {
  test("a valid access token is the bearer; its tokens are known secrets (redacted wherever sbx prints)", () => {
    const f = creds("ok.json", { access_token: "ya29.host-access", refresh_token: "1//host-refresh", expiry_date: Date.now() + 3_600_000 });
    expect(credentialFor("codeassist", { env: {}, geminiOauthFile: f })).toEqual({ headers: { authorization: "Bearer ya29.host-access" }, source: "gemini-oauth", kind: "google-sign-in" });
    expect(knownSecretValues({ env: {}, geminiOauthFile: f })).toEqual(expect.arrayContaining(["ya29.host-access", "1//host-refresh"]));
    expect(hasGeminiSignIn(f)).toBe(true);
  });

  test("expired, or within a minute of it: no credential, though the sign-in is there", () => {
    const f = creds("old.json", { access_token: "ya29.old", expiry_date: Date.now() + 30_000 });
    expect(credentialFor("codeassist", { env: {}, geminiOauthFile: f })).toBeUndefined();
    expect(hasGeminiSignIn(f)).toBe(true);
    expect(hasGeminiSignIn(join(dir, "missing.json"))).toBe(false);
  });
});

describe("mergeSet (the settings the host's login decides)", () => {
  test("sets what it names over what was there, keeps the rest", () => {
    expect(mergeSet({ security: { auth: { selectedType: "gemini-api-key", x: 1 } }, ui: { theme: "d" } }, { security: { auth: { selectedType: "oauth-personal" } } })).toEqual({
      security: { auth: { selectedType: "oauth-personal", x: 1 } },
      ui: { theme: "d" },
    });
    expect(mergeSet("not an object", { a: 1 })).toEqual({ a: 1 });
  });
});
