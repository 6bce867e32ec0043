// l7-rules: rules that see requests, through the real proxy and real clients (curl, Python, Node). A host a rule names
// is judged request by request (its HTTPS ended by sbx's proxy with a certificate from sbx's CA), on the canonical
// path, in a pipelined connection too, and after a redirect as a new request; a host no rule names stays an opaque
// tunnel. The upstreams are Bun servers on loopback (TLS from a "world" CA the host trusts), reached through names.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { connect as netConnect, type Server } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { join } from "node:path";
import type { EgressEvent } from "../../../src/core/egress-events";
import type { PolicyLists } from "../../../src/core/egress";
import type { Rule } from "../../../src/core/rules";
import { startEgressProxy, type EgressProxy } from "../../../src/proxy/egress-proxy";
import { issueLeaf, loadCa, makeCa } from "../../../src/tls/x509";
import { forwarderTo, leafContexts, tempDir } from "./helpers";

let tmp: ReturnType<typeof tempDir>;
let proxy: EgressProxy;
let relay: Server;
let relayPort = 0;
let sbxCaFile = "";
let worldCaFile = "";
let api: ReturnType<typeof Bun.serve>;
let other: ReturnType<typeof Bun.serve>;
let plain: ReturnType<typeof Bun.serve>;
/** What each upstream saw: method and path as it arrived. */
const seen: Record<"api" | "other" | "plain", string[]> = { api: [], other: [], plain: [] };
const events: EgressEvent[] = [];
let lists: PolicyLists;

const rule = (r: Partial<Rule> & Pick<Rule, "effect" | "host">): Rule => ({ methods: null, paths: null, source: "sandbox", ...r });

function server(which: "api" | "other" | "plain", tls?: { cert: string; key: string }) {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    ...(tls ? { tls } : {}),
    fetch(req) {
      const u = new URL(req.url);
      seen[which].push(`${req.method} ${u.pathname}`);
      if (u.pathname === "/v1/redirect") return new Response(null, { status: 302, headers: { location: "/admin/secrets" } });
      return new Response(`ok ${which} ${req.method} ${u.pathname}`);
    },
  });
}

beforeAll(async () => {
  tmp = tempDir();
  const sbxCa = await makeCa("sbx test CA");
  const worldCa = await makeCa("world test CA");
  const world = await loadCa(worldCa.certPem, worldCa.keyPem);
  const leaf = async (name: string) => issueLeaf(world, [name]).then((c) => ({ cert: c.certPem, key: c.keyPem }));
  api = server("api", await leaf("api.test"));
  other = server("other", await leaf("other.test"));
  plain = server("plain");
  sbxCaFile = join(tmp.dir, "sbx-ca.pem");
  worldCaFile = join(tmp.dir, "world-ca.pem");
  writeFileSync(sbxCaFile, sbxCa.certPem);
  writeFileSync(worldCaFile, worldCa.certPem);
  const signer = await loadCa(sbxCa.certPem, sbxCa.keyPem);
  const published = [api.port, other.port, plain.port].map((p) => `127.0.0.1:${p}`);
  lists = {
    sandbox: [`other.test:${other.port}`],
    global: [],
    published,
    rules: [rule({ effect: "allow", host: `api.test:${api.port}`, methods: ["GET", "HEAD"], paths: ["/v1/**"] }), rule({ effect: "allow", host: `plain.test:${plain.port}`, methods: ["GET"], paths: ["/v1/**"] })],
  };
  proxy = await startEgressProxy({
    socketPath: join(tmp.dir, "proxy.sock"),
    sandbox: { id: 1, name: "demo" },
    policy: () => lists,
    resolve: async (h) => (h.endsWith(".test") ? ["127.0.0.1"] : []),
    onDecision: (e) => void events.push(e),
    secrets: {
      secrets: () => [],
      values: async () => new Map(),
      contextFor: leafContexts(signer),
      upstreamCa: worldCa.certPem,
    },
  });
  ({ server: relay, port: relayPort } = await forwarderTo(proxy.socketPath));
});

afterAll(async () => {
  relay?.close();
  await proxy?.close();
  for (const s of [api, other, plain]) s?.stop(true);
  tmp?.cleanup();
});

const reset = () => {
  seen.api.length = 0;
  seen.other.length = 0;
  seen.plain.length = 0;
  events.length = 0;
};

