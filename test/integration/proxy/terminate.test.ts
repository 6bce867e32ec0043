// secret-bound: a secret bound to a host reaches exactly that host, within its methods and paths, judged on the path the
// upstream acts on; never reflected back; the sandbox's TLS ended only for hosts a secret is bound to, with a
// certificate for the name it was allowed for; the upstream's TLS verified. Real servers (Bun's TLS, on loopback), the
// real proxy, and real clients (curl, Python's urllib and requests when present) as a sandbox runs them.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { connect as netConnect, type Server } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { join } from "node:path";
import type { BoundSecret } from "../../../src/core/bound-secret";
import type { EgressEvent } from "../../../src/core/egress-events";
import { placeholderFor } from "../../../src/core/placeholder";
import { startEgressProxy, type EgressProxy } from "../../../src/proxy/egress-proxy";
import { issueLeaf, loadCa, makeCa } from "../../../src/tls/x509";
import { forwarderTo, leafContexts, tempDir } from "./helpers";

const VALUE = "sk_live_R3alV4lueN0tForS4ndb0x";
const random = (n: number) => crypto.getRandomValues(new Uint8Array(n));
const PLACEHOLDER = placeholderFor(VALUE, random);

let tmp: ReturnType<typeof tempDir>;
let proxy: EgressProxy;
let relay: Server;
let relayPort = 0;
let sbxCaFile = "";
let upstreamCaFile = "";
/** What each upstream saw: `api` is api.test (the secret's host), `other` other.test (allowed, no secret). */
const seen: Record<"api" | "other", { method: string; path: string; headers: Record<string, string>; body: string }[]> = { api: [], other: [] };
const events: EgressEvent[] = [];
let api: ReturnType<typeof Bun.serve>;
let other: ReturnType<typeof Bun.serve>;
let registry: ReturnType<typeof Bun.serve>;
/** npm's token for the private registry, and its placeholder inside (npm_ + 36 letters and digits). */
const NPM_VALUE = "npm_RealRegistryToken0123456789abcdefghij";
const NPM_PLACEHOLDER = placeholderFor(NPM_VALUE, random);
/** What the registry saw: each request's path and Authorization. */
const registrySaw: string[] = [];
let tarball: Uint8Array = new Uint8Array();
let secrets: BoundSecret[] = [];
let upstreamCa = "";

function upstream(which: "api" | "other", cert: { certPem: string; keyPem: string }) {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: cert.certPem, key: cert.keyPem },
    async fetch(req) {
      const u = new URL(req.url);
      const body = await req.text();
      seen[which].push({ method: req.method, path: `${u.pathname}${u.search}`, headers: Object.fromEntries(req.headers), body });
      const auth = req.headers.get("authorization") ?? "";
      if (u.pathname === "/v1/reflect") {
        // The value back in a header and the body: what the sandbox gets must hold the placeholder instead.
        return new Response(`you sent ${auth} and ${body}`, { headers: { "x-echo": auth } });
      }
      if (u.pathname === "/v1/reflect-chunked") {
        // Chunked, the value cut across chunks, with pauses between them.
        const parts = [`start ${auth.slice(0, 12)}`, auth.slice(12, 20), `${auth.slice(20)} end`];
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
      if (u.pathname === "/v1/redirect") return new Response(null, { status: 302, headers: { location: `https://other.test:${other.port}/landed` } });
      if (u.pathname === "/v1/gzip") return new Response(Bun.gzipSync(new TextEncoder().encode(auth)), { headers: { "content-encoding": "gzip" } });
      return new Response(`ok ${which}`);
    },
  });
}

