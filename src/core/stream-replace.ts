// Pure: byte strings replaced in a stream that arrives in pieces, wherever the pieces split them, in bounded memory.
//
// The proxy's two uses: a placeholder swapped for its secret on the way up (a body the secret allows), and a secret
// swapped back for its placeholder on the way down (a response that reflects it), where one chunk may end in the middle
// of the value. At most (longest pattern - 1) bytes are held back between chunks.

export interface Replacement {
  from: Uint8Array;
  to: Uint8Array;
}

/** The first occurrence at or after `start` of any pattern: leftmost, then longest. */
function firstMatch(buf: Uint8Array, start: number, pairs: readonly Replacement[]): { at: number; pair: Replacement } | null {
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  let best: { at: number; pair: Replacement } | null = null;
  for (const pair of pairs) {
    const at = b.indexOf(pair.from, start);
    if (at < 0) continue;
    if (!best || at < best.at || (at === best.at && pair.from.length > best.pair.from.length)) best = { at, pair };
  }
  return best;
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  if (parts.length === 0) return new Uint8Array(0);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/**
 * Replaces every occurrence of each `from` with its `to`, leftmost first (the longest where two start at one byte),
 * never matching inside what a replacement wrote. Feed chunks with `push`, then call `end` for what was held back.
 */
export class StreamReplacer {
  private readonly pairs: readonly Replacement[];
  private readonly hold: number;
  private tail: Uint8Array = new Uint8Array(0);
  /** How many replacements were made so far. */
  count = 0;

  constructor(pairs: readonly Replacement[]) {
    this.pairs = pairs.filter((p) => p.from.length > 0);
    this.hold = Math.max(0, ...this.pairs.map((p) => p.from.length - 1));
  }

  /** How many bytes wait for the next chunk (never more than the longest pattern less one). */
  get held(): number {
    return this.tail.length;
  }

  /** How many bytes at the end of buf are a proper beginning of some pattern (at most `hold`). */
  private openEnd(buf: Uint8Array): number {
    const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
    let best = 0;
    for (const { from } of this.pairs) {
      // Candidates are where the pattern's first byte occurs in its last (length - 1) bytes, earliest (longest) first:
      // found natively, so a long pattern costs no byte-by-byte walk over a chunk's end.
      for (let at = b.indexOf(from[0]!, buf.length - Math.min(from.length - 1, buf.length)); at >= 0 && buf.length - at > best; at = b.indexOf(from[0]!, at + 1)) {
        const n = buf.length - at;
        let i = 1;
        while (i < n && buf[at + i] === from[i]) i++;
        if (i === n) {
          best = n;
          break;
        }
      }
    }
    return best;
  }

  /** The bytes of this chunk (and what was held from the last) that are final now. */
  push(chunk: Uint8Array): Uint8Array {
    return concat(this.pushParts(chunk));
  }

  /**
   * As `push`, in pieces to write one after another: a large chunk's bytes come back as a view of it, not copied, even
   * when bytes were held from the last chunk (they are joined only to the first bytes of this one).
   */
  pushParts(chunk: Uint8Array): Uint8Array[] {
    if (this.pairs.length === 0) return [chunk];
    const tail = this.tail;
    // Nothing held, or a chunk no longer than a pattern: one buffer, small to copy.
    if (tail.length === 0) return this.run(chunk, 0, false);
    if (chunk.length <= this.hold) return this.run(concat([tail, chunk]), 0, false);
    // The junction: the held bytes and the first `hold` of this chunk. Any match that starts in the held bytes (at most
    // hold long, plus one) ends inside it, so the window finds exactly the matches the whole joined buffer would there;
    // the rest of the chunk is read where the last of them ended.
    const win = concat([tail, chunk.subarray(0, this.hold)]);
    const out: Uint8Array[] = [];
    let i = 0;
    for (;;) {
      const m = firstMatch(win, i, this.pairs);
      if (!m || m.at >= tail.length) break;
      out.push(win.subarray(i, m.at), m.pair.to);
      i = m.at + m.pair.from.length;
      this.count++;
    }
    if (i < tail.length) out.push(win.subarray(i, tail.length));
    return [...out, ...this.run(chunk, Math.max(0, i - tail.length), false)].filter((p) => p.length > 0);
  }

  /** What is left at the end of the stream. */
  end(): Uint8Array {
    const rest = this.tail;
    this.tail = new Uint8Array(0);
    return concat(this.run(rest, 0, true));
  }

  /** The final bytes of `buf` from `start` (what comes before was dealt with), in pieces; the rest held. */
  private run(buf: Uint8Array, start: number, final: boolean): Uint8Array[] {
    if (this.pairs.length === 0) return [buf];
    // A match may start only before the bytes that could still begin one the next chunk completes: the longest end of
    // this buffer that is the start of a pattern (usually none, so nothing waits and nothing is copied). A match found
    // before them is final: no longer pattern at its place, nor one starting earlier, can reach past this buffer.
    const limit = final ? buf.length : buf.length - this.openEnd(buf);
    const out: Uint8Array[] = [];
    let i = start;
    for (;;) {
      const m = firstMatch(buf, i, this.pairs);
      if (!m || m.at >= limit) break;
      out.push(buf.subarray(i, m.at), m.pair.to);
      i = m.at + m.pair.from.length;
      this.count++;
    }
    // What is held: from the open end, or from where the last match ended when that is later (holding more than the
    // open end is safe: held bytes are read again with the next chunk; never more than `hold`).
    const cut = Math.max(i, limit);
    out.push(buf.subarray(i, cut));
    this.tail = final ? new Uint8Array(0) : buf.slice(cut);
    return out.filter((p) => p.length > 0);
  }
}

/** Every occurrence replaced in one whole string (headers, a query): the same rule as the stream's. */
export function replaceAll(text: string, pairs: readonly { from: string; to: string }[]): { text: string; count: number } {
  const enc = new TextEncoder();
  const r = new StreamReplacer(pairs.map((p) => ({ from: enc.encode(p.from), to: enc.encode(p.to) })));
  const a = r.push(enc.encode(text));
  const b = r.end();
  return { text: new TextDecoder().decode(concat([a, b])), count: r.count };
}
