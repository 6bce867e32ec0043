// A tiny ustar/pax writer (dirs, files, links): the archives `docker cp -` and a sandbox's own tar unpack (home seeding, /etc/passwd, --with-changes).

export interface TarEntry {
  /** Path relative to the archive root, without a leading '/'. Directories may end with '/'. */
  path: string;
  type: "dir" | "file" | "symlink";
  /** A link's target (symlinks only), stored as it is: never followed. */
  target?: string;
  mode: number;
  uid: number;
  gid: number;
  /** File content (files only). */
  content?: Uint8Array;
  /** Seconds since the epoch; fixed by default so archives are reproducible. */
  mtime?: number;
}

const BLOCK = 512;
const enc = new TextEncoder();

function octal(n: number, width: number): string {
  // width includes the trailing NUL
  return n.toString(8).padStart(width - 1, "0") + "\0";
}

function put(buf: Uint8Array, offset: number, s: string, width: number): void {
  const b = enc.encode(s);
  if (b.length > width) throw new Error(`tar: field too long (${b.length} > ${width}): ${s}`);
  buf.set(b, offset);
}

function header(name: string, size: number, typeflag: string, e: Pick<TarEntry, "mode" | "uid" | "gid" | "mtime">, linkname = ""): Uint8Array {
  const h = new Uint8Array(BLOCK);
  put(h, 0, name, 100);
  if (linkname !== "") put(h, 157, linkname, 100);
  put(h, 100, octal(e.mode & 0o7777, 8), 8);
  put(h, 108, octal(e.uid, 8), 8);
  put(h, 116, octal(e.gid, 8), 8);
  put(h, 124, octal(size, 12), 12);
  put(h, 136, octal(e.mtime ?? 0, 12), 12);
  put(h, 148, "        ", 8); // checksum counted as spaces
  put(h, 156, typeflag, 1);
  put(h, 257, "ustar\0", 6);
  put(h, 263, "00", 2);
  let sum = 0;
  for (const x of h) sum += x;
  put(h, 148, sum.toString(8).padStart(6, "0") + "\0 ", 8);
  return h;
}

function padded(data: Uint8Array): Uint8Array[] {
  const rest = data.length % BLOCK;
  return rest === 0 ? [data] : [data, new Uint8Array(BLOCK - rest)];
}

/** One pax record: "<len> key=value\n" where len counts the whole record, itself included. */
export function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  const bodyLen = enc.encode(body).length;
  let len = bodyLen + 1;
  while (String(len).length + bodyLen !== len) len = String(len).length + bodyLen;
  return `${len}${body}`;
}

/**
 * Pure: the header blocks of one entry whose content (`size` bytes, files only) follows them: a pax record first when
 * its name or link target does not fit ustar's fields. Streamed archives (a build context) write content and padding
 * themselves; tarArchive uses the same blocks.
 */
export function tarHeader(e: Omit<TarEntry, "content">, size: number): Uint8Array[] {
  let name = e.path.replace(/^\/+/, "");
  if (e.type === "dir" && !name.endsWith("/")) name += "/";
  const target = e.type === "symlink" ? (e.target ?? "") : "";
  const longLink = enc.encode(target).length > 99;
  const longName = enc.encode(name).length > 99;
  const parts: Uint8Array[] = [];
  if (longName || longLink) {
    const pax = enc.encode([...(longName ? [paxRecord("path", name)] : []), ...(longLink ? [paxRecord("linkpath", target)] : [])].join(""));
    parts.push(header("PaxHeader", pax.length, "x", { mode: 0o644, uid: 0, gid: 0 }), ...padded(pax));
    if (longName) name = name.slice(-90).replace(/^[^/]*\//, "");
  }
  parts.push(header(name, e.type === "file" ? size : 0, e.type === "dir" ? "5" : e.type === "symlink" ? "2" : "0", e, longLink ? target.slice(0, 99) : target));
  return parts;
}

/** Pure: the zeros that pad `size` bytes of content to a whole block (empty when none are needed). */
export function tarPadding(size: number): Uint8Array {
  const rest = size % BLOCK;
  return new Uint8Array(rest === 0 ? 0 : BLOCK - rest);
}

/** The two zero blocks that end an archive. */
export function tarEnd(): Uint8Array {
  return new Uint8Array(BLOCK * 2);
}

/** Pure: the bytes of a tar archive holding `entries` (numeric owners only, like `tar --numeric-owner`). */
export function tarArchive(entries: readonly TarEntry[]): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const e of entries) {
    const content = e.type === "file" ? (e.content ?? new Uint8Array()) : new Uint8Array();
    parts.push(...tarHeader(e, content.length));
    if (content.length > 0) parts.push(...padded(content));
  }
  parts.push(tarEnd());
  const total = parts.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(total);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/**
 * Pure: the first entry of a tar (what the engine's archive GET of one path answers), pax headers skipped; its type
 * (`file` for a regular file, else `other`) and, for a file, its content. null when the bytes are not a tar or the
 * file is larger than `max` (the image's files are not trusted: bounded before they are read).
 */
export function firstTarEntry(tar: Uint8Array, max = 1024 * 1024): { type: "file" | "other"; content: Uint8Array } | null {
  const dec = new TextDecoder();
  let o = 0;
  while (o + BLOCK <= tar.length) {
    const h = tar.subarray(o, o + BLOCK);
    if (h.every((b) => b === 0)) return null;
    if (dec.decode(h.subarray(257, 262)) !== "ustar") return null;
    const sizeText = dec.decode(h.subarray(124, 136)).replace(/\0.*$/s, "").trim();
    if (!/^[0-7]+$/.test(sizeText)) return null;
    const size = Number.parseInt(sizeText, 8);
    const flag = String.fromCharCode(h[156]!);
    const body = o + BLOCK;
    if (flag === "x" || flag === "g") {
      o = body + Math.ceil(size / BLOCK) * BLOCK;
      continue;
    }
    if (flag !== "0" && flag !== "\0") return { type: "other", content: new Uint8Array() };
    if (size > max || body + size > tar.length) return null;
    return { type: "file", content: tar.slice(body, body + size) };
  }
  return null;
}
