// The egress proxy behind a real company proxy: Debian's squid on loopback, wanting Basic credentials (basic_ncsa_auth),
// resolving names only from its own hosts file (its DNS points at nothing), its ICMP pinger off: nothing leaves the
// machine. curl through sbx reaches a site only squid knows; wrong credentials are the sandbox's 502 naming squid's
// 407; a host off the allowlist never reaches squid (its access log says so).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect as netConnect, createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parentFromConfig } from "../../../src/core/parent-proxy";
import { startEgressProxy, type EgressProxy } from "../../../src/proxy/egress-proxy";
import { ParentRouter } from "../../../src/sys/parent";
import { issueLeaf, loadCa, makeCa } from "../../../src/tls/x509";

const squid = Bun.which("squid") ?? (existsSync("/usr/sbin/squid") ? "/usr/sbin/squid" : null);
const ncsa = "/usr/lib/squid/basic_ncsa_auth";
const canRun = squid !== null && existsSync(ncsa) && Bun.which("openssl") !== null && Bun.which("curl") !== null;
const PASSWORD = "squid-Pa55word";

let dir = "";
let proc: ReturnType<typeof Bun.spawn> | null = null;
let squidPort = 0;
let site: ReturnType<typeof Bun.serve>;
let caFile = "";
let stored = `corp:${PASSWORD}`;
let proxy: EgressProxy;
let relay: Server;
let relayPort = 0;

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const p = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return p;
}

async function listening(port: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const ok = await new Promise<boolean>((r) => {
      const s = netConnect({ host: "127.0.0.1", port }, () => (s.destroy(), r(true)));
      s.on("error", () => r(false));
    });
    if (ok) return true;
    await Bun.sleep(100);
  }
  return false;
}

describe.skipIf(!canRun)(`parent-proxy with Debian's squid${canRun ? "" : " (skipped: squid, its basic_ncsa_auth, openssl or curl is missing)"}`, () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sbx-squid-"));
    chmodSync(dir, 0o755);
    const ca = await makeCa("squid test CA");
    const leaf = await issueLeaf(await loadCa(ca.certPem, ca.keyPem), ["site.test"]);
    caFile = join(dir, "ca.pem");
    writeFileSync(caFile, ca.certPem);
    site = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: leaf.certPem, key: leaf.keyPem }, fetch: (req) => new Response(`hello through squid ${new URL(req.url).pathname}`) });
    const hash = Bun.spawnSync(["openssl", "passwd", "-apr1", PASSWORD]).stdout.toString().trim();
    writeFileSync(join(dir, "passwd"), `corp:${hash}\n`);
    writeFileSync(join(dir, "hosts"), "127.0.0.1 site.test other.test\n");
    squidPort = await freePort();
    const root = process.getuid?.() === 0;
    writeFileSync(
      join(dir, "squid.conf"),
      [
        `http_port 127.0.0.1:${squidPort}`,
        `pid_filename ${dir}/squid.pid`,
        "cache deny all",
        `access_log stdio:${dir}/access.log`,
        `cache_log ${dir}/cache.log`,
        "cache_store_log none",
        `coredump_dir ${dir}`,
        `hosts_file ${dir}/hosts`,
        // Names come from the hosts file alone; a lookup squid would send goes to a loopback port where nothing is.
        "dns_nameservers 127.0.0.1",
        "pinger_enable off",
        `auth_param basic program ${ncsa} ${dir}/passwd`,
        "auth_param basic realm corp",
        "acl authed proxy_auth REQUIRED",
        "http_access deny !authed",
        "http_access allow all",
        "shutdown_lifetime 0 seconds",
        ...(root ? ["cache_effective_user proxy"] : []),
        "",
      ].join("\n"),
    );
    if (root) {
      const proxyUid = Number(Bun.spawnSync(["id", "-u", "proxy"]).stdout.toString().trim());
      if (Number.isInteger(proxyUid)) for (const f of ["", "passwd", "hosts", "squid.conf"]) chownSync(join(dir, f), proxyUid, -1);
    }
    proc = Bun.spawn([squid!, "-N", "-f", join(dir, "squid.conf")], { stdout: "ignore", stderr: "ignore" });
    if (!(await listening(squidPort, 10_000))) throw new Error(`squid did not listen: ${existsSync(join(dir, "cache.log")) ? readFileSync(join(dir, "cache.log"), "utf8").slice(-800) : "no log"}`);
    proxy = await startEgressProxy({
      socketPath: join(dir, "proxy.sock"),
      sandbox: { id: 1, name: "demo" },
      policy: () => ({ sandbox: [`site.test:${site.port}`], global: [] }),
      resolve: async (h) => {
        throw new Error(`getaddrinfo ENOTFOUND ${h}`);
      },
      parent: new ParentRouter(parentFromConfig({ url: `http://127.0.0.1:${squidPort}`, credentials: "PROXY_LOGIN" }).settings, () => stored),
    });
    relay = createServer((c) => {
      const u = netConnect({ path: proxy.socketPath });
      c.pipe(u).pipe(c);
      c.on("error", () => u.destroy());
      u.on("error", () => c.destroy());
    });
    await new Promise<void>((r) => relay.listen(0, "127.0.0.1", () => r()));
    relayPort = (relay.address() as { port: number }).port;
  }, 30_000);

  afterAll(async () => {
    relay?.close();
    await proxy?.close();
    proc?.kill("SIGTERM");
    await proc?.exited;
    site?.stop(true);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function curl(url: string): Promise<{ code: number; out: string; err: string }> {
    const p = Bun.spawn(["curl", "-sS", "-v", "--max-time", "10", "-x", `http://127.0.0.1:${relayPort}`, "--cacert", caFile, url], { stdout: "pipe", stderr: "pipe", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    return { code, out, err };
  }

  const accessLog = () => (existsSync(join(dir, "access.log")) ? readFileSync(join(dir, "access.log"), "utf8") : "");

  test("curl through sbx reaches a site only squid knows, TLS verified end to end; squid logged the CONNECT by name", async () => {
    stored = `corp:${PASSWORD}`;
    const r = await curl(`https://site.test:${site.port}/hi`);
    expect({ code: r.code, out: r.out }).toEqual({ code: 0, out: "hello through squid /hi" });
    await Bun.sleep(200);
    expect(accessLog()).toContain(`CONNECT site.test:${site.port}`);
  });

  test("squid's 407 for wrong credentials is the sandbox's 502, naming squid; a host off the allowlist never reaches it", async () => {
    stored = `corp:wrong-${PASSWORD}`;
    const r = await curl(`https://site.test:${site.port}/`);
    expect(r.code).not.toBe(0);
    expect(r.err).toContain("502");
    stored = `corp:${PASSWORD}`;
    const off = await curl(`https://other.test:${site.port}/`);
    expect(off.err).toContain("403");
    await Bun.sleep(200);
    expect(accessLog()).not.toContain("other.test");
    expect(accessLog()).toContain("TCP_DENIED/407");
  });
});
