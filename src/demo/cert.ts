// A throwaway self-signed certificate for the demo's HTTPS site on loopback, made at run time with openssl (WebCrypto without it).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SbxError } from "../core/errors";
import { EXIT_NOT_FOUND, type Exec } from "../sys/exec";
import { selfSignedCert } from "../tls/x509";

export interface SiteCert {
  certPem: string;
  keyPem: string;
  certFile: string;
  /** What made it. */
  how: "openssl" | "webcrypto";
}

/** Pure: the openssl argv for a one-day P-256 certificate valid for the given IP addresses. */
export function opensslCertArgs(dir: string, ips: readonly string[]): string[] {
  return [
    "openssl", "req", "-x509",
    "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
    "-nodes", "-days", "1",
    "-subj", "/CN=sbx demo site",
    "-addext", `subjectAltName=${ips.map((ip) => `IP:${ip}`).join(",")}`,
    "-keyout", join(dir, "site.key"),
    "-out", join(dir, "site.pem"),
  ];
}

/**
 * Makes the certificate in `dir` (site.key mode 0600, site.pem): with openssl when it is installed, else with WebCrypto.
 * runs: openssl req -x509 -newkey ec … -subj "/CN=sbx demo site" -addext subjectAltName=IP:… -keyout … -out …
 */
export async function makeSiteCert(exec: Exec, dir: string, ips: readonly string[], opts: { webcrypto?: boolean } = {}): Promise<SiteCert> {
  const certFile = join(dir, "site.pem");
  const r = opts.webcrypto ? null : await exec.run(opensslCertArgs(dir, ips), { check: false, timeoutMs: 30_000 });
  if (r === null || r.exitCode === EXIT_NOT_FOUND) {
    const c = await selfSignedCert(ips, "sbx demo site");
    writeFileSync(join(dir, "site.key"), c.keyPem, { mode: 0o600 });
    writeFileSync(certFile, c.certPem);
    return { ...c, certFile, how: "webcrypto" };
  }
  if (r.exitCode !== 0) {
    throw new SbxError("unavailable", `could not make the demo site's certificate with openssl (exit ${r.exitCode}): ${r.stderr.trim().split("\n").slice(-1)[0] ?? ""}`, {
      hint: "Install openssl (apt-get install openssl), then run `sbx demo` again.",
    });
  }
  return { certPem: readFileSync(certFile, "utf8"), keyPem: readFileSync(join(dir, "site.key"), "utf8"), certFile, how: "openssl" };
}
