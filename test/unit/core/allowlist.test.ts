// The allowlist matcher against a table: wildcards, IDNA, trailing dots, case, ports, IP literals, CIDRs, too-broad refusals.
import { describe, expect, test } from "bun:test";
import { parseIp } from "../../../src/core/addresses";
import { matchesAddress, matchesName, normalizeHost, parsePattern, validatePattern } from "../../../src/core/allowlist";
import { SbxError } from "../../../src/core/errors";

/** [pattern, request host, port, expected] — the host goes through normalizeHost as the proxy does. */
const MATCH: [string, string, number, boolean][] = [
  // exact
  ["example.com", "example.com", 443, true],
  ["example.com", "example.com", 80, true],
  ["example.com", "a.example.com", 443, false],
  ["example.com", "evilexample.com", 443, false],
  ["example.com", "example.com.evil.net", 443, false],
  ["example.com", "example.co", 443, false],
  // wildcard
  ["*.example.com", "a.example.com", 443, true],
  ["*.example.com", "a.b.example.com", 443, true],
  ["*.example.com", "example.com", 443, false],
  ["*.example.com", "evilexample.com", 443, false],
  ["*.example.com", "a.evilexample.com", 443, false],
  ["*.example.com", "example.com.evil.net", 443, false],
  ["*.example.com", ".example.com", 443, false],
  // case and trailing dot
  ["EXAMPLE.com", "example.com", 443, true],
  ["example.com", "ExAmPlE.CoM", 443, true],
  ["example.com", "example.com.", 443, true],
  ["example.com.", "example.com", 443, true],
  ["*.Example.COM", "API.example.com.", 443, true],
  ["example.com", "example.com..", 443, false],
  // IDNA
  ["bücher.de", "xn--bcher-kva.de", 443, true],
  ["xn--bcher-kva.de", "BÜCHER.de", 443, true],
  ["*.bücher.de", "shop.xn--bcher-kva.de", 443, true],
  ["bücher.de", "bucher.de", 443, false],
  // ports
  ["example.com", "example.com", 8443, false],
  ["example.com", "example.com", 22, false],
  ["example.com:8443", "example.com", 8443, true],
  ["example.com:8443", "example.com", 443, false],
  ["*.example.com:5432", "db.example.com", 5432, true],
  ["*.example.com:5432", "db.example.com", 443, false],
  // IP literals: a name pattern never matches an IP, and an IP pattern never matches a name
  ["example.com", "93.184.216.34", 443, false],
  ["93.184.216.34", "example.com", 443, false],
  ["93.184.216.34", "93.184.216.34", 443, true],
  ["93.184.216.34", "93.184.216.35", 443, false],
  ["10.0.0.1", "167772161", 443, true],
  ["10.0.0.1", "0xa.1", 80, true],
  ["10.0.0.1:8080", "10.0.0.1", 8080, true],
  ["10.0.0.1:8080", "10.0.0.1", 8081, false],
  ["2001:db8::1", "[2001:db8::1]", 443, true],
  ["[2001:db8::1]:8443", "[2001:db8:0:0:0:0:0:1]", 8443, true],
  // CIDR
  ["10.0.0.0/8", "10.200.3.4", 443, true],
  ["10.0.0.0/8", "11.0.0.1", 443, false],
  ["192.168.1.0/24:5432", "192.168.1.77", 5432, true],
  ["192.168.1.0/24:5432", "192.168.2.77", 5432, false],
  ["fd00::/8", "[fd12:3456::1]", 443, true],
  ["fd00::/8", "[fe80::1]", 443, false],
  ["10.0.0.0/8", "[::ffff:10.0.0.1]", 443, true],
];

function matches(patternText: string, rawHost: string, port: number): boolean {
  const r = parsePattern(patternText);
  if (!r.ok) throw new Error(`pattern ${patternText} refused: ${r.reason}`);
  const host = normalizeHost(rawHost);
  if (host === null) return false;
  const ip = parseIp(host);
  return ip ? matchesAddress(r.pattern, ip, port) : matchesName(r.pattern, host, port);
}

describe("allowlist-exact: pattern matching", () => {
  test("the table has at least 40 cases", () => expect(MATCH.length).toBeGreaterThanOrEqual(40));
  for (const [p, h, port, want] of MATCH) {
    test(`${p} ${want ? "matches" : "does not match"} ${h}:${port}`, () => expect(matches(p, h, port)).toBe(want));
  }
});

