// company-ca-host-to-sandbox (issue 39): the CAs a company adds on the host are carried into sandboxes when the config
// says so, and never the other way: a trust file a sandbox could write (a symlink into its tree, one in a shared temp
// dir, one another uid owns or anyone may write) is refused, and said.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { casOf, CompanyTrust, companyCas, hostToolsTls, pemOf, readTrustFiles, trustFileRefusal } from "../../../src/tls/host-trust";
import { issueLeaf, loadCa, makeCa } from "../../../src/tls/x509";
import { secretSessionEnv } from "../../../src/sandboxes/secret-env";
import { FakeExec } from "../../fakes/exec";
import { readFileSync } from "node:fs";

const made: string[] = [];
afterAll(() => made.forEach((d) => rmSync(d, { recursive: true, force: true })));
/** A dir the way a host keeps CA files: under the person's home (not a shared temp dir), theirs alone. */
function hostDir(): string {
  const d = mkdtempSync(join(homedir(), ".sbx-trust-test-"));
  chmodSync(d, 0o755);
  made.push(d);
  return d;
}
const uid = process.getuid!();

describe("company-ca-host-to-sandbox: what is read", () => {
  test("a CA file of the person's is read; leaves and garbage in it are left out", async () => {
    const d = hostDir();
    const ca = await makeCa("Acme Corp Root CA");
    const leaf = await issueLeaf(await loadCa(ca.certPem, ca.keyPem), ["x.acme.test"]);
    writeFileSync(join(d, "acme.crt"), `${ca.certPem}\n${leaf.certPem}\n-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n`, { mode: 0o644 });
    const r = readTrustFiles([join(d, "acme.crt")], { forbidden: [], uid });
    expect(r.refused).toEqual([]);
    expect(r.cas.map((c) => c.subject)).toEqual(["O=sbx, CN=Acme Corp Root CA"]);
    expect(casOf(leaf.certPem, "x").cas).toEqual([]);
  });

  test("a symlink into a sandbox's tree, a file in a shared temp dir, and sbx's own dirs are refused", async () => {
    const d = hostDir();
    const sandboxTree = join(d, "sandboxes", "t", "clone");
    mkdirSync(sandboxTree, { recursive: true });
    const ca = await makeCa("Planted CA");
    writeFileSync(join(sandboxTree, "ca.pem"), ca.certPem, { mode: 0o644 });
    symlinkSync(join(sandboxTree, "ca.pem"), join(d, "innocent.crt"));
    const why = trustFileRefusal(join(d, "innocent.crt"), { forbidden: [join(d, "sandboxes")], uid });
    expect(why).toContain("where sandboxes write");
    expect(why).toContain(sandboxTree);
    const tmp = mkdtempSync(join(tmpdir(), "sbx-trust-"));
    made.push(tmp);
    writeFileSync(join(tmp, "ca.pem"), ca.certPem, { mode: 0o644 });
    expect(trustFileRefusal(join(tmp, "ca.pem"), { forbidden: [], uid })).toContain("where sandboxes write");
    expect(readTrustFiles([join(d, "innocent.crt")], { forbidden: [join(d, "sandboxes")], uid })).toMatchObject({ cas: [], refused: [{ from: join(d, "innocent.crt") }] });
  });

  test("a file or directory anyone (or its group) can write, or another uid owns, is refused", async () => {
    const d = hostDir();
    const ca = await makeCa("Acme");
    const f = join(d, "ca.pem");
    writeFileSync(f, ca.certPem, { mode: 0o644 });
    chmodSync(f, 0o666);
    expect(trustFileRefusal(f, { forbidden: [], uid })).toContain("can be written by anyone");
    chmodSync(f, 0o644);
    chmodSync(d, 0o775);
    expect(trustFileRefusal(f, { forbidden: [], uid })).toContain("can be written by its group");
    chmodSync(d, 0o755);
    expect(trustFileRefusal(f, { forbidden: [], uid })).toBeNull();
    if (uid === 0) {
      chownSync(f, 65534, 65534);
      expect(trustFileRefusal(f, { forbidden: [], uid })).toContain("belongs to uid 65534");
    }
  });
});

