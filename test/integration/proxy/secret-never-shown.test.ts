// secret-bound, never reflected, in ANY part of an answer: an upstream of a terminated host that puts the value it was
// sent (the sandbox chose the request; a cooperating or echoing upstream chooses the answer) into a header's NAME, the
// status line's reason phrase, or a line the proxy cannot read (so the value lands in sbx's own 502 and its error
// event). The sandbox gets its placeholder, or nothing, and no event the proxy emits (what `sbx logs`, the dashboard
// and chat are made of) holds the value. The real proxy, a raw TLS upstream on loopback, raw TLS clients.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect as netConnect } from "node:net";
import { leafContext } from "../../../src/tls/leaf-context";
import { connect as tlsConnect, createServer as createTlsServer, type SecureContext, type Server as TlsServer } from "node:tls";
import { join } from "node:path";
import type { BoundSecret } from "../../../src/core/bound-secret";
import type { EgressEvent } from "../../../src/core/egress-events";
import { placeholderFor } from "../../../src/core/placeholder";
import { startEgressProxy, type EgressProxy } from "../../../src/proxy/egress-proxy";
import { issueLeaf, loadCa, makeCa } from "../../../src/tls/x509";
import { tempDir } from "./helpers";

const VALUE = "sk_live_Hd7QwR2mZx9KpL4vNa8TyB3c";
/** A recognisable piece of the value that is not the issuer's prefix (the placeholder shares `sk_live_`). */
const PIECE = VALUE.slice(8, 20);
const PLACEHOLDER = placeholderFor(VALUE, (n) => crypto.getRandomValues(new Uint8Array(n)));

let tmp: ReturnType<typeof tempDir>;
let proxy: EgressProxy;
let upstream: TlsServer;
let port = 0;
let sbxCa = "";
const events: EgressEvent[] = [];

/** The raw answers the upstream gives, by path: each puts the token it was sent (`$T`) somewhere in its head. */
const ANSWERS: Record<string, string> = {
  "/v1/name": "HTTP/1.1 200 OK\r\nx-$T: 1\r\nContent-Length: 2\r\n\r\nok",
  "/v1/reason": "HTTP/1.1 200 $T\r\nContent-Length: 2\r\n\r\nok",
  // Unreadable: a control character in the value of a header named after the token.
  "/v1/bad-value": "HTTP/1.1 200 OK\r\nx-$T: a\x01b\r\nContent-Length: 2\r\n\r\nok",
  // Unreadable: the trailer section of a chunked body, a header named after the token with a control character.
  "/v1/bad-trailer": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nx-$T: a\x01b\r\n\r\n",
};

beforeAll(async () => {
  tmp = tempDir();
  const sbx = await makeCa("sbx test CA");
  const world = await makeCa("world test CA");
  sbxCa = sbx.certPem;
  const leaf = await issueLeaf(await loadCa(world.certPem, world.keyPem), ["api.test"]);
  upstream = createTlsServer({ cert: leaf.certPem, key: leaf.keyPem }, (s) => {
    let head = "";
    s.on("data", (d: Buffer) => {
      head += d.toString("latin1");
      if (!head.includes("\r\n\r\n")) return;
      const path = head.split(" ")[1]!;
      const token = /authorization: Bearer (\S+)/i.exec(head)?.[1] ?? "none";
      s.end((ANSWERS[path] ?? "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n").replaceAll("$T", token), "latin1");
    });
    s.on("error", () => s.destroy());
  });
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", () => r()));
  port = (upstream.address() as { port: number }).port;
  const signer = await loadCa(sbx.certPem, sbx.keyPem);
  const contexts = new Map<string, Promise<SecureContext>>();
  const secrets: BoundSecret[] = [
    { name: "API_TOKEN", hosts: ["api.test"], rules: [{ methods: ["GET"], path: "/v1/**" }], header: { name: "Authorization", template: "Bearer {}" }, inBody: false, placeholder: PLACEHOLDER },
  ];
  proxy = await startEgressProxy({
    socketPath: join(tmp.dir, "proxy.sock"),
    sandbox: { id: 1, name: "demo" },
    policy: () => ({ sandbox: [`api.test:${port}`], global: [], published: [`127.0.0.1:${port}`] }),
    resolve: async (h) => (h === "api.test" ? ["127.0.0.1"] : []),
    onDecision: (e) => void events.push(e),
    secrets: {
      secrets: () => secrets,
      values: async (names) => new Map(names.filter((n) => n === "API_TOKEN").map((n): [string, string] => [n, VALUE])),
      contextFor: (host) => {
        let c = contexts.get(host);
        if (!c) contexts.set(host, (c = issueLeaf(signer, [host]).then((l) => leafContext(l.certPem, l.keyPem))));
        return c;
      },
      upstreamCa: world.certPem,
    },
  });
});