beforeAll(async () => {
  tmp = tempDir();
  // Two CAs: sbx's (the sandbox trusts it) and the world's (the upstreams' certificates; the host trusts it).
  const sbxCa = await makeCa("sbx test CA");
  const worldCa = await makeCa("world test CA");
  const world = await loadCa(worldCa.certPem, worldCa.keyPem);
  api = upstream("api", await issueLeaf(world, ["api.test"]));
  other = upstream("other", await issueLeaf(world, ["other.test"]));
  upstreamCa = worldCa.certPem;
  sbxCaFile = join(tmp.dir, "sbx-ca.pem");
  upstreamCaFile = join(tmp.dir, "world-ca.pem");
  writeFileSync(sbxCaFile, sbxCa.certPem);
  writeFileSync(upstreamCaFile, worldCa.certPem);
  const signer = await loadCa(sbxCa.certPem, sbxCa.keyPem);
  // A private npm registry: a package whose metadata and tarball it gives only for its token.
  const pkgDir = join(tmp.dir, "pkg", "package");
  mkdirSync(pkgDir, { recursive: true });
  writeFileSync(join(pkgDir, "package.json"), JSON.stringify({ name: "private-pkg", version: "1.0.0", main: "index.js" }));
  writeFileSync(join(pkgDir, "index.js"), "module.exports = 'from the private registry';\n");
  const tgz = join(tmp.dir, "pkg.tgz");
  Bun.spawnSync(["tar", "-czf", tgz, "-C", join(tmp.dir, "pkg"), "package"]);
  tarball = readFileSync(tgz);
  const sha1 = new Bun.CryptoHasher("sha1").update(tarball).digest("hex");
  const integrity = `sha512-${new Bun.CryptoHasher("sha512").update(tarball).digest("base64")}`;
  registry = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: await issueLeaf(world, ["registry.test"]).then((c) => ({ cert: c.certPem, key: c.keyPem })),
    fetch(req) {
      const u = new URL(req.url);
      registrySaw.push(`${u.pathname} ${req.headers.get("authorization") ?? "none"}`);
      if (req.headers.get("authorization") !== `Bearer ${NPM_VALUE}`) return new Response(JSON.stringify({ error: "unauthorized" }), { status: 401 });
      if (u.pathname === "/private-pkg") {
        const base = `https://registry.test:${registry.port}`;
        return Response.json({ name: "private-pkg", "dist-tags": { latest: "1.0.0" }, versions: { "1.0.0": { name: "private-pkg", version: "1.0.0", dist: { tarball: `${base}/private-pkg/-/private-pkg-1.0.0.tgz`, shasum: sha1, integrity } } } });
      }
      if (u.pathname === "/private-pkg/-/private-pkg-1.0.0.tgz") return new Response(tarball);
      return new Response("not found", { status: 404 });
    },
  });
  secrets = [
    { name: "NPM_TOKEN", hosts: ["registry.test"], rules: [{ methods: ["GET", "HEAD"], path: "/**" }], header: null, inBody: false, placeholder: NPM_PLACEHOLDER },
    {
      name: "API_TOKEN",
      hosts: ["api.test"],
      rules: [{ methods: ["GET", "POST"], path: "/v1/**" }],
      header: { name: "Authorization", template: "Bearer {}" },
      inBody: true,
      placeholder: PLACEHOLDER,
    },
  ];
  proxy = await startEgressProxy({
    socketPath: join(tmp.dir, "proxy.sock"),
    sandbox: { id: 1, name: "demo" },
    policy: () => ({ sandbox: [`api.test:${api.port}`, `other.test:${other.port}`, `registry.test:${registry.port}`], global: [], published: [`127.0.0.1:${api.port}`, `127.0.0.1:${other.port}`, `127.0.0.1:${registry.port}`] }),
    resolve: async (h) => (h === "api.test" || h === "other.test" || h === "registry.test" ? ["127.0.0.1"] : []),
    onDecision: (e) => void events.push(e),
    secrets: {
      secrets: () => secrets,
      values: async (names) => new Map(names.flatMap((n): [string, string][] => (n === "API_TOKEN" ? [[n, VALUE]] : n === "NPM_TOKEN" ? [[n, NPM_VALUE]] : []))),
      contextFor: leafContexts(signer),
      get upstreamCa() {
        return upstreamCa;
      },
    },
  });
  ({ server: relay, port: relayPort } = await forwarderTo(proxy.socketPath));
});

afterAll(async () => {
  relay?.close();
  await proxy?.close();
  api?.stop(true);
  registry?.stop(true);
  other?.stop(true);
  tmp?.cleanup();
});

const reset = () => {
  seen.api.length = 0;
  seen.other.length = 0;
  events.length = 0;
};

