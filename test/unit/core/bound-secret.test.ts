// secret-bound, the pure rule: which secrets a request may carry, where their placeholders are swapped, what is said.
import { describe, expect, test } from "bun:test";
import { bindingProblem, boundTo, hostPatternProblem, reflectionPairs, swapRequest, textBody, type BoundSecret, type BindingSpec } from "../../../src/core/bound-secret";

const P = "PLACEHOLDER1234567890";
const S: BoundSecret & { placeholder: string } = { name: "TOK", hosts: ["api.test", "*.up.test"], rules: [{ methods: ["GET"], path: "/v1/**" }], header: null, inBody: false, placeholder: P };
const values = new Map([["TOK", "VALUEVALUE1234567890"]]);

describe("secret-bound (pure)", () => {
  test("hosts as the allowlist matches them: exact, and *. for subdomains only", () => {
    expect(["api.test", "a.up.test", "a.b.up.test", "up.test", "evilapi.test", "api.test.evil"].filter((h) => boundTo(S, h))).toEqual(["api.test", "a.up.test", "a.b.up.test"]);
  });
  test("a secret is bound to names, never to addresses or a port", () => {
    expect(hostPatternProblem("10.0.0.0/8")).toContain("address");
    expect(hostPatternProblem("api.test:8443")).toContain("port");
    expect(hostPatternProblem("api.test")).toBeNull();
  });
  test("in scope: header values and the query swapped, the body only with inBody and a text type", () => {
    const r = swapRequest([S], values, { method: "GET", host: "api.test", target: `/v1/x?k=${S.placeholder}&a=1`, headers: [["X-Key", S.placeholder], ["Content-Type", "application/json"]] });
    expect(r.target).toBe("/v1/x?k=VALUEVALUE1234567890&a=1");
    expect(r.headers).toEqual([["X-Key", "VALUEVALUE1234567890"], ["Content-Type", "application/json"]]);
    expect(r.bodyPairs).toEqual([]);
    expect(r.uses).toEqual([{ name: "TOK", action: "used", reason: null }]);
    const b = swapRequest([{ ...S, inBody: true }], values, { method: "GET", host: "api.test", target: "/v1/x", headers: [["Content-Type", "application/json"]] });
    expect(b.bodyPairs).toEqual([{ from: S.placeholder, to: "VALUEVALUE1234567890" }]);
    expect(textBody("application/octet-stream")).toBe(false);
    expect(textBody("application/vnd.api+json; charset=utf-8")).toBe(true);
  });
  test("the header template is added only when the request lacks that header", () => {
    const h = { ...S, header: { name: "Authorization", template: "Bearer {}" } };
    expect(swapRequest([h], values, { method: "GET", host: "api.test", target: "/v1", headers: [] }).headers).toEqual([["Authorization", "Bearer VALUEVALUE1234567890"]]);
    expect(swapRequest([h], values, { method: "GET", host: "api.test", target: "/v1", headers: [["authorization", "Basic x"]] }).headers).toEqual([["authorization", "Basic x"]]);
  });
  test("out of scope (host, method, path, unreadable target, no value): unswapped, and said with why", () => {
    const cases: [string, string, string, Map<string, string>][] = [
      ["other.test", "GET", "/v1/x", values],
      ["api.test", "POST", "/v1/x", values],
      ["api.test", "GET", "/v2/x", values],
      ["api.test", "GET", "/v1/%2e%2e/v2", values],
      ["api.test", "GET", "/v1/x", new Map()],
    ];
    for (const [host, method, target, v] of cases) {
      const r = swapRequest([S], v, { method, host, target, headers: [["X-Key", S.placeholder]] });
      expect(r.headers).toEqual([["X-Key", S.placeholder]]);
      expect(r.uses.map((u) => u.action)).toEqual(["outside"]);
      expect(r.uses[0]!.reason).toBeTruthy();
    }
  });
  test("a response's values turn back into placeholders: plain first, then its encoded spellings", () => {
    const same = { ...S, placeholder: "PLACEHOLDR1234567890" };
    const pairs = reflectionPairs([same], values);
    expect(pairs[0]).toEqual({ from: "VALUEVALUE1234567890", to: "PLACEHOLDR1234567890" });
    expect(pairs.map((p) => p.from)).toContain(Buffer.from("VALUEVALUE1234567890").toString("base64").slice(0, 26));
  });
  test("a placeholder not as long as the value (the value changed since): masked with '*', the answer's length kept", () => {
    expect(reflectionPairs([S], values)[0]).toEqual({ from: "VALUEVALUE1234567890", to: "*".repeat(20) });
  });
});

