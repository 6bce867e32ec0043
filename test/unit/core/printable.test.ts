// Nothing a sandbox chose is printed raw: every escape that would act on the person's terminal is shown instead.
import { describe, expect, test } from "bun:test";
import { jsonText, printable, terminalLine } from "../../../src/core/printable";

/** What a hostile agent puts in a commit subject, a branch or a session name. */
const HOSTILE = {
  clipboard: "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07",
  title: "\x1b]0;pwned\x07",
  erase: "\x1b[2J\x1b[H",
  cursorUp: "\x1b[1A\x1b[K",
  c1csi: "\x9b2J",
  dcs: "\x1bP+q\x1b\\",
  bidi: "safe\u202eexe.txt",
  isolate: "a\u2066b\u2069",
  zeroWidth: "a\u200bb",
  bell: "\x07",
};

describe("printable", () => {
  test("every hostile sequence is shown, none is sent", () => {
    for (const [what, s] of Object.entries(HOSTILE)) {
      const p = printable(`x${s}y`);
      expect({ what, raw: /[\x00-\x1f\x7f-\x9f\u200b\u202e\u2066\u2069]/.test(p) }).toEqual({ what, raw: false });
    }
    expect(printable(HOSTILE.clipboard)).toBe("\\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\\x07");
    expect(printable(HOSTILE.bidi)).toBe("safe\\u202eexe.txt");
  });

  test("a value stays one line: breaks and tabs are shown too; plain text is unchanged", () => {
    expect(printable("a\tb\nc")).toBe("a\\tb\\nc");
    expect(printable("fix: parse ünïcode — ok")).toBe("fix: parse ünïcode — ok");
  });
});

describe("terminalLine (what the CLI's render prints)", () => {
  test("sbx's own colours pass; any other escape is shown, even one that looks like a colour", () => {
    expect(terminalLine("\x1b[31msbx:\x1b[39m no")).toBe("\x1b[31msbx:\x1b[39m no");
    expect(terminalLine("\x1b[1m\x1b[22m")).toBe("\x1b[1m\x1b[22m");
    // Conceal (8), 256-colour and truecolour SGR are not sbx's: shown.
    expect(terminalLine("\x1b[8mhidden")).toBe("\\x1b[8mhidden");
    expect(terminalLine("\x1b[38;5;1mx")).toBe("\\x1b[38;5;1mx");
    for (const [what, s] of Object.entries(HOSTILE)) {
      expect({ what, raw: /[\x07\x9b\u202e\u2066\u200b]|\x1b[\]P]|\x1b\[[0-9;]*[A-Za-ln-z]/.test(terminalLine(s)) }).toEqual({ what, raw: false });
    }
  });

  test("a message keeps its own line breaks", () => {
    expect(terminalLine("holds 1 commit:\n  abc \x1b]0;t\x07")).toBe("holds 1 commit:\n  abc \\x1b]0;t\\x07");
  });
});

describe("jsonText (--json)", () => {
  test("the same value for a parser, with nothing a terminal acts on in the text", () => {
    const value = { subject: "a\x1b]0;t\x07\x9b2J\u202eb", n: 1 };
    const text = jsonText(value, 2);
    expect(JSON.parse(text)).toEqual(value);
    expect(/[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]/.test(text)).toBe(false);
  });
});
