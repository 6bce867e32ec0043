// The egress decision: order (sandbox, global, built-in), ports, IP literals, the resolved-address check, and the 403 text.
import { describe, expect, test } from "bun:test";
import { BUILTIN_ALLOWLIST, blockedMessage, checkAddresses, compilePolicy, decide, parsePublished } from "../../../src/core/egress";

const none = new Set<string>();

describe("decision order", () => {
  test("the built-in default holds only api.anthropic.com", () => {
    expect([...BUILTIN_ALLOWLIST]).toEqual(["api.anthropic.com"]);
    const d = decide(compilePolicy({ sandbox: [], global: [] }), "api.anthropic.com", 443);
    expect(d).toMatchObject({ allow: true, source: "builtin", pattern: "api.anthropic.com" });
    expect(decide(compilePolicy({ sandbox: [], global: [] }), "example.org", 443)).toMatchObject({ allow: false, reason: "not-allowlisted" });
  });
  test("the sandbox list is consulted before the global list, then the default", () => {
    const p = compilePolicy({ sandbox: ["*.example.com"], global: ["a.example.com", "api.anthropic.com"] });
    expect(decide(p, "a.example.com", 443)).toMatchObject({ allow: true, source: "sandbox", pattern: "*.example.com" });
    expect(decide(p, "api.anthropic.com", 443)).toMatchObject({ allow: true, source: "global" });
    const g = compilePolicy({ sandbox: [], global: ["a.example.com"] });
    expect(decide(g, "A.Example.com.", 80)).toMatchObject({ allow: true, source: "global", host: "a.example.com" });
  });
  test("invalid stored patterns are skipped and reported, never widen the policy", () => {
    const p = compilePolicy({ sandbox: ["*", "*.com", "ok.example"], global: [] });
    expect(p.invalid).toEqual(["*", "*.com"]);
    expect(decide(p, "evil.com", 443).allow).toBe(false);
    expect(decide(p, "ok.example", 443).allow).toBe(true);
  });
  test("ports: 443 and 80 by default; other ports need a pattern that names them", () => {
    const p = compilePolicy({ sandbox: ["example.com", "db.example.com:5432"], global: [] });
    expect(decide(p, "example.com", 22)).toMatchObject({ allow: false, reason: "port-not-allowed", suggest: "example.com:22" });
    expect(decide(p, "db.example.com", 5432).allow).toBe(true);
    expect(decide(p, "db.example.com", 443)).toMatchObject({ allow: false, reason: "port-not-allowed" });
    expect(decide(p, "other.example", 8080)).toMatchObject({ allow: false, reason: "not-allowlisted", suggest: "other.example:8080" });
  });
  test("IP literals are refused unless that IP is allowlisted, whatever names are", () => {
    const p = compilePolicy({ sandbox: ["example.com", "10.0.0.0/8"], global: [] });
    expect(decide(p, "93.184.216.34", 443)).toMatchObject({ allow: false, reason: "ip-literal", suggest: "93.184.216.34" });
    expect(decide(p, "10.9.9.9", 443)).toMatchObject({ allow: true, ip: true });
    expect(decide(p, "0x0a.1", 443)).toMatchObject({ allow: true, host: "10.0.0.1" });
    expect(decide(p, "[::1]", 443)).toMatchObject({ allow: false, reason: "host-address", suggest: "[::1]:443" });
  });
  test("garbage hosts and ports are refused as invalid", () => {
    const p = compilePolicy({ sandbox: [], global: [] });
    expect(decide(p, "a b", 443)).toMatchObject({ allow: false, reason: "invalid-host", suggest: null });
    expect(decide(p, "api.anthropic.com", 0)).toMatchObject({ allow: false, reason: "invalid-host" });
  });
});

