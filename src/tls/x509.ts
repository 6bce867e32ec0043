// X.509 with WebCrypto (P-256, ECDSA-SHA256) and a few lines of DER: a self-signed certificate, a CA, and the leaf
// certificates that CA signs for a host name, in process (no openssl spawn: ≈48 ms a leaf measured with the CLI).
import { concat, oid, pem, seq, tlv, uint, utcTime, type Der } from "./der";

const ECDSA_SHA256 = () => seq(oid("1.2.840.10045.4.3.2"));
const P256 = { name: "ECDSA", namedCurve: "P-256" } as const;
const enc = new TextEncoder();

/** Pure: the DER name `CN=<cn>` (and `O=<org>` when given). */
export function dn(cn: string, org?: string): Der {
  const rdn = (id: string, v: string) => tlv(0x31, seq(oid(id), tlv(0x0c, enc.encode(v))));
  return seq(...(org ? [rdn("2.5.4.10", org)] : []), rdn("2.5.4.3", cn));
}

/** One DER element's tag, its whole bytes and its content. */
interface Element {
  tag: number;
  all: Der;
  body: Der;
}

/** Pure: the elements of a constructed DER value's content, in order. Throws on a malformed length. */
export function children(body: Der): Element[] {
  const out: Element[] = [];
  let i = 0;
  while (i < body.length) {
    const start = i;
    const tag = body[i++]!;
    let n = body[i++]!;
    if (n & 0x80) {
      const k = n & 0x7f;
      if (k === 0 || k > 4) throw new Error("unsupported DER length");
      n = 0;
      for (let j = 0; j < k; j++) n = n * 256 + body[i++]!;
    }
    if (i + n > body.length) throw new Error("DER element runs past its container");
    out.push({ tag, all: body.subarray(start, i + n), body: body.subarray(i, i + n) });
    i += n;
  }
  return out;
}

/** Pure: the DER of a PEM block's first `label` section. */
export function fromPem(text: string, label: string): Der {
  const m = new RegExp(`-----BEGIN ${label}-----([\\s\\S]*?)-----END ${label}-----`).exec(text);
  if (!m) throw new Error(`no ${label} in the PEM text`);
  return new Uint8Array(Buffer.from(m[1]!.replace(/\s+/g, ""), "base64"));
}

/** The subjectPublicKeyInfo's key bits, hashed as RFC 5280 §4.2.1.2 (1) says for a key identifier. */
async function keyId(spki: Der): Promise<Der> {
  const [, bits] = children(children(spki)[0]!.body);
  return new Uint8Array(await crypto.subtle.digest("SHA-1", bits!.body.subarray(1)));
}

function serial(): Der {
  const s = crypto.getRandomValues(new Uint8Array(16));
  s[0] = s[0]! & 0x7f;
  return uint(s);
}

const ext = (id: string, critical: boolean, value: Der) => seq(oid(id), ...(critical ? [tlv(0x01, Uint8Array.of(0xff))] : []), tlv(0x04, value));

/** A SubjectAltName entry: an IPv4 address, or a DNS name. */
function altName(n: string): Der {
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(n)) return tlv(0x87, Uint8Array.from(n.split(".").map(Number)));
  return tlv(0x82, enc.encode(n));
}

async function signed(tbs: Der, key: CryptoKey): Promise<Der> {
  // WebCrypto signs as r||s; X.509 wants SEQUENCE { INTEGER r, INTEGER s }.
  const raw = new Uint8Array(await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, key, tbs));
  const sig = seq(uint(raw.subarray(0, 32)), uint(raw.subarray(32)));
  return seq(tbs, ECDSA_SHA256(), tlv(0x03, concat([Uint8Array.of(0), sig])));
}

interface TbsInput {
  issuer: Der;
  subject: Der;
  spki: Der;
  notBefore: Date;
  notAfter: Date;
  extensions: Der[];
}

function tbs(t: TbsInput): Der {
  return seq(
    tlv(0xa0, tlv(0x02, Uint8Array.of(2))),
    serial(),
    ECDSA_SHA256(),
    t.issuer,
    seq(utcTime(t.notBefore), utcTime(t.notAfter)),
    t.subject,
    t.spki,
    tlv(0xa3, seq(...t.extensions)),
  );
}

async function newKeys(): Promise<{ keys: CryptoKeyPair; spki: Der; keyPem: string }> {
  const keys = (await crypto.subtle.generateKey(P256, true, ["sign", "verify"])) as CryptoKeyPair;
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", keys.publicKey));
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", keys.privateKey));
  return { keys, spki, keyPem: pem("PRIVATE KEY", pkcs8) };
}

