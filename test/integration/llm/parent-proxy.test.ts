// The daemon's own outbound requests behind a company's proxy (test/support/fake-parent.ts on loopback, the only one
// that knows where its names are): the LLM proxy's requests to a provider, TLS verified end to end inside the parent's
// tunnel; downloads through fetch; NO_PROXY'd hosts straight out; credentials sent only to the parent.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer as createHttpServer, request as httpRequest, type IncomingMessage, type Server } from "node:http";
import { request as httpsRequest } from "node:https";
import { parentFromConfig, parentFromEnv } from "../../../src/core/parent-proxy";
import { createLlmHandler } from "../../../src/llm/handler";
import { llmServer } from "../../support/llm-server";
import { parentAgents, parentFetch, ParentRouter } from "../../../src/sys/parent";
import { issueLeaf, loadCa, makeCa } from "../../../src/tls/x509";
import { startFakeParent, type FakeParent } from "../../support/fake-parent";

const KEY = "sk-ant-api03-HOSTKEY-parent-0123456789abcdef";
const PASSWORD = "llm-Pa55word";
let parent: FakeParent;
let provider: Server;
const providerSaw: { path: string; key: string | undefined }[] = [];
let tlsSite: ReturnType<typeof Bun.serve>;
let caPem = "";
let handlerServer: Server;
let handlerPort = 0;

function listen(s: Server): Promise<number> {
  return new Promise((r) => s.listen(0, "127.0.0.1", () => r((s.address() as { port: number }).port)));
}

beforeAll(async () => {
  provider = createHttpServer((req, res) => {
    providerSaw.push({ path: req.url ?? "", key: req.headers["x-api-key"] as string | undefined });
    req.resume();
    req.on("end", () => res.end(JSON.stringify({ ok: true, via: "provider" })));
  });
  const providerPort = await listen(provider);
  const ca = await makeCa("company test CA");
  caPem = ca.certPem;
  const leaf = await issueLeaf(await loadCa(ca.certPem, ca.keyPem), ["tls.test"]);
  tlsSite = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: leaf.certPem, key: leaf.keyPem }, fetch: (req) => new Response(`tls ok ${new URL(req.url).pathname}`) });
  parent = await startFakeParent({ sites: { "llm.test": providerPort, "tls.test": tlsSite.port!, "wrong.test": tlsSite.port!, "registry.test": providerPort }, credentials: `corp:${PASSWORD}` });
  const router = new ParentRouter(parentFromConfig({ url: parent.url, credentials: "PROXY_LOGIN", noProxy: ["127.0.0.1"] }).settings, (n) => (n === "PROXY_LOGIN" ? `corp:${PASSWORD}` : null));
  const handler = createLlmHandler({ keys: () => ({ env: { ANTHROPIC_API_KEY: KEY } }), upstreams: { anthropic: "http://llm.test" }, parent: router });
  handlerServer = llmServer(handler);
  handlerPort = await listen(handlerServer);
});
afterAll(async () => {
  handlerServer.close();
  provider.close();
  tlsSite.stop(true);
  await parent.close();
});

