// The egress proxy behind a real company proxy: Debian's squid on loopback, wanting Basic credentials (basic_ncsa_auth),
// resolving names only from its own hosts file (its DNS points at nothing), its ICMP pinger off: nothing leaves the
// machine. curl through sbx reaches a site only squid knows; wrong credentials are the sandbox's 502 naming squid's
// 407; a host off the allowlist never reaches squid (its access log says so).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect as netConnect, createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parentFromConfig } from "../../../src/core/parent-proxy";
import { startEgressProxy, type EgressProxy } from "../../../src/proxy/egress-proxy";
import { ParentRouter } from "../../../src/sys/parent";
import { issueLeaf, loadCa, makeCa } from "../../../src/tls/x509";
import { squidMissing, startSquid, type Squid } from "../../support/squid";

const missing = squidMissing() ?? (Bun.which("curl") === null ? "curl is missing" : undefined);
const PASSWORD = "squid-Pa55word";

let dir = "";
let squid: Squid;
let site: ReturnType<typeof Bun.serve>;
let caFile = "";
let stored = `corp:${PASSWORD}`;
let proxy: EgressProxy;
let relay: Server;
let relayPort = 0;

describe.skipIf(missing !== undefined)(`parent-proxy with Debian's squid${missing ? ` (skipped: ${missing})` : ""}`, () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sbx-squid-test-"));
    const ca = await makeCa("squid test CA");
    const leaf = await issueLeaf(await loadCa(ca.certPem, ca.keyPem), ["site.test"]);
    caFile = join(dir, "ca.pem");
    writeFileSync(caFile, ca.certPem);
    site = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: leaf.certPem, key: leaf.keyPem }, fetch: (req) => new Response(`hello through squid ${new URL(req.url).pathname}`) });
    squid = await startSquid({ user: "corp", password: PASSWORD, hosts: { "site.test": "127.0.0.1", "other.test": "127.0.0.1" } });
    proxy = await startEgressProxy({
      socketPath: join(dir, "proxy.sock"),
      sandbox: { id: 1, name: "demo" },
      policy: () => ({ sandbox: [`site.test:${site.port}`], global: [] }),
      resolve: async (h) => {
        throw new Error(`getaddrinfo ENOTFOUND ${h}`);
      },
      parent: new ParentRouter(parentFromConfig({ url: squid.url, credentials: "PROXY_LOGIN" }).settings, () => stored),
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
    await squid?.stop();
    site?.stop(true);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function curl(url: string): Promise<{ code: number; out: string; err: string }> {
    const p = Bun.spawn(["curl", "-sS", "-v", "--max-time", "10", "-x", `http://127.0.0.1:${relayPort}`, "--cacert", caFile, url], { stdout: "pipe", stderr: "pipe", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    return { code, out, err };
  }

  const accessLog = () => squid.accessLog();

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
