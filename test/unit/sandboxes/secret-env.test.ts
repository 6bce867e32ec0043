// ca-trusted-inside: a session of a sandbox with a secret bound gets sbx's CA to trust in every form its clients read:
// the PEM files and their variables, and for Java a PKCS#12 trust store of the same bundle named in JAVA_TOOL_OPTIONS,
// added to the sandbox's own options (its proxy properties), never replacing them. Files are written only when what
// they hold changed. Real files in a temp socket dir; the store read back by keytool where a JRE is installed.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SandboxSpec } from "../../../src/core/spec";
import { sandboxEnv } from "../../../src/drivers/env";
import { CA_BUNDLE_FILE, javaTrustOptions, secretSessionEnv, TRUSTSTORE_FILE } from "../../../src/sandboxes/secret-env";
import type { SessionSecrets } from "../../../src/secrets/bound";
import { certificatesOf } from "../../../src/tls/pkcs12";
import { makeCa } from "../../../src/tls/x509";

let root = "";
let caA = "";
let caB = "";

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "sbx-secret-env-"));
  caA = (await makeCa("sbx sandbox CA")).certPem;
  caB = (await makeCa("sbx sandbox CA")).certPem;
});

afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

/** A sandbox whose socket dir is `dir` on the host and `inside` in the sandbox (a container's view of it). */
function specAt(name: string, inside: string): SandboxSpec {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  return {
    id: name,
    name,
    repo: "/src/app",
    dir: join(root, "sb"),
    hostUser: { name: "ann", uid: 1000, gid: 1000, home: "/home/ann", shell: "/bin/bash" },
    sockets: { dir, proxy: join(dir, "proxy.sock"), bridge: join(dir, "bridge.sock") },
    env: sandboxEnv(name, { proxyPort: 3128, bridgeSocket: join(inside, "bridge.sock") }),
    overlays: [],
    options: { driver: "docker", claudeAuth: "overlay" },
  };
}

const session = (caPem: string | null): SessionSecrets => ({ env: { API_TOKEN: "sk_live_placeholder0123456789" }, caPem, extraCas: "", npmrc: [], notes: [] });

describe("ca-trusted-inside: what a session gets for Java", () => {
  test("JAVA_TOOL_OPTIONS is the sandbox's own (its proxy) and then the trust store, by its path inside", () => {
    const spec = specAt("a", "/run/sbx");
    const env = secretSessionEnv(spec, session(caA));
    const own = spec.env.JAVA_TOOL_OPTIONS!;
    expect(own).toContain("-Dhttps.proxyPort=3128");
    expect(env.JAVA_TOOL_OPTIONS).toBe(`${own} -Djavax.net.ssl.trustStore=/run/sbx/${TRUSTSTORE_FILE} -Djavax.net.ssl.trustStoreType=PKCS12 -Djavax.net.ssl.trustStorePassword=changeit`);
    // The PEM clients' variables are as before, beside it.
    expect(env.SSL_CERT_FILE).toBe(`/run/sbx/${CA_BUNDLE_FILE}`);
    expect(env.API_TOKEN).toBe("sk_live_placeholder0123456789");
  });

  test("a sandbox with no JAVA_TOOL_OPTIONS of its own gets the trust options alone", () => {
    const spec = specAt("b", "/run/sbx");
    delete spec.env.JAVA_TOOL_OPTIONS;
    expect(secretSessionEnv(spec, session(caA)).JAVA_TOOL_OPTIONS).toBe(javaTrustOptions(`/run/sbx/${TRUSTSTORE_FILE}`));
  });

  test("a path with a space is quoted, as the JVM splits the options on spaces", () => {
    expect(javaTrustOptions("/run/my sbx/truststore.p12")).toStartWith('-Djavax.net.ssl.trustStore="/run/my sbx/truststore.p12" ');
    expect(javaTrustOptions('/run/a"b c/t.p12')).toStartWith(`-Djavax.net.ssl.trustStore='/run/a"b c/t.p12' `);
  });

  test("the store and the bundle sit in the socket dir, readable by the sandbox, and hold the same certificates", () => {
    const spec = specAt("c", "/run/sbx");
    secretSessionEnv(spec, session(caA));
    const bundle = certificatesOf(readFileSync(join(spec.sockets.dir, CA_BUNDLE_FILE), "utf8"));
    expect(bundle.length).toBeGreaterThan(1);
    expect(statSync(join(spec.sockets.dir, TRUSTSTORE_FILE)).mode & 0o777).toBe(0o644);
    expect(statSync(join(spec.sockets.dir, CA_BUNDLE_FILE)).mode & 0o777).toBe(0o644);
  });

  const keytool = Bun.which("keytool");
  test.skipIf(!keytool)(`keytool reads the store as the host's roots and sbx's CA${keytool ? "" : " (skipped: no keytool; a JRE brings it)"}`, () => {
    const spec = specAt("c2", "/run/sbx");
    secretSessionEnv(spec, session(caA));
    const bundle = certificatesOf(readFileSync(join(spec.sockets.dir, CA_BUNDLE_FILE), "utf8"));
    const r = Bun.spawnSync([keytool!, "-list", "-rfc", "-keystore", join(spec.sockets.dir, TRUSTSTORE_FILE), "-storetype", "PKCS12", "-storepass", "changeit"], { stdout: "pipe" });
    const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
    expect(new Set(certificatesOf(r.stdout.toString()).map(hex))).toEqual(new Set(bundle.map(hex)));
    expect(certificatesOf(r.stdout.toString()).map(hex)).toContain(hex(certificatesOf(caA)[0]!));
  });

  test("written again only when the bundle changed: the same file for the same CA, a new one for a new CA", () => {
    const spec = specAt("d", "/run/sbx");
    const file = join(spec.sockets.dir, TRUSTSTORE_FILE);
    secretSessionEnv(spec, session(caA));
    const first = statSync(file);
    const bytes = readFileSync(file);
    secretSessionEnv(spec, session(caA));
    expect(statSync(file).ino).toBe(first.ino);
    secretSessionEnv(spec, session(caB));
    expect(statSync(file).ino).not.toBe(first.ino);
    expect(readFileSync(file).equals(bytes)).toBe(false);
    // Gone (a cleanup of the socket dir): written again on the next session.
    rmSync(file);
    secretSessionEnv(spec, session(caB));
    expect(existsSync(file)).toBe(true);
  });

  test("no secret bound: no variables, no store", () => {
    const spec = specAt("e", "/run/sbx");
    expect(secretSessionEnv(spec, session(null))).toEqual({});
    expect(existsSync(join(spec.sockets.dir, TRUSTSTORE_FILE))).toBe(false);
  });
});
