// Test-only: every entry of a ustar/pax archive (what core/tar writes and `tar -x` reads), to see what went into a sandbox.
const BLOCK = 512;

export interface ReadEntry {
  path: string;
  type: "file" | "dir" | "symlink" | "other";
  content: Uint8Array;
  target: string;
}

/** The entries of `tar`, pax `path`/`linkpath` records applied; stops at the end blocks or at what is not a tar. */
export function tarEntries(tar: Uint8Array): ReadEntry[] {
  const dec = new TextDecoder();
  const out: ReadEntry[] = [];
  let pax: Record<string, string> = {};
  let o = 0;
  while (o + BLOCK <= tar.length) {
    const h = tar.subarray(o, o + BLOCK);
    if (h.every((b) => b === 0)) break;
    const field = (a: number, b: number) => dec.decode(h.subarray(a, b)).replace(/\0.*$/s, "");
    const size = Number.parseInt(field(124, 136).trim() || "0", 8);
    const flag = String.fromCharCode(h[156]!);
    const body = tar.subarray(o + BLOCK, o + BLOCK + size);
    o += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
    if (flag === "x") {
      for (const m of dec.decode(body).matchAll(/\d+ ([^=]+)=([^\n]*)\n/g)) pax[m[1]!] = m[2]!;
      continue;
    }
    const path = (pax.path ?? field(0, 100)).replace(/\/$/, "");
    const target = pax.linkpath ?? field(157, 257);
    pax = {};
    const type = flag === "0" || flag === "\0" ? "file" : flag === "5" ? "dir" : flag === "2" ? "symlink" : "other";
    out.push({ path, type, content: type === "file" ? body.slice() : new Uint8Array(), target });
  }
  return out;
}

/** The text of the file at `path` in `tar`, or null. */
export function tarText(tar: Uint8Array, path: string): string | null {
  const e = tarEntries(tar).find((x) => x.path === path && x.type === "file");
  return e ? new TextDecoder().decode(e.content) : null;
}