function call(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const r = httpRequest({ host: "127.0.0.1", port, path, method: "POST", headers: { "content-type": "application/json", "x-api-key": "sk-ant-placeholder" } }, (res: IncomingMessage) => {
      let body = "";
      res.on("data", (d: Buffer) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    r.on("error", reject);
    r.end("{}");
  });
}

describe("parent-proxy: the LLM proxy and the daemon's downloads go out through the host's proxy", () => {
  test("an LLM request reaches the provider through the parent (CONNECT by name, sbx's credentials), the host's key injected", async () => {
    parent.seen.length = 0;
    const r = await call(handlerPort, "/llm/anthropic/v1/messages");
    expect(r).toEqual({ status: 200, body: JSON.stringify({ ok: true, via: "provider" }) });
    expect(providerSaw.at(-1)).toEqual({ path: "/v1/messages", key: KEY });
    expect(parent.seen.map((s) => [s.method, s.target, s.authorization])).toEqual([["CONNECT", "llm.test:80", `Basic ${Buffer.from(`corp:${PASSWORD}`).toString("base64")}`]]);
    // The key went inside the tunnel to the provider, never in anything the parent read.
    expect(parent.seen.some((s) => s.head.includes(KEY))).toBe(false);
  });

  test("the parent's refusal is the LLM route's 502, naming the parent and its status, never its credentials", async () => {
    const router = new ParentRouter(parentFromConfig({ url: parent.url, credentials: "PROXY_LOGIN" }).settings, () => `corp:${PASSWORD}`);
    const handler = createLlmHandler({ keys: () => ({ env: { ANTHROPIC_API_KEY: KEY } }), upstreams: { anthropic: "http://nowhere.test" }, parent: router });
    const s = llmServer(handler);
    const r = await call(await listen(s), "/llm/anthropic/v1/messages");
    s.close();
    expect(r.status).toBe(502);
    expect(JSON.parse(r.body).message).toBe(`anthropic: the parent proxy ${parent.url} answered 503 Service Unavailable: it could not reach the destination`);
    expect(r.body).not.toContain(PASSWORD);
  });

  test("TLS through the parent is verified end to end: the right name passes, a certificate for another name fails", async () => {
    const router = new ParentRouter(parentFromEnv({ HTTPS_PROXY: parent.url.replace("http://", `http://corp:${PASSWORD}@`) }).settings);
    const agents = parentAgents(router);
    const get = (host: string) =>
      new Promise<string>((resolve) => {
        const r = httpsRequest({ host, port: 443, path: "/x", agent: agents.https, ca: caPem }, (res) => {
          let b = "";
          res.on("data", (d: Buffer) => (b += d));
          res.on("end", () => resolve(`${res.statusCode} ${b}`));
        });
        r.on("error", (e) => resolve(`error ${e.message}`));
        r.end();
      });
    expect(await get("tls.test")).toBe("200 tls ok /x");
    const wrong = await get("wrong.test");
    expect(wrong).toStartWith("error");
    expect(wrong).not.toContain("tls ok");
    agents.https.destroy();
  });

  test("fetch through the parent (agents' downloads, sign-in refreshes); a refusal rejects, naming no credentials", async () => {
    parent.seen.length = 0;
    const router = new ParentRouter(parentFromConfig({ url: parent.url, credentials: "PROXY_LOGIN" }).settings, (n) => (n === "PROXY_LOGIN" ? `corp:${PASSWORD}` : null));
    const f = parentFetch(router);
    const r = await f("http://registry.test/pkg");
    expect(r.status).toBe(200);
    expect(parent.seen.map((s) => s.authorization)).toEqual([`Basic ${Buffer.from(`corp:${PASSWORD}`).toString("base64")}`]);
    const bad = parentFetch(new ParentRouter(parentFromConfig({ url: parent.url, credentials: "PROXY_LOGIN" }).settings, () => null));
    const e = await bad("http://registry.test/pkg").then(() => "resolved", (x: Error) => x.message);
    expect(e).toContain("sbx secret set PROXY_LOGIN");
  });

  test("NO_PROXY sends the host straight out: the parent hears nothing", async () => {
    parent.seen.length = 0;
    const router = new ParentRouter(parentFromConfig({ url: parent.url, noProxy: ["127.0.0.1"] }).settings);
    const handler = createLlmHandler({ keys: () => ({ env: { ANTHROPIC_API_KEY: KEY } }), upstreams: { anthropic: `http://127.0.0.1:${(provider.address() as { port: number }).port}` }, parent: router });
    const s = llmServer(handler);
    const port = await listen(s);
    const r = await call(port, "/llm/anthropic/v1/messages");
    s.close();
    expect(r.status).toBe(200);
    expect(parent.seen).toEqual([]);
  });
});
