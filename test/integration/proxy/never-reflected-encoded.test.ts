// never-reflected, however the upstream spells the value: an answer from a host a secret is bound to that shows the
// real value JSON-escaped (PHP's `\/`, .NET's `\u002B`, every character escaped), percent-encoded (a next-page link,
// upper or lower hex, Python's quote), HTML-escaped, or inside base64 at each byte alignment (standard and URL-safe,
// and base64 inside PHP's JSON) reaches the sandbox with the placeholder's same spelling, or masked: decoded as the
// upstream encoded it, the answer never holds the value. The real proxy, an echoing TLS upstream on loopback, real curl.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { placeholderFor } from "../../../src/core/placeholder";
import { startEgressProxy, type EgressProxy } from "../../../src/proxy/egress-proxy";
import { issueLeaf, loadCa, makeCa } from "../../../src/tls/x509";
import { forwarderTo, leafContexts, tempDir } from "./helpers";

/** A value with the characters encoders treat differently (`/`, `+`), as cloud secret keys have them. */
const VALUE = "q8Zr/Tm3Kx+Vb7Np/Wd2Lc9Hs+Fj4Gy6Ae1Ru5Oi0P";
const PLACEHOLDER = placeholderFor(VALUE, (n) => crypto.getRandomValues(new Uint8Array(n)));
/** Every byte of these is the value's own whatever an encoding shares with its neighbours at the ends. */
const inner = (s: string) => s.slice(1, -1);

const hex = (c: string, lower: boolean) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")[lower ? "toLowerCase" : "toUpperCase"]()}`;
const pct = (s: string, keep: RegExp) => [...s].map((c) => (keep.test(c) ? c : `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`)).join("");
const b64 = (s: string, align: number) => Buffer.from(`${"x".repeat(align)}${s}yz`, "latin1").toString("base64");

/** How each upstream writes the token it was sent, and how the test reads it back to the text the upstream encoded. */
const CASES: Record<string, { encode: (t: string) => string; decode: (body: string) => string }> = {
  "json-php": { encode: (t) => `{"key":${JSON.stringify(t).replaceAll("/", "\\/")}}`, decode: (b) => JSON.parse(b).key },
  "json-dotnet": { encode: (t) => `{"key":"${t.replaceAll("+", hex("+", false))}"}`, decode: (b) => JSON.parse(b).key },
  "json-every-lower": { encode: (t) => `{"key":"${[...t].map((c) => (/[A-Za-z0-9]/.test(c) ? c : hex(c, true))).join("")}"}`, decode: (b) => JSON.parse(b).key },
  "url-component": { encode: (t) => `{"next":"https://api.test/v1/items?page=2&key=${encodeURIComponent(t)}"}`, decode: (b) => decodeURIComponent(JSON.parse(b).next) },
  "url-lower": { encode: (t) => `next=/v1/items?key=${encodeURIComponent(t).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase())}`, decode: (b) => decodeURIComponent(b) },
  "url-quote": { encode: (t) => `next=/v1/items/${pct(t, /[A-Za-z0-9_.~/-]/)}`, decode: (b) => decodeURIComponent(b) },
  html: { encode: (t) => `<p>${t.replaceAll("/", "&#x2F;")}</p>`, decode: (b) => b.replaceAll("&#x2F;", "/") },
  ...Object.fromEntries(
    [0, 1, 2].flatMap((a) => [
      [`base64-${a}`, { encode: (t: string) => b64(t, a), decode: (b: string) => Buffer.from(b, "base64").toString("latin1") }],
      [`base64url-${a}`, { encode: (t: string) => b64(t, a).replaceAll("+", "-").replaceAll("/", "_"), decode: (b: string) => Buffer.from(b, "base64url").toString("latin1") }],
      [`base64-in-php-json-${a}`, { encode: (t: string) => `{"blob":"${b64(t, a).replaceAll("/", "\\/")}"}`, decode: (b: string) => Buffer.from(JSON.parse(b).blob, "base64").toString("latin1") }],
    ]),
  ),
};

