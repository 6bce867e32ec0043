// The streaming replacer gives what one pass over the whole text gives, however the stream is cut, and holds back no more
// than the longest pattern less one byte.
import { describe, expect, test } from "bun:test";
import { replaceAll, StreamReplacer } from "../../../src/core/stream-replace";
import { rng } from "../../support/rng";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** The reference: leftmost, then longest, never inside a replacement, over the whole string at once. */
function reference(text: string, pairs: { from: string; to: string }[]): string {
  let out = "";
  let i = 0;
  while (i < text.length) {
    const here = pairs.filter((p) => p.from.length > 0 && text.startsWith(p.from, i)).sort((a, b) => b.from.length - a.from.length)[0];
    if (here) {
      out += here.to;
      i += here.from.length;
    } else out += text[i++];
  }
  return out;
}

function streamed(text: string, pairs: { from: string; to: string }[], cuts: number[], parts = false): { out: string; maxHeld: number } {
  const r = new StreamReplacer(pairs.map((p) => ({ from: enc.encode(p.from), to: enc.encode(p.to) })));
  const bytes = enc.encode(text);
  let out = "";
  let at = 0;
  let maxHeld = 0;
  for (const c of [...cuts, bytes.length]) {
    const piece = parts ? new Uint8Array(Buffer.concat(r.pushParts(bytes.subarray(at, c)))) : r.push(bytes.subarray(at, c));
    at = c;
    out += dec.decode(piece, { stream: true });
    maxHeld = Math.max(maxHeld, r.held);
  }
  out += dec.decode(r.end());
  return { out, maxHeld };
}

describe("stream-replace: a secret split across chunks is still replaced", () => {
  const pairs = [{ from: "sk_live_SECRETVALUE1234", to: "sk_live_PLACEHOLDERxyzw" }];
  const text = "a=sk_live_SECRETVALUE1234&b=sk_live_SECRETVALUE1234";

  test("at every cut point", () => {
    for (let c = 0; c <= text.length; c++) expect(streamed(text, pairs, [c]).out).toBe(reference(text, pairs));
  });

  test("one byte at a time", () => {
    const cuts = Array.from({ length: text.length }, (_, i) => i);
    expect(streamed(text, pairs, cuts).out).toBe("a=sk_live_PLACEHOLDERxyzw&b=sk_live_PLACEHOLDERxyzw");
  });
});

describe("stream-replace: matches the whole-text reference on random streams", () => {
  test("2,000 seeded cases (patterns that overlap, nest and repeat; any cuts)", () => {
    const alphabet = "ab-";
    for (let seed = 1; seed <= 2000; seed++) {
      const r = rng(seed);
      const word = (n: number) => Array.from({ length: n }, () => alphabet[Math.floor(r() * alphabet.length)]).join("");
      const pairs = Array.from({ length: 1 + Math.floor(r() * 3) }, () => ({ from: word(1 + Math.floor(r() * 4)), to: word(Math.floor(r() * 5)) }));
      const text = word(Math.floor(r() * 40));
      const cuts = [...new Set(Array.from({ length: Math.floor(r() * 6) }, () => Math.floor(r() * (text.length + 1))))].sort((a, b) => a - b);
      for (const parts of [false, true]) {
        const got = streamed(text, pairs, cuts, parts);
        if (got.out !== reference(text, pairs)) throw new Error(`seed ${seed}${parts ? " (in parts)" : ""}: ${JSON.stringify({ text, pairs, cuts, got: got.out, want: reference(text, pairs) })}`);
        const longest = Math.max(...pairs.map((p) => p.from.length));
        expect(got.maxHeld).toBeLessThanOrEqual(longest - 1);
      }
    }
  });
});

describe("stream-replace: bytes that cannot begin a pattern are neither held nor copied", () => {
  test("chunks that end in no pattern's beginning go on as views of themselves; one that ends in one holds just that", () => {
    const r = new StreamReplacer([{ from: enc.encode("sk_live_SECRET"), to: enc.encode("sk_live_PLACEH") }]);
    for (let i = 0; i < 3; i++) {
      const chunk = new Uint8Array(64 * 1024).fill(0x61);
      const out = r.push(chunk);
      expect(r.held).toBe(0);
      expect(out.buffer).toBe(chunk.buffer); // the response body's bytes are not copied per chunk
      expect(out.length).toBe(chunk.length);
    }
    expect(dec.decode(r.push(enc.encode("xx sk_li")))).toBe("xx ");
    expect(r.held).toBe(5);
    expect(dec.decode(r.push(enc.encode("ve_SECRET!")))).toBe("sk_live_PLACEH!");
  });
});

