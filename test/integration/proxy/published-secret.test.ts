// secret-bound (published services): a secret bound to host.sbx.internal goes, over plain HTTP, to a service of this
// host published for the sandbox (a developer's registry on 127.0.0.1:4873), swapped as on a terminated connection
// (one code path, terminate.ts) and masked back in the answer; plain HTTP anywhere else never carries a value: the
// placeholder goes as it is and is said as outside. Real servers on loopback, the real proxy, curl and npm.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { connect as netConnect, type Server } from "node:net";
import { join } from "node:path";
import { fdPassing } from "../../../shims/fd-pass";
import type { BoundSecret } from "../../../src/core/bound-secret";
import type { EgressEvent } from "../../../src/core/egress-events";
import { placeholderFor } from "../../../src/core/placeholder";
import { startEgressProxy, type EgressProxy } from "../../../src/proxy/egress-proxy";
import { npmrcHosts } from "../../../src/secrets/bound";
import { forwarderTo, tempDir } from "./helpers";

const random = (n: number) => crypto.getRandomValues(new Uint8Array(n));
const API_VALUE = "sk_live_R3alV4lueN0tForS4ndb0x";
const API_PLACEHOLDER = placeholderFor(API_VALUE, random);
const NPM_VALUE = "npm_RealRegistryToken0123456789abcdefghij";
const NPM_PLACEHOLDER = placeholderFor(NPM_VALUE, random);
/** Bound to a public-style name (api.test): never swapped into plain HTTP. */
const PUBLIC_VALUE = "pk_test_PublicNameValue0123456789";
const PUBLIC_PLACEHOLDER = placeholderFor(PUBLIC_VALUE, random);
const VALUES = new Map([
  ["API_TOKEN", API_VALUE],
  ["NPM_TOKEN", NPM_VALUE],
  ["PUBLIC_TOKEN", PUBLIC_VALUE],
]);

let tmp: ReturnType<typeof tempDir>;
/** Sandbox 1: the service published; sandbox 2: the same secrets, the service not published for it. */
let proxy: EgressProxy;
let other: EgressProxy;
let relay: Server;
let relayPort = 0;
let svc: ReturnType<typeof Bun.serve>;
let unpublished: ReturnType<typeof Bun.serve>;
const seen: { path: string; auth: string; host: string; body: string }[] = [];
let unpublishedHits = 0;
const events: EgressEvent[] = [];
const otherEvents: EgressEvent[] = [];
let tarball: Uint8Array = new Uint8Array();

const secrets: BoundSecret[] = [
  { name: "API_TOKEN", hosts: ["host.sbx.internal"], rules: [{ methods: ["GET", "POST"], path: "/v1/**" }], header: { name: "X-Api-Key", template: "{}" }, inBody: true, placeholder: API_PLACEHOLDER },
  { name: "NPM_TOKEN", hosts: ["host.sbx.internal"], rules: [{ methods: ["GET", "HEAD"], path: "/private-pkg/**" }, { methods: ["GET", "HEAD"], path: "/private-pkg" }], header: null, inBody: false, placeholder: NPM_PLACEHOLDER },
  { name: "PUBLIC_TOKEN", hosts: ["api.test"], rules: [{ methods: ["GET", "POST"], path: "/**" }], header: { name: "X-Public-Key", template: "{}" }, inBody: false, placeholder: PUBLIC_PLACEHOLDER },
];

const binding = () => ({
  secrets: () => secrets,
  values: async (names: readonly string[]) => new Map(names.flatMap((n): [string, string][] => (VALUES.has(n) ? [[n, VALUES.get(n)!]] : []))),
  contextFor: () => Promise.reject(new Error("no TLS in this test")),
});

