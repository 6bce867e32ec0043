// Pure: the spellings of a secret's value that an upstream's answer may show it in, each paired with the same spelling
// of its placeholder, so an answer that reflects the value encoded (a JSON string, a URL, base64) is masked as surely
// as one that reflects it plain.
//
// An upstream writes a value the way its language's encoder does: PHP's JSON escapes `/` as `\/`, .NET's escapes `+`
// as `\u002B`, Go's escapes `<>&`; a next-page link carries it percent-encoded (`%2B`, `%2f`); an echo of an
// Authorization header, a JWT or a config blob carries it inside base64, at any of three byte alignments. A value of
// letters and digits has no JSON or percent spelling but itself; every value has its base64 ones.
//
// Not covered, said plainly: any other transformation (hex, compression, a reversed or split string, a hash). The
// masking is defence in depth behind the binding to hosts: the value reaches only hosts the user bound it to.

export interface Form {
  from: string;
  to: string;
}

/** The shortest base64 run of a value's own bits that is masked: shorter runs could occur in other text by chance. */
export const MIN_BASE64_RUN = 16;

const unicodeEscape = (c: number, lower: boolean) => {
  const h = c.toString(16).padStart(4, "0");
  return `\\u${lower ? h : h.toUpperCase()}`;
};

/** The minimal JSON escape of each ASCII character (as JSON.stringify writes it), or null when it stands as itself. */
const JSON_ASCII: (string | null)[] = Array.from({ length: 128 }, (_, c) => {
  const e = JSON.stringify(String.fromCharCode(c)).slice(1, -1);
  return e.length === 1 ? null : e;
});

/** A JSON string's body as JSON.stringify writes it, with `escape(code)` deciding which further characters are \u-escaped. */
function json(s: string, escape: (code: number) => boolean, lower: boolean, solidus = false): string {
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const code = s.charCodeAt(i);
    // A UTF-16 unit at a time: an encoder that escapes a character outside the BMP writes its pair, as here.
    if (escape(code)) out += unicodeEscape(code, lower);
    else if (code === 0x2f && solidus) out += "\\/";
    else if (code < 128) out += JSON_ASCII[code] ?? s[i];
    else out += s[i];
  }
  return out;
}

const alnum = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);

const DOTNET = new Set([..."\"&'+<>`"].map((c) => c.charCodeAt(0)));
const GO = new Set([..."<>&"].map((c) => c.charCodeAt(0)));
const JSON_ESCAPES: [escape: (code: number) => boolean, lower: boolean, solidus: boolean][] = [
  [() => false, true, false],
  [() => false, true, true],
  [(c) => DOTNET.has(c) || c < 0x20 || c > 0x7e, false, false],
  [(c) => GO.has(c) || c === 0x2028 || c === 0x2029, true, false],
  [(c) => c > 0x7e, true, false],
  [(c) => c > 0x7e, false, false],
  [(c) => !alnum(c), false, false],
  [(c) => !alnum(c), true, false],
];

/** JSON spellings: plain JSON, PHP's (`\/`), .NET's default, Go's, ASCII-only (Python, Java), and every non-alphanumeric escaped. */
function jsonForms(s: string): string[] {
  return JSON_ESCAPES.map(([escape, lower, solidus]) => json(s, escape, lower, solidus));
}

const HEX = "0123456789ABCDEF";
const keepSet = (extra: string) => Array.from({ length: 256 }, (_, c) => alnum(c) || (c < 128 && extra.includes(String.fromCharCode(c))));
/** encodeURIComponent's, RFC 3986's unreserved, Python's quote (keeps `/`), a form's: the bytes each lets through. */
const PERCENT_KEEPS: [keep: boolean[], space: string][] = [
  [keepSet("-_.!~*'()"), "%20"],
  [keepSet("-_.~"), "%20"],
  [keepSet("-_.~/"), "%20"],
  [keepSet("*-._"), "+"],
];

/** Percent-encoded with the bytes `keep` lets through as they are, hex in upper or lower case. */
function percent(bytes: Uint8Array, keep: boolean[], lower: boolean, space: string): string {
  let out = "";
  for (const b of bytes) {
    if (keep[b]) out += String.fromCharCode(b);
    else if (b === 0x20) out += space;
    else {
      const h = HEX[b >> 4]! + HEX[b & 15]!;
      out += `%${lower ? h.toLowerCase() : h}`;
    }
  }
  return out;
}

