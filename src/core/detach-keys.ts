// Pure: the keys that leave an interactive session running and return to the caller's shell (docker's Ctrl-P Ctrl-Q
// by default), and the matcher that finds them in what the person types without holding back anything else.
import { SbxError } from "./errors";

export const DEFAULT_DETACH_KEYS = "ctrl-p,ctrl-q";

/** `ctrl-p,ctrl-q`, `ctrl-\\`, `a,b` (one key each, comma-separated); `none` (or empty) turns detaching off: null. */
export function parseDetachKeys(spec: string): Uint8Array | null {
  const s = spec.trim().toLowerCase();
  if (s === "" || s === "none") return null;
  const keys = s.split(",").map((k) => {
    const m = /^ctrl-(.)$/.exec(k.trim());
    if (m) {
      const c = m[1]!.toUpperCase().charCodeAt(0);
      if (c >= 0x40 && c <= 0x5f) return c - 0x40; // ctrl-@ … ctrl-_ (a-z upper-cased above)
    } else if (k.trim().length === 1) {
      const c = k.trim().charCodeAt(0);
      if (c >= 0x20 && c < 0x7f) return c;
    }
    throw new SbxError("usage", `detach keys '${spec}': '${k.trim()}' is not a key (ctrl-a … ctrl-z, ctrl-@, ctrl-[, ctrl-\\, ctrl-], ctrl-^, ctrl-_, or one printable character)`, {
      hint: `e.g. --detach-keys ${DEFAULT_DETACH_KEYS} (the default), or none to turn it off`,
    });
  });
  return new Uint8Array(keys);
}

/** Finds the detach sequence in typed input; bytes that begin it are held until the next key says whether it was. */
export class DetachMatcher {
  private held = 0;
  constructor(private readonly keys: Uint8Array) {}

  /** What to send on, and whether the sequence was typed (what follows it in the chunk is dropped). */
  feed(chunk: Uint8Array): { forward: Uint8Array; detach: boolean } {
    const out: number[] = [];
    for (const b of chunk) {
      if (b === this.keys[this.held]) {
        this.held++;
        if (this.held === this.keys.length) {
          this.held = 0;
          return { forward: new Uint8Array(out), detach: true };
        }
        continue;
      }
      // Not the sequence after all: what was held goes on, then this byte (which may start it again).
      for (let i = 0; i < this.held; i++) out.push(this.keys[i]!);
      this.held = 0;
      if (b === this.keys[0]) this.held = 1;
      else out.push(b);
    }
    return { forward: new Uint8Array(out), detach: false };
  }
}