/** A client run as a sandbox runs it (never spawnSync: the proxy answers in this same process). */
async function run(argv: string[], env?: Record<string, string>, cwd?: string): Promise<{ code: number; out: string; err: string }> {
  const p = Bun.spawn(argv, { stdout: "pipe", stderr: "pipe", ...(env ? { env: { ...process.env, ...env } } : {}), ...(cwd ? { cwd } : {}) });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

/** curl as an agent runs it: through the proxy variables' proxy, trusting the sandbox's bundle (sbx's CA). */
function curl(args: string[], ca = ["--cacert", ""]): Promise<{ code: number; out: string; err: string }> {
  return run(["curl", "-sS", "--max-time", "10", "-x", `http://127.0.0.1:${relayPort}`, ca[0]!, ca[1] || sbxCaFile, ...args]);
}

const secretEvents = () => events.filter((e) => e.type === "secret") as Extract<EgressEvent, { type: "secret" }>[];
const everything = () => JSON.stringify(seen);

/**
 * A raw request inside a CONNECT tunnel to `authority`, TLS with `sni`, trusting sbx's CA: everything the proxy answers
 * until the connection ends. Given as parts, each is its own write after a pause (so its own TLS record, and its own
 * read at the proxy).
 */
/** Whether a denial for `reason` is among the events, waiting up to 2 s for it. */
async function denied(reason: string): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    if (events.some((e) => e.type === "denied" && e.reason === reason)) return true;
    await Bun.sleep(20);
  }
  return false;
}

function rawTls(authority: string, sni: string, request: string | string[], gapMs = 30, verify = true): Promise<string> {
  return new Promise((resolve) => {
    const s = netConnect({ path: proxy.socketPath });
    let head = "";
    s.on("error", (e) => resolve(`error: ${e.message}`));
    s.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
    const onData = (d: Buffer) => {
      head += d.toString("latin1");
      if (!head.includes("\r\n\r\n")) return;
      s.off("data", onData);
      if (!head.startsWith("HTTP/1.1 200")) return resolve(head);
      const t = tlsConnect({ socket: s, servername: sni, ca: readFileSync(sbxCaFile, "utf8"), rejectUnauthorized: verify });
      let out = "";
      t.on("secureConnect", async () => {
        if (typeof request === "string") return void t.write(request);
        for (const p of request) {
          t.write(p);
          await Bun.sleep(gapMs);
        }
      });
      t.on("data", (x: Buffer) => (out += x.toString("latin1")));
      t.on("end", () => resolve(out));
      t.on("close", () => resolve(out));
      t.on("error", (e) => resolve(`${out}error: ${e.message}`));
    };
    s.on("data", onData);
  });
}

