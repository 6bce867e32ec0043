// The one way text from a sandbox reaches a terminal: control characters shown, never sent. Pure.
//
// A sandbox chooses commit subjects, ref and branch names, paths, session names and request hosts. Sent raw, an
// escape sequence in one acts on the person's terminal: OSC 52 writes their clipboard, OSC 0 their title, CSI moves
// the cursor or erases what is on screen, an 8-bit C1 byte does the same on terminals that take it, and bidi
// controls reorder what is shown. Each is shown as an escape (`\x1b`, `\u202e`) instead.

/** C0 and C1 controls and DEL, and the Unicode controls that reorder or hide text (bidi embeddings, isolates, marks). */
const UNSAFE = /[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;

/** What JSON.stringify leaves raw in a string that a terminal may act on (everything in UNSAFE but C0). */
const JSON_RAW = /[\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;

/** SGR sequences as sbx's own colours are written (chalk: bold, dim, red/green/yellow, resets), and nothing else. */
const OWN_SGR = /\x1b\[(?:0|1|2|22|3[0-9]|9[0-7])(?:;(?:0|1|2|22|3[0-9]|9[0-7]))*m/y;

function shown(c: string): string {
  if (c === "\n") return "\\n";
  if (c === "\t") return "\\t";
  const n = c.charCodeAt(0);
  return n <= 0xff ? `\\x${n.toString(16).padStart(2, "0")}` : `\\u${n.toString(16).padStart(4, "0")}`;
}

/**
 * JSON for a terminal or a pipe: the same value (a parser reads back the exact text), with the controls JSON itself
 * leaves raw (C1, DEL, bidi and zero-width) written as \u escapes too, so printing it acts on no terminal.
 */
export function jsonText(value: unknown, indent?: number): string {
  // C0 controls inside strings JSON escapes itself; outside strings there are only the indentation's breaks.
  return JSON.stringify(value, null, indent).replace(JSON_RAW, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** Text safe to print: every control shown as an escape, newlines and tabs included (one value stays one line). */
export function printable(text: string): string {
  return text.replace(UNSAFE, shown);
}

/**
 * A line for the terminal: like `printable`, but it keeps the line breaks and tabs a message is made of, and the
 * colour codes sbx itself adds (plain SGR with the parameters chalk writes). Any other escape is shown.
 */
export function terminalLine(text: string): string {
  let out = "";
  for (let i = 0; i < text.length; ) {
    if (text[i] === "\x1b") {
      OWN_SGR.lastIndex = i;
      const m = OWN_SGR.exec(text);
      if (m) {
        out += m[0];
        i += m[0].length;
        continue;
      }
    }
    const c = text[i]!;
    out += c === "\n" || c === "\t" ? c : c.replace(UNSAFE, shown);
    i++;
  }
  return out;
}
