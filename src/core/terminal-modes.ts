// Pure: the terminal modes a session's output turns on (alternate screen, mouse reporting, bracketed paste, a hidden
// cursor, application keys, focus events, the kitty keyboard protocol, …), followed across output chunks, and the bytes
// that turn each of them off again. A client that leaves a session (detach, killed, the daemon gone) writes those to
// the person's terminal: the program that set the modes is still running elsewhere and will not undo them here.

/** DEC private modes the tracker follows; `on` is the terminal's own default (what a reset goes back to). */
const PRIVATE_MODES: Record<number, { name: string; on: boolean }> = {
  1: { name: "application cursor keys", on: false },
  5: { name: "reverse video", on: false },
  6: { name: "origin mode", on: false },
  7: { name: "autowrap", on: true },
  9: { name: "mouse (X10)", on: false },
  25: { name: "cursor visible", on: true },
  1000: { name: "mouse (clicks)", on: false },
  1001: { name: "mouse (highlight)", on: false },
  1002: { name: "mouse (drag)", on: false },
  1003: { name: "mouse (any motion)", on: false },
  1004: { name: "focus events", on: false },
  1005: { name: "mouse (UTF-8)", on: false },
  1006: { name: "mouse (SGR)", on: false },
  1015: { name: "mouse (urxvt)", on: false },
  1016: { name: "mouse (SGR pixels)", on: false },
  2004: { name: "bracketed paste", on: false },
  2026: { name: "synchronized output", on: false },
};
/** The alternate screen's three spellings; leaving uses the one that entered (1049 also restores the cursor). */
const ALT_SCREEN = new Set([47, 1047, 1049]);
/** A control sequence longer than this is not one the tracker follows (and is not held in memory). */
const MAX_SEQUENCE = 64;

const enum State {
  Ground,
  Esc,
  Csi,
  /** OSC, DCS, APC, PM, SOS: skipped to their terminator, so a payload cannot pose as a mode change. */
  Str,
  StrEsc,
}

export class TerminalModes {
  private state = State.Ground;
  private seq = "";
  /** Private modes now different from the terminal's default. */
  private readonly changed = new Map<number, boolean>();
  private alt: number | null = null;
  private keypad = false;
  /** Kitty keyboard flags pushed, per screen (the main and the alternate screen keep separate stacks). */
  private kittyMain = 0;
  private kittyAlt = 0;
  /** Whether a graphic rendition (colour, bold, …) may be in effect. */
  private sgr = false;
  /** A scrolling region (DECSTBM) narrower than the screen: the host's shell would scroll inside it. */
  private region = false;
  /** A cursor shape other than the terminal's default (DECSCUSR: a bar, an underline, blinking). */
  private shape = false;

  feed(chunk: Uint8Array): void {
    for (const b of chunk) this.byte(b);
  }

  /** What is on now, by name (for tests and messages). */
  active(): string[] {
    const out: string[] = [];
    if (this.alt !== null) out.push("alternate screen");
    for (const [mode, value] of this.changed) out.push(`${PRIVATE_MODES[mode]!.name}: ${value ? "on" : "off"}`);
    if (this.keypad) out.push("application keypad");
    if (this.region) out.push("scrolling region");
    if (this.shape) out.push("cursor shape");
    if (this.kittyMain + this.kittyAlt > 0) out.push("kitty keyboard");
    return out;
  }

  /** Whether a full-screen program drew in the main screen (cursor hidden or mouse on, no alternate screen). */
  drewInline(): boolean {
    return this.alt === null && [...this.changed.keys()].some((m) => m === 25 || (m >= 1000 && m <= 1003) || m === 9);
  }