describe("secret-bound: a placeholder becomes the value only for its host, methods and paths", () => {
  test("curl with the placeholder in a header: the upstream gets the value, the sandbox never sees it back", async () => {
    reset();
    const r = await curl(["-H", `Authorization: Bearer ${PLACEHOLDER}`, `https://api.test:${api.port}/v1/reflect`, "-d", `token=${PLACEHOLDER}`, "-H", "content-type: text/plain", "-D", "-"]);
    expect(r.err).toBe("");
    expect(seen.api.map((s) => s.headers.authorization)).toEqual([`Bearer ${VALUE}`]);
    expect(seen.api[0]!.body).toBe(`token=${VALUE}`);
    // Reflected in a header and the body: the sandbox reads its placeholder, never the value.
    expect(r.out).not.toContain(VALUE);
    expect(r.out).toContain(`x-echo: Bearer ${PLACEHOLDER}`);
    expect(r.out).toContain(`you sent Bearer ${PLACEHOLDER} and token=${PLACEHOLDER}`);
    expect(secretEvents().filter((e) => e.name === "API_TOKEN").map((e) => [e.name, e.action, e.host, e.target])).toEqual([["API_TOKEN", "used", "api.test", "/v1/reflect"]]);
    expect(JSON.stringify(events)).not.toContain(VALUE);
  });

  test("a client that knows nothing of the secret gets its header added (the value, never shown back)", async () => {
    reset();
    const r = await curl([`https://api.test:${api.port}/v1/reflect`]);
    expect(seen.api[0]!.headers.authorization).toBe(`Bearer ${VALUE}`);
    expect(r.out).toBe(`you sent Bearer ${PLACEHOLDER} and `);
  });

  test("chunked, the value cut across chunks: the sandbox gets the placeholder whole", async () => {
    reset();
    const r = await curl(["-H", `Authorization: Bearer ${PLACEHOLDER}`, `https://api.test:${api.port}/v1/reflect-chunked`]);
    expect(r.out).toBe(`start Bearer ${PLACEHOLDER} end`);
  });

  test("the audit says a terminated request's path, never its query: a value swapped into the query is in no event", async () => {
    reset();
    const r = await curl([`https://api.test:${api.port}/v1/reflect?key=${PLACEHOLDER}&x=1`]);
    expect(r.code).toBe(0);
    expect(seen.api.map((s) => s.path)).toEqual([`/v1/reflect?key=${VALUE}&x=1`]);
    await Bun.sleep(50);
    expect(events.filter((e) => e.type === "closed").map((e) => [e.method, e.target])).toEqual([["GET", "/v1/reflect"]]);
    expect(JSON.stringify(events)).not.toContain(VALUE);
  });

  test("outside its paths, by every spelling of the path: the placeholder goes as it is, said as outside", async () => {
    const spellings = ["/v2/x", "/v1/../v2/x", "/v1/%2e%2e/v2/x", "/v1/%2E%2e/v2/x", "/v1\\..\\v2\\x", "/v1/..;/v2/x", "/v1//..//v2", "/v1/%2fv2", "/V1/x/../../v2", "/v1;x/y"];
    for (const path of spellings) {
      reset();
      const out = await rawTls(`api.test:${api.port}`, "api.test", `GET ${path} HTTP/1.1\r\nHost: api.test:${api.port}\r\nAuthorization: Bearer ${PLACEHOLDER}\r\nConnection: close\r\n\r\n`);
      expect({ path, leaked: everything().includes(VALUE) }).toEqual({ path, leaked: false });
      expect(out).not.toContain(VALUE);
      // Either forwarded with the placeholder (an upstream 404 or ok) or refused as unreadable: never swapped.
      for (const s of seen.api) expect(s.headers.authorization).toBe(`Bearer ${PLACEHOLDER}`);
      expect(secretEvents().every((e) => e.action === "outside")).toBe(true);
      expect(secretEvents().length).toBeGreaterThan(0);
    }
  });

  test("outside its methods (DELETE): not swapped, said", async () => {
    reset();
    await curl(["-X", "DELETE", "-H", `Authorization: Bearer ${PLACEHOLDER}`, `https://api.test:${api.port}/v1/x`]);
    expect(seen.api[0]!.headers.authorization).toBe(`Bearer ${PLACEHOLDER}`);
    expect(secretEvents().map((e) => [e.action, e.reason])).toEqual([["outside", "DELETE /v1/x is outside what it is for"]]);
  });

  test("to a host it is not bound to: a tunnel (sbx's CA never shows), the placeholder as it is", async () => {
    reset();
    // Trusting sbx's CA only fails: the certificate is other.test's own, so the connection was not terminated.
    const viaSbxCa = await curl(["-H", `Authorization: Bearer ${PLACEHOLDER}`, `https://other.test:${other.port}/x`]);
    expect(viaSbxCa.code).not.toBe(0);
    const r = await curl(["-H", `Authorization: Bearer ${PLACEHOLDER}`, `https://other.test:${other.port}/x`], ["--cacert", upstreamCaFile]);
    expect(r.out).toBe("ok other");
    expect(seen.other.map((s) => s.headers.authorization)).toEqual([`Bearer ${PLACEHOLDER}`]);
    expect(everything()).not.toContain(VALUE);
  });

  test("a redirect to another host: the client's new request is judged afresh, and carries no value", async () => {
    reset();
    // One bundle with both CAs, as the sandbox's is (its system roots and sbx's).
    const both = join(tmp.dir, "both.pem");
    writeFileSync(both, readFileSync(sbxCaFile, "utf8") + readFileSync(upstreamCaFile, "utf8"));
    const r = await curl(["-L", "-H", `Authorization: Bearer ${PLACEHOLDER}`, `https://api.test:${api.port}/v1/redirect`], ["--cacert", both]);
    expect(seen.api.map((s) => s.headers.authorization)).toEqual([`Bearer ${VALUE}`]);
    expect(everything().split(VALUE).length - 1).toBe(1);
    expect(seen.other.every((s) => !JSON.stringify(s).includes(VALUE))).toBe(true);
    expect(r.out).toBe("ok other");
    // curl drops Authorization on a redirect to another host; had it kept it, the placeholder would go, not the value.
    expect(seen.other.map((s) => s.headers.authorization ?? "none")).not.toContain(`Bearer ${VALUE}`);
  });

  test("a Host header that disagrees with the host the connection was allowed for: refused, nothing sent", async () => {
    reset();
    const out = await rawTls(`api.test:${api.port}`, "api.test", `GET /v1/x HTTP/1.1\r\nHost: other.test:${other.port}\r\nAuthorization: Bearer ${PLACEHOLDER}\r\nConnection: close\r\n\r\n`);
    expect(out).toStartWith("HTTP/1.1 400");
    expect(seen.api.length + seen.other.length).toBe(0);
    expect(events.some((e) => e.type === "denied" && e.reason === "server-name-mismatch")).toBe(true);
  });

  test("a TLS server name that disagrees with the CONNECT: no certificate for it, the handshake fails", async () => {
    reset();
    const out = await rawTls(`api.test:${api.port}`, "other.test", `GET /v1/x HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n`);
    expect(out).not.toContain("HTTP/1.1");
    expect(seen.api.length).toBe(0);
    // Said once the proxy's side of the handshake ends, which may be just after the client gave up on it.
    expect(await denied("server-name-mismatch")).toBe(true);
  });

  test("a TLS server name that disagrees with the CONNECT, from a client that checks no certificate: cut, nothing read or sent", async () => {
    reset();
    const out = await rawTls(`api.test:${api.port}`, "other.test", `GET /v1/x HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n`, 30, false);
    expect(out).not.toContain("HTTP/1.1");
    expect(seen.api.length).toBe(0);
    expect(await denied("server-name-mismatch")).toBe(true);
  });

  test("an upstream whose certificate the host does not trust: a 502 naming the host and why, and no value sent", async () => {
    reset();
    const saved = upstreamCa;
    upstreamCa = readFileSync(sbxCaFile, "utf8");
    try {
      const r = await curl(["-H", `Authorization: Bearer ${PLACEHOLDER}`, `https://api.test:${api.port}/v1/x`, "-i"]);
      expect(r.out).toContain("\r\n\r\nHTTP/1.1 502 Bad Gateway");
      expect(r.out).toContain(`api.test:${api.port}`);
      expect(r.out).toMatch(/verif|certificate/i);
      expect(seen.api.length).toBe(0);
    } finally {
      upstreamCa = saved;
    }
  });

  test("an answer encoded although sbx asked for none cannot be checked: a 502, never passed on", async () => {
    reset();
    const r = await curl(["-i", `https://api.test:${api.port}/v1/gzip`]);
    expect(r.out).toContain("\r\n\r\nHTTP/1.1 502 Bad Gateway");
    expect(r.out).toContain("encoded as gzip");
    expect(r.out).not.toContain(VALUE);
  });
});

