// A PKCS#12 trust store (RFC 7292) of certificates only, each a trusted certificate entry as the JVM reads one: what
// `-Djavax.net.ssl.trustStore` names, since Java reads none of the PEM variables other clients do. Pure: bytes in,
// bytes out, the same bytes for the same certificates (the salt is drawn from them), so a store is cached and written
// again only when what it holds changed.
import { createHash, createHmac } from "node:crypto";
import { concat, oid, seq, tlv, uint, type Der } from "./der";
import { children, fromPem } from "./x509";

/**
 * The store's password: fixed and public, and that is safe. Nothing in the store is secret (certificates anyone may
 * read, no key), so no password could protect anything; the JVM wants one to check the store's MAC, which only says
 * the file is whole. "changeit" is the JDK's own for its cacerts, a value no reader will mistake for a secret.
 */
export const TRUSTSTORE_PASSWORD = "changeit";

const OID = {
  data: "1.2.840.113549.1.7.1",
  certBag: "1.2.840.113549.1.12.10.1.3",
  x509Certificate: "1.2.840.113549.1.9.22.1",
  friendlyName: "1.2.840.113549.1.9.20",
  // Oracle's "trusted key usage" bag attribute: the JDK makes a certificate bag a trust anchor (a trustedCertEntry)
  // only when it has this; without it, a certificate is taken as part of some key's chain and trusts nothing.
  trustedKeyUsage: "2.16.840.1.113894.746875.1.1",
  anyExtendedKeyUsage: "2.5.29.37.0",
  sha256: "2.16.840.1.101.3.4.2.1",
  commonName: "2.5.4.3",
  organizationalUnit: "2.5.4.11",
  organization: "2.5.4.10",
} as const;

/** The MAC's iteration count: it buys nothing with a public password; 2048 is OpenSSL's own default, which every reader takes. */
const MAC_ITERATIONS = 2048;
/** SHA-256's output and block sizes in bytes (u and v of RFC 7292 B.2). */
const U = 32;
const V = 64;

/** A BMPString's bytes (UTF-16 big-endian), as PKCS#12 spells names and passwords. */
function bmpBytes(s: string): Der {
  const out = new Uint8Array(s.length * 2);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    out[2 * i] = c >> 8;
    out[2 * i + 1] = c & 0xff;
  }
  return out;
}

/** A DER SET OF: its elements sorted by their encodings (X.690 §11.6). */
function setOf(...parts: Der[]): Der {
  return tlv(0x31, ...[...parts].sort((a, b) => Buffer.compare(a, b)));
}

/** A ContentInfo of type data: `bytes` in an OCTET STRING, unencrypted (certificates hide nothing). */
const dataInfo = (bytes: Der) => seq(oid(OID.data), tlv(0xa0, tlv(0x04, bytes)));

/** The attributes a name is taken from, in order of preference, as their DER. */
const NAMED_BY = [OID.commonName, OID.organizationalUnit, OID.organization].map((o) => [o, Buffer.from(oid(o)).toString("hex")] as const);

/** The first of CN, OU, O in a certificate's subject: what the entry is called, for a person reading `keytool -list`. */
export function subjectName(cert: Der): string | null {
  const [tbs] = children(children(cert)[0]!.body);
  const fields = children(tbs!.body);
  // A v1 certificate has no explicit version: its subject is one field earlier.
  const subject = fields[fields[0]!.tag === 0xa0 ? 5 : 4];
  if (!subject) return null;
  const found = new Map<string, string>();
  for (const rdn of children(subject.body)) {
    for (const atv of children(rdn.body)) {
      const [id, value] = children(atv.body);
      if (!id || !value) continue;
      const hex = Buffer.from(id.all).toString("hex");
      const name = NAMED_BY.find(([, h]) => h === hex)?.[0];
      if (name && !found.has(name)) found.set(name, decodeString(value.tag, value.body));
    }
  }
  for (const [o] of NAMED_BY) if (found.get(o)) return found.get(o)!;
  return null;
}