/** URL spellings: each of PERCENT_KEEPS, upper and lower hex. */
function percentForms(s: string): string[] {
  const bytes = Buffer.from(s, "utf8");
  return [false, true].flatMap((lower) => PERCENT_KEEPS.map(([keep, space]) => percent(bytes, keep, lower, space)));
}

/** HTML spellings: the five entities, and OWASP's (`&#x27;`, `&#x2F;`). */
function htmlForms(s: string): string[] {
  const basic = s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll('"', "&quot;");
  return [basic.replaceAll("'", "&#39;"), basic.replaceAll("'", "&#x27;").replaceAll("/", "&#x2F;")];
}

/**
 * The base64 characters that carry only `s`'s bits when it starts `align` bytes into a 3-byte group (whatever comes
 * before and after it), standard and URL-safe alphabets. The characters at each end, shared with the bytes around,
 * are left out.
 */
function base64Runs(s: string, align: number): { std: string; url: string } {
  const bytes = Buffer.from(s, "utf8");
  const padded = Buffer.concat([Buffer.alloc(align), bytes, Buffer.alloc(3)]);
  const std = padded.toString("base64");
  const start = Math.ceil((8 * align) / 6);
  const end = Math.floor((8 * (align + bytes.length)) / 6);
  const run = std.slice(start, end);
  return { std: run, url: run.replaceAll("+", "-").replaceAll("/", "_") };
}

/**
 * Every spelling of `value` named above, paired with the same spelling of `placeholder`, or with a run of `*` where
 * that is not as many bytes (a base64 run's `+` that an encoder escapes where the placeholder's has a letter) or the
 * sandbox holds no placeholder: each pair is as long on both sides, so an answer keeps its framing (its length goes on
 * as the upstream gave it). The plain value comes first; duplicates are dropped.
 */
export function reflectionForms(value: string, placeholder: string | null): Form[] {
  const same = placeholder !== null && Buffer.byteLength(placeholder) === Buffer.byteLength(value);
  const stars = (s: string) => "*".repeat(Buffer.byteLength(s));
  const pairs: Form[] = [{ from: value, to: same ? placeholder! : stars(value) }];
  const bases: [string, string | null][] = [[value, placeholder]];
  for (let align = 0; align < 3; align++) {
    const v = base64Runs(value, align);
    if (v.std.length < MIN_BASE64_RUN) continue;
    const p = same ? base64Runs(placeholder!, align) : null;
    bases.push([v.std, p?.std ?? null], [v.url, p?.url ?? null]);
  }
  const every = (x: string) => [x, ...jsonForms(x), ...percentForms(x), ...htmlForms(x)];
  for (const [v, p] of bases) {
    // Letters and digits are spelled as themselves everywhere; a placeholder's spellings line up with its value's.
    const vs = /^[A-Za-z0-9]*$/.test(v) ? [v] : every(v);
    const ps = p === null ? null : vs.length === 1 ? [p] : every(p);
    vs.forEach((f, i) => {
      const to = ps?.[i];
      pairs.push({ from: f, to: to !== undefined && Buffer.byteLength(to) === Buffer.byteLength(f) ? to : stars(f) });
    });
  }
  const seen = new Set<string>();
  return pairs.filter((p) => p.from.length > 0 && !seen.has(p.from) && seen.add(p.from));
}

/**
 * `reflectionForms` remembered for the last `max` values (a key's spellings take ≈50 µs to make, and every request to a
 * bound host, or LLM call, needs them): the owner keeps one, so a rotated key is simply a new entry.
 */
export function formsMemo(max = 128): (value: string, placeholder: string | null) => Form[] {
  const kept = new Map<string, Form[]>();
  return (value, placeholder) => {
    const key = `${placeholder ?? ""}\0${value}`;
    let forms = kept.get(key);
    if (!forms) {
      if (kept.size >= max) kept.delete(kept.keys().next().value!);
      kept.set(key, (forms = reflectionForms(value, placeholder)));
    }
    return forms;
  };
}