describe("secret-bound: a placeholder cut across writes, chunks and pipelined requests is judged as the upstream reads it", () => {
  const half = Math.floor(PLACEHOLDER.length / 2);
  const [p1, p2] = [PLACEHOLDER.slice(0, half), PLACEHOLDER.slice(half)];
  const host = () => `Host: api.test:${api.port}\r\n`;

  test("in a header, cut across two TLS records: the upstream gets the value", async () => {
    reset();
    const out = await rawTls(`api.test:${api.port}`, "api.test", [`GET /v1/x HTTP/1.1\r\n${host()}Authorization: Bearer ${p1}`, `${p2}\r\nConnection: close\r\n\r\n`]);
    expect(out).toStartWith("HTTP/1.1 200");
    expect(seen.api.map((s) => s.headers.authorization)).toEqual([`Bearer ${VALUE}`]);
  });

  test("in a body (Content-Length), cut across two TLS records: the upstream gets the value", async () => {
    reset();
    const body = `token=${PLACEHOLDER}`;
    const cut = body.indexOf(PLACEHOLDER) + half;
    const out = await rawTls(`api.test:${api.port}`, "api.test", [`POST /v1/x HTTP/1.1\r\n${host()}Content-Type: text/plain\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.slice(0, cut)}`, body.slice(cut)]);
    expect(out).toStartWith("HTTP/1.1 200");
    expect(seen.api.map((s) => s.body)).toEqual([`token=${VALUE}`]);
  });

  test("in a chunked body, cut across two chunks (the chunk framing between its halves): the upstream gets the value", async () => {
    reset();
    const a = `token=${p1}`;
    const out = await rawTls(`api.test:${api.port}`, "api.test", [
      `POST /v1/x HTTP/1.1\r\n${host()}Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${a.length.toString(16)}\r\n${a}\r\n`,
      `${p2.length.toString(16)}\r\n${p2}\r\n0\r\n\r\n`,
    ]);
    expect(out).toStartWith("HTTP/1.1 200");
    expect(seen.api.map((s) => s.body)).toEqual([`token=${VALUE}`]);
  });

  test("a pipelined second request naming another host: the first is answered, the second refused, nothing reaches the other host", async () => {
    reset();
    const out = await rawTls(`api.test:${api.port}`, "api.test", [
      `GET /v1/x HTTP/1.1\r\n${host()}Authorization: Bearer ${PLACEHOLDER}\r\n\r\nGET /v1/x HTTP/1.1\r\nHost: other.test:${other.port}\r\nAuthorization: Bearer ${PLACEHOLDER}\r\nConnection: close\r\n\r\n`,
    ]);
    expect(out).toStartWith("HTTP/1.1 200");
    expect(out).toContain("HTTP/1.1 400");
    expect(seen.api.map((s) => s.headers.authorization)).toEqual([`Bearer ${VALUE}`]);
    expect(seen.other.length).toBe(0);
    expect(out).not.toContain(VALUE);
  });

  test("a pipelined second request outside the secret's paths, on the kept-alive connection: it goes with the placeholder", async () => {
    reset();
    const out = await rawTls(`api.test:${api.port}`, "api.test", [
      `GET /v1/x HTTP/1.1\r\n${host()}Authorization: Bearer ${PLACEHOLDER}\r\n\r\n`,
      `GET /v2/x HTTP/1.1\r\n${host()}Authorization: Bearer ${PLACEHOLDER}\r\nConnection: close\r\n\r\n`,
    ]);
    expect(out.match(/HTTP\/1\.1 200/g)?.length).toBe(2);
    expect(seen.api.map((s) => [s.path, s.headers.authorization])).toEqual([
      ["/v1/x", `Bearer ${VALUE}`],
      ["/v2/x", `Bearer ${PLACEHOLDER}`],
    ]);
    expect(secretEvents().map((e) => [e.action, e.target])).toEqual([
      ["used", "/v1/x"],
      ["outside", "/v2/x"],
    ]);
  });
});

