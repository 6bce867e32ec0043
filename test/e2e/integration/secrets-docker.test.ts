// secret-bound end to end on Docker: `sbx secret set NAME --host api.test --header …` and a real sandbox. Inside, the
// variable holds a placeholder shaped like the value; curl, Python, pip (its index URL's password) and Java (as an agent runs them, through the proxy
// variables, trusting what sbx gives the session) reach the site, which sees the value; the sandbox never does (not in
// its environment, not reflected, not in sbx's CA key, which it cannot read); `sbx logs` says each use by name only.
// The site runs in a container on a network this test made, with a certificate from a CA the host trusts
// (NODE_EXTRA_CA_CERTS for the daemon, the standard way); the daemon's lookup of `.test` names is the test seam.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";
import type { Fixture } from "../docker/fixture";
import { acquireFixture, canRun, containerOf, dexec, docker, makeRepo, must, putFile, releaseFixture, removeRepoImages, skipReason, stopDaemon } from "./harness";
import { makeCerts, startSite, type Site, type TestCerts } from "./site";
import { makeZip } from "../../support/zip";

const tag = Math.random().toString(36).slice(2, 8);
const VALUE = "sk_live_e2eR3alValue0123456789";
/** A private Python index's token, which pip sends as its index URL's password (HTTP Basic). */
const PYPI_VALUE = "pypi-AgEIcHlwaS5vcmcR3alIndexT0ken0123456789";
const b64 = (s: string) => Buffer.from(s).toString("base64");
const WHEEL_NAME = "corp_tool-1.0-py3-none-any.whl";
const WHEEL = makeZip([
  { name: "corp_tool/__init__.py", data: "VALUE = 'corp tool'\n" },
  { name: "corp_tool-1.0.dist-info/METADATA", data: "Metadata-Version: 2.1\nName: corp-tool\nVersion: 1.0\n" },
  { name: "corp_tool-1.0.dist-info/WHEEL", data: "Wheel-Version: 1.0\nGenerator: sbx-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n" },
  { name: "corp_tool-1.0.dist-info/RECORD", data: "corp_tool/__init__.py,,\ncorp_tool-1.0.dist-info/METADATA,,\ncorp_tool-1.0.dist-info/WHEEL,,\ncorp_tool-1.0.dist-info/RECORD,,\n" },
]);
const WHEEL_SHA = new Bun.CryptoHasher("sha256").update(WHEEL).digest("hex");

// HTTPS on 443: says what Authorization it got, in its body and a header (a reflecting server), and logs it. Under
// /simple/ and /files/ it is a private Python index that wants its token as HTTP Basic credentials.
const SITE_SCRIPT = `
const tls = { cert: Bun.file("/certs/c.pem"), key: Bun.file("/certs/k.pem") };
const wheel = Buffer.from("${Buffer.from(WHEEL).toString("base64")}", "base64");
Bun.serve({ hostname: "0.0.0.0", port: 443, tls, fetch: (r) => {
  const a = r.headers.get("authorization") ?? "none";
  const path = new URL(r.url).pathname;
  console.log("SAW " + path + " " + a);
  if (path.startsWith("/simple/") || path.startsWith("/files/")) {
    if (a !== "Basic ${b64(`__token__:${PYPI_VALUE}`)}") return new Response("who are you\\n", { status: 401, headers: { "www-authenticate": 'Basic realm="index"' } });
    if (path === "/files/${WHEEL_NAME}") return new Response(wheel);
    if (path === "/simple/corp-tool/") return new Response('<!DOCTYPE html><html><body><a href="/files/${WHEEL_NAME}#sha256=${WHEEL_SHA}">${WHEEL_NAME}</a></body></html>', { headers: { "content-type": "text/html" } });
    return new Response("not here\\n", { status: 404 });
  }
  return new Response("got " + a + "\\n", { headers: { "x-echo": a } });
} });
console.log("site ready");
`;

let f: Fixture;
let repo: string;
let ip = "";
let certs: TestCerts;
let site: Site;
let env: Record<string, string>;

function sbx(args: string[], stdin?: string) {
  return f.sbx(args, { cwd: repo, env, ...(stdin !== undefined ? { stdin } : {}) });
}

