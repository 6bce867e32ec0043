// The transparent path for `--backend user`, through the daemon's real wiring: a guest's DNS (to any nameserver) is
// redirected by nft, by its uid, to its own stub and answered from its name map; its connections to a named address on
// 443/80 are redirected to its proxy port and judged by the proxy as CONNECT name:443 or http://name/. Real root, real
// nft, real guests; clients that ignore the proxy variables: curl --noproxy, Python's socket + ssl, getent (and node,
// java where the host has them). The names are the daemon's test seam (SBX_TEST_ONLY_RESOLVE), the sites the host's
// loopback, published for the sandbox.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Sandbox } from "../../../src/core/schemas";
import { makeDaemonWorld, type DaemonWorld } from "./daemon-world";
import { makeWorld, sh, whyNot, type World } from "./harness";

const SITE_IP = "127.0.0.7";
/** Whether a port of SITE_IP can be bound here (something on 0.0.0.0:443 or :80 would hold it). */
function bindable(port: number): boolean {
  try {
    Bun.listen({ hostname: SITE_IP, port, socket: { data() {} } }).stop(true);
    return true;
  } catch {
    return false;
  }
}
const skip = whyNot() ?? (sh(["which", "curl", "openssl"]).code === 0 ? undefined : "needs curl and openssl") ?? (bindable(443) && bindable(80) ? undefined : `${SITE_IP}:443 or :80 is taken on this machine`);