describe("never-reflected: a value cut across two and three chunks, at every offset, beside large runs of bytes", () => {
  // The response body's way down: every value turned back into its placeholder, the chunks ending in the value's first
  // bytes (held back) and the next beginning with its rest, whatever lies around (patterns that begin alike too).
  const VALUE = "sk_live_R3alV4lueN0tForS4ndb0x";
  const pairs = [
    { from: VALUE, to: "sk_live_PLACEHOLDERplaceholder0" },
    { from: "sk_live_R3al", to: "sk_live_PLAC" },
  ];
  const around = "sk_".repeat(3000);
  const text = `${around}${VALUE}${around}${VALUE}${VALUE}x`;
  const at = around.length;
  const want = reference(text, pairs);

  test("two chunks, the cut at every offset of the value (push and pushParts)", () => {
    for (let i = 0; i <= VALUE.length; i++) {
      for (const parts of [false, true]) expect(streamed(text, pairs, [at + i], parts).out).toBe(want);
    }
  });

  test("three chunks, the cuts at every pair of offsets (the second chunk also shorter than a value)", () => {
    for (let i = 0; i <= VALUE.length; i++) {
      for (let j = i; j <= VALUE.length + 40; j++) {
        for (const parts of [false, true]) {
          const got = streamed(text, pairs, [at + i, at + j], parts).out;
          if (got !== want) throw new Error(`cuts ${i},${j}${parts ? " (in parts)" : ""}: the value ${got.includes(VALUE) ? "shown" : "changed"}`);
        }
      }
    }
  });
});

describe("stream-replace: bytes held back are joined to the next chunk's first bytes only", () => {
  test("a chunk after one that ended in a value's beginning goes on as a view of itself, not a copy", () => {
    const from = enc.encode("sk_live_SECRET");
    const r = new StreamReplacer([{ from, to: enc.encode("sk_live_PLACEH") }]);
    r.pushParts(enc.encode("xx sk_li"));
    expect(r.held).toBe(5);
    const big = new Uint8Array(512 * 1024).fill(0x61);
    big.set(enc.encode("ve_SECRET"), 0);
    const out = r.pushParts(big);
    expect(dec.decode(out[0])).toBe("sk_live_PLACEH");
    const rest = out[out.length - 1]!;
    expect(rest.buffer).toBe(big.buffer); // the other 512 KB: a view of the chunk
    expect(rest.length).toBe(big.length - 9);
    expect(out.reduce((n, p) => n + p.length, 0)).toBe(14 + big.length - 9);
  });

  test("a held beginning that the next chunk does not complete goes on as it was, the chunk a view", () => {
    const r = new StreamReplacer([{ from: enc.encode("sk_live_SECRET"), to: enc.encode("sk_live_PLACEH") }]);
    r.pushParts(enc.encode("xx sk_li"));
    const big = new Uint8Array(100 * 1024).fill(0x62);
    const out = r.pushParts(big);
    expect(dec.decode(out[0])).toBe("sk_li");
    expect(out[1]!.buffer).toBe(big.buffer);
    expect(r.held).toBe(0);
  });
});

describe("stream-replace: whole strings", () => {
  test("counts what it replaced, and leaves text without a pattern as it was", () => {
    expect(replaceAll("x PH y PH", [{ from: "PH", to: "SECRET" }])).toEqual({ text: "x SECRET y SECRET", count: 2 });
    expect(replaceAll("nothing here", [{ from: "PH", to: "S" }])).toEqual({ text: "nothing here", count: 0 });
  });

  test("multi-byte text cut inside a character comes out whole", () => {
    const text = "é PH ü";
    const bytes = enc.encode(text);
    for (let c = 0; c <= bytes.length; c++) {
      const r = new StreamReplacer([{ from: enc.encode("PH"), to: enc.encode("Ω") }]);
      const out = new Uint8Array([...r.push(bytes.subarray(0, c)), ...r.push(bytes.subarray(c)), ...r.end()]);
      expect(dec.decode(out)).toBe("é Ω ü");
    }
  });
});
