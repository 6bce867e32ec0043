// Rules that see requests (core/rules.ts, judged through core/egress.ts): an allow for some methods and paths, a deny
// that carves requests out of any allow, read-only, each judged on the canonical path the upstream acts on.
import { describe, expect, test } from "bun:test";
import { compilePolicy, decide, type PolicyLists } from "../../../src/core/egress";
import { judgeRequest, ruleProblem, type Rule } from "../../../src/core/rules";
import { checkPolicy } from "../../../src/core/policy-check";

const rule = (r: Partial<Rule> & Pick<Rule, "effect" | "host">): Rule => ({ methods: null, paths: null, source: "sandbox", ...r });

function verdict(lists: PolicyLists, host: string, method: string, target: string, port = 443) {
  const p = compilePolicy(lists);
  const d = decide(p, host, port);
  if (!d.allow) return { ok: false as const, reason: d.reason };
  if (!d.requests) return { ok: true as const, by: d.pattern };
  return judgeRequest(p.rules, { host, port, method, target }, d.wholeHost);
}

describe("l7-canonical-path: a rule is judged on the path the upstream will act on", () => {
  const lists: PolicyLists = { sandbox: [], global: [], rules: [rule({ effect: "allow", host: "api.github.com", methods: ["GET", "HEAD"], paths: ["/repos/acme/**"] })] };
  test("inside the path: allowed; the host alone is reachable only for it", () => {
    expect(verdict(lists, "api.github.com", "GET", "/repos/acme/app/pulls?state=open")).toMatchObject({ ok: true, path: "/repos/acme/app/pulls", query: "state=open" });
    expect(verdict(lists, "api.github.com", "GET", "/repos/acme")).toMatchObject({ ok: true });
    expect(verdict(lists, "api.github.com", "POST", "/repos/acme/app")).toMatchObject({ ok: false, reason: "request-not-allowed" });
    expect(verdict(lists, "api.github.com", "GET", "/repos/other/app")).toMatchObject({ ok: false, reason: "request-not-allowed" });
    expect(verdict(lists, "api.github.com", "GET", "/repos/acmecorp/app")).toMatchObject({ ok: false, reason: "request-not-allowed" });
  });
  test("every spelling that leaves the path, or that servers read two ways, is refused", () => {
    for (const t of [
      "/repos/acme/../other/app",
      "/repos/acme/%2e%2e/other/app",
      "/repos/acme/%2E%2E/other",
      "/repos/acme/.%2e/other",
      "/repos/acme%2f..%2fother",
      "/repos/acme/..;/other",
      "/repos/acme;x/../other",
      "/repos\\acme\\..\\other",
      "/repos/acme%5c..%5cother",
      "//repos/acme/app",
      "/repos//acme/app",
      "/repos/acme/./app",
      "/repos/acme/%00/app",
      "/repos/acme/app#x",
    ]) {
      const v = verdict(lists, "api.github.com", "GET", t);
      expect({ t, ok: v.ok }).toEqual({ t, ok: false });
    }
  });
  test("a %-escape of an ordinary character is read as the character: the canonical path is what matches", () => {
    expect(verdict(lists, "api.github.com", "GET", "/repos/%61cme/app")).toMatchObject({ ok: true, path: "/repos/acme/app" });
    expect(verdict(lists, "api.github.com", "GET", "/repos/%6fther/app")).toMatchObject({ ok: false });
  });
});

describe("l7-deny-carves: a deny refuses what it covers, whatever allows the host", () => {
  test("a whole-host allow with a deny for DELETE: GET goes, DELETE is refused with the rule and its removal", () => {
    const lists: PolicyLists = { sandbox: ["api.github.com"], global: [], rules: [rule({ effect: "deny", host: "api.github.com", methods: ["DELETE"] })] };
    expect(decide(compilePolicy(lists), "api.github.com", 443)).toMatchObject({ allow: true, requests: true });
    expect(verdict(lists, "api.github.com", "GET", "/repos/acme/app")).toMatchObject({ ok: true, by: "api.github.com" });
    const v = verdict(lists, "api.github.com", "DELETE", "/repos/acme/app");
    expect(v).toMatchObject({ ok: false, reason: "denied-by-rule", rule: "deny DELETE any path on api.github.com" });
    expect((v as { fix: string }).fix).toBe("sbx deny api.github.com --method DELETE --remove");
    // Method case does not dodge it.
    expect(verdict(lists, "api.github.com", "delete", "/repos/acme/app")).toMatchObject({ ok: false });
  });
  test("a global deny refuses a sandbox's allow too; its fix says --global", () => {
    const lists: PolicyLists = { sandbox: ["api.example.com"], global: [], rules: [rule({ effect: "deny", host: "api.example.com", paths: ["/admin/**"], source: "global" })] };
    const v = verdict(lists, "api.example.com", "GET", "/admin/users");
    expect(v).toMatchObject({ ok: false, reason: "denied-by-rule" });
    expect((v as { fix: string }).fix).toContain("--global");
    expect(verdict(lists, "api.example.com", "GET", "/adminx")).toMatchObject({ ok: true });
  });
  test("a deny on a wildcard covers every subdomain; a host with no rule is not judged", () => {
    const lists: PolicyLists = { sandbox: ["*.example.com", "other.org"], global: [], rules: [rule({ effect: "deny", host: "*.example.com", methods: ["POST"] })] };
    expect(verdict(lists, "a.b.example.com", "POST", "/x")).toMatchObject({ ok: false });
    expect(decide(compilePolicy(lists), "other.org", 443)).toMatchObject({ allow: true, requests: false });
  });
  test("an allow rule beside a whole-host allow changes nothing: the host's requests are not judged", () => {
    const lists: PolicyLists = { sandbox: ["api.example.com"], global: [], rules: [rule({ effect: "allow", host: "api.example.com", methods: ["GET"] })] };
    expect(decide(compilePolicy(lists), "api.example.com", 443)).toMatchObject({ allow: true, requests: false });
  });
});