describe("secret-bound: real clients", () => {
  const python = Bun.which("python3");
  test.skipIf(!python)(`python3 urllib through the proxy variables${python ? "" : " (skipped: no python3)"}`, async () => {
    reset();
    const code = `import urllib.request,ssl,os
ctx=ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
h=urllib.request.ProxyHandler({"https":os.environ["HTTPS_PROXY"]})
o=urllib.request.build_opener(h,urllib.request.HTTPSHandler(context=ctx))
print(o.open(urllib.request.Request("https://api.test:${api.port}/v1/reflect",headers={"Authorization":"Bearer ${PLACEHOLDER}"})).read().decode())`;
    const r = await run([python!, "-c", code], { HTTPS_PROXY: `http://127.0.0.1:${relayPort}`, SSL_CERT_FILE: sbxCaFile });
    expect(r.err).toBe("");
    expect(r.out).toBe(`you sent Bearer ${PLACEHOLDER} and \n`);
    expect(seen.api[0]!.headers.authorization).toBe(`Bearer ${VALUE}`);
  });

  const npm = Bun.which("npm");
  test.skipIf(!npm)(`npm install from a private registry that needs a token: npm's config holds the placeholder${npm ? "" : " (skipped: no npm)"}`, async () => {
    registrySaw.length = 0;
    const home = join(tmp.dir, "npm-home");
    const project = join(tmp.dir, "npm-project");
    mkdirSync(home, { recursive: true });
    mkdirSync(project, { recursive: true });
    writeFileSync(join(project, "package.json"), "{}");
    // What a session's npm gets (sandboxes/secret-env.ts): a global config with the registry's token line.
    const globalrc = join(tmp.dir, "npmrc");
    writeFileSync(globalrc, `//registry.test:${registry.port}/:_authToken=${NPM_PLACEHOLDER}\n`);
    const r = await run([npm!, "install", "--no-audit", "--no-fund", "--no-update-notifier", "private-pkg"], {
      HOME: home,
      NPM_CONFIG_GLOBALCONFIG: globalrc,
      npm_config_userconfig: join(home, ".npmrc"),
      npm_config_registry: `https://registry.test:${registry.port}/`,
      npm_config_https_proxy: `http://127.0.0.1:${relayPort}`,
      npm_config_proxy: `http://127.0.0.1:${relayPort}`,
      npm_config_cafile: sbxCaFile,
      npm_config_cache: join(tmp.dir, "npm-cache"),
    }, project);
    expect({ code: r.code, err: r.err.includes("ERR") ? r.err : "" }).toEqual({ code: 0, err: "" });
    expect(readFileSync(join(project, "node_modules", "private-pkg", "index.js"), "utf8")).toContain("from the private registry");
    // The registry saw the token on every request; npm's output and files never hold it.
    expect(registrySaw.length).toBeGreaterThan(1);
    expect(registrySaw.every((l) => l.endsWith(`Bearer ${NPM_VALUE}`))).toBe(true);
    expect(r.out + r.err).not.toContain(NPM_VALUE);
  });

  const requests = python ? Bun.spawnSync([python, "-c", "import requests"]).exitCode === 0 : false;
  test.skipIf(!requests)(`python3 requests with REQUESTS_CA_BUNDLE${requests ? "" : " (skipped: python3 has no requests module)"}`, async () => {
    reset();
    const code = `import requests
print(requests.post("https://api.test:${api.port}/v1/reflect",headers={"Authorization":"Bearer ${PLACEHOLDER}"},json={"k":"${PLACEHOLDER}"}).text)`;
    const r = await run([python!, "-c", code], { HTTPS_PROXY: `http://127.0.0.1:${relayPort}`, REQUESTS_CA_BUNDLE: sbxCaFile });
    expect(r.out).toBe(`you sent Bearer ${PLACEHOLDER} and {"k": "${PLACEHOLDER}"}\n`);
    expect(seen.api[0]!.headers.authorization).toBe(`Bearer ${VALUE}`);
    expect(seen.api[0]!.body).toBe(`{"k": "${VALUE}"}`);
  });
});

