// Pure: the few DER encoders X.509 certificates need (tag-length-value, integers, object ids, times, PEM).

export type Der = Uint8Array<ArrayBuffer>;

function len(n: number): number[] {
  if (n < 0x80) return [n];
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return [0x80 | bytes.length, ...bytes];
}

export function tlv(tag: number, ...parts: Der[]): Der {
  const body = concat(parts);
  return concat([Uint8Array.from([tag, ...len(body.length)]), body]);
}

export function concat(parts: Der[]): Der {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

export const seq = (...p: Der[]) => tlv(0x30, ...p);

/** A DER INTEGER from unsigned big-endian bytes (leading zeros stripped, a 0 added when the top bit is set). */
export function uint(bytes: Der): Der {
  let i = 0;
  while (i < bytes.length - 1 && bytes[i] === 0) i++;
  const b = bytes.subarray(i);
  return tlv(0x02, b[0]! & 0x80 ? concat([Uint8Array.of(0), b]) : b);
}

export function oid(dotted: string): Der {
  const [a, b, ...rest] = dotted.split(".").map(Number);
  const out = [a! * 40 + b!];
  for (const n of rest) {
    const chunk: number[] = [];
    for (let v = n; ; v = Math.floor(v / 128)) {
      chunk.unshift((v & 0x7f) | (chunk.length ? 0x80 : 0));
      if (v < 128) break;
    }
    out.push(...chunk);
  }
  return tlv(0x06, Uint8Array.from(out));
}

/** A validity time: UTCTime through 2049, GeneralizedTime after (RFC 5280 §4.1.2.5). */
export function utcTime(d: Date): Der {
  const p = (n: number) => String(n).padStart(2, "0");
  const y = d.getUTCFullYear();
  const rest = `${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}Z`;
  return y < 2050 ? tlv(0x17, new TextEncoder().encode(`${p(y % 100)}${rest}`)) : tlv(0x18, new TextEncoder().encode(`${y}${rest}`));
}

export function pem(label: string, der: Der): string {
  const b64 = Buffer.from(der).toString("base64").replace(/(.{64})/g, "$1\n").replace(/\n$/, "");
  return `-----BEGIN ${label}-----\n${b64}\n-----END ${label}-----\n`;
}

