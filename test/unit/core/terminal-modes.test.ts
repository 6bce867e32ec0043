// terminal-restore: the modes a session's output turns on are found wherever reads split the sequences, in set/reset
// order, and the resets undo exactly what is still on (nothing a payload only mentions, nothing turned off again).
import { describe, expect, test } from "bun:test";
import { TerminalModes } from "../../../src/core/terminal-modes";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
function run(...chunks: string[]): TerminalModes {
  const t = new TerminalModes();
  for (const c of chunks) t.feed(enc(c));
  return t;
}

/** What a TUI like Claude Code or vim writes when it starts. */
const TUI_START = "\x1b[3;20r\x1b[2 q\x1b[?1049h\x1b[?1000h\x1b[?1002h\x1b[?1006h\x1b[?2004h\x1b[?25l\x1b=\x1b[?1h\x1b[?1004h\x1b[>1u\x1b[1;32mhello";

describe("terminal-restore: the tracker", () => {
  test("a TUI's start: every mode it set is reset, the alternate screen's kitty stack before leaving it", () => {
    const t = run(TUI_START);
    expect(dec(t.resets())).toBe("\x1b7\x1b[r\x1b8\x1b[<1u\x1b[?1049l\x1b[?1000l\x1b[?1002l\x1b[?1006l\x1b[?2004l\x1b[?25h\x1b[?1l\x1b[?1004l\x1b>\x1b[0 q\x1b[0m");
  });

  test("modes turned off again (a clean exit) leave nothing to reset", () => {
    const t = run(TUI_START, "\x1b[r\x1b[0 q\x1b[0m\x1b[<u\x1b[?1004l\x1b[?1l\x1b>\x1b[?25h\x1b[?2004l\x1b[?1006;1002;1000l\x1b[?1049l");
    expect(t.active()).toEqual([]);
    expect(t.resets()).toEqual(new Uint8Array());
  });

  test("set/reset order: the last word wins, one parameter list sets several", () => {
    expect(dec(run("\x1b[?25l\x1b[?25h\x1b[?25l").resets())).toBe("\x1b[?25h");
    expect(dec(run("\x1b[?1000;1006h", "\x1b[?1000l").resets())).toBe("\x1b[?1006l");
    // Autowrap is on by default: turning it off is what needs undoing.
    expect(dec(run("\x1b[?7l").resets())).toBe("\x1b[?7h");
    expect(run("\x1b[?7h").resets()).toEqual(new Uint8Array());
  });

  test("the alternate screen is left the way it was entered (47, 1047 or 1049)", () => {
    expect(dec(run("\x1b[?47h").resets())).toBe("\x1b[?47l");
    expect(dec(run("\x1b[?1047h").resets())).toBe("\x1b[?1047l");
  });

  test("kitty keyboard: pushes and pops counted per screen; a pop of more than was pushed stops at zero", () => {
    expect(dec(run("\x1b[>1u\x1b[>3u").resets())).toBe("\x1b[<2u");
    expect(dec(run("\x1b[>1u\x1b[>3u\x1b[<u").resets())).toBe("\x1b[<1u");
    expect(run("\x1b[>1u\x1b[<5u").resets()).toEqual(new Uint8Array());
    // One on the main screen, two on the alternate: both stacks are emptied, each while its screen is current.
    expect(dec(run("\x1b[>1u\x1b[?1049h\x1b[>1u\x1b[>1u").resets())).toBe("\x1b[<2u\x1b[?1049l\x1b[<1u");
  });

  test("a scrolling region is reset with the cursor kept where it is; a cursor shape goes back to the default", () => {
    expect(dec(run("\x1b[?1049h\x1b[2;20r").resets())).toBe("\x1b7\x1b[r\x1b8\x1b[?1049l");
    expect(run("\x1b[5;9r", "\x1b[r").resets()).toEqual(new Uint8Array());
    expect(dec(run("\x1b[6 q").resets())).toBe("\x1b[0 q");
    expect(run("\x1b[6 q\x1b[0 q").resets()).toEqual(new Uint8Array());
    expect(dec(run("\x1b[?5h\x1b[?6h").resets())).toBe("\x1b[?5l\x1b[?6l");
  });

  test("ESC c (a full reset) clears everything", () => {
    expect(run(TUI_START, "\x1bc").resets()).toEqual(new Uint8Array());
  });

  test("sequences inside an OSC or DCS payload (a title, a hyperlink) are not mode changes", () => {
    expect(run("\x1b]0;\x1b[?1049h title\x07").active()).toEqual([]);
    expect(run("\x1bP\x1b[?25l\x1b\\").active()).toEqual([]);
    // …and the string ends at its terminator: what follows counts.
    expect(run("\x1b]2;t\x1b\\\x1b[?2004h").active()).toEqual(["bracketed paste: on"]);
  });

  test("an endless parameter list is dropped, not held in memory", () => {
    const t = run("\x1b[?" + "1;".repeat(10_000) + "1049h", "\x1b[?2004h");
    expect(t.active()).toEqual(["bracketed paste: on"]);
  });

  test("property: any split of the output into reads gives the same resets as one read", () => {
    const pieces = [TUI_START, "plain text ✓ ünïcode", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "\x1b[?1049l", "\x1b[?25h", "\x1b[?1003h", "\x1b[<u", "\x1b[?1049h", "\x1b[2J\x1b[H", "\x1b>"];
    let seed = 41;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let round = 0; round < 300; round++) {
      const stream = enc(Array.from({ length: 1 + rand(8) }, () => pieces[rand(pieces.length)]).join(""));
      const whole = new TerminalModes();
      whole.feed(stream);
      const split = new TerminalModes();
      let at = 0;
      while (at < stream.length) {
        const n = 1 + rand(5);
        split.feed(stream.subarray(at, at + n));
        at += n;
      }
      expect(dec(split.resets())).toBe(dec(whole.resets()));
    }
  });
});