describe("l7-read-only and rule shapes", () => {
  test("read-only is GET, HEAD and OPTIONS", () => {
    const lists: PolicyLists = { sandbox: [], global: [], rules: [rule({ effect: "allow", host: "registry.npmjs.org", methods: ["GET", "HEAD", "OPTIONS"] })] };
    for (const m of ["GET", "HEAD", "OPTIONS"]) expect(verdict(lists, "registry.npmjs.org", m, "/left-pad")).toMatchObject({ ok: true });
    for (const m of ["PUT", "POST", "DELETE", "PATCH"]) expect(verdict(lists, "registry.npmjs.org", m, "/left-pad")).toMatchObject({ ok: false, reason: "request-not-allowed" });
  });
  test("a rule with a port allows that port only; without one, 443 and 80", () => {
    const lists: PolicyLists = { sandbox: [], global: [], rules: [rule({ effect: "allow", host: "api.example.com:8443", methods: ["GET"] })] };
    expect(decide(compilePolicy(lists), "api.example.com", 8443)).toMatchObject({ allow: true });
    expect(decide(compilePolicy(lists), "api.example.com", 443)).toMatchObject({ allow: false });
  });
  test("what cannot be a rule is said", () => {
    expect(ruleProblem({ effect: "allow", host: "*", methods: ["GET"], paths: null })).toContain("every host");
    expect(ruleProblem({ effect: "allow", host: "API.example.com", methods: ["GET"], paths: null })).toContain("canonical");
    expect(ruleProblem({ effect: "allow", host: "a.example.com", methods: null, paths: null })).toContain("names methods or paths");
    expect(ruleProblem({ effect: "allow", host: "a.example.com", methods: null, paths: ["/a/../b"] })).toContain("'..'");
    expect(ruleProblem({ effect: "allow", host: "a.example.com", methods: null, paths: ["/a/**/b"] })).toContain("last segment");
    expect(ruleProblem({ effect: "allow", host: "a.example.com", methods: null, paths: ["/a?x=1"] })).not.toBeNull();
    expect(ruleProblem({ effect: "deny", host: "a.example.com", methods: ["DELETE"], paths: ["/v1/*/items/**"] })).toBeNull();
  });
});

describe("policy check (the dry run) says what decided and how to change it", () => {
  test("allowed by a rule, refused by a deny, refused for want of a rule, not on any list", () => {
    const lists: PolicyLists = {
      sandbox: [],
      global: ["api.example.com"],
      rules: [rule({ effect: "allow", host: "api.github.com", methods: ["GET"], paths: ["/repos/acme/**"] }), rule({ effect: "deny", host: "api.example.com", methods: ["DELETE"], source: "global" })],
    };
    const p = compilePolicy(lists);
    expect(checkPolicy(p, { host: "api.github.com", port: 443, method: "GET", target: "/repos/acme/x" }, "demo")).toMatchObject({ allowed: true, judged: true, decidedBy: { kind: "rule", source: "sandbox", text: "allow GET /repos/acme/** on api.github.com" } });
    expect(checkPolicy(p, { host: "api.github.com", port: 443, method: "PUT", target: "/repos/acme/x" }, "demo")).toMatchObject({ allowed: false, reason: "request-not-allowed", fix: "sbx allow api.github.com --method PUT --path '/repos/acme/x' --sandbox demo" });
    expect(checkPolicy(p, { host: "api.example.com", port: 443, method: "DELETE", target: "/x" }, "demo")).toMatchObject({ allowed: false, reason: "denied-by-rule", fix: "sbx deny api.example.com --method DELETE --remove --global" });
    expect(checkPolicy(p, { host: "nope.example.org", port: 443 }, "demo")).toMatchObject({ allowed: false, reason: "not-allowlisted", fix: "sbx allow nope.example.org --sandbox demo" });
    expect(checkPolicy(p, { host: "api.example.com", port: 443 }, null)).toMatchObject({ allowed: true, judged: true, decidedBy: { kind: "pattern", source: "global" } });
  });
});
