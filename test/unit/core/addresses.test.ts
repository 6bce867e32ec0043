// Address classification (loopback, private, link-local, CGNAT, multicast, metadata, mapped IPv6) and CIDR matching.
import { describe, expect, test } from "bun:test";
import { canonicalIp, cidrContains, classify, parseCidr, parseIPv4, parseIPv6, parseIp, type AddressKind } from "../../../src/core/addresses";

const KINDS: [string, AddressKind][] = [
  ["8.8.8.8", "public"],
  ["93.184.216.34", "public"],
  ["0.0.0.0", "unspecified"],
  ["0.1.2.3", "reserved"],
  ["127.0.0.1", "loopback"],
  ["127.255.255.254", "loopback"],
  ["10.1.2.3", "private"],
  ["172.16.0.1", "private"],
  ["172.31.255.255", "private"],
  ["172.32.0.1", "public"],
  ["192.168.0.1", "private"],
  ["169.254.1.1", "link-local"],
  ["169.254.169.254", "metadata"],
  ["169.254.170.2", "metadata"],
  ["100.100.100.200", "metadata"],
  ["100.64.0.1", "cgnat"],
  ["100.127.255.255", "cgnat"],
  ["100.128.0.1", "public"],
  ["224.0.0.1", "multicast"],
  ["239.255.255.250", "multicast"],
  ["255.255.255.255", "broadcast"],
  ["240.0.0.1", "reserved"],
  ["192.0.2.1", "documentation"],
  ["198.18.0.1", "benchmarking"],
  ["::", "unspecified"],
  ["::1", "loopback"],
  ["fe80::1", "link-local"],
  ["fd12:3456::1", "unique-local"],
  ["fc00::1", "unique-local"],
  ["fd00:ec2::254", "metadata"],
  ["ff02::1", "multicast"],
  ["2001:db8::1", "documentation"],
  ["2606:4700::1111", "public"],
  ["::ffff:127.0.0.1", "loopback"],
  ["::ffff:10.0.0.1", "private"],
  ["::ffff:169.254.169.254", "metadata"],
  ["::ffff:8.8.8.8", "public"],
  ["::127.0.0.1", "loopback"],
  ["64:ff9b::a9fe:a9fe", "metadata"],
  ["64:ff9b::808:808", "public"],
  ["2002:7f00:1::", "loopback"],
];

describe("classify", () => {
  for (const [addr, kind] of KINDS) test(`${addr} is ${kind}`, () => expect(classify(addr)).toBe(kind));
  test("rejects a non-address", () => expect(() => classify("example.com")).toThrow());
});

describe("parsing", () => {
  test("strict IPv4: no octal, hex, short or out-of-range forms", () => {
    for (const bad of ["01.2.3.4", "0x7f.0.0.1", "127.1", "256.0.0.1", "1.2.3", "1.2.3.4.5", "", "a.b.c.d"]) expect(parseIPv4(bad)).toBeNull();
    expect(parseIPv4("1.2.3.4")).toEqual(new Uint8Array([1, 2, 3, 4]));
  });
  test("IPv6 forms", () => {
    expect(canonicalIp("0:0:0:0:0:0:0:1")).toBe("::1");
    expect(canonicalIp("2001:DB8:0:0:1:0:0:1")).toBe("2001:db8::1:0:0:1");
    expect(canonicalIp("::ffff:7f00:1")).toBe("::ffff:127.0.0.1");
    expect(canonicalIp("[::1]")).toBe("::1");
    for (const bad of [":::", "1::2::3", "1:2:3:4:5:6:7:8:9", "fe80::1%eth0", "12345::", "::g"]) expect(parseIPv6(bad)).toBeNull();
  });
  test("parseIp tells names from addresses", () => {
    expect(parseIp("example.com")).toBeNull();
    expect(parseIp("::1")).not.toBeNull();
  });
});

describe("CIDR", () => {
  const CASES: [string, string, boolean][] = [
    ["10.0.0.0/8", "10.255.0.1", true],
    ["10.0.0.0/8", "11.0.0.0", false],
    ["100.64.0.0/10", "100.127.1.1", true],
    ["100.64.0.0/10", "100.128.0.0", false],
    ["192.168.1.128/25", "192.168.1.200", true],
    ["192.168.1.128/25", "192.168.1.100", false],
    ["0.0.0.0/0", "1.2.3.4", true],
    ["127.0.0.1", "127.0.0.1", true],
    ["127.0.0.1", "127.0.0.2", false],
    ["127.0.0.0/8", "::ffff:127.9.9.9", true],
    ["fe80::/10", "febf::1", true],
    ["fe80::/10", "fec0::1", false],
    ["::/0", "1.2.3.4", false],
  ];
  for (const [c, a, want] of CASES) {
    test(`${c} ${want ? "contains" : "does not contain"} ${a}`, () => expect(cidrContains(parseCidr(c)!, parseIp(a)!)).toBe(want));
  }
  test("host bits must be zero, prefix in range", () => {
    expect(parseCidr("10.0.0.1/8")).toBeNull();
    expect(parseCidr("10.0.0.0/33")).toBeNull();
    expect(parseCidr("::/129")).toBeNull();
    expect(parseCidr("10.0.0.0/08")).toBeNull();
  });
});
