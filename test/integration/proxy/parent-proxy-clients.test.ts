// Real clients (curl, Python) as a sandbox runs them, through sbx's proxy, on a network where only the company's proxy
// gets out: the parent (test/support/fake-parent.ts, on loopback) is the only one that knows where site.test and
// api.test are; the host's own lookup finds nothing. sbx's decision comes first (the parent never hears of a host off
// the allowlist), TLS is verified end to end inside the parent's tunnel, and a secret bound to a host is swapped in on
// the way (the terminated path, its TLS to the upstream also inside the tunnel).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import type { Server } from "node:net";
import { join } from "node:path";
import type { BoundSecret } from "../../../src/core/bound-secret";
import type { EgressEvent } from "../../../src/core/egress-events";
import { parentFromConfig } from "../../../src/core/parent-proxy";
import { placeholderFor } from "../../../src/core/placeholder";
import { startEgressProxy, type EgressProxy } from "../../../src/proxy/egress-proxy";
import { ParentRouter } from "../../../src/sys/parent";
import { issueLeaf, loadCa, makeCa } from "../../../src/tls/x509";
import { startFakeParent, type FakeParent } from "../../support/fake-parent";
import { forwarderTo, leafContexts, tempDir } from "./helpers";

const VALUE = "sk_live_Pa4entR3alValue0123456789";
const PLACEHOLDER = placeholderFor(VALUE, (n) => crypto.getRandomValues(new Uint8Array(n)));
const PASSWORD = "clients-Pa55word";
let tmp: ReturnType<typeof tempDir>;
let parent: FakeParent;
let proxy: EgressProxy;
let relay: Server;
let relayPort = 0;
let site: ReturnType<typeof Bun.serve>;
let api: ReturnType<typeof Bun.serve>;
const apiSaw: string[] = [];
let worldCaFile = "";
let sbxCaFile = "";
const events: EgressEvent[] = [];
const python = Bun.which("python3");

beforeAll(async () => {
  tmp = tempDir();
  const world = await makeCa("world test CA");
  const worldCa = await loadCa(world.certPem, world.keyPem);
  const sbx = await makeCa("sbx test CA");
  const signer = await loadCa(sbx.certPem, sbx.keyPem);
  worldCaFile = join(tmp.dir, "world.pem");
  sbxCaFile = join(tmp.dir, "sbx.pem");
  writeFileSync(worldCaFile, world.certPem);
  writeFileSync(sbxCaFile, sbx.certPem);
  const siteLeaf = await issueLeaf(worldCa, ["site.test"]);
  site = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: siteLeaf.certPem, key: siteLeaf.keyPem }, fetch: (req) => new Response(`hello from site.test ${new URL(req.url).pathname}`) });
  const apiLeaf = await issueLeaf(worldCa, ["api.test"]);
  api = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: apiLeaf.certPem, key: apiLeaf.keyPem },
    fetch(req) {
      apiSaw.push(req.headers.get("authorization") ?? "none");
      return new Response("api ok");
    },
  });
  parent = await startFakeParent({ sites: { "site.test": site.port!, "api.test": api.port!, "other.test": site.port! }, credentials: `corp:${PASSWORD}` });
  const secrets: BoundSecret[] = [{ name: "API_TOKEN", hosts: ["api.test"], rules: [{ methods: ["GET"], path: "/**" }], header: null, inBody: false, placeholder: PLACEHOLDER }];
  proxy = await startEgressProxy({
    socketPath: join(tmp.dir, "proxy.sock"),
    sandbox: { id: 1, name: "demo" },
    policy: () => ({ sandbox: ["site.test", "api.test"], global: [] }),
    // The host resolves no outside name: only the company's proxy does.
    resolve: async (h) => {
      throw new Error(`getaddrinfo ENOTFOUND ${h}`);
    },
    onDecision: (e) => void events.push(e),
    parent: new ParentRouter(parentFromConfig({ url: parent.url, credentials: "PROXY_LOGIN" }).settings, (n) => (n === "PROXY_LOGIN" ? `corp:${PASSWORD}` : null)),
    secrets: {
      secrets: () => secrets,
      values: async (names) => new Map(names.filter((n) => n === "API_TOKEN").map((n): [string, string] => [n, VALUE])),
      contextFor: leafContexts(signer),
      upstreamCa: world.certPem,
    },
  });
  ({ server: relay, port: relayPort } = await forwarderTo(proxy.socketPath));
});

