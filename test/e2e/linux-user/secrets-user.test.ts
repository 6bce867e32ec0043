// secret-bound for `--backend user`, through the daemon's real wiring: a guest session gets its placeholder and sbx's
// CA to trust (files in its socket dir, which it may traverse but not list); curl through its proxy reaches a TLS site
// that sees the value; the guest never sees it, cannot read sbx's CA key, and another guest cannot read its files.
// Real root, real guests; the site is the host's loopback, published for the sandbox; its certificate is from a CA the
// daemon trusts the standard way (NODE_EXTRA_CA_CERTS); the name is the daemon's test seam (SBX_TEST_ONLY_RESOLVE).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Sandbox } from "../../../src/core/schemas";
import { SecretBindings } from "../../../src/store/secret-bindings";
import { setSecret, secretsFile } from "../../../src/secrets/store";
import { makeDaemonWorld, type DaemonWorld } from "./daemon-world";
import { makeWorld, sh, whyNot, type World } from "./harness";

const SITE_IP = "127.0.0.9";
const VALUE = "sk_live_userR3alValue0123456789";
const skip = whyNot() ?? (sh(["which", "curl", "openssl"]).code === 0 ? undefined : "needs curl and openssl");

describe.skipIf(skip !== undefined)(`secret-bound (--backend user, daemon wiring)${skip ? ` (skipped: ${skip})` : ""}`, () => {
  let w: World;
  let d: DaemonWorld;
  let sb: Sandbox;
  let sb2: Sandbox;
  let dir = "";
  let site: ReturnType<typeof Bun.serve>;
  const saw: string[] = [];

  beforeAll(async () => {
    w = await makeWorld();
    dir = mkdtempSync("/tmp/sbxt-secu-");
    chmodSync(dir, 0o755);
    const run = (argv: string[]) => {
      const r = Bun.spawnSync(argv, { stderr: "pipe" });
      if (r.exitCode !== 0) throw new Error(r.stderr.toString());
    };
    run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=world test CA", "-keyout", join(dir, "ca.key"), "-out", join(dir, "ca.pem")]);
    run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=api.test", "-keyout", join(dir, "k.pem"), "-out", join(dir, "c.csr")]);
    writeFileSync(join(dir, "ext"), "subjectAltName=DNS:api.test\n");
    run(["openssl", "x509", "-req", "-in", join(dir, "c.csr"), "-CA", join(dir, "ca.pem"), "-CAkey", join(dir, "ca.key"), "-CAcreateserial", "-days", "1", "-extfile", join(dir, "ext"), "-out", join(dir, "c.pem")]);
    site = Bun.serve({
      hostname: SITE_IP,
      port: 0,
      tls: { cert: readFileSync(join(dir, "c.pem"), "utf8"), key: readFileSync(join(dir, "k.pem"), "utf8") },
      fetch: (r) => {
        const a = r.headers.get("authorization") ?? "none";
        saw.push(a);
        return new Response(`got ${a}\n`);
      },
    });
    d = await makeDaemonWorld(w, { SBX_TEST_ONLY_RESOLVE: JSON.stringify({ "api.test": SITE_IP }), NODE_EXTRA_CA_CERTS: join(dir, "ca.pem") });
    sb = (await d.users.create({ name: "sec", cwd: w.repo })).sandbox;
    sb2 = (await d.users.create({ name: "sec2", cwd: w.repo })).sandbox;
    d.store.updateIdentity(sb.id, { ...d.store.getSandbox(sb.id)!.identity, publish: [`${SITE_IP}:${site.port}`] });
    d.store.addAllow(sb.id, `api.test:${site.port}`, "test");
    // As `sbx secret set API_TOKEN --host api.test --header 'Authorization: Bearer {}'` does: the value, then the binding.
    setSecret(secretsFile(d.paths.configDir), "API_TOKEN", VALUE);
    new SecretBindings(d.store).set("API_TOKEN", null, { hosts: ["api.test"], rules: [{ methods: ["GET"], path: "/**" }], header: { name: "Authorization", template: "Bearer {}" }, env: "API_TOKEN", npmrc: false, inBody: false, source: { kind: "vault" } });
  }, 120_000);

  afterAll(async () => {
    for (const s of [sb, sb2]) if (s) await d.users.rm(s.name, { cwd: w.repo, force: true }).catch((e) => console.error(e));
    site?.stop(true);
    await d?.close();
    await w?.teardown();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  test("a session's variable holds a placeholder shaped like the value; curl (trusting what the session gives) reaches the site, which sees the value", async () => {
    const p = (await d.asGuestSession(sb, 'printf %s "$API_TOKEN"')).out;
    expect(p).toMatch(/^sk_live_[A-Za-z0-9]{23}$/);
    expect(p).not.toBe(VALUE);
    const r = await d.asGuestSession(sb, `curl -sS -m 15 -H "Authorization: Bearer $API_TOKEN" https://api.test:${site.port}/x`, 20);
    expect(r.err).toBe("");
    expect(r.out).toBe(`got Bearer ${p}\n`);
    expect(saw.at(-1)).toBe(`Bearer ${VALUE}`);
  });

  const java = Bun.which("java");
  test.skipIf(!java)(`ca-trusted-inside: java in a guest's login shell trusts sbx's CA (its rc keeps the session's trust store option)${java ? "" : " (skipped: no java here)"}`, async () => {
    const src = join(dir, "Fetch.java");
    writeFileSync(src, `import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URL;
public class Fetch {
  public static void main(String[] a) throws Exception {
    HttpURLConnection c = (HttpURLConnection) new URL(a[0]).openConnection();
    try (InputStream in = c.getInputStream()) { System.out.print(c.getResponseCode() + " " + new String(in.readAllBytes(), "UTF-8")); }
  }
}
`);
    chmodSync(src, 0o644);
    const p = (await d.asGuestSession(sb, 'printf %s "$API_TOKEN"')).out;
    const r = await d.asGuestSession(sb, `${java} ${src} https://api.test:${site.port}/java`, 60);
    expect({ code: r.code, err: r.err.replace(/^Picked up JAVA_TOOL_OPTIONS:.*\n/m, "") }).toEqual({ code: 0, err: "" });
    // No Authorization from Java: the proxy added the header, with the value, and Java got its placeholder back.
    expect(r.out).toBe(`200 got Bearer ${p}\n`);
    expect(saw.at(-1)).toBe(`Bearer ${VALUE}`);
  }, 90_000);

  test("ca-key-host-only: the guest cannot read sbx's CA key; another guest cannot read this one's trust files", async () => {
    const key = join(d.paths.stateDir, "tls", "ca.key");
    expect(readFileSync(key, "utf8")).toContain("PRIVATE KEY");
    expect((await d.asGuestSession(sb, `cat ${key}`)).code).not.toBe(0);
    const bundle = (await d.asGuestSession(sb, 'printf %s "$SSL_CERT_FILE"')).out;
    expect(bundle).toEndWith("ca-bundle.pem");
    expect((await d.asGuestSession(sb, `head -c 27 ${bundle}`)).out).toBe("-----BEGIN CERTIFICATE-----");
    expect((await d.asGuest(sb2, `cat ${bundle} >/dev/null`)).code).not.toBe(0);
  });
});
