// ca-trusted-inside (Java): the PKCS#12 trust store sbx gives a sandbox holds every certificate of its bundle, each one a
// trusted certificate entry, and its MAC is checked by the real readers: the structure decodes as RFC 7292 says, OpenSSL
// lists every certificate (and refuses a wrong password), keytool shows each as a trustedCertEntry under its own name.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { rootCertificates } from "node:tls";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHmac } from "node:crypto";
import { oid, seq, tlv, uint, type Der } from "../../../src/tls/der";
import { certificatesOf, macKey, subjectName, trustStore, TRUSTSTORE_PASSWORD } from "../../../src/tls/pkcs12";
import { children, dn, makeCa } from "../../../src/tls/x509";

const SYSTEM = "/etc/ssl/certs/ca-certificates.crt";
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const oidHex = (o: string) => hex(oid(o));

let dir = "";
let bundle = "";
let certs: Der[] = [];
let file = "";

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "sbx-p12-"));
  const roots = existsSync(SYSTEM) ? readFileSync(SYSTEM, "utf8") : rootCertificates.join("\n");
  // The host's roots, sbx's CA, two CAs of one name (Java keys entries by name: the second must not replace the
  // first), and a damaged block, which is left out rather than failing the whole store.
  const sbx = await makeCa("sbx sandbox CA");
  const twinA = await makeCa("Twin CA");
  const twinB = await makeCa("twin ca");
  bundle = `${roots.trimEnd()}\n${sbx.certPem}${twinA.certPem}${twinB.certPem}-----BEGIN CERTIFICATE-----\nMIIBroken==\n-----END CERTIFICATE-----\n`;
  certs = certificatesOf(bundle);
  file = join(dir, "truststore.p12");
  writeFileSync(file, trustStore(certs));
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("ca-trusted-inside: a PKCS#12 trust store of the bundle", () => {
  test("every certificate of the bundle, in order; the damaged block is left out", () => {
    const blocks = bundle.match(/-----BEGIN CERTIFICATE-----/g)!.length;
    expect(certs.length).toBe(blocks - 1);
    expect(certs.length).toBeGreaterThan(3);
    expect(subjectName(certs.at(-3)!)).toBe("sbx sandbox CA");
  });

  test("the structure decodes as RFC 7292 says: data bags of certificates, each named and trusted for any use, a SHA-256 MAC over the content", () => {
    const der = readFileSync(file);
    const [pfx] = children(new Uint8Array(der));
    const [version, authSafe, macData] = children(pfx!.body);
    expect(hex(version!.all)).toBe("020103");
    const [type, explicit] = children(authSafe!.body);
    expect(hex(type!.all)).toBe(oidHex("1.2.840.113549.1.7.1"));
    const [octets] = children(explicit!.body);
    expect(octets!.tag).toBe(0x04);
    const contents = children(children(octets!.body)[0]!.body);
    expect(contents.length).toBe(1);
    const [dataType, inner] = children(contents[0]!.body);
    expect(hex(dataType!.all)).toBe(oidHex("1.2.840.113549.1.7.1"));
    const bags = children(children(children(inner!.body)[0]!.body)[0]!.body);
    expect(bags.length).toBe(certs.length);
    const names: string[] = [];
    bags.forEach((bag, i) => {
      const [bagId, value, attrs] = children(bag.body);
      expect(hex(bagId!.all)).toBe(oidHex("1.2.840.113549.1.12.10.1.3"));
      const [certType, certValue] = children(children(value!.body)[0]!.body);
      expect(hex(certType!.all)).toBe(oidHex("1.2.840.113549.1.9.22.1"));
      expect(hex(children(certValue!.body)[0]!.body)).toBe(hex(certs[i]!));
      expect(attrs!.tag).toBe(0x31);
      const byId = new Map(children(attrs!.body).map((a) => children(a.body)).map(([id, vals]) => [hex(id!.all), children(vals!.body)]));
      const usage = byId.get(oidHex("2.16.840.1.113894.746875.1.1"))!;
      expect(usage.map((u) => hex(u.all))).toEqual([oidHex("2.5.29.37.0")]);
      const [friendly] = byId.get(oidHex("1.2.840.113549.1.9.20"))!;
      expect(friendly!.tag).toBe(0x1e);
      names.push(Buffer.from(friendly!.body).swap16().toString("utf16le"));
    });
    expect(new Set(names.map((n) => n.toLowerCase())).size).toBe(names.length);
    expect(names.slice(-3)).toEqual(["sbx sandbox CA", "Twin CA", "twin ca (2)"]);
    // The MAC: SHA-256, a salt, the iteration count; the HMAC over the authenticated safe's content under the key the
    // password gives. (OpenSSL and keytool below check it independently.)
    const [mac, salt, iterations] = children(macData!.body);
    const [alg, digest] = children(mac!.body);
    expect(hex(children(alg!.body)[0]!.all)).toBe(oidHex("2.16.840.1.101.3.4.2.1"));
    const n = parseInt(hex(iterations!.body), 16);
    expect(n).toBeGreaterThan(0);
    const key = macKey(TRUSTSTORE_PASSWORD, salt!.body, n);
    expect(hex(digest!.body)).toBe(createHmac("sha256", key).update(octets!.body).digest("hex"));
  });

  test("the same certificates give the same bytes (it is written again only when they change)", () => {
    expect(hex(trustStore(certificatesOf(bundle)))).toBe(hex(readFileSync(file)));
    expect(hex(trustStore(certs.slice(1)))).not.toBe(hex(readFileSync(file)));
  });

  test("a v1 certificate (no version field) is named from its subject too", () => {
    const tbs = seq(uint(Uint8Array.of(5)), seq(oid("1.2.840.10045.4.3.2")), dn("Issuer"), seq(), dn("Old Root", "Old Org"), seq());
    expect(subjectName(seq(tbs, seq(oid("1.2.840.10045.4.3.2")), tlv(0x03, Uint8Array.of(0))))).toBe("Old Root");
  });

  const openssl = Bun.which("openssl");
  test.skipIf(!openssl)(`openssl lists every certificate with the password, and refuses a wrong one${openssl ? "" : " (skipped: no openssl)"}`, () => {
    const r = Bun.spawnSync([openssl!, "pkcs12", "-in", file, "-nokeys", "-passin", `pass:${TRUSTSTORE_PASSWORD}`], { stdout: "pipe", stderr: "pipe" });
    expect(r.exitCode).toBe(0);
    expect(certificatesOf(r.stdout.toString()).map(hex)).toEqual(certs.map(hex));
    const wrong = Bun.spawnSync([openssl!, "pkcs12", "-in", file, "-nokeys", "-passin", "pass:not-it"], { stdout: "pipe", stderr: "pipe" });
    expect(wrong.exitCode).not.toBe(0);
    expect(wrong.stderr.toString()).toMatch(/mac verify/i);
  });

  const keytool = Bun.which("keytool");
  test.skipIf(!keytool)(`keytool shows each as a trustedCertEntry under its own name${keytool ? "" : " (skipped: no keytool; a JRE brings it)"}`, () => {
    const r = Bun.spawnSync([keytool!, "-list", "-keystore", file, "-storetype", "PKCS12", "-storepass", TRUSTSTORE_PASSWORD], { stdout: "pipe", stderr: "pipe" });
    expect(r.exitCode).toBe(0);
    const out = r.stdout.toString();
    expect(out).toContain(`Your keystore contains ${certs.length} entries`);
    const entries = out.split("\n").filter((l) => l.includes(", trustedCertEntry,"));
    expect(entries.length).toBe(certs.length);
    // keytool lower-cases names; both twins are there.
    for (const n of ["sbx sandbox ca", "twin ca", "twin ca (2)"]) expect(entries.some((l) => l.startsWith(`${n}, `))).toBe(true);
    const wrong = Bun.spawnSync([keytool!, "-list", "-keystore", file, "-storetype", "PKCS12", "-storepass", "not-it"], { stdout: "pipe", stderr: "pipe" });
    expect(wrong.exitCode).not.toBe(0);
  });

  test.skipIf(!keytool)(`keytool -rfc gives back the very certificates${keytool ? "" : " (skipped: no keytool)"}`, () => {
    const r = Bun.spawnSync([keytool!, "-list", "-rfc", "-keystore", file, "-storetype", "PKCS12", "-storepass", TRUSTSTORE_PASSWORD], { stdout: "pipe", stderr: "pipe" });
    expect(new Set(certificatesOf(r.stdout.toString()).map(hex))).toEqual(new Set(certs.map(hex)));
  });
});