describe.skipIf(!canRun)(`secret-bound end to end on Docker${skipReason ? ` (skipped: ${skipReason})` : ""}`, () => {
  beforeAll(async () => {
    f = acquireFixture();
    repo = makeRepo(f, `secrets-${tag}`);
    certs = makeCerts("sbxt-sec", ["api.test"]);
    site = await startSite({ prefix: "sbxt-sec", script: SITE_SCRIPT, certs });
    ip = site.ip;
    await stopDaemon(f.user);
    env = { SBX_TEST_ONLY_RESOLVE: JSON.stringify({ "api.test": ip }), NODE_EXTRA_CA_CERTS: certs.ca };
    must(sbx(["create", "t"]), "sbx create t");
    must(sbx(["allow", "api.test", "--sandbox", "t"]), "sbx allow api.test");
    must(sbx(["allow", ip, "--sandbox", "t"]), "sbx allow ip");
    must(sbx(["secret", "set", "API_TOKEN", "--host", "api.test", "--header", "Authorization: Bearer {}", "--path", "/v1/**"], VALUE), "sbx secret set");
  }, 240_000);

  afterAll(async () => {
    if (repo) {
      sbx(["secret", "rm", "API_TOKEN"]);
      sbx(["rm", "--force", "t"]);
      sbx(["rm", "--force", "pc"]);
      removeRepoImages(repo);
    }
    site?.remove();
    certs?.remove();
    if (f) await stopDaemon(f.user);
    if (f) releaseFixture();
  }, 60_000);

  test("inside, the variable holds a placeholder shaped like the value, never the value", () => {
    const p = must(sbx(["run", "t", "--", "sh", "-c", "printf %s \"$API_TOKEN\""]), "echo $API_TOKEN").stdout;
    expect(p).toMatch(/^sk_live_[A-Za-z0-9]{22}$/);
    expect(p.length).toBe(VALUE.length);
    expect(p).not.toBe(VALUE);
    // The same placeholder in the next session (an agent may have written it somewhere).
    expect(must(sbx(["run", "t", "--", "sh", "-c", "printf %s \"$API_TOKEN\""]), "again").stdout).toBe(p);
    expect(must(sbx(["run", "t", "--", "env"]), "env").stdout).not.toContain(VALUE);
  });

  test("curl with the placeholder: the site sees the value; what comes back holds the placeholder", () => {
    const r = must(sbx(["run", "t", "--", "sh", "-c", 'curl -sS -m 20 -D - -H "Authorization: Bearer $API_TOKEN" https://api.test/v1/x']), "curl");
    const p = must(sbx(["run", "t", "--", "sh", "-c", "printf %s \"$API_TOKEN\""]), "placeholder").stdout;
    expect(r.stdout).toContain(`got Bearer ${p}`);
    expect(r.stdout).toContain(`x-echo: Bearer ${p}`);
    expect(r.stdout).not.toContain(VALUE);
    expect(site.logs()).toContain(`SAW /v1/x Bearer ${VALUE}`);
  });

  test("a client that knows nothing of it (no header) is authenticated too; outside its paths it is not", () => {
    expect(must(sbx(["run", "t", "--", "curl", "-sS", "-m", "20", "https://api.test/v1/plain"]), "curl plain").stdout).not.toContain(VALUE);
    expect(site.logs()).toContain(`SAW /v1/plain Bearer ${VALUE}`);
    must(sbx(["run", "t", "--", "curl", "-sS", "-m", "20", "https://api.test/v2/other"]), "curl v2");
    expect(site.logs()).toContain("SAW /v2/other none");
  });

  test("python3 urllib, trusting what the session gives it", () => {
    const has = sbx(["run", "t", "--", "sh", "-c", "command -v python3"]).code === 0;
    if (!has) return void console.warn("python3 is not in the base image: skipped");
    const r = must(sbx(["run", "t", "--", "python3", "-c", "import urllib.request,os;print(urllib.request.urlopen(urllib.request.Request('https://api.test/v1/py',headers={'Authorization':'Bearer '+os.environ['API_TOKEN']})).read().decode())"]), "python3");
    expect(r.stdout).toStartWith("got Bearer sk_live_");
    expect(r.stdout).not.toContain(VALUE);
    expect(site.logs()).toContain(`SAW /v1/py Bearer ${VALUE}`);
  });

  test("pip with the token as its index URL's password (HTTP Basic): the private index sees the value, pip only its placeholder", () => {
    if (sbx(["run", "t", "--", "sh", "-c", "command -v pip"]).code !== 0) return void console.warn("pip is not in the base image: skipped");
    must(sbx(["secret", "set", "PYPI_TOKEN", "--host", "api.test", "--path", "/simple/**", "--path", "/files/**"], PYPI_VALUE), "sbx secret set PYPI_TOKEN");
    try {
      const r = must(sbx(["run", "t", "--", "sh", "-c", 'pip download -q --no-deps --no-cache-dir -d /tmp/pipd --index-url "https://__token__:$PYPI_TOKEN@api.test/simple" corp-tool && ls /tmp/pipd']), "pip download");
      expect(r.stdout.trim()).toBe(WHEEL_NAME);
      expect(site.logs()).toContain(`SAW /simple/corp-tool/ Basic ${b64(`__token__:${PYPI_VALUE}`)}`);
      expect(site.logs()).toContain(`SAW /files/${WHEEL_NAME} Basic ${b64(`__token__:${PYPI_VALUE}`)}`);
      const inside = must(sbx(["run", "t", "--", "sh", "-c", 'printf %s "$PYPI_TOKEN"']), "placeholder").stdout;
      expect(inside).toMatch(/^pypi-/);
      expect(inside).not.toBe(PYPI_VALUE);
      expect(r.stdout + r.stderr).not.toContain(PYPI_VALUE);
      expect(r.stdout + r.stderr).not.toContain(b64(`__token__:${PYPI_VALUE}`));
    } finally {
      sbx(["secret", "rm", "PYPI_TOKEN"]);
    }
  });

  test("ca-trusted-inside: java (the base image's JRE) trusts what the session gives it, and is authenticated by the proxy", () => {
    // Java reads none of the PEM variables: the session's JAVA_TOOL_OPTIONS names a PKCS#12 store in the socket dir.
    const src = `import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URL;
public class Fetch {
  public static void main(String[] a) throws Exception {
    HttpURLConnection c = (HttpURLConnection) new URL(a[0]).openConnection();
    try (InputStream in = c.getInputStream()) { System.out.print(c.getResponseCode() + " " + new String(in.readAllBytes(), "UTF-8")); }
  }
}
`;
    const r = must(sbx(["run", "t", "--", "sh", "-c", 'printf %s "$1" > /tmp/Fetch.java && java /tmp/Fetch.java https://api.test/v1/java', "sh", src]), "java");
    expect(r.stdout).toStartWith("200 got Bearer sk_live_");
    expect(r.stdout).not.toContain(VALUE);
    expect(site.logs()).toContain(`SAW /v1/java Bearer ${VALUE}`);
  });

  test("ca-key-host-only: sbx's CA key is nowhere the sandbox can read; its socket dir holds certificates only", () => {
    const ctr = containerOf(realpathSync(repo), "t");
    const found = dexec(f, ctr, ["sh", "-c", "grep -rl 'PRIVATE KEY' /run/sbx /home /tmp /etc/ssl 2>/dev/null; ls /run/sbx"]);
    expect(found.stdout).not.toMatch(/PRIVATE|ca\.key/);
    expect(found.stdout).toContain("ca-bundle.pem");
    const key = readFileSync(join(f.user.home, ".local", "state", "sbx", "tls", "ca.key"), "utf8");
    expect(key).toContain("PRIVATE KEY");
    const body = key.split("\n").filter((l) => l && !l.startsWith("-----")).join("").slice(0, 40);
    expect(dexec(f, ctr, ["sh", "-c", `grep -rF '${body}' / --exclude-dir=proc --exclude-dir=sys 2>/dev/null | head -1`]).stdout).toBe("");
  });

  test("sbx logs and sbx secret list name the secret and never hold its value", () => {
    const logs = must(sbx(["logs", "--sandbox", "t", "--json"]), "sbx logs").stdout;
    expect(logs).toContain("secret.used");
    expect(logs).toContain("API_TOKEN");
    expect(logs).not.toContain(VALUE);
    const list = must(sbx(["secret", "list", "--json"]), "secret list").stdout;
    expect(list).toContain("api.test");
    expect(list).not.toContain(VALUE);
  });

  test("devcontainer.json's postCreateCommand gets the placeholder and the trust a session gets (an install from a private registry there authenticates)", () => {
    putFile(f, repo, ".devcontainer/devcontainer.json", JSON.stringify({ build: { dockerfile: "../Dockerfile", context: ".." }, postCreateCommand: 'curl -sS -m 20 https://api.test/v1/postcreate > "$HOME/pc.txt"' }));
    must(f.git(["add", "-A"], repo), "git add");
    must(f.git(["commit", "-qm", "devcontainer"], repo), "git commit");
    // Allowed for every sandbox (this one does not exist before it is made, and its postCreateCommand runs then).
    must(sbx(["allow", "api.test", "--global"]), "allow api.test --global");
    must(sbx(["allow", ip, "--global"]), "allow ip --global");
    try {
      const c = must(sbx(["create", "pc"]), "sbx create pc");
      expect(site.logs()).toContain(`SAW /v1/postcreate Bearer ${VALUE}`);
      expect(c.stderr + c.stdout).not.toContain(VALUE);
    } finally {
      sbx(["deny", "api.test", "--global"]);
      sbx(["deny", ip, "--global"]);
    }
    const got = must(sbx(["run", "pc", "--", "sh", "-c", 'cat "$HOME/pc.txt"']), "cat pc.txt").stdout;
    expect(got).toStartWith("got Bearer sk_live_");
    expect(got).not.toContain(VALUE);
  });
});
