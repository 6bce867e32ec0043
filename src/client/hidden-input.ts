// A secret typed at the terminal with nothing shown: raw mode (so no echo, and Ctrl-C is a byte sbx handles), a tiny line editor, the terminal always restored.

/** The terminal as a hidden prompt needs it: this process's stdin and stderr, or a fake in tests. */
export interface PromptTty {
  readonly isTTY: boolean;
  /** Raw mode turns echo and line editing off; off again restores the terminal as it was. */
  setRawMode(on: boolean): void;
  /** Subscribes to keystrokes; `onEnd` when stdin closes. Returns an unsubscribe. */
  onInput(onData: (d: Uint8Array) => void, onEnd: () => void): () => void;
  /** Writes to the terminal (the prompt goes to stderr: stdout is for results). */
  write(s: string): void;
  /** Subscribes to the signals that would end the process (SIGINT, SIGTERM, SIGHUP), so the terminal is restored first. */
  onSignal(cb: () => void): () => void;
}

export type HiddenStep = { kind: "more" } | { kind: "done"; value: string } | { kind: "cancelled" };

const MORE: HiddenStep = { kind: "more" };

/**
 * Pure: the line editor of a hidden prompt, fed the terminal's raw bytes. Enter (or Ctrl-D) ends the line, Ctrl-C
 * cancels, Backspace removes the last character, Ctrl-U the whole line; escape sequences (arrows, bracketed-paste
 * markers) and other control characters are dropped, never stored. Bytes after the end of the line are ignored.
 */
export class HiddenLine {
  private bytes: number[] = [];
  /** 0: text; 1: after ESC; 2: inside an escape sequence, until its final byte. */
  private esc: 0 | 1 | 2 = 0;
  private over: HiddenStep | null = null;

  feed(chunk: Uint8Array): HiddenStep {
    for (const b of chunk) {
      if (this.over) return this.over;
      if (this.esc === 1) {
        this.esc = b === 0x5b || b === 0x4f ? 2 : 0; // ESC [ (CSI) or ESC O (SS3); anything else is Alt+key, dropped
        continue;
      }
      if (this.esc === 2) {
        if (b >= 0x40 && b <= 0x7e) this.esc = 0;
        continue;
      }
      if (b === 0x1b) this.esc = 1;
      else if (b === 0x03) this.finish({ kind: "cancelled" });
      else if (b === 0x0d || b === 0x0a || b === 0x04) this.finish({ kind: "done", value: this.text() });
      else if (b === 0x7f || b === 0x08) this.backspace();
      else if (b === 0x15) this.wipe();
      else if (b >= 0x20) this.bytes.push(b);
    }
    return this.over ?? MORE;
  }

  /** stdin closed: the line ends with what was typed. */
  end(): HiddenStep {
    if (!this.over) this.finish({ kind: "done", value: this.text() });
    return this.over!;
  }

  private text(): string {
    return new TextDecoder().decode(Uint8Array.from(this.bytes));
  }

  private finish(step: HiddenStep): void {
    this.over = step;
    this.wipe();
  }

  /** Drops the last UTF-8 character: its continuation bytes (10xxxxxx), then its lead byte. */
  private backspace(): void {
    while (this.bytes.length > 0 && (this.bytes[this.bytes.length - 1]! & 0xc0) === 0x80) this.bytes.pop();
    this.bytes.pop();
  }

  private wipe(): void {
    this.bytes.fill(0);
    this.bytes = [];
  }
}

/**
 * Asks for a secret on the terminal without showing it: the prompt, raw mode, keystrokes to a HiddenLine, then the
 * terminal restored (raw mode off, a newline, every listener removed) whatever happened. Returns what was typed, or
 * null when the person cancelled (Ctrl-C, or a signal).
 */
export async function readHidden(tty: PromptTty, prompt: string): Promise<string | null> {
  const line = new HiddenLine();
  const unsubscribe: (() => void)[] = [];
  tty.write(prompt);
  tty.setRawMode(true);
  try {
    const step = await new Promise<HiddenStep>((resolve) => {
      const settle = (s: HiddenStep) => void (s.kind !== "more" && resolve(s));
      unsubscribe.push(tty.onSignal(() => resolve({ kind: "cancelled" })));
      unsubscribe.push(tty.onInput((d) => settle(line.feed(d)), () => settle(line.end())));
    });
    return step.kind === "done" ? step.value : null;
  } finally {
    for (const off of unsubscribe.reverse()) off();
    tty.setRawMode(false);
    // Echo was off: the Enter (or ^C) was not shown, so the next line would start after the prompt.
    tty.write("\n");
  }
}

/** This process's terminal: keystrokes from stdin, the prompt on stderr. */
export function processPromptTty(): PromptTty {
  const stdin = process.stdin;
  const signals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
  return {
    isTTY: Boolean(stdin.isTTY),
    setRawMode(on) {
      if (stdin.isTTY) stdin.setRawMode(on);
    },
    onInput(onData, onEnd) {
      const data = (d: Buffer) => onData(new Uint8Array(d));
      stdin.on("data", data);
      stdin.on("end", onEnd);
      stdin.resume();
      return () => {
        stdin.off("data", data);
        stdin.off("end", onEnd);
        stdin.pause();
      };
    },
    write: (s) => void process.stderr.write(s),
    onSignal(cb) {
      for (const s of signals) process.on(s, cb);
      return () => {
        for (const s of signals) process.off(s, cb);
      };
    },
  };
}