afterAll(async () => {
  relay?.close();
  await proxy?.close();
  await parent?.close();
  site?.stop(true);
  api?.stop(true);
  tmp?.cleanup();
});

/** A client as a sandbox runs it (async: the proxy answers in this same process). */
async function run(argv: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
  const p = Bun.spawn(argv, { stdout: "pipe", stderr: "pipe", env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: tmp.dir, ...env } });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

const proxyUrl = () => `http://127.0.0.1:${relayPort}`;

describe("parent-proxy with real clients: curl and Python reach a site only the parent knows, through sbx's decision", () => {
  test("curl: the allowed site answers through the parent, its TLS verified; the parent heard CONNECT site.test:443", async () => {
    parent.seen.length = 0;
    const r = await run(["curl", "-sS", "--max-time", "10", "-x", proxyUrl(), "--cacert", worldCaFile, "https://site.test/hello"]);
    expect(r).toMatchObject({ code: 0, out: "hello from site.test /hello" });
    expect(parent.seen.map((s) => s.target)).toEqual(["site.test:443"]);
  });

  test("curl: a host off the allowlist is refused by sbx (403), and the parent never hears of it", async () => {
    parent.seen.length = 0;
    const r = await run(["curl", "-sS", "-v", "--max-time", "10", "-x", proxyUrl(), "--cacert", worldCaFile, "https://other.test/"]);
    expect(r.code).not.toBe(0);
    expect(r.err).toContain("403");
    expect(parent.seen).toEqual([]);
  });

  test.skipIf(!python)("Python's urllib (https_proxy in its environment): the site answers; another host is refused before the parent", async () => {
    parent.seen.length = 0;
    const script = `
import ssl, sys, urllib.request
ctx = ssl.create_default_context(cafile=sys.argv[2])
try:
    print(urllib.request.urlopen(sys.argv[1], context=ctx, timeout=10).read().decode())
except Exception as e:
    print("refused:", e)
`;
    const ok = await run([python!, "-c", script, "https://site.test/py", worldCaFile], { https_proxy: proxyUrl() });
    expect(ok.out.trim()).toBe("hello from site.test /py");
    const no = await run([python!, "-c", script, "https://other.test/py", worldCaFile], { https_proxy: proxyUrl() });
    expect(no.out).toContain("refused:");
    expect(no.out).toContain("403");
    expect(parent.seen.map((s) => s.target)).toEqual(["site.test:443"]);
  });

  test("a secret bound to a host: terminated, swapped, and sent on over TLS verified against the upstream's CA, inside the parent's tunnel", async () => {
    parent.seen.length = 0;
    apiSaw.length = 0;
    const r = await run(["curl", "-sS", "--max-time", "10", "-x", proxyUrl(), "--cacert", sbxCaFile, "-H", `Authorization: Bearer ${PLACEHOLDER}`, "https://api.test/v1/x"]);
    expect(r).toMatchObject({ code: 0, out: "api ok" });
    expect(apiSaw).toEqual([`Bearer ${VALUE}`]);
    expect(parent.seen.map((s) => s.target)).toEqual(["api.test:443"]);
    // The value went inside the tunnel's TLS; nothing the parent read holds it, nor the placeholder.
    expect(parent.seen.some((s) => s.head.includes(VALUE) || s.head.includes(PLACEHOLDER))).toBe(false);
    expect(events.find((e) => e.type === "closed" && e.host === "api.test")).toMatchObject({ via: parent.url });
  });
});
