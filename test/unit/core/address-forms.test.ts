// Every textual form of every special address: the classifier, the decision and the address check agree that it is
// not public, whatever form the sandbox writes it in (decimal, hex, octal, short, IPv6 forms that carry IPv4,
// brackets), and no allowlist pattern written in any of those forms reaches the host's own services.
import { describe, expect, test } from "bun:test";
import { classify, parseIp } from "../../../src/core/addresses";
import { normalizeHost, parsePattern } from "../../../src/core/allowlist";
import { checkAddresses, compilePolicy, decide } from "../../../src/core/egress";

const SPECIAL: [string, string][] = [
  ["127.0.0.1", "loopback"],
  ["127.255.1.2", "loopback"],
  ["0.0.0.0", "unspecified"],
  ["10.1.2.3", "private"],
  ["172.16.0.9", "private"],
  ["192.168.1.1", "private"],
  ["169.254.169.254", "metadata"],
  ["169.254.7.7", "link-local"],
  ["100.64.0.1", "cgnat"],
];

const oct = (a: number[]) => a.map((n) => `0${n.toString(8)}`).join(".");
const hexEach = (a: number[]) => a.map((n) => `0x${n.toString(16)}`).join(".");
const int = (a: number[]) => String(((a[0]! << 24) >>> 0) + (a[1]! << 16) + (a[2]! << 8) + a[3]!);
const hex32 = (a: number[]) => `0x${(((a[0]! << 24) >>> 0) + (a[1]! << 16) + (a[2]! << 8) + a[3]!).toString(16)}`;
const h16 = (a: number[]) => `${((a[0]! << 8) | a[1]!).toString(16)}:${((a[2]! << 8) | a[3]!).toString(16)}`;
const inv = (a: number[]) => a.map((n) => ~n & 0xff);

/** The forms a client may write one IPv4 address in; all name the same address (or one that carries it). */
function forms(v4: string): string[] {
  const a = v4.split(".").map(Number);
  const out = [v4, int(a), hex32(a), hexEach(a), oct(a), `[::ffff:${v4}]`, `[::ffff:${h16(a)}]`, `[64:ff9b::${v4}]`, `[64:ff9b::${h16(a)}]`, `[2002:${h16(a)}::1]`, `[2001:0:${h16(a)}::1]`, `[2001:0:4136:e378:8000:63bf:${h16(inv(a))}]`];
  // Short forms (a.b.c → a.b.0.c style) only when they stay unambiguous.
  if (a[1] === 0 && a[2] === 0) out.push(`${a[0]}.${a[3]}`);
  if (v4 !== "0.0.0.0" && !v4.startsWith("0.")) out.push(`[::${v4}]`);
  return out;
}

describe("every form of every special address is not public", () => {
  const policy = compilePolicy({ sandbox: [], global: [] });
  for (const [v4, kind] of SPECIAL) {
    for (const f of forms(v4)) {
      test(`${f} (${v4}, ${kind})`, () => {
        const host = normalizeHost(f);
        expect(host).not.toBeNull();
        const k = classify(parseIp(host!)!);
        expect({ f, public: k === "public" }).toEqual({ f, public: false });
        // The proxy decides before any lookup: never allowed by an empty policy…
        expect(decide(policy, f, 443).allow).toBe(false);
        // …and a name resolving to it is refused after.
        expect(checkAddresses(policy, "x.test", [host!], 443, new Set()).ok).toBe(false);
      });
    }
  }
});

describe("no allowlist pattern, in any form, reaches the host's own services", () => {
  for (const v4 of ["127.0.0.1", "0.0.0.0", "127.1.2.3"]) {
    for (const f of forms(v4)) {
      for (const p of [f, `${f}:8080`, f.startsWith("[") ? `${f.slice(1, -1)}/128` : `${f}/32`]) {
        test(p, () => {
          const r = parsePattern(p);
          if (r.ok) {
            // Accepted only when it does not name the host's own address (a Teredo server field, say): then the
            // address check still refuses the host's own services by what the address carries.
            const policy = compilePolicy({ sandbox: [p], global: [] });
            const target = normalizeHost(f)!;
            expect(checkAddresses(policy, "x.test", [target], 8080, new Set()).ok).toBe(false);
          } else {
            expect(r.ok).toBe(false);
          }
        });
      }
    }
  }
});

test("zone ids and other near-misses are not hosts at all (refused as invalid, never guessed at)", () => {
  for (const f of ["fe80::1%eth0", "[fe80::1%25eth0]", "1.2.3.4.5", "[::ffff:127.0.0.1", "0x100000000"]) expect({ f, h: normalizeHost(f) }).toEqual({ f, h: null });
  // A trailing dot is the same host.
  expect(normalizeHost("127.0.0.1.")).toBe("127.0.0.1");
});