beforeAll(async () => {
  tmp = tempDir();
  const pkgDir = join(tmp.dir, "pkg", "package");
  mkdirSync(pkgDir, { recursive: true });
  writeFileSync(join(pkgDir, "package.json"), JSON.stringify({ name: "private-pkg", version: "1.0.0", main: "index.js" }));
  writeFileSync(join(pkgDir, "index.js"), "module.exports = 'from the private registry';\n");
  const tgz = join(tmp.dir, "pkg.tgz");
  Bun.spawnSync(["tar", "-czf", tgz, "-C", join(tmp.dir, "pkg"), "package"]);
  tarball = readFileSync(tgz);
  const integrity = `sha512-${new Bun.CryptoHasher("sha512").update(tarball).digest("base64")}`;
  svc = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const u = new URL(req.url);
      const body = await req.text();
      const auth = req.headers.get("authorization") ?? "";
      const key = req.headers.get("x-api-key") ?? "";
      seen.push({ path: `${u.pathname}${u.search}`, auth: `${auth}|${key}|${req.headers.get("x-public-key") ?? ""}`, host: req.headers.get("host") ?? "", body });
      if (u.pathname === "/v1/echo") return new Response(`you sent ${auth} ${key} ${body}`, { headers: { "x-echo": `${auth} ${key}` } });
      if (u.pathname === "/v1/chunked") {
        // Chunked, the value cut across chunks, with pauses between them.
        const parts = [`start ${key.slice(0, 9)}`, key.slice(9, 20), `${key.slice(20)} end`];
        const stream = new ReadableStream({
          async pull(c) {
            const p = parts.shift();
            if (p === undefined) return c.close();
            c.enqueue(new TextEncoder().encode(p));
            await Bun.sleep(20);
          },
        });
        return new Response(stream);
      }
      if (u.pathname.startsWith("/private-pkg")) {
        if (auth !== `Bearer ${NPM_VALUE}`) return Response.json({ error: "unauthorized" }, { status: 401 });
        if (u.pathname === "/private-pkg") {
          const base = `http://host.sbx.internal:${svc.port}`;
          return Response.json({ name: "private-pkg", "dist-tags": { latest: "1.0.0" }, versions: { "1.0.0": { name: "private-pkg", version: "1.0.0", dist: { tarball: `${base}/private-pkg/-/private-pkg-1.0.0.tgz`, integrity } } } });
        }
        if (u.pathname === "/private-pkg/-/private-pkg-1.0.0.tgz") return new Response(tarball);
      }
      return new Response(`ok ${u.pathname} ${auth} ${key}`);
    },
  });
  unpublished = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch() {
      unpublishedHits++;
      return new Response("unpublished");
    },
  });
  const names = new Map([["host.sbx.internal", "127.77.0.9"]]);
  proxy = await startEgressProxy({
    socketPath: join(tmp.dir, "p1.sock"),
    sandbox: { id: 1, name: "one" },
    policy: () => ({ sandbox: [`api.test:${svc.port}`], global: [], published: [`127.0.0.1:${svc.port}`] }),
    resolve: async (h) => (h === "api.test" ? ["127.0.0.1"] : []),
    onDecision: (e) => void events.push(e),
    names: { addressOf: (n) => names.get(n) ?? null, nameOf: (a) => [...names].find(([, x]) => x === a)?.[0] ?? null },
    transparentHttpPorts: [svc.port!],
    secrets: binding(),
    pace: null,
  });
  other = await startEgressProxy({
    socketPath: join(tmp.dir, "p2.sock"),
    sandbox: { id: 2, name: "two" },
    policy: () => ({ sandbox: [], global: [], published: [] }),
    onDecision: (e) => void otherEvents.push(e),
    secrets: binding(),
    pace: null,
  });
  ({ server: relay, port: relayPort } = await forwarderTo(proxy.socketPath));
});

afterAll(async () => {
  relay?.close();
  await proxy?.close();
  await other?.close();
  svc?.stop(true);
  unpublished?.stop(true);
  tmp?.cleanup();
});

const reset = () => {
  seen.length = 0;
  events.length = 0;
  otherEvents.length = 0;
};
const secretEvents = (list = events) => list.filter((e) => e.type === "secret") as Extract<EgressEvent, { type: "secret" }>[];

