// The transparent path end to end on Docker: clients that ignore the proxy variables (curl --noproxy, Python's raw
// socket + ssl, Debian's Node 18 fetch, Java's HttpClient with NO_PROXY, getent, dig) reach an allowlisted site by name
// and are refused for another, each refusal audited with a pending approval; DNS is answered inside and never leaves;
// a TLS server name or Host that disagrees with the name is refused. The sites run in a container on a network this
// test made; the daemon's lookup of the `.test` names is the test seam (SBX_TEST_ONLY_RESOLVE).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";
import type { Fixture } from "../docker/fixture";
import { acquireFixture, canRun, docker, makeRepo, must, releaseFixture, removeRepoImages, skipReason, stopDaemon } from "./harness";
import { makeCerts, startSite, type Site, type TestCerts } from "./site";

const tag = Math.random().toString(36).slice(2, 8);

// HTTPS on 443 and HTTP on 80, each answering with the name it was asked for; and a DNS listener on 53 (UDP) that
// logs every datagram: a query that left the sandbox would show up here.
const SITE_SCRIPT = `
const tls = { cert: Bun.file("/certs/c.pem"), key: Bun.file("/certs/k.pem") };
Bun.serve({ hostname: "0.0.0.0", port: 443, tls, fetch: (r) => new Response("tls hello " + r.headers.get("host") + "\\n") });
Bun.serve({ hostname: "0.0.0.0", port: 80, fetch: (r) => new Response("plain hello " + r.headers.get("host") + "\\n") });
Bun.serve({ hostname: "0.0.0.0", port: 8443, tls, fetch: (r) => new Response("tls 8443 hello " + r.headers.get("host") + "\\n") });
await Bun.udpSocket({ hostname: "0.0.0.0", port: 53, socket: { data(_s, buf) { console.log("DNS QUERY " + buf.length); } } });
console.log("site ready");
`;

let f: Fixture;
let repo: string;
let ip = "";
let certs: TestCerts;
let site: Site;
let env: Record<string, string>;
const has: Record<string, boolean> = {};

function sbx(args: string[], stdin?: string) {
  return f.sbx(args, { cwd: repo, env, ...(stdin !== undefined ? { stdin } : {}) });
}
/** A command inside the sandbox with no proxy variable at all: the client cannot use the proxy path. */
function bare(script: string) {
  return sbx(["run", "t", "--", "env", "-u", "HTTP_PROXY", "-u", "HTTPS_PROXY", "-u", "http_proxy", "-u", "https_proxy", "-u", "ALL_PROXY", "-u", "all_proxy", "-u", "JAVA_TOOL_OPTIONS", "-u", "npm_config_proxy", "-u", "npm_config_https_proxy", "bash", "-c", script]);
}
function pending(): Array<{ sandbox: string; host: string; port: number }> {
  return JSON.parse(must(sbx(["approvals", "--json"]), "sbx approvals --json").stdout);
}

