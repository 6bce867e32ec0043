// How a refused key check reads: each way GET /api/v1/users/me can fail becomes one SbxError with the site, what was wrong, what to do and its exit code; a key of another account is refused too.
import { describe, expect, test } from "bun:test";
import { checkZulipKey, keyRefusal } from "../../../src/chat/check";
import { ZulipError, type Fetch } from "../../../src/chat/zulip";
import { SbxError } from "../../../src/core/errors";

const CFG = { site: "https://acme.zulipchat.com", email: "sbx-bot@acme.zulipchat.com", apiKey: "k".repeat(32) };
const URL_ME = "https://acme.zulipchat.com/api/v1/users/me";

const reply = (status: number, body: unknown): Fetch => async () => new Response(typeof body === "string" ? body : JSON.stringify(body), { status });
const refused = (code: string, msg: string, status: number) => keyRefusal(new ZulipError(code, `GET /api/v1/users/me: ${msg}`, status, msg), CFG, 10_000);
const failure = (f: Fetch) => checkZulipKey(CFG, { fetch: f }).then(() => null, (e: unknown) => e as SbxError);

describe("keyRefusal", () => {
  test("a key the server refuses (401): permission, 77, says which bot and where to find the key", () => {
    const e = refused("INVALID_API_KEY", "Invalid API key", 401);
    expect(e.exitCode).toBe(77);
    expect(e.message).toBe("the Zulip server at https://acme.zulipchat.com refused the key for sbx-bot@acme.zulipchat.com (HTTP 401: Invalid API key)");
    expect(e.hint).toContain("Personal settings → Bots");
    expect(e.hint).toContain("Nothing was saved");
    expect(refused("UNAUTHORIZED", "Missing 'Authorization' header.", 401).exitCode).toBe(77);
  });

  test("another organisation's bot (wrong realm): config, 78, says to use the organisation's own address", () => {
    for (const status of [400, 401]) {
      const e = refused("BAD_REQUEST", "Account is not associated with this subdomain", status);
      expect(e.exitCode).toBe(78);
      expect(e.message).toBe(`sbx-bot@acme.zulipchat.com is not in the Zulip organisation at https://acme.zulipchat.com (HTTP ${status}: Account is not associated with this subdomain)`);
      expect(e.hint).toContain("--site");
    }
  });

  test("a deactivated bot or organisation: permission, each with its own fix", () => {
    expect(refused("USER_DEACTIVATED", "Account is deactivated", 401).hint).toContain("Reactivate");
    expect(refused("REALM_DEACTIVATED", "This organization has been deactivated", 401).message).toContain("organisation at https://acme.zulipchat.com is deactivated");
  });

  test("no answer: unavailable, 69, with the URL and the reason", () => {
    const refusedConn = Object.assign(new TypeError("Unable to connect"), { code: "ECONNREFUSED" });
    const e = keyRefusal(new ZulipError("NETWORK", "GET /api/v1/users/me: x", null, "x", refusedConn), CFG, 10_000);
    expect(e.exitCode).toBe(69);
    expect(e.message).toBe(`no answer from the Zulip server at ${URL_ME} (connection refused)`);
    const timeout = Object.assign(new Error("The operation timed out."), { name: "TimeoutError" });
    expect(keyRefusal(new ZulipError("NETWORK", "x", null, "timed out", timeout), CFG, 10_000).message).toBe(`no answer from the Zulip server at ${URL_ME} (no answer within 10 s)`);
  });

  test("a redirect is not followed with the key: config, says to give the address a browser ends at", () => {
    const redirect = Object.assign(new TypeError("UnexpectedRedirect fetching …"), { code: "UnexpectedRedirect" });
    const e = keyRefusal(new ZulipError("NETWORK", "x", null, "x", redirect), CFG, 10_000);
    expect(e.exitCode).toBe(78);
    expect(e.message).toContain("with a redirect");
  });
});

describe("checkZulipKey", () => {
  test("answers who the key belongs to", async () => {
    const me = await checkZulipKey(CFG, { fetch: reply(200, { result: "success", msg: "", user_id: 8, email: CFG.email, full_name: "sbx", is_bot: true }) });
    expect(me).toEqual({ userId: 8, email: CFG.email, deliveryEmail: null, fullName: "sbx", isBot: true });
  });

  test("asks GET /api/v1/users/me of the site with the bot's Basic auth, nothing else", async () => {
    const seen: { url: string; init: RequestInit }[] = [];
    await checkZulipKey(CFG, {
      fetch: async (url, init) => (seen.push({ url, init }), new Response(JSON.stringify({ result: "success", user_id: 8, email: CFG.email }))),
    });
    expect(seen.map((s) => [s.init.method, s.url])).toEqual([["GET", URL_ME]]);
    expect(new Headers(seen[0]!.init.headers).get("authorization")).toBe(`Basic ${Buffer.from(`${CFG.email}:${CFG.apiKey}`).toString("base64")}`);
    expect(seen[0]!.init.redirect).toBe("error");
  });

  test("a key that belongs to someone else is refused (78)", async () => {
    const e = await failure(reply(200, { result: "success", user_id: 9, email: "other-bot@acme.zulipchat.com" }));
    expect(e?.exitCode).toBe(78);
    expect(e?.message).toContain("belongs to other-bot@acme.zulipchat.com, not sbx-bot@acme.zulipchat.com");
  });

  test("a person's key matches on their login email (delivery_email)", async () => {
    const me = await checkZulipKey(CFG, { fetch: reply(200, { result: "success", user_id: 9, email: "user9@acme.zulipchat.com", delivery_email: CFG.email, is_bot: false }) });
    expect(me.isBot).toBe(false);
  });

  test("a site that is not Zulip (an HTML page, other JSON) is a config error; a 5xx is unavailable", async () => {
    const html = await failure(reply(200, "<html>hello</html>"));
    expect(html?.exitCode).toBe(78);
    expect(html?.message).toBe(`https://acme.zulipchat.com does not answer as a Zulip server (${URL_ME}: HTTP 200, not JSON)`);
    const json = await failure(reply(200, { hello: "world" }));
    expect(json?.message).toContain("JSON that is not Zulip's");
    const down = await failure(reply(502, "<html>bad gateway</html>"));
    expect(down?.exitCode).toBe(69);
    expect(down?.message).toContain("HTTP 502");
  });

  test("the server's refusal comes through the client as keyRefusal says", async () => {
    const e = await failure(reply(401, { result: "error", code: "INVALID_API_KEY", msg: "Invalid API key" }));
    expect(e?.exitCode).toBe(77);
    expect(e?.message).toContain("refused the key");
  });
});
