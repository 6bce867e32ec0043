// Pure: an incremental JSON reader that keeps nothing of a document but the scalars at the paths it is asked for. Fed
// bytes as they pass (a model's answer is never held whole), its memory is bounded whatever the document's size or depth.

/** Keys kept for paths: a value deeper than this is never captured (the paths read are 4 deep at most). */
export const PATH_DEPTH_MAX = 8;
/** Nesting followed: deeper than this the document is given up (`broken`). */
export const NESTING_MAX = 512;
/** Bytes of a key kept: a longer key matches no path. */
const KEY_MAX = 64;
/** Bytes of a captured scalar: a longer one is dropped. */
const VALUE_MAX = 256;

const enum S {
  Value,
  ValueOrClose,
  After,
  KeyOrClose,
  Key,
  Colon,
  Str,
  StrEsc,
  Num,
  Lit,
  Done,
  Broken,
}

const OBJ = 1;
const ARR = 2;
const decoder = new TextDecoder("utf-8", { fatal: false });
/** How far a string's end is looked for byte by byte before the runtime's search is asked. */
const SHORT = 48;
/** What a key no wanted path names is kept as (no key is this: it holds a NUL). */
const NO_KEY = "\u0000";

type Names = { name: string; bytes: Uint8Array }[][];
/** The tables derived from a set of wanted paths, made once per set (the sets are module constants). */
const TABLES = new WeakMap<ReadonlySet<string>, { leaves: ReadonlySet<string>; names: Names }>();

/**
 * A path is the keys from the root joined by `.`, an array element standing as `[]`: `usage.input_tokens`,
 * `[].usageMetadata.promptTokenCount`. Only exact paths from the root match: a key of the same name deeper down (inside
 * a tool call's arguments, say) is another path.
 */
export class JsonPathReader {
  private state = S.Value;
  private readonly stack = new Uint8Array(NESTING_MAX + 1);
  private depth = 0;
  private readonly keys: string[] = [];
  /** The bytes of the key or captured scalar being read (bounded), and whether they overflowed. */
  private readonly buf = new Uint8Array(Math.max(KEY_MAX, VALUE_MAX));
  private len = 0;
  private over = false;
  private strIsKey = false;
  private capturing: string | null = null;
  private readonly found = new Map<string, string | number>();

  /** `wanted`: full paths; their last keys are what is looked at first (a path is built only for those). */
  constructor(private readonly wanted: ReadonlySet<string>) {
    // A reader is made per answer (and per request): what it derives from the paths is made once per set of them.
    let t = TABLES.get(wanted);
    if (!t) {
      const names: Names = [];
      for (const name of new Set([...wanted].flatMap((p) => p.split(".")))) {
        if (!/^[\x20-\x7e]*$/.test(name) || name.includes("\\") || name.includes('"')) continue;
        (names[name.length] ??= []).push({ name, bytes: Uint8Array.from(name, (c) => c.charCodeAt(0)) });
      }
      t = { leaves: new Set([...wanted].map((p) => p.slice(p.lastIndexOf(".") + 1))), names };
      TABLES.set(wanted, t);
    }
    this.leaves = t.leaves;
    this.names = t.names;
  }
  private readonly leaves: ReadonlySet<string>;
  /** The keys the wanted paths name, by length: a key read is matched against these bytes, never made a string. */
  private readonly names: Names;

  /** True once the bytes stopped being JSON (or nested too deep); what was captured before stays. */
  get broken(): boolean {
    return this.state === S.Broken;
  }

  /** True once one whole value has been read. */
  get complete(): boolean {
    return this.state === S.Done;
  }

  /** Captured values, by path (the last one read of each). */
  values(): ReadonlyMap<string, string | number> {
    return this.found;
  }

  /** Starts a new document (an SSE event's data); captured values are kept until `clear`. */
  reset(): void {
    this.state = S.Value;
    this.depth = 0;
    this.len = 0;
    this.capturing = null;
  }

  clear(): void {
    this.reset();
    // Most SSE events capture nothing: an empty map is left as it is (clearing one costs more than reading an event).
    if (this.found.size > 0) this.found.clear();
  }

