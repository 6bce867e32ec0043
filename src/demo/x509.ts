// A self-signed P-256 certificate built with WebCrypto and a few lines of DER, for hosts without openssl.

type Der = Uint8Array<ArrayBuffer>;

function len(n: number): number[] {
  if (n < 0x80) return [n];
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return [0x80 | bytes.length, ...bytes];
}

function tlv(tag: number, ...parts: Der[]): Der {
  const body = concat(parts);
  return concat([Uint8Array.from([tag, ...len(body.length)]), body]);
}

function concat(parts: Der[]): Der {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

const seq = (...p: Der[]) => tlv(0x30, ...p);

/** A DER INTEGER from unsigned big-endian bytes (leading zeros stripped, a 0 added when the top bit is set). */
function uint(bytes: Der): Der {
  let i = 0;
  while (i < bytes.length - 1 && bytes[i] === 0) i++;
  const b = bytes.subarray(i);
  return tlv(0x02, b[0]! & 0x80 ? concat([Uint8Array.of(0), b]) : b);
}

function oid(dotted: string): Der {
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

function utcTime(d: Date): Der {
  const p = (n: number) => String(n).padStart(2, "0");
  const s = `${p(d.getUTCFullYear() % 100)}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}Z`;
  return tlv(0x17, new TextEncoder().encode(s));
}

function pem(label: string, der: Der): string {
  const b64 = Buffer.from(der).toString("base64").replace(/(.{64})/g, "$1\n").replace(/\n$/, "");
  return `-----BEGIN ${label}-----\n${b64}\n-----END ${label}-----\n`;
}

/** Pure: the DER name `CN=<cn>`. */
function name(cn: string): Der {
  return seq(tlv(0x31, seq(oid("2.5.4.3"), tlv(0x0c, new TextEncoder().encode(cn)))));
}

/** Makes a key pair and a one-day self-signed certificate (CA:TRUE, so a client may trust it directly) for IPv4 addresses. */
export async function webCryptoCert(ips: readonly string[], cn = "sbx demo site", now = new Date()): Promise<{ certPem: string; keyPem: string }> {
  const keys = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"])) as CryptoKeyPair;
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", keys.publicKey));
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", keys.privateKey));
  const ecdsaSha256 = seq(oid("1.2.840.10045.4.3.2"));
  const serial = crypto.getRandomValues(new Uint8Array(16));
  serial[0] = serial[0]! & 0x7f;
  const sanEntries = ips.map((ip) => tlv(0x87, Uint8Array.from(ip.split(".").map(Number))));
  const extensions = tlv(
    0xa3,
    seq(
      seq(oid("2.5.29.19"), tlv(0x01, Uint8Array.of(0xff)), tlv(0x04, seq(tlv(0x01, Uint8Array.of(0xff))))),
      seq(oid("2.5.29.17"), tlv(0x04, seq(...sanEntries))),
    ),
  );
  const tbs = seq(
    tlv(0xa0, tlv(0x02, Uint8Array.of(2))),
    uint(serial),
    ecdsaSha256,
    name(cn),
    seq(utcTime(new Date(now.getTime() - 60_000)), utcTime(new Date(now.getTime() + 86_400_000))),
    name(cn),
    spki,
    extensions,
  );
  // WebCrypto signs as r||s; X.509 wants SEQUENCE { INTEGER r, INTEGER s }.
  const raw = new Uint8Array(await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, keys.privateKey, tbs));
  const sig = seq(uint(raw.subarray(0, 32)), uint(raw.subarray(32)));
  const cert = seq(tbs, ecdsaSha256, tlv(0x03, concat([Uint8Array.of(0), sig])));
  return { certPem: pem("CERTIFICATE", cert), keyPem: pem("PRIVATE KEY", pkcs8) };
}
