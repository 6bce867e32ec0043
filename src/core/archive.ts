// What a gzip or zip blob holds, for the push scan and the copy-in scan: unpacked in memory, within bounds, never written anywhere. Pure.
import { gunzipSync, inflateRawSync } from "node:zlib";

/** A blob larger than this is not unpacked (the scan still reads it as it is). */
export const MAX_ARCHIVE_BYTES = 16 * 1024 * 1024;
/** What one blob may unpack to, all its members together: past it the rest is not looked at. */
export const MAX_UNPACKED_BYTES = 64 * 1024 * 1024;
/** Archives inside archives (a jar in a war, a tar.gz in a zip) are opened this deep. */
const MAX_DEPTH = 2;

export interface Unpacked {
  /** Where in the blob: "" for a gzip's content, the member's name for a zip's. */
  member: string;
  bytes: Uint8Array;
}

export interface UnpackResult {
  members: Unpacked[];
  /** Why part of it was not looked at (over a bound, a method other than stored/deflate, corrupt), or null. */
  skipped: string | null;
}

export function isGzip(b: Uint8Array): boolean {
  return b.length >= 3 && b[0] === 0x1f && b[1] === 0x8b && b[2] === 0x08;
}

export function isZip(b: Uint8Array): boolean {
  return b.length >= 4 && b[0] === 0x50 && b[1] === 0x4b && b[2] === 0x03 && b[3] === 0x04;
}

/**
 * Unpacks a gzip (every member) or a zip (stored and deflated entries, read from the central directory), and archives
 * found inside those, down to MAX_DEPTH. Never throws: what cannot be read is named in `skipped`.
 */
export function unpackArchive(bytes: Uint8Array, budget = MAX_UNPACKED_BYTES): UnpackResult {
  const members: Unpacked[] = [];
  let left = budget;
  let skipped: string | null = null;
  const skip = (why: string) => {
    skipped ??= why;
  };
  const open = (b: Uint8Array, where: string, depth: number) => {
    if (depth > MAX_DEPTH) return skip(`${where || "the blob"}: archives nested deeper than ${MAX_DEPTH}`);
    if (isGzip(b)) {
      if (left <= 0) return skip("over the unpacked-size bound");
      let out: Uint8Array;
      try {
        out = gunzipSync(b, { maxOutputLength: left });
      } catch (e) {
        return skip(`${where || "the blob"}: ${(e as Error).message.split("\n")[0]}`);
      }
      left -= out.length;
      members.push({ member: where, bytes: out });
      if (isGzip(out) || isZip(out)) open(out, where, depth + 1);
      return;
    }
    if (isZip(b)) {
      for (const e of zipEntries(b, skip)) {
        const name = where ? `${where}!${e.name}` : e.name;
        if (left <= 0) return skip("over the unpacked-size bound");
        let out: Uint8Array;
        try {
          out = e.method === 0 ? e.data : inflateRawSync(e.data, { maxOutputLength: left });
        } catch (err) {
          skip(`${name}: ${(err as Error).message.split("\n")[0]}`);
          continue;
        }
        left -= out.length;
        members.push({ member: name, bytes: out });
        if (isGzip(out) || isZip(out)) open(out, name, depth + 1);
      }
    }
  };
  open(bytes, "", 1);
  return { members, skipped };
}

interface ZipEntry {
  name: string;
  method: number;
  data: Uint8Array;
}

/** A zip's entries from its central directory (the local headers' sizes may be zero when a data descriptor follows). */
function zipEntries(b: Uint8Array, skip: (why: string) => void): ZipEntry[] {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  // The end-of-central-directory record: within the last 64 KiB + 22 bytes (its comment is at most 65535 bytes).
  let eocd = -1;
  for (let i = b.length - 22; i >= Math.max(0, b.length - 22 - 0xffff); i--) {
    if (v.getUint32(i, true) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) {
    skip("a zip without its central directory");
    return [];
  }
  const count = v.getUint16(eocd + 10, true);
  let p = v.getUint32(eocd + 16, true);
  const out: ZipEntry[] = [];
  for (let n = 0; n < count; n++) {
    if (p + 46 > b.length || v.getUint32(p, true) !== 0x02014b50) {
      skip("a zip whose central directory is cut short");
      break;
    }
    const method = v.getUint16(p + 10, true);
    const compressed = v.getUint32(p + 20, true);
    const nameLen = v.getUint16(p + 28, true);
    const extraLen = v.getUint16(p + 30, true);
    const commentLen = v.getUint16(p + 32, true);
    const local = v.getUint32(p + 42, true);
    const name = new TextDecoder().decode(b.subarray(p + 46, p + 46 + nameLen));
    p += 46 + nameLen + extraLen + commentLen;
    if (compressed === 0xffffffff || local === 0xffffffff) {
      skip(`${name}: a zip64 entry`);
      continue;
    }
    if (local + 30 > b.length || v.getUint32(local, true) !== 0x04034b50) {
      skip(`${name}: no local header where the directory says`);
      continue;
    }
    const start = local + 30 + v.getUint16(local + 26, true) + v.getUint16(local + 28, true);
    if (start + compressed > b.length) {
      skip(`${name}: cut short`);
      continue;
    }
    if (method !== 0 && method !== 8) {
      skip(`${name}: compression method ${method}`);
      continue;
    }
    if (name.endsWith("/") && compressed === 0) continue; // a directory
    out.push({ name, method, data: b.subarray(start, start + compressed) });
  }
  return out;
}