/** A client run as a sandbox runs it (never spawnSync: the proxy answers in this same process). */
async function run(argv: string[], env?: Record<string, string>): Promise<{ code: number; out: string; err: string }> {
  const p = Bun.spawn(argv, { stdout: "pipe", stderr: "pipe", env: { ...process.env, ...env } });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

function curl(args: string[], ca = sbxCaFile) {
  return run(["curl", "-sS", "--max-time", "10", "-x", `http://127.0.0.1:${relayPort}`, "--cacert", ca, ...args]);
}

const denials = () => events.filter((e) => e.type === "denied") as Extract<EgressEvent, { type: "denied" }>[];

/** Raw requests inside a CONNECT tunnel, TLS trusting sbx's CA: the answers' text (the connection kept until the server ends it). */
function rawTls(authority: string, sni: string, requests: string): Promise<string> {
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
      const t = tlsConnect({ socket: s, servername: sni, ca: readFileSync(sbxCaFile, "utf8") });
      let out = "";
      t.on("secureConnect", () => t.write(requests));
      t.on("data", (x: Buffer) => (out += x.toString("latin1")));
      t.on("end", () => resolve(out));
      t.on("close", () => resolve(out));
      t.on("error", (e) => resolve(`${out}error: ${e.message}`));
    };
    s.on("data", onData);
  });
}

describe("l7-rules: an allow for some methods and paths", () => {
  test("curl: inside the rule it goes; another method or path is a 403 that names the rule's fix, and the upstream never sees it", async () => {
    reset();
    const ok = await curl([`https://api.test:${api.port}/v1/items`]);
    expect(ok.out).toBe("ok api GET /v1/items");
    const del = await curl(["-X", "DELETE", "-D", "-", `https://api.test:${api.port}/v1/items`]);
    expect(del.out).toContain("\r\n\r\nHTTP/1.1 403 sbx: api.test:");
    expect(del.out).toContain(`sbx allow api.test:${api.port} --method DELETE --path '/v1/items' --sandbox demo`);
    expect(del.out.toLowerCase()).toContain("x-sbx-blocked: request-not-allowed");
    const admin = await curl(["-D", "-", `https://api.test:${api.port}/admin/users`]);
    expect(admin.out).toContain("\r\n\r\nHTTP/1.1 403");
    expect(seen.api).toEqual(["GET /v1/items"]);
    expect(denials().map((d) => [d.reason, d.method])).toEqual([
      ["request-not-allowed", "DELETE"],
      ["request-not-allowed", "GET"],
    ]);
  });

  test("the connection is ended by sbx (its CA's certificate), so a client trusting only the world's CA is refused", async () => {
    const r = await curl([`https://api.test:${api.port}/v1/items`], worldCaFile);
    expect(r.code).not.toBe(0);
  });

  test("every spelling that leaves the path is refused before anything goes up (HTTPS and plain HTTP)", async () => {
    for (const path of ["/v1/../admin/users", "/v1/%2e%2e/admin/users", "/v1/..%2fadmin", "/v1\\..\\admin", "/v1/..;/admin", "/v1//../admin"]) {
      reset();
      const tls = await rawTls(`api.test:${api.port}`, "api.test", `GET ${path} HTTP/1.1\r\nHost: api.test:${api.port}\r\nConnection: close\r\n\r\n`);
      expect({ path, tls: tls.slice(0, 12) }).toEqual({ path, tls: "HTTP/1.1 403" });
      const http = await curl(["--path-as-is", "-D", "-", `http://plain.test:${plain.port}${path}`]);
      expect({ path, http: http.out.slice(0, 12) }).toEqual({ path, http: "HTTP/1.1 403" });
      expect({ path, seen: [...seen.api, ...seen.plain] }).toEqual({ path, seen: [] });
    }
  });

  test("pipelined requests in one write are judged one by one: the refused one in the middle never goes up", async () => {
    reset();
    const req = (m: string, p: string, last = false) => `${m} ${p} HTTP/1.1\r\nHost: api.test:${api.port}\r\n${last ? "Connection: close\r\n" : ""}\r\n`;
    const out = await rawTls(`api.test:${api.port}`, "api.test", req("GET", "/v1/a") + req("DELETE", "/v1/b") + req("GET", "/v1/c", true));
    expect(out.match(/HTTP\/1\.1 \d{3}(?= )/g)).toEqual(["HTTP/1.1 200", "HTTP/1.1 403", "HTTP/1.1 200"]);
    expect(seen.api).toEqual(["GET /v1/a", "GET /v1/c"]);
  });

  test("a CONNECT sent inside a terminated connection (a tunnel in the tunnel, to dodge the rules) is cut, and nothing goes up", async () => {
    reset();
    const out = await rawTls(`api.test:${api.port}`, "api.test", `CONNECT other.test:${other.port} HTTP/1.1\r\nHost: other.test:${other.port}\r\n\r\nDELETE /v1/x HTTP/1.1\r\nHost: api.test:${api.port}\r\n\r\n`);
    expect(out).not.toContain("200");
    expect(seen.api).toEqual([]);
    expect(seen.other).toEqual([]);
  });

  test("a redirect to a path outside the rule is a new request, judged afresh", async () => {
    reset();
    const r = await curl(["-L", "-D", "-", `https://api.test:${api.port}/v1/redirect`]);
    expect(r.out).toContain("HTTP/1.1 302");
    expect(r.out).toContain("HTTP/1.1 403");
    expect(seen.api).toEqual(["GET /v1/redirect"]);
  });

  test("Python (urllib) and Node (https over CONNECT) get the same answers", async () => {
    reset();
    const py = `
import urllib.request, urllib.error, sys
for m, p in (("GET", "/v1/py"), ("POST", "/v1/py")):
    try:
        r = urllib.request.urlopen(urllib.request.Request("https://api.test:${api.port}" + p, method=m, data=b"x" if m == "POST" else None), timeout=10)
        print(m, r.status, r.read().decode())
    except urllib.error.HTTPError as e:
        print(m, e.code, e.headers.get("X-Sbx-Blocked"))
`;
    const p = await run(["python3", "-c", py], { HTTPS_PROXY: `http://127.0.0.1:${relayPort}`, SSL_CERT_FILE: sbxCaFile });
    expect(p.out.trim().split("\n")).toEqual(["GET 200 ok api GET /v1/py", `POST 403 request-not-allowed api.test:${api.port}`]);
    const js = `
const http = require("http"), https = require("https");
function go(method, path) {
  return new Promise((res) => {
    http.request({ host: "127.0.0.1", port: ${relayPort}, method: "CONNECT", path: "api.test:${api.port}" }).on("connect", (_r, socket) => {
      https.request({ host: "api.test", port: ${api.port}, method, path, createConnection: () => require("tls").connect({ socket, servername: "api.test" }) }, (r) => {
        let b = ""; r.on("data", (d) => (b += d)); r.on("end", () => res(method + " " + r.statusCode + " " + (r.statusCode === 200 ? b : r.headers["x-sbx-blocked"])));
      }).end();
    }).end();
  });
}
(async () => { console.log(await go("GET", "/v1/node")); console.log(await go("PUT", "/v1/node")); })();
`;
    const n = await run(["node", "-e", js], { NODE_EXTRA_CA_CERTS: sbxCaFile });
    expect(n.out.trim().split("\n")).toEqual(["GET 200 ok api GET /v1/node", `PUT 403 request-not-allowed api.test:${api.port}`]);
    expect(seen.api).toEqual(["GET /v1/py", "GET /v1/node"]);
  });
});

