// The DNS stub's pure half: every valid name gets its sandbox-local address, nothing else is invented, and no byte a
// sandbox sends can make the parser read past the message, loop, or answer what is not a plain query.
import { describe, expect, test } from "bun:test";
import { answerFor, DNS_TYPE_A, DNS_TYPE_AAAA, parseQuery, RCODE, respond } from "../../../shims/dns";
import { askableName } from "../../../src/core/dns";

/** A query as a stub resolver sends it: id, RD, one question. */
function query(name: string, type = DNS_TYPE_A, opts: { id?: number; flags?: number; qd?: number; qclass?: number } = {}): Uint8Array {
  const labels = name === "" ? [] : name.split(".");
  const parts: number[] = [];
  for (const l of labels) parts.push(l.length, ...[...l].map((c) => c.charCodeAt(0)));
  const id = opts.id ?? 0x1234;
  const flags = opts.flags ?? 0x0100;
  const qd = opts.qd ?? 1;
  const qclass = opts.qclass ?? 1;
  return Uint8Array.from([id >> 8, id & 0xff, flags >> 8, flags & 0xff, 0, qd, 0, 0, 0, 0, 0, 0, ...parts, 0, type >> 8, type & 0xff, qclass >> 8, qclass & 0xff]);
}

const map = () => {
  const names = new Map<string, string>();
  return {
    names,
    addressOf: (n: string) => {
      if (!names.has(n)) names.set(n, `127.77.0.${names.size + 2}`);
      return names.get(n)!;
    },
  };
};

describe("dns stub: answers from the sandbox's own map", () => {
  test("an A query gets the address that stands for the name, the same each time, with the id and question echoed", () => {
    const m = map();
    const r = respond(query("Registry.NPMJS.org"), m.addressOf)!;
    expect([r[0], r[1]]).toEqual([0x12, 0x34]);
    expect(r[2]! & 0x80).toBe(0x80); // a response
    expect(r[3]! & 0x0f).toBe(RCODE.noError);
    expect((r[6]! << 8) | r[7]!).toBe(1);
    expect([...r.slice(-4)]).toEqual([127, 77, 0, 2]);
    expect(m.names.get("registry.npmjs.org")).toBe("127.77.0.2"); // lower case: one name, one address
    expect([...respond(query("REGISTRY.npmjs.ORG"), m.addressOf)!.slice(-4)]).toEqual([127, 77, 0, 2]);
    expect(m.names.size).toBe(1);
  });

  test("AAAA, MX, TXT and others get an empty NOERROR answer, and give out no address", () => {
    const m = map();
    for (const t of [DNS_TYPE_AAAA, 15, 16, 33, 65]) {
      const r = respond(query("example.com", t), m.addressOf)!;
      expect(r[3]! & 0x0f).toBe(RCODE.noError);
      expect((r[6]! << 8) | r[7]!).toBe(0);
    }
    expect(m.names.size).toBe(0);
  });

  test("localhost is the sandbox's own loopback, never a mapped address", () => {
    const m = map();
    expect([...respond(query("localhost"), m.addressOf)!.slice(-4)]).toEqual([127, 0, 0, 1]);
    expect([...respond(query("app.localhost"), m.addressOf)!.slice(-4)]).toEqual([127, 0, 0, 1]);
    expect(m.names.size).toBe(0);
  });

  test("a full map answers SERVFAIL, never another name's address", () => {
    const r = respond(query("one-too-many.example"), () => null)!;
    expect(r[3]! & 0x0f).toBe(RCODE.servFail);
    expect((r[6]! << 8) | r[7]!).toBe(0);
  });
});