// ca-trusted-inside (Java): the JVM reads none of the PEM variables; a session gets a PKCS#12 trust store and
// JAVA_TOOL_OPTIONS naming it (sandboxes/secret-env.ts). The real JRE, in a process whose environment is the sandbox's
// (its proxy properties) and what secretSessionEnv returns, fetches through the terminating proxy; without the trust
// options the handshake fails and nothing reaches the upstream.
describe("ca-trusted-inside: java", () => {
  const java = Bun.which("java");
  const why = java ? "" : " (skipped: no java here; install.sh installs default-jre-headless)";
  const FETCH = `import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URL;
public class Fetch {
  public static void main(String[] a) throws Exception {
    HttpURLConnection c = (HttpURLConnection) new URL(a[0]).openConnection();
    String t = System.getenv("API_TOKEN");
    if (t != null) c.setRequestProperty("Authorization", "Bearer " + t);
    try (InputStream in = c.getInputStream()) {
      System.out.print(c.getResponseCode() + " " + new String(in.readAllBytes(), "UTF-8"));
    }
  }
}
`;
  /** The sandbox's env and the session's, as a sandbox's process gets them; its socket dir's path has a space in it. */
  async function sessionEnv(): Promise<{ sandbox: Record<string, string>; session: Record<string, string>; fetch: string }> {
    const { sandboxEnv } = await import("../../../src/drivers/env");
    const { secretSessionEnv } = await import("../../../src/sandboxes/secret-env");
    const dir = join(tmp.dir, "socket dir");
    mkdirSync(dir, { recursive: true });
    const sandbox = sandboxEnv("demo", { proxyPort: relayPort, bridgeSocket: join(dir, "bridge.sock") });
    const spec = {
      id: "javatest0001",
      name: "demo",
      repo: tmp.dir,
      dir: tmp.dir,
      hostUser: { name: "ann", uid: 1000, gid: 1000, home: tmp.dir, shell: "/bin/bash" },
      sockets: { dir, proxy: join(dir, "proxy.sock"), bridge: join(dir, "bridge.sock") },
      env: sandbox,
      overlays: [],
      options: { driver: "docker" as const, claudeAuth: "overlay" as const },
    };
    const session = secretSessionEnv(spec, { env: { API_TOKEN: PLACEHOLDER }, extraCas: "", caPem: readFileSync(sbxCaFile, "utf8"), npmrc: [], notes: [] });
    const fetch = join(tmp.dir, "Fetch.java");
    writeFileSync(fetch, FETCH);
    return { sandbox, session, fetch };
  }
  /** java as a sandbox runs it: PATH and HOME, then the sandbox's variables, then the session's. */
  const runJava = (fetch: string, env: Record<string, string>, url: string) =>
    run([java!, fetch, url], { ...env, HOME: tmp.dir, JAVA_HOME: "" }).then((r) => ({ ...r, err: r.err.replace(/^Picked up JAVA_TOOL_OPTIONS:.*\n/m, "") }));

  test.skipIf(!java)(`with the session's env, Java trusts sbx's CA: the upstream gets the value, Java its placeholder back${why}`, async () => {
    reset();
    const { sandbox, session, fetch } = await sessionEnv();
    expect(session.JAVA_TOOL_OPTIONS).toStartWith(`${sandbox.JAVA_TOOL_OPTIONS} -Djavax.net.ssl.trustStore="`);
    const r = await runJava(fetch, { ...sandbox, ...session }, `https://api.test:${api.port}/v1/reflect`);
    expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: "" });
    expect(r.out).toBe(`200 you sent Bearer ${PLACEHOLDER} and `);
    expect(seen.api.map((s) => s.headers.authorization)).toEqual([`Bearer ${VALUE}`]);
  }, 60_000);

  test.skipIf(!java)(`without the trust options (the sandbox's proxy properties only), the handshake fails and nothing reaches the upstream${why}`, async () => {
    reset();
    const { sandbox, session, fetch } = await sessionEnv();
    const r = await runJava(fetch, { ...sandbox, ...session, JAVA_TOOL_OPTIONS: sandbox.JAVA_TOOL_OPTIONS! }, `https://api.test:${api.port}/v1/reflect`);
    expect(r.code).not.toBe(0);
    expect(r.err).toMatch(/PKIX path building failed|unable to find valid certification path/);
    expect(seen.api.length).toBe(0);
    expect(r.out + r.err).not.toContain(VALUE);
  }, 60_000);
});

