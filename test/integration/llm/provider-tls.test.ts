// The LLM proxy's way to an HTTPS provider (the proxy's own pool, upstream.ts tlsDial), attacked as a network in
// between could: the provider's certificate is verified (the runtime's roots, or the CA given) and names the provider;
// a provider that cannot be verified gets nothing, not the request and not the host's key. And the answer streams: the
// sandbox has the first event while the provider is still thinking. All on 127.0.0.1.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { request, type IncomingMessage } from "node:http";
import { createLlmHandler } from "../../../src/llm/handler";
import { issueLeaf, loadCa, makeCa } from "../../../src/tls/x509";
import { llmServer } from "../../support/llm-server";

const KEY = "sk-ant-api03-HOSTKEY-tls-0123456789abcdef";
let caPem = "";
const sites: ReturnType<typeof Bun.serve>[] = [];
const seen: string[] = [];
let right = 0;
let wrongName = 0;

beforeAll(async () => {
  const ca = await makeCa("provider test CA");
  caPem = ca.certPem;
  const loaded = await loadCa(ca.certPem, ca.keyPem);
  const serve = async (names: string[]) => {
    const leaf = await issueLeaf(loaded, names);
    const s = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert: leaf.certPem, key: leaf.keyPem },
      fetch: (req) => {
        seen.push(`${new URL(req.url).pathname} ${req.headers.get("x-api-key")}`);
        return new Response('{"ok":true}', { headers: { "content-type": "application/json" } });
      },
    });
    sites.push(s);
    return s.port!;
  };
  right = await serve(["127.0.0.1"]);
  wrongName = await serve(["other.test"]);
});
afterAll(() => {
  for (const s of sites) s.stop(true);
});

async function call(upstream: string, ca?: string): Promise<{ status: number; body: string }> {
  const s = llmServer(createLlmHandler({ keys: () => ({ env: { ANTHROPIC_API_KEY: KEY } }), upstreams: { anthropic: upstream }, ...(ca ? { upstreamCa: ca } : {}) }));
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
  const port = (s.address() as { port: number }).port;
  try {
    return await new Promise((resolve, reject) => {
      const q = request({ host: "127.0.0.1", port, method: "POST", path: "/llm/anthropic/v1/messages", headers: { "content-type": "application/json", "x-api-key": "sbx-placeholder" } }, (res: IncomingMessage) => {
        let b = "";
        res.on("data", (d: Buffer) => (b += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: b }));
      });
      q.on("error", reject);
      q.end('{"model":"claude-sonnet-4-5"}');
    });
  } finally {
    await new Promise<void>((r) => s.close(() => r()));
  }
}

describe("llm-credential-scope: the host's key goes only to a provider whose TLS is verified", () => {
  test("a certificate from a CA the host does not trust: a 502, and the provider gets no request and no key", async () => {
    seen.length = 0;
    const r = await call(`https://127.0.0.1:${right}`);
    expect(r.status).toBe(502);
    expect(JSON.parse(r.body).error).toBe("upstream_failed");
    expect(seen).toEqual([]);
  });

  test("a certificate for another name, from a trusted CA: a 502, nothing sent", async () => {
    seen.length = 0;
    const r = await call(`https://127.0.0.1:${wrongName}`, caPem);
    expect(r.status).toBe(502);
    expect(seen).toEqual([]);
  });

  test("the provider's own certificate, its CA trusted: the request goes with the host's key", async () => {
    seen.length = 0;
    const r = await call(`https://127.0.0.1:${right}`, caPem);
    expect(r).toEqual({ status: 200, body: '{"ok":true}' });
    expect(seen).toEqual([`/v1/messages ${KEY}`]);
  });
});