afterAll(async () => {
  await proxy?.close();
  upstream?.close();
  tmp?.cleanup();
});

/** GET `path` on api.test inside a terminated CONNECT, as a sandbox's client sends it (the placeholder in its header). */
function get(path: string): Promise<string> {
  return new Promise((resolve) => {
    const s = netConnect({ path: proxy.socketPath });
    let head = "";
    s.on("error", (e) => resolve(`error: ${e.message}`));
    s.write(`CONNECT api.test:${port} HTTP/1.1\r\nHost: api.test:${port}\r\n\r\n`);
    const onData = (d: Buffer) => {
      head += d.toString("latin1");
      if (!head.includes("\r\n\r\n")) return;
      s.off("data", onData);
      if (!head.startsWith("HTTP/1.1 200")) return resolve(head);
      const t = tlsConnect({ socket: s, servername: "api.test", ca: sbxCa });
      let out = "";
      t.on("secureConnect", () => t.write(`GET ${path} HTTP/1.1\r\nHost: api.test:${port}\r\nAuthorization: Bearer ${PLACEHOLDER}\r\nConnection: close\r\n\r\n`));
      t.on("data", (x: Buffer) => (out += x.toString("latin1")));
      t.on("close", () => resolve(out));
      t.on("error", () => resolve(out));
    };
    s.on("data", onData);
  });
}

/** Waits for the proxy to emit what the request made (its events come as the exchange ends). */
async function settled(): Promise<string> {
  await Bun.sleep(50);
  return JSON.stringify(events);
}

describe("secret-bound: never reflected, in any part of an answer's head", () => {
  test("a header NAME that holds the value: the sandbox reads its placeholder there", async () => {
    events.length = 0;
    const out = await get("/v1/name");
    expect(out).toStartWith("HTTP/1.1 200");
    expect(out).not.toContain(VALUE);
    expect(out).not.toContain(PIECE);
    expect(out.toLowerCase()).toContain(`x-${PLACEHOLDER.toLowerCase()}: 1`);
    const ev = await settled();
    expect(ev).not.toContain(PIECE);
    expect(ev).toContain('"name":"API_TOKEN"');
  });

  test("the reason phrase that holds the value: the sandbox reads its placeholder there", async () => {
    events.length = 0;
    const out = await get("/v1/reason");
    expect(out).not.toContain(PIECE);
    expect(out).toStartWith(`HTTP/1.1 200 ${PLACEHOLDER}\r\n`);
    expect(await settled()).not.toContain(PIECE);
  });
});

describe("secret-never-shown: sbx's own words about an answer it could not read hold no value", () => {
  test("an unreadable header named after the value: a 502 that names the problem with the placeholder, an error event without the value", async () => {
    events.length = 0;
    const out = await get("/v1/bad-value");
    expect(out).toStartWith("HTTP/1.1 502");
    expect(out).not.toContain(PIECE);
    expect(out).toContain(`a control character in the value of x-${PLACEHOLDER}`);
    const ev = await settled();
    expect(events.some((e) => e.type === "error")).toBe(true);
    expect(ev).not.toContain(VALUE);
    expect(ev).not.toContain(PIECE);
  });

  test("an unreadable trailer named after the value: the answer is cut, and nothing said holds the value", async () => {
    events.length = 0;
    const out = await get("/v1/bad-trailer");
    expect(out).not.toContain(PIECE);
    expect(await settled()).not.toContain(PIECE);
  });
});