describe("l7-rules: a deny carves out of an allow, from the next request", () => {
  test("a host no rule names is an opaque tunnel (the upstream's own certificate); a deny added makes it judged and ended by sbx", async () => {
    reset();
    expect((await curl([`https://other.test:${other.port}/x`], worldCaFile)).out).toBe("ok other GET /x");
    const saved = lists;
    lists = { ...lists, rules: [...(lists.rules ?? []), rule({ effect: "deny", host: "other.test", methods: ["DELETE"] })] };
    try {
      // The deny names other.test on 443/80; this one is on its own port: a rule with the port is what covers it.
      lists = { ...lists, rules: [...(saved.rules ?? []), rule({ effect: "deny", host: `other.test:${other.port}`, methods: ["DELETE"] })] };
      expect((await curl([`https://other.test:${other.port}/x`])).out).toBe("ok other GET /x");
      const del = await curl(["-X", "DELETE", "-D", "-", `https://other.test:${other.port}/x`]);
      expect(del.out).toContain("\r\n\r\nHTTP/1.1 403");
      expect(del.out).toContain(`sbx deny other.test:${other.port} --method DELETE --remove --sandbox demo`);
      expect(seen.other).toEqual(["GET /x", "GET /x"]);
    } finally {
      lists = saved;
    }
  });
});