  feed(bytes: Uint8Array, from = 0, to = bytes.length): void {
    // The searches below run to the array's end: a view of just these bytes keeps them within it.
    if (to !== bytes.length) return this.feed(bytes.subarray(from, to));
    // Where the next backslash is (searched once, then again only past it): a string nothing keeps is skipped to its
    // closing quote by the runtime's own search, not byte by byte (answers are mostly such strings).
    let slash = from - 1;
    for (let i = from; i < to; i++) {
      const b = bytes[i]!;
      switch (this.state) {
        case S.Str:
          if (b !== 0x22 && b !== 0x5c && (this.strIsKey || this.capturing === null)) {
            // Short strings (keys, most values) end within a few bytes: looked for here, which costs less than a call
            // into the runtime's search; a long one is left to that search.
            let end = i + 1;
            const near = Math.min(to, i + SHORT);
            while (end < near && bytes[end] !== 0x22 && bytes[end] !== 0x5c) end++;
            if (end === near && near < to) {
              if (slash < i) {
                slash = bytes.indexOf(0x5c, i);
                if (slash < 0) slash = to;
              }
              let quote = bytes.indexOf(0x22, i);
              if (quote < 0) quote = to;
              end = Math.min(slash, quote);
            }
            if (this.strIsKey) {
              // A key's bytes up to its quote (or a backslash), kept at once.
              const n = Math.min(end - i, KEY_MAX - this.len);
              for (let k = 0; k < n; k++) this.buf[this.len++] = bytes[i + k]!;
              if (end - i > n) this.over = true;
            }
            i = end - 1; // the loop's i++ lands on it
            break;
          }
          if (b === 0x22) this.endString();
          else {
            if (b === 0x5c) this.state = S.StrEsc;
            this.keep(b);
          }
          break;
        case S.StrEsc:
          this.state = S.Str;
          this.keep(b);
          break;
        case S.Num:
        case S.Lit:
          if ((b >= 0x30 && b <= 0x39) || b === 0x2d || b === 0x2b || b === 0x2e || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a)) this.keep(b);
          else {
            this.endScalar();
            i--; // the byte after a number is read again as what follows a value
          }
          break;
        case S.Broken:
          return;
        default:
          if (b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09) break;
          this.structural(b);
      }
    }
  }

  /** The document ends here: a number at the very end is a value, anything else unfinished is left out. */
  end(): void {
    if (this.state === S.Num || this.state === S.Lit) this.endScalar();
  }

  private structural(b: number): void {
    switch (this.state) {
      case S.Value:
      case S.ValueOrClose:
        if (b === 0x5d && this.state === S.ValueOrClose) return this.close(ARR);
        return this.startValue(b);
      case S.After:
        if (b === 0x2c) {
          this.state = this.stack[this.depth] === OBJ ? S.Key : S.Value;
          return;
        }
        if (b === 0x7d) return this.close(OBJ);
        if (b === 0x5d) return this.close(ARR);
        return this.fail();
      case S.KeyOrClose:
      case S.Key:
        if (b === 0x7d && this.state === S.KeyOrClose) return this.close(OBJ);
        if (b !== 0x22) return this.fail();
        this.strIsKey = true;
        this.begin();
        this.state = S.Str;
        return;
      case S.Colon:
        if (b !== 0x3a) return this.fail();
        this.state = S.Value;
        return;
      default:
        return this.fail(); // Done: a second value in one document
    }
  }

  private startValue(b: number): void {
    if (b === 0x7b || b === 0x5b) {
      if (this.depth >= NESTING_MAX) return this.fail();
      this.depth++;
      this.stack[this.depth] = b === 0x7b ? OBJ : ARR;
      if (this.depth <= PATH_DEPTH_MAX) this.keys[this.depth] = b === 0x7b ? "" : "[]";
      this.state = b === 0x7b ? S.KeyOrClose : S.ValueOrClose;
      return;
    }
    this.capturing = this.pathIfWanted();
    this.begin();
    if (b === 0x22) {
      this.strIsKey = false;
      this.state = S.Str;
    } else if (b === 0x2d || (b >= 0x30 && b <= 0x39)) {
      this.state = S.Num;
      this.keep(b);
    } else if (b === 0x74 || b === 0x66 || b === 0x6e) {
      this.state = S.Lit;
      this.keep(b);
    } else this.fail();
  }

  private close(kind: number): void {
    if (this.stack[this.depth] !== kind) return this.fail();
    this.depth--;
    this.state = this.depth === 0 ? S.Done : S.After;
  }

  private begin(): void {
    this.len = 0;
    this.over = false;
  }

  private keep(b: number): void {
    if (!this.strIsKey && this.capturing === null) return;
    if (this.len >= (this.strIsKey ? KEY_MAX : VALUE_MAX)) {
      this.over = true;
      return;
    }
    this.buf[this.len++] = b;
  }

  private text(): string | null {
    if (this.over) return null;
    // Keys are ASCII nearly always: made without the decoder, which costs more than the rest of reading a key.
    let raw = "";
    for (let k = 0; k < this.len; k++) {
      const c = this.buf[k]!;
      if (c >= 0x80) {
        raw = decoder.decode(this.buf.subarray(0, this.len));
        break;
      }
      raw += String.fromCharCode(c);
    }
    if (!raw.includes("\\")) return raw;
    try {
      return JSON.parse(`"${raw}"`) as string;
    } catch {
      return null;
    }
  }

  /** The key just read, when a wanted path names it; else a name no path has (keys are read many times a second). */
  private keyName(): string {
    if (this.over) return NO_KEY;
    let escaped = false;
    for (let k = 0; k < this.len; k++) if (this.buf[k] === 0x5c) escaped = true;
    if (escaped) return this.text() ?? NO_KEY;
    for (const c of this.names[this.len] ?? []) {
      let same = true;
      for (let k = 0; k < this.len && same; k++) same = c.bytes[k] === this.buf[k];
      if (same) return c.name;
    }
    return NO_KEY;
  }

  private endString(): void {
    if (this.strIsKey) {
      this.strIsKey = false;
      if (this.depth <= PATH_DEPTH_MAX) this.keys[this.depth] = this.keyName();
      this.state = S.Colon;
      return;
    }
    if (this.capturing !== null) {
      const t = this.text();
      if (t !== null) this.found.set(this.capturing, t);
      this.capturing = null;
    }
    this.afterValue();
  }

  private endScalar(): void {
    if (this.capturing !== null && this.state === S.Num) {
      const t = this.over ? null : decoder.decode(this.buf.subarray(0, this.len));
      if (t !== null && /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/.test(t)) this.found.set(this.capturing, Number(t));
    }
    this.capturing = null;
    this.afterValue();
  }

  private afterValue(): void {
    this.state = this.depth === 0 ? S.Done : S.After;
  }

  /** The path of the value about to be read, when it is one asked for (built only when its key is a wanted leaf). */
  private pathIfWanted(): string | null {
    if (this.depth === 0 || this.depth > PATH_DEPTH_MAX) return null;
    const leaf = this.keys[this.depth]!;
    if (!this.leaves.has(leaf)) return null;
    const path = this.keys.slice(1, this.depth + 1).join(".");
    return this.wanted.has(path) ? path : null;
  }

  private fail(): void {
    this.state = S.Broken;
    this.capturing = null;
  }
}