describe("after the decision: the resolved addresses", () => {
  const p = compilePolicy({ sandbox: ["internal.test", "127.0.0.1", "10.9.9.9", "172.16.5.0/24", "0.0.0.0:8080", "[::1]"], global: [] });
  test("a public address passes and is the one to connect to", () => {
    expect(checkAddresses(p, "x.test", ["93.184.216.34"], 443, none)).toEqual({ ok: true, address: "93.184.216.34" });
  });
  for (const [addr, kind] of [["10.0.0.5", "private"], ["169.254.169.254", "metadata"], ["100.64.1.1", "cgnat"], ["fe80::1", "link-local"], ["::ffff:192.168.0.1", "private"], ["224.0.0.1", "multicast"], ["64:ff9b::a09:909", "private"], ["2002:a09:909::1", "private"]] as const) {
    test(`${addr} (${kind}) is refused`, () => {
      expect(checkAddresses(p, "x.test", [addr], 443, none)).toMatchObject({ ok: false, reason: "internal-address", kind });
    });
  }
  test("the host's own loopback and unspecified addresses are never reached, in any form, allowlisted or not", () => {
    for (const addr of ["127.0.0.1", "127.0.0.2", "::1", "0.0.0.0", "::", "::ffff:127.0.0.1", "::127.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::1"]) {
      for (const port of [443, 8080]) expect({ addr, port, r: checkAddresses(p, "internal.test", [addr], port, none) }).toMatchObject({ addr, port, r: { ok: false, reason: "host-address" } });
    }
    // Loopback suggests publishing that service; the unspecified address suggests nothing.
    expect(checkAddresses(p, "x.test", ["127.0.0.1"], 5432, none)).toMatchObject({ suggest: "127.0.0.1:5432" });
    expect(checkAddresses(p, "x.test", ["0.0.0.0"], 5432, none)).toMatchObject({ suggest: null });
  });

  test("a published service of the host is reached at exactly that address and port, by its address or a name for it", () => {
    const pub = compilePolicy({ sandbox: ["db.test"], global: [], published: ["127.0.0.1:5432", "[::1]:6379", "bogus"] });
    expect([...pub.published]).toEqual(["127.0.0.1:5432", "[::1]:6379"]);
    expect(pub.invalid).toEqual(["bogus"]);
    expect(decide(pub, "127.0.0.1", 5432)).toMatchObject({ allow: true, source: "published" });
    expect(decide(pub, "::ffff:127.0.0.1", 5432)).toMatchObject({ allow: false }); // exactly as published, no other form
    expect(decide(pub, "[::1]", 6379)).toMatchObject({ allow: true });
    expect(decide(pub, "127.0.0.1", 5433)).toMatchObject({ allow: false, reason: "host-address" });
    expect(decide(pub, "127.0.0.2", 5432)).toMatchObject({ allow: false });
    expect(decide(pub, "0.0.0.0", 5432)).toMatchObject({ allow: false, suggest: null });
    expect(checkAddresses(pub, "db.test", ["127.0.0.1"], 5432, none)).toEqual({ ok: true, address: "127.0.0.1" });
    expect(checkAddresses(pub, "db.test", ["127.0.0.1"], 5433, none)).toMatchObject({ ok: false });
    expect(blockedMessage("demo", "127.0.0.1:5433", "x", "127.0.0.1:5433")).toContain("sbx publish demo 127.0.0.1:5433");
  });

  test("parsePublished: PORT, loopback ADDRESS:PORT; nothing else", () => {
    expect(["5432", "127.0.0.1:5432", "127.1.2.3:80", "[::1]:8080", "[0:0::1]:1"].map((x) => parsePublished(x))).toEqual([
      { ok: true, endpoint: "127.0.0.1:5432" },
      { ok: true, endpoint: "127.0.0.1:5432" },
      { ok: true, endpoint: "127.1.2.3:80" },
      { ok: true, endpoint: "[::1]:8080" },
      { ok: true, endpoint: "[::1]:1" },
    ]);
    for (const bad of ["0", "70000", "10.0.0.1:80", "0.0.0.0:80", "localhost:80", "[::]:80", "127.0.0.1", "a:b"]) expect({ bad, ok: parsePublished(bad).ok }).toEqual({ bad, ok: false });
  });
  test("another internal address passes only as that exact address on the allowlist (same port rules), never through a network or another form", () => {
    expect(checkAddresses(p, "internal.test", ["10.9.9.9"], 443, none)).toEqual({ ok: true, address: "10.9.9.9" });
    expect(checkAddresses(p, "internal.test", ["::ffff:10.9.9.9"], 443, none)).toMatchObject({ ok: true });
    expect(checkAddresses(p, "internal.test", ["10.9.9.9"], 8080, none)).toMatchObject({ ok: false, suggest: "internal.test@10.9.9.9:8080" });
    expect(checkAddresses(p, "internal.test", ["64:ff9b::a09:909"], 443, none)).toMatchObject({ ok: false, reason: "internal-address" });
    expect(checkAddresses(p, "internal.test", ["172.16.5.7"], 443, none)).toMatchObject({ ok: false, reason: "internal-address", suggest: "internal.test@172.16.5.7" });
  });
  test("one internal address among public ones refuses the whole name", () => {
    expect(checkAddresses(p, "x.test", ["93.184.216.34", "10.0.0.1"], 443, none)).toMatchObject({ ok: false, address: "10.0.0.1" });
  });
  test("the host's own public address is refused", () => {
    expect(checkAddresses(p, "x.test", ["203.0.114.7"], 443, new Set(["203.0.114.7"]))).toMatchObject({ ok: false, reason: "host-address" });
  });
  test("no addresses: refused", () => {
    expect(checkAddresses(p, "x.test", [], 443, none).ok).toBe(false);
  });
});

describe("texts", () => {
  test("the 403 body names what was blocked and the exact command", () => {
    const body = blockedMessage("demo", "example.org:443", "example.org is not on the allowlist", "example.org");
    expect(body).toContain("example.org:443");
    expect(body).toContain("sbx allow example.org --sandbox demo");
    expect(body.trim().split("\n")).toHaveLength(1);
  });
});

test("host.sbx.internal is the host's 127.0.0.1, for published services only", () => {
  const pub = compilePolicy({ sandbox: [], global: [], published: ["127.0.0.1:5432"] });
  expect(decide(pub, "host.sbx.internal", 5432)).toMatchObject({ allow: true, host: "127.0.0.1", source: "published" });
  expect(decide(pub, "HOST.sbx.internal.", 5433)).toMatchObject({ allow: false, reason: "host-address", suggest: "127.0.0.1:5433" });
});