  /** The bytes that put the terminal back as it was before the session's output (empty when nothing changed). */
  resets(): Uint8Array {
    // The scrolling region first, between saving and restoring the cursor (resetting it moves the cursor home).
    let s = this.region ? "\x1b7\x1b[r\x1b8" : "";
    // The current screen's kitty stack first: leaving the alternate screen switches to the main screen's stack.
    const popAll = (n: number) => (n > 0 ? `\x1b[<${n}u` : "");
    if (this.alt !== null) s += popAll(this.kittyAlt) + `\x1b[?${this.alt}l`;
    s += popAll(this.kittyMain);
    for (const [mode, value] of this.changed) s += `\x1b[?${mode}${value ? "l" : "h"}`;
    if (this.keypad) s += "\x1b>";
    if (this.shape) s += "\x1b[0 q";
    if (this.sgr) s += "\x1b[0m";
    return new TextEncoder().encode(s);
  }

  private byte(b: number): void {
    switch (this.state) {
      case State.Ground:
        if (b === 0x1b) this.state = State.Esc;
        return;
      case State.Esc:
        this.state = State.Ground;
        if (b === 0x5b) {
          this.state = State.Csi;
          this.seq = "";
        } else if (b === 0x5d || b === 0x50 || b === 0x5f || b === 0x5e || b === 0x58) this.state = State.Str;
        else if (b === 0x3d) this.keypad = true; // ESC =
        else if (b === 0x3e) this.keypad = false; // ESC >
        else if (b === 0x63) this.fullReset(); // ESC c
        else if (b === 0x1b) this.state = State.Esc;
        return;
      case State.Csi:
        if (b >= 0x40 && b <= 0x7e) {
          this.state = State.Ground;
          this.csi(this.seq, String.fromCharCode(b));
        } else if (b === 0x1b) this.state = State.Esc;
        // CAN and SUB cancel a sequence; other controls inside one act on their own and it goes on.
        else if (b === 0x18 || b === 0x1a || this.seq.length >= MAX_SEQUENCE) this.state = State.Ground;
        else if (b >= 0x20) this.seq += String.fromCharCode(b);
        return;
      case State.Str:
        if (b === 0x07) this.state = State.Ground;
        else if (b === 0x1b) this.state = State.StrEsc;
        return;
      case State.StrEsc:
        this.state = b === 0x5c ? State.Ground : b === 0x1b ? State.StrEsc : State.Str;
        return;
    }
  }

  private csi(params: string, final: string): void {
    if (final === "r" && !/[?>=<]/.test(params)) {
      // CSI r (or 1;0 and the like) is the whole screen again; any other top;bottom narrows it.
      this.region = !/^[01]?(;0?)?$/.test(params);
      return;
    }
    if (final === "q" && params.endsWith(" ")) {
      this.shape = !/^0? $/.test(params);
      return;
    }
    if (final === "m") {
      // Only a plain reset (no parameters, or all zero) clears it.
      this.sgr = !/^[0;]*$/.test(params);
      return;
    }
    if ((final === "h" || final === "l") && params.startsWith("?")) {
      for (const p of params.slice(1).split(";")) this.privateMode(Number(p), final === "h");
      return;
    }
    if (final === "u") {
      const lead = params[0];
      const n = Number(params.slice(1) || "1");
      if (lead === ">") this.kitty(+1);
      else if (lead === "<" && Number.isInteger(n) && n >= 0) this.kitty(-n);
    }
  }

  private kitty(delta: number): void {
    if (this.alt !== null) this.kittyAlt = Math.max(0, this.kittyAlt + delta);
    else this.kittyMain = Math.max(0, this.kittyMain + delta);
  }

  private privateMode(mode: number, on: boolean): void {
    if (ALT_SCREEN.has(mode)) {
      if (on) this.alt ??= mode;
      else if (this.alt !== null) {
        this.alt = null;
        this.kittyAlt = 0;
      }
      return;
    }
    const known = PRIVATE_MODES[mode];
    if (!known) return;
    if (on === known.on) this.changed.delete(mode);
    else this.changed.set(mode, on);
  }

  private fullReset(): void {
    this.changed.clear();
    this.alt = null;
    this.keypad = false;
    this.kittyMain = this.kittyAlt = 0;
    this.sgr = false;
    this.region = false;
    this.shape = false;
  }
}