describe.skipIf(skip !== undefined)(`transparent path (--backend user, daemon wiring)${skip ? ` (skipped: ${skip})` : ""}`, () => {
  let w: World;
  let d: DaemonWorld;
  let sb: Sandbox;
  let sb2: Sandbox;
  let dir = "";
  let tls: ReturnType<typeof Bun.serve>;
  let plain: ReturnType<typeof Bun.serve>;
  const served: string[] = [];
  const has: Record<string, boolean> = {};

  beforeAll(async () => {
    w = await makeWorld();
    dir = mkdtempSync("/tmp/sbxt-tpu-");
    chmodSync(dir, 0o755);
    const made = Bun.spawnSync(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=site.test", "-addext", "subjectAltName=DNS:site.test,DNS:other.test", "-keyout", join(dir, "k.pem"), "-out", join(dir, "c.pem")], { stderr: "pipe" });
    if (made.exitCode !== 0) throw new Error(made.stderr.toString());
    chmodSync(join(dir, "c.pem"), 0o644);
    tls = Bun.serve({ hostname: SITE_IP, port: 443, tls: { cert: readFileSync(join(dir, "c.pem"), "utf8"), key: readFileSync(join(dir, "k.pem"), "utf8") }, fetch: (r) => (served.push(`tls ${r.headers.get("host")}`), new Response(`tls hello ${r.headers.get("host")}\n`)) });
    plain = Bun.serve({ hostname: SITE_IP, port: 80, fetch: (r) => (served.push(`plain ${r.headers.get("host")}`), new Response(`plain hello ${r.headers.get("host")}\n`)) });
    d = await makeDaemonWorld(w, { SBX_TEST_ONLY_RESOLVE: JSON.stringify({ "site.test": SITE_IP, "other.test": SITE_IP }) });
    sb = (await d.users.create({ name: "tp", cwd: w.repo })).sandbox;
    sb2 = (await d.users.create({ name: "tp2", cwd: w.repo })).sandbox;
    // The sites are the host's own loopback: published for this sandbox, and site.test allowlisted by name.
    d.store.updateIdentity(sb.id, { ...d.store.getSandbox(sb.id)!.identity, publish: [`${SITE_IP}:443`, `${SITE_IP}:80`] });
    d.store.addAllow(sb.id, "site.test", "test");
    writeFileSync(join(dir, "T.java"), `import java.net.http.*; import java.net.*;
public class T { public static void main(String[] a) throws Exception {
  var c = HttpClient.newBuilder().proxy(HttpClient.Builder.NO_PROXY).build();
  try { System.out.println(c.send(HttpRequest.newBuilder(URI.create(a[0])).build(), HttpResponse.BodyHandlers.ofString()).body().trim()); }
  catch (Exception e) { System.out.println("refused " + e); } } }`);
    chmodSync(join(dir, "T.java"), 0o644);
    for (const tool of ["node", "java", "dig"]) has[tool] = sh(["which", tool]).code === 0;
  }, 120_000);

  afterAll(async () => {
    for (const s of [sb, sb2]) if (s) await d.users.rm(s.name, { cwd: w.repo, force: true }).catch((e) => console.error(e));
    tls?.stop(true);
    plain?.stop(true);
    await d?.close();
    await w?.teardown();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  /** As the guest, with no proxy variable at all (rc files set them; the script unsets them first). */
  const bare = (script: string) => d.asGuest(sb, `unset HTTP_PROXY HTTPS_PROXY http_proxy https_proxy ALL_PROXY all_proxy JAVA_TOOL_OPTIONS npm_config_proxy npm_config_https_proxy; ${script}`, 20);

  test("the guest's DNS, to whatever nameserver the host has, is answered by its own stub with its own addresses", async () => {
    const a = (await bare("getent hosts site.test")).out.trim();
    expect(a).toMatch(/^127\.77\.\d+\.\d+\s+site\.test$/);
    expect((await bare("getent hosts site.test")).out.trim()).toBe(a);
    // The host itself resolves nothing of the kind: the redirect is the guest's alone.
    expect(sh(["getent", "hosts", "site.test"]).out).not.toMatch(/^127\.77\./);
    if (has.dig) expect((await bare("dig +short +time=2 +tries=1 @127.0.0.1 site.test")).out.trim()).toBe(a.split(/\s+/)[0]!);
  });

  test("no DNS query leaves the guest: a resolver on the host's loopback, asked by name, sees nothing; the stub answers", async () => {
    const seen: number[] = [];
    let resolver: { close(): void };
    try {
      resolver = await Bun.udpSocket({ hostname: "127.0.0.9", port: 53, socket: { data: (_s, buf) => void seen.push(buf.length) } });
    } catch (e) {
      return console.warn(`skipped: cannot listen on 127.0.0.9:53 (${(e as Error).message})`);
    }
    try {
      const canary = `canary-${w.tag}.example.org`;
      // Straight to that resolver, as a client with its own resolver settings would ask.
      const r = await bare(`/usr/bin/python3 -c 'import socket
s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.settimeout(3)
q=bytes.fromhex("abcd01000001000000000000")+b"".join(bytes([len(l)])+l.encode() for l in "${canary}".split("."))+bytes.fromhex("0000010001")
s.sendto(q,("127.0.0.9",53)); a=s.recv(512); print("answer", ".".join(str(b) for b in a[-4:]))'`);
      expect(r.out).toMatch(/^answer 127\.77\./);
      expect((await bare(`getent hosts ${canary}`)).out).toMatch(/^127\.77\./);
      await Bun.sleep(200);
      expect(seen).toEqual([]);
      // Control: the host itself reaches that resolver.
      const c = await Bun.udpSocket({ hostname: "127.0.0.1", port: 0 });
      c.send(new Uint8Array([1, 2, 3]), 53, "127.0.0.9");
      for (let i = 0; i < 20 && seen.length === 0; i++) await Bun.sleep(25);
      c.close();
      expect(seen).toEqual([3]);
    } finally {
      resolver.close();
    }
  });

  test("sandboxes-apart: each guest's DNS goes to its own map, and another guest cannot ask this one's stub", async () => {
    const other = (script: string) => d.asGuest(sb2, script, 20);
    // Names given out in order per map: the other guest's first name gets the first address, whatever this one holds.
    const mine = (await bare("getent hosts apart-one.test; getent hosts apart-two.test")).out.trim().split("\n").map((l) => l.split(/\s+/)[0]);
    const theirs = (await other("getent hosts apart-two.test")).out.trim().split(/\s+/)[0];
    expect(mine[1]).not.toBe(theirs);
    expect(d.store.nameOfAddress(sb2.id, theirs!)).toBe("apart-two.test");
    // Straight to this guest's stub (UDP to its port): the other guest's firewall refuses it.
    const port = (d.spec(sb).options as { proxyPort: number }).proxyPort;
    const q = (await other(`/usr/bin/python3 -c 'import socket
s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.settimeout(2)
try:
  s.sendto(bytes.fromhex("12340100000100000000000005736974650474657374000001000001"),("127.0.0.1",${port})); print("answered", len(s.recv(512)))
except Exception as e: print("no answer", type(e).__name__)'`)).out;
    expect(q).toContain("no answer");
  });

  test("curl --noproxy '*': the allowed name over HTTPS and HTTP; the other name refused, audited, pending", async () => {
    expect((await bare(`curl -sS --noproxy '*' -m 10 --cacert ${dir}/c.pem https://site.test/`)).out).toBe("tls hello site.test\n");
    expect((await bare(`curl -sS --noproxy '*' -m 10 http://site.test/`)).out).toBe("plain hello site.test\n");
    const refused = await bare(`curl -sS --noproxy '*' -m 10 --cacert ${dir}/c.pem https://other.test/`);
    expect(refused.out).not.toContain("hello");
    const p = await bare(`curl -sS --noproxy '*' -m 10 -i http://other.test/`);
    expect(p.out).toMatch(/^HTTP\/1\.1 403/);
    expect(p.out).toContain("sbx allow other.test");
    expect(d.store.listApprovals({ state: "pending", sandboxId: sb.id }).some((a) => a.host === "other.test" && a.port === 443)).toBe(true);
    expect(served.some((s) => s.includes("other.test"))).toBe(false);
  });

  test("Python's raw socket + ssl reaches the allowed name and is refused for the other", async () => {
    const py = async (host: string) =>
      (
        await bare(`/usr/bin/python3 -c 'import socket,ssl
c=ssl.create_default_context(cafile="${dir}/c.pem")
try:
  s=c.wrap_socket(socket.create_connection(("${host}",443),timeout=10),server_hostname="${host}")
  s.sendall(b"GET / HTTP/1.1\\r\\nHost: ${host}\\r\\nConnection: close\\r\\n\\r\\n"); print(s.recv(4096).decode().split("\\r\\n\\r\\n")[1])
except Exception as e: print("refused", type(e).__name__)'`)
      ).out;
    expect(await py("site.test")).toContain("tls hello site.test");
    expect(await py("other.test")).toContain("refused");
  });

  test("Node's fetch and Java's HttpClient with NO_PROXY (where the host has them)", async () => {
    if (has.node) {
      const node = async (host: string) => (await bare(`NODE_EXTRA_CA_CERTS=${dir}/c.pem NODE_USE_ENV_PROXY= node -e 'fetch("https://${host}/").then(r=>r.text()).then(t=>console.log(t.trim()),e=>console.log("refused",e.cause?.code??e.message))'`)).out;
      expect(await node("site.test")).toContain("tls hello site.test");
      expect(await node("other.test")).toContain("refused");
    } else console.warn("skipped the node half: no node on this host");
    if (has.java) {
      expect((await bare(`java ${dir}/T.java http://site.test/ 2>&1`)).out).toContain("plain hello site.test");
      expect((await bare(`java ${dir}/T.java http://other.test/ 2>&1`)).out).toContain("sbx allow other.test");
    } else console.warn("skipped the java half: no java on this host");
  }, 60_000);

  test("server-name-mismatch: the address of site.test asked for other.test (TLS server name, or Host) is refused", async () => {
    const addr = (await bare("getent hosts site.test")).out.trim().split(/\s+/)[0]!;
    const sni = await bare(`curl -sS --noproxy '*' -m 10 -k --resolve other.test:443:${addr} https://other.test/`);
    expect(sni.out).not.toContain("hello");
    const host = await bare(`curl -sS --noproxy '*' -m 10 -i -H 'Host: other.test' http://site.test/`);
    expect(host.out).toMatch(/^HTTP\/1\.1 400/);
    expect(served.some((s) => s.includes("other.test"))).toBe(false);
  });

  test("what is not redirected stays blocked: an IP literal, another port of a named address, the site's own address", async () => {
    expect((await bare(`curl -sS --noproxy '*' -m 5 http://${SITE_IP}/`)).code).not.toBe(0);
    expect((await bare(`curl -sS --noproxy '*' -m 5 http://site.test:8080/`)).code).not.toBe(0);
  });

  test("another port of a named address is judged by the allowlist: refused with an approval for name:port, then allowed", async () => {
    const alt = Bun.serve({ hostname: SITE_IP, port: 0, fetch: () => new Response("alt hello\n") });
    try {
      d.store.updateIdentity(sb.id, { ...d.store.getSandbox(sb.id)!.identity, publish: [`${SITE_IP}:443`, `${SITE_IP}:80`, `${SITE_IP}:${alt.port}`] });
      const get = () => bare(`curl -sS --noproxy '*' -m 5 http://site.test:${alt.port}/`);
      // A port other than 80 is a tunnel: refused, it is reset (only port 80 is read as plain HTTP, with the body).
      expect((await get()).out).not.toContain("alt hello");
      expect(d.store.listApprovals({ state: "pending", sandboxId: sb.id }).some((a) => a.host === "site.test" && a.port === alt.port)).toBe(true);
      d.store.addAllow(sb.id, `site.test:${alt.port}`, "test");
      expect((await get()).out).toBe("alt hello\n");
    } finally {
      alt.stop(true);
    }
  });

  test("the proxy path still works beside it (the same port serves both), and the audit marks each path", async () => {
    const r = await d.asGuest(sb, `curl -sS -m 10 --cacert ${dir}/c.pem https://site.test/`);
    expect(r.out).toBe("tls hello site.test\n");
    let rows: { detail: Record<string, unknown> }[] = [];
    for (let i = 0; i < 40; i++) {
      rows = d.store.listAudit({ sandboxId: sb.id, kind: "egress" }) as typeof rows;
      if (rows.some((e) => e.detail.path === "transparent" && e.detail.host === "site.test") && rows.some((e) => e.detail.path === undefined && e.detail.host === "site.test")) break;
      await Bun.sleep(100);
    }
    expect(rows.some((e) => e.detail.path === "transparent" && e.detail.host === "site.test")).toBe(true);
    expect(rows.some((e) => e.detail.path === undefined && e.detail.host === "site.test")).toBe(true);
  });
});