/** Makes a key pair and a one-day self-signed certificate (CA:TRUE, so a client may trust it directly) for IPv4 addresses. */
export async function selfSignedCert(ips: readonly string[], cn: string, now = new Date()): Promise<{ certPem: string; keyPem: string }> {
  const k = await newKeys();
  const name = dn(cn);
  const cert = await signed(
    tbs({
      issuer: name,
      subject: name,
      spki: k.spki,
      notBefore: new Date(now.getTime() - 60_000),
      notAfter: new Date(now.getTime() + 86_400_000),
      extensions: [ext("2.5.29.19", true, seq(tlv(0x01, Uint8Array.of(0xff)))), ext("2.5.29.17", false, seq(...ips.map(altName)))],
    }),
    k.keys.privateKey,
  );
  return { certPem: pem("CERTIFICATE", cert), keyPem: k.keyPem };
}

/** A CA as the signer holds it: its certificate, its private key, and what a leaf names of it. */
export interface Ca {
  certPem: string;
  key: CryptoKey;
  subject: Der;
  keyId: Der;
}

/** How long a CA is valid: ten years; the daemon makes a new one when it is near its end. */
export const CA_DAYS = 3650;

/**
 * Makes a CA: P-256, CA:TRUE with path length 0 (it signs leaves only), key usage certificate and CRL signing, both
 * critical, as strict verifiers (Python 3.13's VERIFY_X509_STRICT, Go) require. Returns its PEMs; the key is the caller's
 * to keep 0600.
 */
export async function makeCa(cn: string, now = new Date()): Promise<{ certPem: string; keyPem: string }> {
  const k = await newKeys();
  const name = dn(cn, "sbx");
  const id = await keyId(k.spki);
  const cert = await signed(
    tbs({
      issuer: name,
      subject: name,
      spki: k.spki,
      notBefore: new Date(now.getTime() - 3_600_000),
      notAfter: new Date(now.getTime() + CA_DAYS * 86_400_000),
      extensions: [
        ext("2.5.29.19", true, seq(tlv(0x01, Uint8Array.of(0xff)), tlv(0x02, Uint8Array.of(0)))),
        // keyCertSign (bit 5) and cRLSign (bit 6): one byte 0b0000_0110, its last bit unused.
        ext("2.5.29.15", true, tlv(0x03, Uint8Array.of(1, 0x06))),
        ext("2.5.29.14", false, tlv(0x04, id)),
      ],
    }),
    k.keys.privateKey,
  );
  return { certPem: pem("CERTIFICATE", cert), keyPem: k.keyPem };
}

/** Loads a CA from its PEMs (the key as PKCS#8) for signing. */
export async function loadCa(certPem: string, keyPem: string): Promise<Ca> {
  const der = fromPem(certPem, "CERTIFICATE");
  const tbsFields = children(children(children(der)[0]!.body)[0]!.body);
  // version, serial, signature, issuer, validity, subject, spki, extensions
  const subject = tbsFields[5]!.all;
  const spki = tbsFields[6]!.all;
  const key = await crypto.subtle.importKey("pkcs8", fromPem(keyPem, "PRIVATE KEY"), P256, false, ["sign"]);
  return { certPem, key, subject, keyId: await keyId(spki) };
}

/** How long a leaf is valid; the issuer makes a new one well before (`LEAF_RENEW_MS`). */
export const LEAF_DAYS = 7;

/**
 * A leaf certificate for `names` (DNS names or IPv4 addresses) signed by `ca`, with its own new key: CA:FALSE, digital
 * signature, server authentication, the names as SubjectAltName (what clients check; the CN is the first name, for logs).
 */
export async function issueLeaf(ca: Ca, names: readonly string[], now = new Date()): Promise<{ certPem: string; keyPem: string; notAfter: Date }> {
  if (names.length === 0) throw new Error("a leaf certificate needs a name");
  const k = await newKeys();
  const notAfter = new Date(now.getTime() + LEAF_DAYS * 86_400_000);
  const cert = await signed(
    tbs({
      issuer: ca.subject,
      subject: dn(names[0]!),
      spki: k.spki,
      notBefore: new Date(now.getTime() - 3_600_000),
      notAfter,
      extensions: [
        ext("2.5.29.19", true, seq()),
        // digitalSignature (bit 0): 0b1000_0000, seven unused bits.
        ext("2.5.29.15", true, tlv(0x03, Uint8Array.of(7, 0x80))),
        ext("2.5.29.37", false, seq(oid("1.3.6.1.5.5.7.3.1"))),
        ext("2.5.29.17", false, seq(...names.map(altName))),
        ext("2.5.29.35", false, seq(tlv(0x80, ca.keyId))),
      ],
    }),
    ca.key,
  );
  return { certPem: pem("CERTIFICATE", cert), keyPem: k.keyPem, notAfter };
}
