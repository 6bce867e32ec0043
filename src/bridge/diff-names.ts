// Paths as git's diff output prints them, read back: C-quoted names, a `diff --git` line's pair, and the one path such a
// line names when git ran without renames.

/** What a C-style escape (git's quote_c_style) stands for, besides octal bytes. */
const C_ESCAPES: Record<string, number> = { a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, '"': 34, "\\": 92 };

/**
 * A path as git prints it, read back: git quotes one with a quote, a backslash, a control or a non-ASCII byte as a C
 * string ("b/a\"b\303\274"), whose octal escapes are bytes (UTF-8 for a non-ASCII name). Anything else is as it is.
 */
export function unquote(p: string): string {
  return p.startsWith('"') ? unquoteAt(p, 0).name : p;
}

/** The C-quoted string starting at `from` (its opening quote) and the index after its closing quote. */
function unquoteAt(p: string, from: number): { name: string; end: number } {
  const enc = new TextEncoder();
  const bytes: number[] = [];
  let i = from + 1;
  while (i < p.length && p[i] !== '"') {
    if (p[i] === "\\") {
      const o = /^[0-3][0-7]{2}/.exec(p.slice(i + 1, i + 4));
      const e = p[i + 1] ?? "";
      if (o) bytes.push(parseInt(o[0], 8));
      else if (e in C_ESCAPES) bytes.push(C_ESCAPES[e]!);
      else bytes.push(92);
      i += o ? 4 : e in C_ESCAPES ? 2 : 1;
      continue;
    }
    // A character git left as it is: its UTF-8 bytes.
    const ch = String.fromCodePoint(p.codePointAt(i)!);
    bytes.push(...enc.encode(ch));
    i += ch.length;
  }
  return { name: new TextDecoder().decode(new Uint8Array(bytes)), end: i + 1 };
}

/**
 * The names of a `diff --git` line (after "diff --git ") that git quoted, read back; none when it quoted none (the line
 * holds them as they are). Without renames both sides name the same path, so git quotes both or neither. Pure.
 */
export function gitPair(rest: string): string[] {
  if (!rest.startsWith('"')) return [];
  const a = unquoteAt(rest, 0);
  return [a.name, unquote(rest.slice(a.end + 1))];
}

/**
 * The path a `diff --git` line (after "diff --git ") names, read back, when git ran without renames: both sides are the
 * same path, `a/<path> b/<path>`, quoted both or neither, so an unquoted line splits at its middle whatever the path
 * holds (" b/" included). Undefined for a line of any other shape. Pure.
 */
export function diffGitPath(rest: string): string | undefined {
  if (rest.startsWith('"')) {
    const a = unquoteAt(rest, 0);
    if (!rest.startsWith(' "', a.end) || !rest.endsWith('"')) return undefined;
    const b = unquoteAt(rest, a.end + 1);
    return b.end === rest.length && a.name.startsWith("a/") && a.name.length > 2 && b.name === `b/${a.name.slice(2)}` ? a.name.slice(2) : undefined;
  }
  const n = (rest.length - 5) / 2;
  if (!Number.isInteger(n) || n < 1 || !rest.startsWith("a/") || rest.slice(2 + n, 5 + n) !== " b/") return undefined;
  const path = rest.slice(2, 2 + n);
  return rest.slice(5 + n) === path ? path : undefined;
}