describe("company-ca-host-to-sandbox: what sessions get", () => {
  test('"host" finds NODE_EXTRA_CA_CERTS and SSL_CERT_FILE (never the system bundle); a list is those files', async () => {
    const d = hostDir();
    const a = await makeCa("Acme A");
    const b = await makeCa("Acme B");
    writeFileSync(join(d, "a.pem"), a.certPem, { mode: 0o644 });
    writeFileSync(join(d, "b.pem"), b.certPem, { mode: 0o644 });
    const o = { platform: "linux", exec: new FakeExec(), guard: { forbidden: [], uid } };
    const host = await companyCas("host", { ...o, env: { NODE_EXTRA_CA_CERTS: join(d, "a.pem"), SSL_CERT_FILE: "/etc/ssl/certs/ca-certificates.crt" } });
    expect(host.cas.some((c) => c.subject.endsWith("CN=Acme A"))).toBe(true);
    expect(host.cas.some((c) => c.from === "/etc/ssl/certs/ca-certificates.crt")).toBe(false);
    const list = await companyCas([join(d, "b.pem")], { ...o, env: {} });
    expect(list.cas.map((c) => c.subject)).toEqual(["O=sbx, CN=Acme B"]);
    expect(await companyCas(undefined, { ...o, env: {} })).toEqual({ cas: [], refused: [] });
  });

  test("macOS: the System keychain's added roots", async () => {
    const ca = await makeCa("Acme Mac Root");
    const exec = new FakeExec().expect(["security", "find-certificate", "-a", "-p", "/Library/Keychains/System.keychain"], { stdout: ca.certPem });
    const r = await companyCas("host", { platform: "darwin", env: {}, exec, guard: { forbidden: [], uid } });
    expect(r.cas.map((c) => [c.subject, c.from])).toEqual([["O=sbx, CN=Acme Mac Root", "the System keychain"]]);
  });

  test("a session with company CAs only (no secret, no rule) trusts them through every client's variable", async () => {
    const d = hostDir();
    const ca = await makeCa("Acme Session CA");
    const sockets = join(d, "sock");
    mkdirSync(sockets);
    const spec = { env: {}, sockets: { dir: sockets, bridge: join(sockets, "bridge.sock") } } as unknown as Parameters<typeof secretSessionEnv>[0];
    const env = secretSessionEnv(spec, { env: {}, caPem: null, extraCas: pemOf([{ from: "x", subject: "CN=Acme", pem: ca.certPem }]), npmrc: [], notes: [] });
    expect(Object.keys(env).sort()).toEqual(["CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "JAVA_TOOL_OPTIONS", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"]);
    expect(readFileSync(env.SSL_CERT_FILE!, "utf8")).toContain(ca.certPem.trim());
    expect(readFileSync(env.NODE_EXTRA_CA_CERTS!, "utf8").trim()).toBe(ca.certPem.trim());
    expect(secretSessionEnv(spec, { env: {}, caPem: null, extraCas: "", npmrc: [], notes: [] })).toEqual({});
  });

  test("the daemon's holder reads again after its time to live, and says each refusal once", async () => {
    const d = hostDir();
    const ca = await makeCa("Acme TTL");
    const f = join(d, "ca.pem");
    writeFileSync(f, ca.certPem, { mode: 0o644 });
    let now = 0;
    const logged: string[] = [];
    let files = [f, join(d, "missing.pem")];
    const t = new CompanyTrust({ trust: () => files, platform: "linux", env: {}, exec: new FakeExec(), guard: { forbidden: [], uid }, log: (m, x) => logged.push(`${m} ${x.file}`), ttlMs: 1000, now: () => now });
    expect(await t.current()).toContain(ca.certPem.trim().split("\n")[1]!);
    expect(logged).toEqual([`a trust file was not read ${join(d, "missing.pem")}`]);
    files = [];
    expect(await t.current()).not.toBe("");
    now = 2000;
    expect(await t.current()).toBe("");
    expect(logged).toHaveLength(1);
    // A changed config is read at once, whatever the time to live says.
    let stamp = "a";
    const u = new CompanyTrust({ trust: () => files, platform: "linux", env: {}, exec: new FakeExec(), guard: { forbidden: [], uid }, ttlMs: 60_000, now: () => now, stamp: () => stamp });
    expect(await u.current()).toBe("");
    files = [f];
    expect(await u.current()).toBe("");
    stamp = "b";
    expect(await u.current()).toContain(ca.certPem.trim().split("\n")[1]!);
  });
});

describe("company-ca-host-tools: the bridge's git and gh trust the company's CAs too", () => {
  test("none: the host's own settings as they are; some: a bundle of the host's roots and them, kept current, in sbx's file", async () => {
    const d = hostDir();
    const roots = join(d, "roots.pem");
    const a = await makeCa("Acme Corp Root CA");
    const b = await makeCa("Acme Corp Root CA 2");
    const root = await makeCa("A Public Root");
    writeFileSync(roots, root.certPem);
    let company = "";
    const file = join(d, "state", "tls", "host-tools-roots.pem");
    const tls = hostToolsTls({ env: { SSL_CERT_FILE: roots, SSL_CERT_DIR: "/etc/ssl/certs", HOME: "/x" }, company: () => company, file });
    expect(tls()).toEqual({ SSL_CERT_FILE: roots, SSL_CERT_DIR: "/etc/ssl/certs" });
    company = a.certPem;
    expect(tls()).toEqual({ SSL_CERT_FILE: file, SSL_CERT_DIR: "/etc/ssl/certs" });
    expect(casOf(readFileSync(file, "utf8"), "f").cas.map((c) => c.subject)).toEqual(["O=sbx, CN=A Public Root", "O=sbx, CN=Acme Corp Root CA"]);
    company = b.certPem;
    tls();
    expect(casOf(readFileSync(file, "utf8"), "f").cas.map((c) => c.subject)).toEqual(["O=sbx, CN=A Public Root", "O=sbx, CN=Acme Corp Root CA 2"]);
    company = "";
    expect(tls()).toEqual({ SSL_CERT_FILE: roots, SSL_CERT_DIR: "/etc/ssl/certs" });
  });

  test("with no SSL_CERT_FILE the system's bundle is the roots kept beside them", async () => {
    const d = hostDir();
    const a = await makeCa("Acme Corp Root CA");
    const file = join(d, "host-tools-roots.pem");
    const tls = hostToolsTls({ env: {}, company: () => a.certPem, file });
    expect(tls()).toEqual({ SSL_CERT_FILE: file });
    const subjects = casOf(readFileSync(file, "utf8"), "f").cas.map((c) => c.subject);
    expect(subjects.at(-1)).toBe("O=sbx, CN=Acme Corp Root CA");
    expect(subjects.length).toBeGreaterThan(10);
  });
});
