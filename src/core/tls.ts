// The server name a TLS client asks for, read from its first bytes (the ClientHello's SNI), as a pure function.
//
// The egress proxy reads it before a tunnel carries anything, so that a connection checked as one name cannot ask
// the server for another (domain fronting). The bytes are the sandbox's: every length is checked against what
// arrived, and a ClientHello is read across records only up to `MAX_HELLO_BYTES`.

/** The most of a client's first flight that is read for its ClientHello. */
export const MAX_HELLO_BYTES = 64 * 1024;

export type HelloRead =
  /** Not a TLS handshake: the tunnel carries something else, and there is no name to check. */
  | { kind: "not-tls" }
  /** A TLS record, but the ClientHello is not whole yet: read more. */
  | { kind: "more" }
  /** A ClientHello: the name it asks for (lower case, no trailing dot), or null when it names none. */
  | { kind: "hello"; serverName: string | null }
  /** A TLS handshake that is not a well-formed ClientHello. */
  | { kind: "malformed"; why: string };

/** Pure: reads the start of what a client sent. */
export function readClientHello(buf: Uint8Array): HelloRead {
  if (buf.length === 0) return { kind: "more" };
  if (buf[0] !== 0x16) return { kind: "not-tls" };
  if (buf.length >= 2 && buf[1] !== 0x03) return { kind: "not-tls" };
  // Handshake bytes, joined from each record (a ClientHello may be split across records).
  const hs: number[] = [];
  let at = 0;
  let need = -1;
  while (at + 5 <= buf.length) {
    if (buf[at] !== 0x16) return { kind: "malformed", why: "a record that is not a handshake inside the ClientHello" };
    const len = (buf[at + 3]! << 8) | buf[at + 4]!;
    if (len === 0 || len > 16384 + 256) return { kind: "malformed", why: `a record of ${len} bytes` };
    const body = buf.subarray(at + 5, Math.min(at + 5 + len, buf.length));
    for (const b of body) hs.push(b);
    if (hs.length > MAX_HELLO_BYTES) return { kind: "malformed", why: "a ClientHello longer than 64 KiB" };
    if (need < 0 && hs.length >= 4) {
      if (hs[0] !== 0x01) return { kind: "malformed", why: `handshake type ${hs[0]}, not ClientHello` };
      need = 4 + ((hs[1]! << 16) | (hs[2]! << 8) | hs[3]!);
      if (need > MAX_HELLO_BYTES) return { kind: "malformed", why: "a ClientHello longer than 64 KiB" };
    }
    if (need >= 0 && hs.length >= need) return parseHello(Uint8Array.from(hs.slice(4, need)));
    if (at + 5 + len > buf.length) break;
    at += 5 + len;
  }
  if (buf.length > MAX_HELLO_BYTES + 1024) return { kind: "malformed", why: "no whole ClientHello in 64 KiB" };
  return { kind: "more" };
}

function parseHello(b: Uint8Array): HelloRead {
  const bad = (why: string): HelloRead => ({ kind: "malformed", why });
  let at = 2 + 32; // client_version, random
  if (at + 1 > b.length) return bad("cut before the session id");
  at += 1 + b[at]!;
  if (at + 2 > b.length) return bad("cut before the cipher suites");
  at += 2 + ((b[at]! << 8) | b[at + 1]!);
  if (at + 1 > b.length) return bad("cut before the compression methods");
  at += 1 + b[at]!;
  if (at === b.length) return { kind: "hello", serverName: null }; // no extensions at all
  if (at + 2 > b.length) return bad("cut before the extensions");
  const end = at + 2 + ((b[at]! << 8) | b[at + 1]!);
  if (end > b.length) return bad("extensions run past the ClientHello");
  at += 2;
  let serverName: string | null = null;
  let seen = false;
  while (at + 4 <= end) {
    const type = (b[at]! << 8) | b[at + 1]!;
    const len = (b[at + 2]! << 8) | b[at + 3]!;
    const data = at + 4;
    if (data + len > end) return bad("an extension runs past the extensions");
    if (type === 0) {
      if (seen) return bad("two server_name extensions");
      seen = true;
      const r = serverNameOf(b.subarray(data, data + len));
      if (typeof r !== "string" && r !== null) return r;
      serverName = r;
    }
    at = data + len;
  }
  if (at !== end) return bad("a cut extension");
  return { kind: "hello", serverName };
}

/** The host_name of a server_name extension (RFC 6066 §3): exactly one, printable, at most 255 bytes. */
function serverNameOf(x: Uint8Array): string | null | HelloRead {
  if (x.length === 0) return null; // a server's empty echo; a client does not send it, but it names nothing
  if (x.length < 2) return { kind: "malformed", why: "a cut server_name list" };
  const listEnd = 2 + ((x[0]! << 8) | x[1]!);
  if (listEnd !== x.length) return { kind: "malformed", why: "a server_name list of the wrong length" };
  let at = 2;
  let name: string | null = null;
  while (at + 3 <= listEnd) {
    const type = x[at]!;
    const len = (x[at + 1]! << 8) | x[at + 2]!;
    if (at + 3 + len > listEnd) return { kind: "malformed", why: "a server name runs past its list" };
    if (type === 0) {
      if (name !== null) return { kind: "malformed", why: "two host names" };
      if (len === 0 || len > 255) return { kind: "malformed", why: `a host name of ${len} bytes` };
      let s = "";
      for (let i = at + 3; i < at + 3 + len; i++) {
        const c = x[i]!;
        if (c < 0x21 || c > 0x7e) return { kind: "malformed", why: "a host name with a byte that is not printable ASCII" };
        s += String.fromCharCode(c);
      }
      name = s.toLowerCase().replace(/\.$/, "");
    }
    at += 3 + len;
  }
  if (at !== listEnd) return { kind: "malformed", why: "a cut server name" };
  return name;
}