describe("dns stub: what the sandbox sends cannot make it misbehave", () => {
  /** The host's side of the map: a name it would refuse gets no address; any other must not be asked here. */
  const never = (n: string): string | undefined => {
    if (askableName(n) === null) return undefined;
    throw new Error(`no address may be given for ${JSON.stringify(n)}`);
  };

  test("names that are not host names get NXDOMAIN and no address: IP literals, reverse zones, control bytes, empty", () => {
    for (const n of ["1.2.3.4", "4.3.2.1.in-addr.arpa", "b.a.ip6.arpa", "bad\x00name.com", "a b.com", "-lead.example.com", "probe.invalid", ""]) {
      const r = respond(query(n), never)!;
      expect({ n, rcode: r[3]! & 0x0f }).toEqual({ n, rcode: RCODE.nxDomain });
    }
  });

  test("a response, a short message or an overlong one is dropped (no reflection); other opcodes and counts are refused", () => {
    expect(respond(query("a.com", 1, { flags: 0x8100 }), never)).toBeNull();
    expect(respond(new Uint8Array(5), never)).toBeNull();
    expect(respond(new Uint8Array(5000), never)).toBeNull();
    expect(respond(query("a.com", 1, { flags: 0x2900 }), never)![3]! & 0x0f).toBe(RCODE.notImp); // UPDATE
    expect(respond(query("a.com", 1, { qd: 2 }), never)![3]! & 0x0f).toBe(RCODE.formErr);
    expect(respond(query("a.com", 1, { qd: 0 }), never)![3]! & 0x0f).toBe(RCODE.formErr);
    expect(respond(query("a.com", 1, { qclass: 3 }), never)![3]! & 0x0f).toBe(RCODE.refused); // CHAOS: version.bind etc.
  });

  test("a compression pointer (a loop, or a read elsewhere) in the question is FORMERR", () => {
    const q = query("a.com");
    const loop = Uint8Array.from([...q.slice(0, 12), 0xc0, 12, 0, 1, 0, 1]);
    expect(respond(loop, never)![3]! & 0x0f).toBe(RCODE.formErr);
  });

  test("labels that run past the message, names past 255 bytes, and a question with no type are FORMERR", () => {
    const q = query("example.com");
    expect(parseQuery(Uint8Array.from([...q.slice(0, 12), 40, 97, 98])).ok).toBe(false);
    const long = Array.from({ length: 5 }, () => "x".repeat(60)).join(".");
    expect(respond(query(long), never)![3]! & 0x0f).toBe(RCODE.formErr);
    expect(parseQuery(q.slice(0, q.length - 3)).ok).toBe(false);
  });

  test("random bytes never throw", () => {
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff), seed & 0xff);
    for (let i = 0; i < 3000; i++) {
      const b = Uint8Array.from({ length: 12 + (rnd() % 60) }, rnd);
      b[2] = b[2]! & 0x7f;
      expect(() => respond(b, (n: string) => (askableName(n) === n ? "127.77.0.9" : undefined))).not.toThrow();
    }
  });

  test("only A and ANY of a valid name reach the map", () => {
    const asked: string[] = [];
    const f = (n: string) => (asked.push(n), "127.77.0.3");
    answerFor({ name: "x.example", type: DNS_TYPE_AAAA, qclass: 1 }, f);
    answerFor({ name: "x.example", type: 255, qclass: 1 }, f);
    expect(asked).toEqual(["x.example"]);
  });
});

describe("transparent ports", () => {
  const { transparentPortsOf, MAX_TRANSPARENT_PORTS } = require("../../../src/core/transparent") as typeof import("../../../src/core/transparent");
  test("80 and 443, and each port an allowlist entry names, once, in order; bounded", () => {
    expect(transparentPortsOf({ sandbox: [], global: [] })).toEqual([80, 443]);
    expect(transparentPortsOf({ sandbox: ["a.com:8443", "b.com", "*.c.com:5432"], global: ["d.com:8443", "10.0.0.5:22"] })).toEqual([22, 80, 443, 5432, 8443]);
    const many = Array.from({ length: 100 }, (_, i) => `h${i}.com:${2000 + i}`);
    expect(transparentPortsOf({ sandbox: many, global: [] })).toHaveLength(MAX_TRANSPARENT_PORTS);
    // A pattern that does not parse adds nothing.
    expect(transparentPortsOf({ sandbox: ["*:99", "bad host:7"], global: [] })).toEqual([80, 443]);
  });
});