describe.skipIf(!canRun)(`transparent path end to end on Docker${skipReason ? ` (skipped: ${skipReason})` : ""}`, () => {
  beforeAll(async () => {
    f = acquireFixture();
    repo = makeRepo(f, `transparent-${tag}`);
    certs = makeCerts("sbxt-tp", ["site.test", "other.test"], { selfSigned: true });
    site = await startSite({ prefix: "sbxt-tp", script: SITE_SCRIPT, certs });
    ip = site.ip;
    // The daemon's lookup of these names is the seam: restart the test user's daemon with it.
    await stopDaemon(f.user);
    env = { SBX_TEST_ONLY_RESOLVE: JSON.stringify({ "site.test": ip, "other.test": ip }) };
    must(sbx(["create", "t"]), "sbx create t");
    // site.test by name, and its address: a name that resolves to a private address is reached only when that
    // exact address is allowed too (allowlist-exact). other.test stays off the list.
    must(sbx(["allow", "site.test", "--sandbox", "t"]), "sbx allow site.test");
    must(sbx(["allow", ip, "--sandbox", "t"]), "sbx allow ip");
    // The cert, for clients that verify: through stdin into the sandbox's /tmp.
    must(sbx(["run", "t", "--", "sh", "-c", "cat > /tmp/site.pem"], readFileSync(certs.cert, "utf8")), "copy the cert in");
    for (const tool of ["node", "java", "dig", "python3"]) has[tool] = sbx(["run", "t", "--", "sh", "-c", `command -v ${tool}`]).code === 0;
  }, 240_000);

  afterAll(async () => {
    if (repo) {
      sbx(["rm", "--force", "t"]);
      const left = docker(["ps", "--all", "--quiet", "--filter", `label=sbx.repo=${realpathSync(repo)}`]).stdout.split("\n").filter(Boolean);
      if (left.length) docker(["rm", "--force", ...left]);
      removeRepoImages(repo);
    }
    site?.remove();
    certs?.remove();
    if (f) await stopDaemon(f.user);
    if (f) releaseFixture();
  }, 60_000);

  test("names resolve inside to the sandbox's own addresses, the same each time; getent and dig agree", () => {
    const a = must(bare("getent hosts site.test"), "getent").stdout.trim();
    expect(a).toMatch(/^127\.77\.\d+\.\d+\s+site\.test$/);
    expect(must(bare("getent hosts site.test"), "getent again").stdout.trim()).toBe(a);
    if (has.dig) {
      expect(must(bare("dig +short site.test"), "dig").stdout.trim()).toBe(a.split(/\s+/)[0]!);
      expect(must(bare("dig +short +tcp site.test"), "dig +tcp").stdout.trim()).toBe(a.split(/\s+/)[0]!);
      expect(must(bare("dig +short AAAA site.test"), "dig AAAA").stdout.trim()).toBe("");
    } else console.warn("dig is not in the base image: scripts/base-image.sh installs dnsutils");
  });

  test("no DNS query leaves the sandbox: canary names are answered inside; a resolver named directly is unreachable", () => {
    const canary = `canary-${tag}.example.org`;
    expect(must(bare(`getent hosts ${canary}`), "getent canary").stdout).toMatch(/^127\.77\./);
    if (has.dig) expect(bare(`dig +time=2 +tries=1 @${ip} ${canary}`).stdout).not.toContain("ANSWER SECTION");
    expect(site.logs()).not.toContain("DNS QUERY");
  });

  test("curl --noproxy '*': the allowed name over HTTPS and HTTP; the other name is refused, audited and pending", () => {
    expect(bare("curl -sS --noproxy '*' -m 10 --cacert /tmp/site.pem https://site.test/").stdout).toBe("tls hello site.test\n");
    expect(bare("curl -sS --noproxy '*' -m 10 http://site.test/").stdout).toBe("plain hello site.test\n");
    const refused = bare("curl -sS --noproxy '*' -m 10 --cacert /tmp/site.pem https://other.test/");
    expect(refused.code).not.toBe(0);
    expect(refused.stdout).not.toContain("hello");
    const plain = bare("curl -sS --noproxy '*' -m 10 -i http://other.test/");
    expect(plain.stdout).toMatch(/^HTTP\/1\.1 403/);
    expect(plain.stdout).toContain("sbx allow other.test");
    expect(pending().some((p) => p.sandbox === "t" && p.host === "other.test" && p.port === 443)).toBe(true);
  });

  test("Python's raw socket + ssl reaches the allowed name and is refused for the other", () => {
    const py = (host: string) =>
      bare(`python3 -c 'import socket,ssl,sys
c=ssl.create_default_context(cafile="/tmp/site.pem")
try:
  s=c.wrap_socket(socket.create_connection(("${host}",443),timeout=10),server_hostname="${host}")
  s.sendall(b"GET / HTTP/1.1\\r\\nHost: ${host}\\r\\nConnection: close\\r\\n\\r\\n"); print(s.recv(4096).decode().split("\\r\\n\\r\\n")[1])
except Exception as e: print("refused", type(e).__name__)'`).stdout;
    expect(py("site.test")).toContain("tls hello site.test");
    expect(py("other.test")).toContain("refused");
  });

  test("Node 18's fetch (no proxy support) reaches the allowed name and is refused for the other", () => {
    if (!has.node) return console.warn("skipped: no node in the base image (scripts/base-image.sh installs nodejs)");
    const node = (host: string) => bare(`NODE_EXTRA_CA_CERTS=/tmp/site.pem node -e 'fetch("https://${host}/").then(r=>r.text()).then(t=>console.log(t.trim()),e=>console.log("refused",e.cause?.code??e.message))'`).stdout;
    expect(node("site.test")).toContain("tls hello site.test");
    expect(node("other.test")).toContain("refused");
  });

  test("Java's HttpClient with NO_PROXY reaches the allowed name and is refused for the other (plain HTTP)", () => {
    if (!has.java) return console.warn("skipped: no java in the base image (scripts/base-image.sh installs default-jre-headless)");
    const src = `import java.net.http.*; import java.net.*;
public class T { public static void main(String[] a) throws Exception {
  var c = HttpClient.newBuilder().proxy(HttpClient.Builder.NO_PROXY).build();
  try { System.out.println(c.send(HttpRequest.newBuilder(URI.create(a[0])).build(), HttpResponse.BodyHandlers.ofString()).body().trim()); }
  catch (Exception e) { System.out.println("refused " + e); } } }`;
    must(sbx(["run", "t", "--", "sh", "-c", "cat > /tmp/T.java"], src), "write T.java");
    const java = (url: string) => bare(`java /tmp/T.java ${url} 2>&1`).stdout;
    expect(java("http://site.test/")).toContain("plain hello site.test");
    expect(java("http://other.test/")).toContain("sbx allow other.test --sandbox t");
  });

  test("server-name-mismatch: a TLS server name, or a Host, other than the name the address stands for is refused", () => {
    const addr = must(bare("getent hosts site.test"), "getent").stdout.trim().split(/\s+/)[0]!;
    // The address of site.test, asked for other.test (curl --resolve sends that SNI): refused, the site never answers.
    const sni = bare(`curl -sS --noproxy '*' -m 10 -k --resolve other.test:443:${addr} https://other.test/`);
    expect(sni.stdout).not.toContain("hello");
    const host = bare(`curl -sS --noproxy '*' -m 10 -i -H 'Host: other.test' http://site.test/`);
    expect(host.stdout).toMatch(/^HTTP\/1\.1 400/);
    expect(host.stdout).not.toContain("hello");
  });

  test("an IP literal and an unlisted port get nowhere (no route out; the transparent ports are 80 and 443)", () => {
    expect(bare(`curl -sS --noproxy '*' -m 5 http://${ip}/`).code).not.toBe(0);
    expect(bare("curl -sS --noproxy '*' -m 5 http://site.test:8080/").code).not.toBe(0);
  });

  test("another port: `sbx allow site.test:8443` makes the forwarder listen on 8443 too; before, nothing answers there", async () => {
    const get = () => bare("curl -sS --noproxy '*' -m 5 --cacert /tmp/site.pem https://site.test:8443/");
    expect(get().stdout).not.toContain("hello");
    must(sbx(["allow", "site.test:8443", "--sandbox", "t"]), "sbx allow site.test:8443");
    must(sbx(["allow", `${ip}:8443`, "--sandbox", "t"]), "sbx allow ip:8443");
    let out = "";
    for (let i = 0; i < 40 && !out.includes("hello"); i++) {
      out = get().stdout;
      if (!out.includes("hello")) await Bun.sleep(100);
    }
    expect(out).toBe("tls 8443 hello site.test:8443\n");
  }, 30_000);

  test("--no-transparent is for a new sandbox: on an existing one it is refused, never ignored", () => {
    const r = sbx(["run", "--no-transparent", "t", "--", "true"]);
    expect(r.code).toBe(64);
    expect(r.stderr).toContain("--no-transparent set up a new sandbox, and t exists");
  });

  test("its own hostname is its loopback and kept direct: a server it runs is reached by that name, with the proxy variables set, not through the proxy", () => {
    const r = sbx(["run", "t", "--", "bash", "-c", [
      "getent hosts \"$(hostname)\"",
      "python3 -m http.server 18080 --bind 127.0.0.1 >/dev/null 2>&1 & srv=$!",
      "for i in $(seq 100); do curl -s --noproxy '*' -o /dev/null http://127.0.0.1:18080/ && break; sleep 0.05; done",
      // The proxy variables are set (as every command has them): only NO_PROXY sends this one direct.
      "[ -n \"$HTTP_PROXY\" ] && curl -s -o /dev/null -w '%{http_code}\\n' \"http://$(hostname):18080/\"",
      "kill $srv",
    ].join("; ")]);
    expect(r.stdout.split("\n").filter(Boolean)).toEqual(["127.0.0.1       t", "200"]);
    // The proxy never saw it.
    expect(pending().filter((p) => p.host === "t")).toEqual([]);
  });

  test("the audit log marks the transparent path", () => {
    const out = must(sbx(["logs", "--sandbox", "t", "--kind", "egress", "--json", "-n", "500"]), "sbx logs --json").stdout;
    expect(out).toContain('"path":"transparent"');
    expect(out).toContain("server-name-mismatch");
  });
});