// A client given the token as a URL's password (pip's index URL, git's remote, `curl -u`) sends it inside HTTP Basic
// credentials, base64 the upstream decodes: the placeholder is swapped there, within the same scope, and an answer
// that echoes the credentials shows the sandbox its own.
describe("secret-bound: a placeholder inside HTTP Basic credentials is judged and swapped where the upstream reads it", () => {
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  test("curl -u user:placeholder: the upstream decodes the value; the echoed credentials decode to the placeholder", async () => {
    reset();
    const r = await curl(["-u", `__token__:${PLACEHOLDER}`, `https://api.test:${api.port}/v1/reflect`, "-D", "-"]);
    expect(r.err).toBe("");
    expect(seen.api.map((s) => s.headers.authorization)).toEqual([`Basic ${b64(`__token__:${VALUE}`)}`]);
    expect(r.out).toContain(`x-echo: Basic ${b64(`__token__:${PLACEHOLDER}`)}`);
    expect(r.out).not.toContain(b64(`__token__:${VALUE}`));
    expect(secretEvents().map((e) => [e.name, e.action, e.target])).toEqual([["API_TOKEN", "used", "/v1/reflect"]]);
  });

  test("outside its paths, or to a host it is not bound to: the credentials go with the placeholder, said as outside", async () => {
    reset();
    await curl(["-u", `u:${PLACEHOLDER}`, `https://api.test:${api.port}/v2/x`]);
    expect(seen.api.map((s) => s.headers.authorization)).toEqual([`Basic ${b64(`u:${PLACEHOLDER}`)}`]);
    expect(secretEvents().map((e) => [e.name, e.action])).toEqual([["API_TOKEN", "outside"]]);
    reset();
    // other.test is reached through a tunnel (no secret bound there): sbx never reads it, the value never goes.
    await curl(["-u", `u:${PLACEHOLDER}`, "--cacert", upstreamCaFile, `https://other.test:${other.port}/x`], ["--cacert", upstreamCaFile]);
    expect(seen.other.map((s) => s.headers.authorization)).toEqual([`Basic ${b64(`u:${PLACEHOLDER}`)}`]);
    expect(everything()).not.toContain(b64(`u:${VALUE}`));
  });
});