const REFUSED: [string, RegExp][] = [
  ["*", /every host/],
  ["*.com", /top-level/],
  ["*.uk", /top-level/],
  ["*.co.uk", /public suffix/],
  ["*.com.au", /public suffix/],
  ["*.co.zz", /public registry/],
  ["*.github.io", /public suffix/],
  ["0.0.0.0/0", /too broad/],
  ["::/0", /too broad/],
  ["2000::/7", /too broad/],
  ["8.0.0.0/7", /too broad/],
  ["a.*.example.com", /wildcard/],
  ["*example.com", /wildcard/],
  ["*.*.example.com", /one leading/],
  ["example.com:0", /not a port/],
  ["example.com:65536", /not a port/],
  ["example.com:http", /not a port/],
  ["10.0.0.1/8", /host bits/],
  ["999.1.1.1", /not a valid/],
  ["exa mple.com", /not a valid/],
  ["-bad.example.com", /not a valid/],
  ["", /empty/],
  ["[::1", /unclosed/],
];

describe("too-broad and malformed patterns are refused with a reason", () => {
  for (const [p, why] of REFUSED) {
    test(`refuses '${p}'`, () => {
      const r = parsePattern(p);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.reason).toMatch(why);
    });
  }
  test("validatePattern throws a usage error (exit 64) with a hint", () => {
    let err: unknown;
    try {
      validatePattern("*.com");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SbxError);
    expect((err as SbxError).exitCode).toBe(64);
    expect((err as SbxError).message).toContain("*.com");
    expect((err as SbxError).hint).toContain("*.example.com");
  });
});

describe("canonical form", () => {
  const CANON: [string, string][] = [
    ["Example.COM.", "example.com"],
    ["*.Bücher.de", "*.xn--bcher-kva.de"],
    ["EXAMPLE.com:8443", "example.com:8443"],
    ["0xa.1", "10.0.0.1"],
    ["10.1:8080", "10.0.0.1:8080"],
    ["2001:db8:0:0:0:0:0:1", "2001:db8::1"],
    ["[2001:db8:0::1]:443", "[2001:db8::1]:443"],
    ["10.0.0.0/8", "10.0.0.0/8"],
    ["10.1.2.3/32", "10.1.2.3"],
    ["FD00::/8", "fd00::/8"],
    ["[fd00::/8]:22", "[fd00::/8]:22"],
  ];
  for (const [input, want] of CANON) {
    test(`${input} → ${want}`, () => {
      const r = parsePattern(input);
      expect(r.ok && r.canonical).toBe(want);
    });
  }
});

describe("normalizeHost", () => {
  const CASES: [string, string | null][] = [
    ["API.Anthropic.com.", "api.anthropic.com"],
    ["ümlaut.com", "xn--mlaut-jva.com"],
    ["[::FFFF:7f00:1]", "::ffff:127.0.0.1"],
    ["2130706433", "127.0.0.1"],
    ["a b", null],
    ["", null],
    ["a..b", null],
    ["1.2.3.4.5", null],
    ["example.com:443", null],
  ];
  for (const [input, want] of CASES) test(`${JSON.stringify(input)} → ${want}`, () => expect(normalizeHost(input)).toBe(want));
});

describe("the host's own services are published, never allowlisted", () => {
  for (const p of ["127.0.0.1", "127.0.0.1:5432", "0x7f.1", "2130706433:80", "127.0.0.0/8", "127.5.0.0/16", "[::1]:8080", "::1", "0.0.0.0", "0.0.0.0:8080", "0.0.0.0/8", "::", "[::ffff:127.0.0.1]:22", "::ffff:7f00:0/104", "[::127.0.0.1]", "localhost", "localhost:3000", "app.localhost"]) {
    test(p, () => {
      const r = parsePattern(p);
      expect(r.ok).toBe(false);
      expect(!r.ok && r.reason).toContain("sbx publish NAME 127.0.0.1:PORT");
    });
  }
});

describe("an IPv6 network that carries IPv4 is as broad as the IPv4 network it stands for", () => {
  for (const p of ["::ffff:0:0/96", "::ffff:0:0/100", "64:ff9b::/96", "2002::/16", "2002::/20", "2001::/32", "64:ff9b:1::/48", "::/96", "::/64"]) {
    test(`${p} is refused`, () => {
      const r = parsePattern(p);
      expect(r.ok).toBe(false);
    });
  }
  for (const p of ["::ffff:10.0.0.0/104", "2002:a00::/24", "64:ff9b::a00:0/104"]) {
    test(`${p} (an IPv4 /8) is taken`, () => expect(parsePattern(p).ok).toBe(true));
  }
});