function decodeString(tag: number, body: Der): string {
  if (tag === 0x1e) return Buffer.from(body).swap16().toString("utf16le");
  if (tag === 0x0c) return Buffer.from(body).toString("utf8");
  return Buffer.from(body).toString("latin1");
}

/** Every certificate of a PEM bundle as DER, in order; a block that is not one DER certificate is left out. */
export function certificatesOf(pemText: string): Der[] {
  const out: Der[] = [];
  for (const m of pemText.matchAll(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g)) {
    try {
      const der = fromPem(m[0], "CERTIFICATE");
      const top = children(der);
      if (top.length === 1 && top[0]!.tag === 0x30 && children(top[0]!.body).length === 3) out.push(der);
    } catch {
      /* a damaged block: the rest of the bundle still counts */
    }
  }
  return out;
}

/** Names each certificate once: Java keys entries by the lower-cased name, so a repeated one would replace the first. */
function aliases(certs: readonly Der[]): string[] {
  const used = new Set<string>();
  return certs.map((c, i) => {
    let base: string;
    try {
      base = subjectName(c) ?? `certificate ${i + 1}`;
    } catch {
      base = `certificate ${i + 1}`;
    }
    let name = base;
    for (let n = 2; used.has(name.toLowerCase()); n++) name = `${base} (${n})`;
    used.add(name.toLowerCase());
    return name;
  });
}

/** One certificate bag: the certificate, its name, and the attribute that makes it a trust anchor for any purpose. */
function certBag(cert: Der, alias: string): Der {
  return seq(
    oid(OID.certBag),
    tlv(0xa0, seq(oid(OID.x509Certificate), tlv(0xa0, tlv(0x04, cert)))),
    setOf(seq(oid(OID.friendlyName), setOf(tlv(0x1e, bmpBytes(alias)))), seq(oid(OID.trustedKeyUsage), setOf(oid(OID.anyExtendedKeyUsage)))),
  );
}

/**
 * The MAC key, RFC 7292 appendix B.2 with SHA-256 and ID 3. The key is one hash long, so one round of step 6 (the
 * iterated hash of D || I) is all of it; the later rounds, which would change I, are never needed.
 */
export function macKey(password: string, salt: Der, iterations: number): Buffer {
  const fill = (b: Der) => {
    const out = new Uint8Array(V * Math.ceil(b.length / V));
    for (let i = 0; i < out.length; i++) out[i] = b[i % b.length]!;
    return out;
  };
  // The password as a BMPString with its two-byte terminator.
  const p = concat([bmpBytes(password), new Uint8Array(2)]);
  let a = createHash("sha256").update(new Uint8Array(V).fill(3)).update(fill(salt)).update(fill(p)).digest();
  for (let r = 1; r < iterations; r++) a = createHash("sha256").update(a).digest();
  return a.subarray(0, U);
}

/**
 * Pure: a PKCS#12 file holding `certs` (DER), each a trusted certificate entry, unencrypted, with a SHA-256 MAC under
 * `password`. Java 8 and later load it as a PKCS12 KeyStore of trust anchors; OpenSSL and keytool list it.
 */
export function trustStore(certs: readonly Der[], password = TRUSTSTORE_PASSWORD): Der {
  const names = aliases(certs);
  const authSafe = seq(dataInfo(seq(...certs.map((c, i) => certBag(c, names[i]!)))));
  // The salt: drawn from what the store holds, so the same certificates give the same file (nothing here is secret).
  const salt = new Uint8Array(createHash("sha256").update(authSafe).digest().subarray(0, 16));
  const mac = new Uint8Array(createHmac("sha256", macKey(password, salt, MAC_ITERATIONS)).update(authSafe).digest());
  const macData = seq(seq(seq(oid(OID.sha256), tlv(0x05)), tlv(0x04, mac)), tlv(0x04, salt), uint(Uint8Array.of(MAC_ITERATIONS >> 8, MAC_ITERATIONS & 0xff)));
  return seq(tlv(0x02, Uint8Array.of(3)), dataInfo(authSafe), macData);
}