let tmp: ReturnType<typeof tempDir>;
let proxy: EgressProxy;
let forwarder: Awaited<ReturnType<typeof forwarderTo>>;
let upstream: ReturnType<typeof Bun.serve>;
let caFile = "";
/** The tokens the upstream was sent. */
const seen: string[] = [];

beforeAll(async () => {
  tmp = tempDir();
  const sbx = await makeCa("sbx test CA");
  const world = await makeCa("world test CA");
  caFile = join(tmp.dir, "sbx-ca.pem");
  writeFileSync(caFile, sbx.certPem);
  const site = await issueLeaf(await loadCa(world.certPem, world.keyPem), ["api.test"]);
  // Echoes the bearer token it was sent (the real value, once the proxy swapped it in), spelled as the path says.
  upstream = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: site.certPem, key: site.keyPem },
    fetch(req) {
      const token = /^Bearer (.+)$/.exec(req.headers.get("authorization") ?? "")?.[1] ?? "none";
      seen.push(token);
      const c = CASES[new URL(req.url).pathname.split("/")[2]!];
      return c ? new Response(c.encode(token)) : new Response("no such case", { status: 404 });
    },
  });
  proxy = await startEgressProxy({
    socketPath: join(tmp.dir, "proxy.sock"),
    sandbox: { id: 1, name: "encoded" },
    policy: () => ({ sandbox: [`api.test:${upstream.port}`], global: [], published: [`127.0.0.1:${upstream.port}`] }),
    resolve: async (h) => (h === "api.test" ? ["127.0.0.1"] : []),
    pace: null,
    secrets: {
      secrets: () => [{ name: "CLOUD_SECRET", hosts: ["api.test"], rules: [{ methods: ["GET"], path: "/v1/**" }], header: null, inBody: false, placeholder: PLACEHOLDER }],
      values: async () => new Map([["CLOUD_SECRET", VALUE]]),
      contextFor: leafContexts(await loadCa(sbx.certPem, sbx.keyPem)),
      upstreamCa: world.certPem,
    },
  });
  forwarder = await forwarderTo(proxy.socketPath);
});

afterAll(async () => {
  forwarder?.server.close();
  await proxy?.close();
  upstream?.stop(true);
  tmp?.cleanup();
});

/** curl inside the sandbox's view: through the proxy, trusting sbx's CA, the placeholder in its header. */
async function curl(path: string): Promise<{ code: number; body: string }> {
  const p = Bun.spawn(
    ["curl", "-sS", "--max-time", "20", "--proxy", `http://127.0.0.1:${forwarder.port}`, "--cacert", caFile, "-H", `Authorization: Bearer ${PLACEHOLDER}`, "-w", "\n%{http_code}", `https://api.test:${upstream.port}${path}`],
    { stdout: "pipe", stderr: "pipe", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } },
  );
  const out = await new Response(p.stdout).text();
  await p.exited;
  const nl = out.lastIndexOf("\n");
  return { code: Number(out.slice(nl + 1)), body: out.slice(0, nl) };
}

describe("never-reflected: the value in any common encoding reaches the sandbox as its placeholder, never decodable", () => {
  test("the upstream saw the real value (the swap happened, so each answer below does reflect it)", async () => {
    expect((await curl("/v1/json-php")).code).toBe(200);
    expect(seen.at(-1)).toBe(VALUE);
  });
  for (const [name, c] of Object.entries(CASES)) {
    test(`${name}: decoded as the upstream encoded it, the answer holds the placeholder where the value was`, async () => {
      const r = await curl(`/v1/${name}`);
      expect(r.code).toBe(200);
      const shown = c.decode(r.body);
      expect(shown.includes(inner(VALUE))).toBe(false);
      expect(shown).toContain(inner(PLACEHOLDER));
    });
  }
});
