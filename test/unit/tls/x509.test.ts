// Certificates made in process: the demo's self-signed one (used when openssl is missing), and the CA and the leaves it
// signs, each accepted by real verifiers (openssl, curl, Python, Bun) for the names it was made for and nothing else.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { issueLeaf, loadCa, makeCa, selfSignedCert } from "../../../src/tls/x509";

const webCryptoCert = (ips: string[]) => selfSignedCert(ips, "sbx demo site");

describe("x509: a self-signed certificate", () => {
  test("a loopback HTTPS server with it is trusted through the certificate itself, and refused without it", async () => {
    const c = await webCryptoCert(["127.0.0.1"]);
    expect(c.certPem).toStartWith("-----BEGIN CERTIFICATE-----\n");
    expect(c.keyPem).toStartWith("-----BEGIN PRIVATE KEY-----\n");
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: c.certPem, key: c.keyPem }, fetch: () => new Response("ok") });
    try {
      const url = `https://127.0.0.1:${server.port}/`;
      const r = await fetch(url, { tls: { ca: c.certPem } } as RequestInit);
      expect(await r.text()).toBe("ok");
      await expect(fetch(url)).rejects.toThrow();
      // Another run's certificate does not vouch for this one.
      const other = await webCryptoCert(["127.0.0.1"]);
      await expect(fetch(url, { tls: { ca: other.certPem } } as RequestInit)).rejects.toThrow();
    } finally {
      await server.stop(true);
    }
  });

  test("it names only the addresses it was made for", async () => {
    const c = await webCryptoCert(["127.0.0.2"]);
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: c.certPem, key: c.keyPem }, fetch: () => new Response("ok") });
    try {
      await expect(fetch(`https://127.0.0.1:${server.port}/`, { tls: { ca: c.certPem } } as RequestInit)).rejects.toThrow();
    } finally {
      await server.stop(true);
    }
  });
});

/** A TLS server on 127.0.0.1 with this leaf, for the duration of `fn`. */
async function serving(leaf: { certPem: string; keyPem: string }, fn: (port: number) => Promise<void>): Promise<void> {
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: leaf.certPem, key: leaf.keyPem }, fetch: () => new Response("ok") });
  try {
    await fn(server.port!);
  } finally {
    await server.stop(true);
  }
}

/** Runs a command without blocking this process's event loop (the TLS server under test answers from it). */
async function run(argv: string[]): Promise<{ code: number; out: string }> {
  const p = Bun.spawn(argv, { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out: out + err };
}

describe("x509: the CA and the leaves it signs", () => {
  const dir = mkdtempSync(join(tmpdir(), "sbx-x509-"));
  const file = (name: string, text: string) => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };

  test("openssl verifies a leaf against the CA, as a server certificate for its name", async () => {
    const caPems = await makeCa("sbx test CA");
    const ca = await loadCa(caPems.certPem, caPems.keyPem);
    const leaf = await issueLeaf(ca, ["registry.example.test"]);
    const caFile = file("ca.pem", caPems.certPem);
    const leafFile = file("leaf.pem", leaf.certPem);
    const ok = await run(["openssl", "verify", "-x509_strict", "-purpose", "sslserver", "-verify_hostname", "registry.example.test", "-CAfile", caFile, leafFile]);
    expect(ok.out).toContain(": OK");
    const otherName = await run(["openssl", "verify", "-verify_hostname", "evil.example.test", "-CAfile", caFile, leafFile]);
    expect(otherName.code).not.toBe(0);
    // The CA itself passes strict checks (key usage, basic constraints critical, key identifiers).
    const caText = (await run(["openssl", "x509", "-in", caFile, "-noout", "-text"])).out;
    expect(caText).toContain("CA:TRUE, pathlen:0");
    expect(caText).toContain("Certificate Sign");
    const leafText = (await run(["openssl", "x509", "-in", leafFile, "-noout", "-text"])).out;
    expect(leafText).toContain("CA:FALSE");
    expect(leafText).toContain("TLS Web Server Authentication");
    expect(leafText).toContain("DNS:registry.example.test");
  });

  test("curl, Python and Bun accept a TLS server with the leaf only when they trust the CA", async () => {
    const caPems = await makeCa("sbx test CA");
    const ca = await loadCa(caPems.certPem, caPems.keyPem);
    const leaf = await issueLeaf(ca, ["localhost"]);
    const caFile = file("ca2.pem", caPems.certPem);
    const stranger = file("stranger.pem", (await makeCa("another CA")).certPem);
    await serving(leaf, async (port) => {
      const url = `https://localhost:${port}/`;
      expect((await run(["curl", "-sS", "--cacert", caFile, url])).out).toBe("ok");
      expect((await run(["curl", "-sS", "--cacert", stranger, url])).code).toBe(60);
      const py = (cafile: string) => run(["python3", "-c", `import ssl,urllib.request;c=ssl.create_default_context(cafile=${JSON.stringify(cafile)});c.verify_flags|=getattr(ssl,"VERIFY_X509_STRICT",0);print(urllib.request.urlopen(${JSON.stringify(url)},context=c).read().decode())`]);
      expect((await py(caFile)).out.trim()).toBe("ok");
      expect((await py(stranger)).code).not.toBe(0);
      const r = await fetch(url, { tls: { ca: caPems.certPem } } as RequestInit);
      expect(await r.text()).toBe("ok");
    });
  });

  test("a CA loaded again from its PEMs signs leaves the first one's certificate verifies", async () => {
    const caPems = await makeCa("sbx test CA");
    const again = await loadCa(caPems.certPem, caPems.keyPem);
    const leaf = await issueLeaf(again, ["a.example.test", "127.0.0.1"]);
    const out = (await run(["openssl", "verify", "-CAfile", file("ca3.pem", caPems.certPem), file("leaf3.pem", leaf.certPem)])).out;
    expect(out).toContain(": OK");
    rmSync(dir, { recursive: true, force: true });
  });
});
