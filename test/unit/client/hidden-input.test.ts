// A hidden prompt shows nothing typed: raw mode (echo off) while it reads, the terminal restored after Enter, Ctrl-C, end of input or a signal; the line editor keeps only what was typed.
import { describe, expect, test } from "bun:test";
import { HiddenLine, readHidden, type PromptTty } from "../../../src/client/hidden-input";

const bytes = (s: string) => new TextEncoder().encode(s);

/** A terminal that records what happens to it, in order, and lets the test type. */
function fakeTty() {
  const events: string[] = [];
  let data: ((d: Uint8Array) => void) | null = null;
  let end: (() => void) | null = null;
  let signal: (() => void) | null = null;
  const tty: PromptTty = {
    isTTY: true,
    setRawMode: (on) => void events.push(on ? "raw on" : "raw off"),
    onInput(onData, onEnd) {
      data = onData;
      end = onEnd;
      events.push("listening");
      return () => {
        data = end = null;
        events.push("input off");
      };
    },
    write: (s) => void events.push(`write ${JSON.stringify(s)}`),
    onSignal(cb) {
      signal = cb;
      return () => void (signal = null);
    },
  };
  return {
    tty,
    events,
    type: (s: string) => data!(bytes(s)),
    close: () => end!(),
    kill: () => signal!(),
    listening: () => data !== null || end !== null || signal !== null,
  };
}

describe("HiddenLine", () => {
  const typed = (...chunks: string[]) => {
    const l = new HiddenLine();
    let step = l.feed(new Uint8Array());
    for (const c of chunks) step = l.feed(bytes(c));
    return step;
  };

  test("Enter ends the line (CR from a terminal, LF from a paste), in one chunk or many", () => {
    expect(typed("s3cret\r")).toEqual({ kind: "done", value: "s3cret" });
    expect(typed("s3", "cr", "et\n")).toEqual({ kind: "done", value: "s3cret" });
    expect(typed("abc")).toEqual({ kind: "more" });
  });

  test("Backspace removes the last character (a whole UTF-8 one), Ctrl-U the line", () => {
    expect(typed("abcd\x7f\x7fX\r")).toEqual({ kind: "done", value: "abX" });
    expect(typed("pé\x7f\x08\r")).toEqual({ kind: "done", value: "" });
    expect(typed("key-€\x7f\r")).toEqual({ kind: "done", value: "key-" });
    expect(typed("wrong\x15right\r")).toEqual({ kind: "done", value: "right" });
    expect(typed("\x7f\x7fok\r")).toEqual({ kind: "done", value: "ok" });
  });

  test("Ctrl-C cancels, whatever was typed; Ctrl-D ends the line", () => {
    expect(typed("half", "\x03")).toEqual({ kind: "cancelled" });
    expect(typed("all\x04")).toEqual({ kind: "done", value: "all" });
  });

  test("arrows, Alt+key, bracketed-paste markers and other controls are never part of the value", () => {
    expect(typed("a\x1b[Db\x1bOA\x1bxc\t\x07d\r")).toEqual({ kind: "done", value: "abcd" });
    expect(typed("\x1b[200~pasted-key\x1b[201~\r")).toEqual({ kind: "done", value: "pasted-key" });
    expect(typed("\x1b[2", "00~split\x1b[201~\r")).toEqual({ kind: "done", value: "split" });
  });

  test("what follows the end of the line is ignored (a pasted second line is not stored)", () => {
    const l = new HiddenLine();
    expect(l.feed(bytes("first\nsecond"))).toEqual({ kind: "done", value: "first" });
    expect(l.feed(bytes("more\r"))).toEqual({ kind: "done", value: "first" });
    expect(l.end()).toEqual({ kind: "done", value: "first" });
  });

  test("end of input ends the line with what was typed", () => {
    const l = new HiddenLine();
    l.feed(bytes("abc"));
    expect(l.end()).toEqual({ kind: "done", value: "abc" });
  });
});

describe("readHidden", () => {
  test("echo is off (raw mode) before anything is read, and restored after Enter; the value is never written", async () => {
    const t = fakeTty();
    const p = readHidden(t.tty, "value: ");
    expect(t.events).toEqual(['write "value: "', "raw on", "listening"]);
    t.type("hunter2");
    t.type("\r");
    expect(await p).toBe("hunter2");
    expect(t.events).toEqual(['write "value: "', "raw on", "listening", "input off", "raw off", 'write "\\n"']);
    expect(t.events.join()).not.toContain("hunter2");
    expect(t.listening()).toBe(false);
  });

  test("Ctrl-C restores the terminal and answers null", async () => {
    const t = fakeTty();
    const p = readHidden(t.tty, "value: ");
    t.type("typed so far\x03");
    expect(await p).toBeNull();
    expect(t.events.slice(-3)).toEqual(["input off", "raw off", 'write "\\n"']);
    expect(t.listening()).toBe(false);
  });

  test("a signal (SIGTERM, SIGHUP, an outside SIGINT) restores the terminal too", async () => {
    const t = fakeTty();
    const p = readHidden(t.tty, "value: ");
    t.type("abc");
    t.kill();
    expect(await p).toBeNull();
    expect(t.events.slice(-2)).toEqual(["raw off", 'write "\\n"']);
    expect(t.listening()).toBe(false);
  });

  test("stdin closing ends the line with what was typed, terminal restored", async () => {
    const t = fakeTty();
    const p = readHidden(t.tty, "value: ");
    t.type("abc");
    t.close();
    expect(await p).toBe("abc");
    expect(t.events.slice(-2)).toEqual(["raw off", 'write "\\n"']);
  });
});
