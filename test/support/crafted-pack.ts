// Test support: a git pack written byte by byte, as a hostile sandbox can send one (git's pack-objects never deltas
// against an object it was not told the receiver has at an edge commit; a hand-made pack may name any base by id).
import { createHash } from "node:crypto";
import { deflateSync } from "node:zlib";

export type PackEntry =
  | { type: "commit" | "tree" | "blob"; body: Uint8Array }
  /** A REF_DELTA: the result is the base's first `baseSize` bytes (all of it) followed by `append`. */
  | { type: "ref-delta"; base: string; baseSize: number; append: Uint8Array };

const TYPE = { commit: 1, tree: 2, blob: 3, "ref-delta": 7 } as const;

/** An object's header: its type and (inflated) size, 4 bits then 7 per byte. */
function header(type: number, size: number): number[] {
  const out = [(type << 4) | (size & 0x0f)];
  size >>>= 4;
  while (size > 0) {
    out[out.length - 1]! |= 0x80;
    out.push(size & 0x7f);
    size >>>= 7;
  }
  return out;
}

/** A size in a delta's header: 7 bits per byte, low first. */
function varint(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n > 0) b |= 0x80;
    out.push(b);
  } while (n > 0);
  return out;
}

/** A delta: copy the base's bytes [0, baseSize), then insert `append` (in runs of at most 127 bytes). */
function delta(baseSize: number, append: Uint8Array): Uint8Array {
  const out = [...varint(baseSize), ...varint(baseSize + append.length)];
  // Copy op: offset 0 (no offset bytes), size in up to three bytes.
  const sizeBytes = [baseSize & 0xff, (baseSize >>> 8) & 0xff, (baseSize >>> 16) & 0xff];
  let op = 0x80;
  const tail: number[] = [];
  sizeBytes.forEach((b, i) => {
    if (b !== 0) {
      op |= 0x10 << i;
      tail.push(b);
    }
  });
  out.push(op, ...tail);
  for (let i = 0; i < append.length; i += 127) {
    const run = append.subarray(i, i + 127);
    out.push(run.length, ...run);
  }
  return new Uint8Array(out);
}

/** A version-2 pack of `entries`, with its trailing checksum. */
export function craftPack(entries: readonly PackEntry[]): Uint8Array {
  const parts: Uint8Array[] = [];
  const head = new Uint8Array(12);
  head.set([0x50, 0x41, 0x43, 0x4b, 0, 0, 0, 2]);
  new DataView(head.buffer).setUint32(8, entries.length);
  parts.push(head);
  for (const e of entries) {
    if (e.type === "ref-delta") {
      const d = delta(e.baseSize, e.append);
      parts.push(new Uint8Array(header(TYPE[e.type], d.length)), new Uint8Array(Buffer.from(e.base, "hex")), deflateSync(d));
    } else {
      parts.push(new Uint8Array(header(TYPE[e.type], e.body.length)), deflateSync(e.body));
    }
  }
  const body = Buffer.concat(parts);
  return new Uint8Array(Buffer.concat([body, createHash("sha1").update(body).digest()]));
}