/** One raw request to a proxy's socket: the whole answer (the request asks the connection to close). */
function raw(request: string, socket = proxy.socketPath): Promise<string> {
  return new Promise((resolve) => {
    const s = netConnect({ path: socket });
    let out = "";
    s.on("data", (d: Buffer) => (out += d.toString("latin1")));
    s.on("close", () => resolve(out));
    s.on("error", (e) => resolve(`${out}error: ${e.message}`));
    s.write(request);
  });
}
const get = (url: string, headers: string[] = [], socket?: string) => {
  const u = new URL(url);
  return raw(`GET ${url} HTTP/1.1\r\nHost: ${u.host}\r\n${headers.map((h) => `${h}\r\n`).join("")}Connection: close\r\n\r\n`, socket);
};

async function run(argv: string[], env?: Record<string, string>, cwd?: string): Promise<{ code: number; out: string; err: string }> {
  const p = Bun.spawn(argv, { stdout: "pipe", stderr: "pipe", ...(env ? { env: { ...process.env, ...env } } : {}), ...(cwd ? { cwd } : {}) });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

describe("secret-bound: a published service of the host over plain HTTP gets the value, as a terminated host does", () => {
  test("curl through the proxy: the placeholder swapped, the header added; the answer shows the placeholder, head and body", async () => {
    reset();
    const r = await run(["curl", "-sS", "-i", "--max-time", "10", "-x", `http://127.0.0.1:${relayPort}`, "-H", `Authorization: Bearer ${NPM_PLACEHOLDER}`, `http://host.sbx.internal:${svc.port}/v1/echo?k=${API_PLACEHOLDER}`]);
    expect(r.err).toBe("");
    // The service got API_TOKEN's value in the query and its header; NPM_TOKEN is out of its paths: its placeholder went as it is.
    expect(seen[0]).toMatchObject({ path: `/v1/echo?k=${API_VALUE}`, auth: `Bearer ${NPM_PLACEHOLDER}|${API_VALUE}|`, host: `host.sbx.internal:${svc.port}` });
    expect(r.out).toContain(`x-echo: Bearer ${NPM_PLACEHOLDER} ${API_PLACEHOLDER}`);
    expect(r.out).toContain(`you sent Bearer ${NPM_PLACEHOLDER} ${API_PLACEHOLDER}`);
    expect(r.out).not.toContain(API_VALUE);
    const uses = secretEvents().map((e) => `${e.name} ${e.action} ${e.host} ${e.target}`);
    expect(uses).toEqual(expect.arrayContaining(["API_TOKEN used host.sbx.internal /v1/echo", "NPM_TOKEN outside host.sbx.internal /v1/echo"]));
    expect(JSON.stringify(events)).not.toContain(API_VALUE);
  });

  test("a body with --in-body is swapped; the value echoed back is masked", async () => {
    reset();
    const body = JSON.stringify({ key: API_PLACEHOLDER });
    const u = `http://host.sbx.internal:${svc.port}/v1/echo`;
    const out = await raw(`POST ${u} HTTP/1.1\r\nHost: host.sbx.internal:${svc.port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
    expect(seen[0]!.body).toBe(JSON.stringify({ key: API_VALUE }));
    expect(out).toContain(`{"key":"${API_PLACEHOLDER}"}`);
    expect(out).not.toContain(API_VALUE);
  });

  test("reflection, chunked, the value cut across chunks: the sandbox gets the placeholder whole", async () => {
    reset();
    const out = await get(`http://host.sbx.internal:${svc.port}/v1/chunked`);
    expect(seen[0]!.auth).toBe(`|${API_VALUE}|`);
    expect(out).toContain("Transfer-Encoding: chunked");
    const body = out.slice(out.indexOf("\r\n\r\n") + 4).replace(/\r\n[0-9a-f]+\r\n/g, "").replace(/^[0-9a-f]+\r\n/, "");
    expect(body).toContain(`start ${API_PLACEHOLDER} end`);
    expect(out).not.toContain(API_VALUE);
  });

  test("outside its paths, by every spelling: the placeholder goes as it is, said as outside", async () => {
    for (const path of ["/admin", "/v1/../admin", "/v1/%2e%2e/admin", "/v1%2fx", "/v1/..%5cadmin", "/v1;x/echo"]) {
      reset();
      await raw(`GET http://host.sbx.internal:${svc.port}${path} HTTP/1.1\r\nHost: host.sbx.internal:${svc.port}\r\nX-Api-Key: ${API_PLACEHOLDER}\r\nConnection: close\r\n\r\n`);
      expect({ path, sent: JSON.stringify(seen).includes(API_VALUE) }).toEqual({ path, sent: false });
      expect(secretEvents().some((e) => e.name === "API_TOKEN" && e.action === "outside")).toBe(true);
    }
  });

  test("the transparent path's plain HTTP to the published service: swapped the same way", async () => {
    const lib = fdPassing();
    if (lib === null) return;
    reset();
    const l = lib.listenAll(0);
    const h = proxy.serveTransparent(l.fd, (s) => (s.localAddress ? { address: s.localAddress, port: svc.port! } : null));
    try {
      const out = await new Promise<string>((resolve) => {
        const s = netConnect({ host: "127.77.0.9", port: l.port });
        let o = "";
        s.on("data", (d: Buffer) => (o += d.toString("latin1")));
        s.on("close", () => resolve(o));
        s.on("error", (e) => resolve(`${o}error: ${e.message}`));
        s.write(`GET /v1/echo HTTP/1.1\r\nHost: host.sbx.internal:${svc.port}\r\nConnection: close\r\n\r\n`);
      });
      expect(seen[0]?.auth).toBe(`|${API_VALUE}|`);
      expect(out).toContain(`you sent  ${API_PLACEHOLDER}`);
      expect(out).not.toContain(API_VALUE);
    } finally {
      h.close();
    }
  });
});

describe("secret-bound: plain HTTP carries a value nowhere else", () => {
  test("a secret bound to a public name, over plain HTTP: stays a placeholder, its header not added, audited as outside", async () => {
    reset();
    // api.test resolves to the published service's own address: the same bytes' destination, but named, not published.
    const out = await get(`http://api.test:${svc.port}/v1/echo`, [`Authorization: Bearer ${PUBLIC_PLACEHOLDER}`, `X-Api-Key: ${API_PLACEHOLDER}`]);
    expect(out).toStartWith("HTTP/1.1 200");
    expect(seen[0]!.auth).toBe(`Bearer ${PUBLIC_PLACEHOLDER}|${API_PLACEHOLDER}|`);
    expect(JSON.stringify(seen)).not.toContain(PUBLIC_VALUE);
    const outside = secretEvents().filter((e) => e.action === "outside");
    expect(outside.map((e) => e.name).sort()).toEqual(["API_TOKEN", "PUBLIC_TOKEN"]);
    expect(outside.every((e) => e.host === "api.test" && (e.reason ?? "").includes("plain HTTP"))).toBe(true);
    expect(secretEvents().some((e) => e.action === "used")).toBe(false);
  });

  test("a port of host.sbx.internal not published: refused, nothing reaches the service behind it", async () => {
    reset();
    const out = await get(`http://host.sbx.internal:${unpublished.port}/v1/echo`, [`X-Api-Key: ${API_PLACEHOLDER}`]);
    expect(out).toStartWith("HTTP/1.1 403");
    expect(unpublishedHits).toBe(0);
    expect(out).not.toContain(API_VALUE);
  });

  test("a sandbox the service is not published for (the same secrets bound): refused, the service sees nothing", async () => {
    reset();
    const out = await get(`http://host.sbx.internal:${svc.port}/v1/echo`, [`X-Api-Key: ${API_PLACEHOLDER}`], join(tmp.dir, "p2.sock"));
    expect(out).toStartWith("HTTP/1.1 403");
    expect(seen).toEqual([]);
    expect(secretEvents(otherEvents).some((e) => e.action === "used")).toBe(false);
  });

  test("a Host header that disagrees with the target: refused, nothing sent (either way round)", async () => {
    reset();
    const a = await raw(`GET http://host.sbx.internal:${svc.port}/v1/echo HTTP/1.1\r\nHost: api.test:${svc.port}\r\nConnection: close\r\n\r\n`);
    const b = await raw(`GET http://api.test:${svc.port}/v1/echo HTTP/1.1\r\nHost: host.sbx.internal:${svc.port}\r\nConnection: close\r\n\r\n`);
    expect(a).toStartWith("HTTP/1.1 400");
    expect(b).toStartWith("HTTP/1.1 400");
    expect(seen).toEqual([]);
  });
});

describe("secret-bound: npm against a private registry on the host's loopback, published", () => {
  const npm = Bun.which("npm");
  const install = (globalrc: string, project: string) =>
    run([npm!, "install", "--no-audit", "--no-fund", "--no-update-notifier", "private-pkg"], {
      HOME: join(tmp.dir, "npm-home"),
      NPM_CONFIG_GLOBALCONFIG: globalrc,
      npm_config_userconfig: join(tmp.dir, "npm-home", ".npmrc"),
      npm_config_registry: `http://host.sbx.internal:${svc.port}/`,
      npm_config_proxy: `http://127.0.0.1:${relayPort}`,
      npm_config_cache: join(tmp.dir, `npm-cache-${Math.random()}`),
    }, project);

  test.skipIf(!npm)(`npm install with the session's npmrc (one line per published port): installed, the token never shown${npm ? "" : " (skipped: no npm)"}`, async () => {
    reset();
    mkdirSync(join(tmp.dir, "npm-home"), { recursive: true });
    const project = join(tmp.dir, "npm-ok");
    mkdirSync(project, { recursive: true });
    writeFileSync(join(project, "package.json"), "{}");
    // What a session's npm config holds for a secret bound to host.sbx.internal with --npmrc (secrets/bound.ts).
    const hosts = npmrcHosts(["host.sbx.internal"], [`127.0.0.1:${svc.port}`, `127.0.0.2:${unpublished.port}`]);
    expect(hosts).toEqual([`host.sbx.internal:${svc.port}`]);
    const globalrc = join(tmp.dir, "npmrc-ok");
    writeFileSync(globalrc, hosts.map((h) => `//${h}/:_authToken=${NPM_PLACEHOLDER}\n`).join(""));
    const r = await install(globalrc, project);
    expect({ code: r.code, err: r.err.includes("ERR") ? r.err : "" }).toEqual({ code: 0, err: "" });
    expect(readFileSync(join(project, "node_modules", "private-pkg", "index.js"), "utf8")).toContain("from the private registry");
    const registry = seen.filter((s) => s.path.startsWith("/private-pkg"));
    expect(registry.length).toBeGreaterThan(1);
    expect(registry.every((s) => s.auth.startsWith(`Bearer ${NPM_VALUE}|`))).toBe(true);
    expect(r.out + r.err).not.toContain(NPM_VALUE);
  }, 60_000);

  test.skipIf(!npm)("npm keys its token by host and port: a line without the port sends none (why one line per port)", async () => {
    reset();
    const project = join(tmp.dir, "npm-noport");
    mkdirSync(project, { recursive: true });
    writeFileSync(join(project, "package.json"), "{}");
    const globalrc = join(tmp.dir, "npmrc-noport");
    writeFileSync(globalrc, `//host.sbx.internal/:_authToken=${NPM_PLACEHOLDER}\n`);
    const r = await install(globalrc, project);
    expect(r.code).not.toBe(0);
    expect(seen.some((s) => s.auth.startsWith("Bearer "))).toBe(false);
  }, 60_000);
});
