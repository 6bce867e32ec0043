// The CLI's half of rules and the dry run: what `sbx allow|deny HOST --method … --path … [--read-only] [--remove]` asks
// for, and what `sbx policy check TARGET` names (a URL's path as written, never as a URL parser resolves it).
import { describe, expect, test } from "bun:test";
import { ruleSpecsOf } from "../../../src/cli/commands/rule";
import { checkTarget } from "../../../src/cli/commands/policy";

describe("sbx allow|deny with a rule's flags", () => {
  test("flags make a rule per host; none is a plain allow or deny", () => {
    expect(ruleSpecsOf("allow", ["api.github.com"], {})).toBeNull();
    expect(ruleSpecsOf("allow", ["api.github.com"], { method: ["get,head"], path: ["/repos/acme/**"] })).toEqual([{ effect: "allow", host: "api.github.com", methods: ["GET", "HEAD"], paths: ["/repos/acme/**"] }]);
    expect(ruleSpecsOf("allow", ["a.example.com", "b.example.com"], { readOnly: true })).toEqual([
      { effect: "allow", host: "a.example.com", methods: ["GET", "HEAD", "OPTIONS"], paths: null },
      { effect: "allow", host: "b.example.com", methods: ["GET", "HEAD", "OPTIONS"], paths: null },
    ]);
    expect(ruleSpecsOf("deny", ["api.github.com"], { method: ["DELETE"] })).toEqual([{ effect: "deny", host: "api.github.com", methods: ["DELETE"], paths: null }]);
  });
  test("what cannot be meant is said with the fix", () => {
    expect(() => ruleSpecsOf("allow", ["a.example.com"], { readOnly: true, method: ["POST"] })).toThrow(/--read-only is GET, HEAD and OPTIONS/);
    expect(() => ruleSpecsOf("allow", [], { method: ["GET"] })).toThrow(/which host/);
    expect(() => ruleSpecsOf("allow", ["a.example.com"], { path: ["v1/**"] })).toThrow(/starts with \//);
    expect(() => ruleSpecsOf("allow", ["a.example.com"], { method: ["GE T"] })).toThrow(/not an HTTP method/);
    expect(() => ruleSpecsOf("deny", ["a.example.com"], { remove: true })).toThrow(/--remove takes away a rule/);
    expect(() => ruleSpecsOf("allow", [], { preset: "npm", readOnly: true })).toThrow(/--preset names whole hosts/);
  });
});

describe("sbx policy check TARGET", () => {
  test("host, host:port, [v6]:port and URLs; a URL's path stays as written", () => {
    expect(checkTarget("api.github.com", undefined)).toEqual({ host: "api.github.com", port: 443 });
    expect(checkTarget("api.github.com:8443", "/x")).toEqual({ host: "api.github.com", port: 8443, target: "/x" });
    expect(checkTarget("[2001:db8::1]:80", undefined)).toEqual({ host: "2001:db8::1", port: 80 });
    expect(checkTarget("http://example.com/a/../b?x=1", undefined)).toEqual({ host: "example.com", port: 80, target: "/a/../b?x=1" });
    expect(checkTarget("https://example.com", undefined)).toEqual({ host: "example.com", port: 443 });
    expect(() => checkTarget("https://example.com/a", "/b")).toThrow(/drop --path/);
    expect(() => checkTarget("not a host", undefined)).toThrow(/not HOST/);
  });
});