describe("secret-bound: a sandbox's own placeholders do not trip the push scan; every real secret still does", () => {
  test("the placeholder whole is passed over; a longer key starting with it, another key, an encoded real key are found", async () => {
    const { exemptExact, SECRET_PATTERNS, scanLine } = await import("../../../src/core/secrets");
    const placeholder = "sk_live_Ab3dEf6hIj9kLm2nOp5qRs8t";
    const real = "sk_live_Zz9yXx8wVv7uTt6sSr5qQp4o";
    const ps = exemptExact(SECRET_PATTERNS, [placeholder]);
    expect(scanLine(`STRIPE_KEY=${placeholder}`, SECRET_PATTERNS)?.id).toBe("stripe-key");
    expect(scanLine(`STRIPE_KEY=${placeholder}`, ps)).toBeUndefined();
    expect(scanLine(`key: "${placeholder}", other: "${real}"`, ps)?.id).toBe("stripe-key");
    expect(scanLine(`${placeholder}EXTRA`, ps)?.id).toBe("stripe-key");
    expect(scanLine(Buffer.from(`k=${real}`).toString("base64"), ps)?.id).toBe("stripe-key");
    expect(scanLine(Buffer.from(`k=${placeholder}`).toString("base64"), ps)).toBeUndefined();
  });
});

describe("secret-bound: the variable inside is never one sbx sets itself", () => {
  test("a proxy, LLM, trust or JVM variable is refused as --env; an ordinary name is not", () => {
    const spec = (env: string | null): BindingSpec => ({ hosts: ["api.example.com"], rules: [{ methods: ["GET"], path: "/**" }], header: null, env, npmrc: false, inBody: false, source: { kind: "vault" } });
    for (const v of ["HTTPS_PROXY", "https_proxy", "NO_PROXY", "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "JAVA_TOOL_OPTIONS", "ANTHROPIC_BASE_URL", "SBX_BRIDGE_SOCKET", "PATH", "NPM_CONFIG_GLOBALCONFIG"]) {
      expect({ v, why: bindingProblem(spec(v)) }).toEqual({ v, why: `--env ${v}: sbx sets that variable itself` });
    }
    expect(bindingProblem(spec("STRIPE_API_KEY"))).toBeNull();
    expect(bindingProblem(spec(null))).toBeNull();
  });
});

// A client given `https://user:$TOKEN@host/…` (pip's index URL, git's remote, `curl -u`, npm's `_auth`) sends the
// placeholder inside HTTP Basic credentials: base64 of `user:placeholder`. The upstream decodes them, so that is where
// the placeholder is judged and swapped, and the credentials the proxy made are what an answer must never show back.
describe("secret-bound: a placeholder inside HTTP Basic credentials is swapped where the upstream reads it", () => {
  const b64 = (s: string) => Buffer.from(s, "latin1").toString("base64");
  test("in scope: the credentials carry the value, and an echo of them turns back into the sandbox's", () => {
    const r = swapRequest([S], values, { method: "GET", host: "api.test", target: "/v1/simple/", headers: [["Authorization", `Basic ${b64(`__token__:${P}`)}`]] });
    expect(r.headers).toEqual([["Authorization", `Basic ${b64("__token__:VALUEVALUE1234567890")}`]]);
    expect(r.uses).toEqual([{ name: "TOK", action: "used", reason: null }]);
    expect(r.reflect).toEqual([{ from: b64("__token__:VALUEVALUE1234567890"), to: b64(`__token__:${P}`) }]);
    // As the user name too, and in any case of the scheme's name.
    const u = swapRequest([S], values, { method: "GET", host: "api.test", target: "/v1/x", headers: [["authorization", `basic  ${b64(`${P}:x-oauth-basic`)}`]] });
    expect(u.headers).toEqual([["authorization", `Basic ${b64("VALUEVALUE1234567890:x-oauth-basic")}`]]);
  });
  test("out of scope (another host, a path outside): the credentials go as they are, and the use is said as outside", () => {
    for (const [host, target] of [["other.test", "/v1/x"], ["api.test", "/v2/x"]] as const) {
      const cred = `Basic ${b64(`u:${P}`)}`;
      const r = swapRequest([S], values, { method: "GET", host, target, headers: [["Authorization", cred]] });
      expect(r.headers).toEqual([["Authorization", cred]]);
      expect(r.uses.map((x) => x.action)).toEqual(["outside"]);
      expect(r.reflect).toEqual([]);
    }
  });
  test("only a header that is Basic credentials is decoded: another header's base64, or text that only looks like it, stays", () => {
    const other = b64(`u:${P}`);
    const r = swapRequest([S], values, { method: "GET", host: "api.test", target: "/v1/x", headers: [["X-Data", `Basic ${other}`], ["Authorization", "Basic not*base64"]] });
    expect(r.headers).toEqual([["X-Data", `Basic ${other}`], ["Authorization", "Basic not*base64"]]);
    expect(r.uses).toEqual([]);
  });
});
