// never-reflected: an answer from a host a secret is bound to that holds the secret's real value reaches the sandbox
// with the placeholder in its place, however the upstream cuts it: across two and three TLS writes at every offset, in a
// header and in the streamed body (length-framed and chunked, the chunk framing between the pieces), the value next to
// a large run of other bytes (the scanner's hold-back boundary: a chunk that ends in the value's first bytes).
// A raw TLS upstream (Bun.listen) writes each piece on its own after a pause, so the proxy reads it on its own.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect as netConnect } from "node:net";
import { connect as tlsConnect, type TLSSocket } from "node:tls";
import { join } from "node:path";
import { placeholderFor } from "../../../src/core/placeholder";
import { startEgressProxy, type EgressProxy } from "../../../src/proxy/egress-proxy";
import { issueLeaf, loadCa, makeCa } from "../../../src/tls/x509";
import { leafContexts, tempDir } from "./helpers";

const VALUE = "sk_live_R3alV4lueN0tForS4ndb0x";
const PLACEHOLDER = placeholderFor(VALUE, (n) => crypto.getRandomValues(new Uint8Array(n)));
/** Bytes around the value in the body: more than one read's worth, so the value sits at a large chunk's edge. */
const FILLER = "s".repeat(70 * 1024);

let tmp: ReturnType<typeof tempDir>;
let proxy: EgressProxy;
let upstream: Bun.TCPSocketListener<{ head: string }>;
let sbxCa = "";

/** The response the upstream sends for a case, and where in it the value starts. */
function response(where: "header" | "length" | "chunked"): { bytes: Buffer; at: number } {
  if (where === "header") {
    const head = `HTTP/1.1 200 OK\r\nX-Filler: ${"s".repeat(4000)}\r\nX-Echo: Bearer `;
    return { bytes: Buffer.from(`${head}${VALUE}\r\nContent-Length: 2\r\n\r\nok`, "latin1"), at: head.length };
  }
  const body = `${FILLER}${VALUE}${FILLER}`;
  if (where === "length") {
    const head = `HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n`;
    return { bytes: Buffer.from(head + body, "latin1"), at: head.length + FILLER.length };
  }
  // Chunked, one chunk per piece written (the framing between the value's pieces, as a real streaming server sends it).
  return { bytes: Buffer.alloc(0), at: -1 };
}

/** The pieces the upstream writes: the response cut at the value's offsets `cuts` (chunked: each piece its own chunk). */
function pieces(where: "header" | "length" | "chunked", cuts: number[]): Buffer[] {
  if (where === "chunked") {
    const body = `${FILLER}${VALUE}${FILLER}`;
    const at = [0, ...cuts.map((c) => FILLER.length + c), body.length];
    const chunks = at.slice(1).map((end, i) => body.slice(at[i], end)).map((p) => Buffer.from(`${p.length.toString(16)}\r\n${p}\r\n`, "latin1"));
    chunks[0] = Buffer.concat([Buffer.from("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "latin1"), chunks[0]!]);
    chunks[chunks.length - 1] = Buffer.concat([chunks[chunks.length - 1]!, Buffer.from("0\r\n\r\n", "latin1")]);
    return chunks;
  }
  const { bytes, at } = response(where);
  const edges = [0, ...cuts.map((c) => at + c), bytes.length];
  return edges.slice(1).map((end, i) => bytes.subarray(edges[i], end));
}

beforeAll(async () => {
  tmp = tempDir();
  const sbx = await makeCa("sbx test CA");
  const world = await makeCa("world test CA");
  sbxCa = sbx.certPem;
  const site = await issueLeaf(await loadCa(world.certPem, world.keyPem), ["split.test"]);
  // The request names the case: GET /v1/<where>/<cut>[/<cut>] (cuts are offsets into the value).
  upstream = Bun.listen<{ head: string }>({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: site.certPem, key: site.keyPem },
    socket: {
      open(s) {
        s.data = { head: "" };
      },
      async data(s, d) {
        s.data.head += d.toString();
        const end = s.data.head.indexOf("\r\n\r\n");
        if (end < 0) return;
        const [, where, ...cuts] = s.data.head.split(" ")[1]!.split("/").slice(1);
        s.data.head = s.data.head.slice(end + 4);
        for (const p of pieces(where as "header" | "length" | "chunked", cuts.map(Number))) {
          let at = 0;
          while (at < p.length) {
            at += s.write(p.subarray(at));
            if (at < p.length) await Bun.sleep(1);
          }
          s.flush();
          await Bun.sleep(2); // its own read at the proxy
        }
      },
    },
  });
  proxy = await startEgressProxy({
    socketPath: join(tmp.dir, "proxy.sock"),
    sandbox: { id: 1, name: "split" },
    policy: () => ({ sandbox: [`split.test:${upstream.port}`], global: [], published: [`127.0.0.1:${upstream.port}`] }),
    resolve: async (h) => (h === "split.test" ? ["127.0.0.1"] : []),
    pace: null,
    secrets: {
      secrets: () => [{ name: "SPLIT_TOKEN", hosts: ["split.test"], rules: [{ methods: ["GET"], path: "/v1/**" }], header: null, inBody: false, placeholder: PLACEHOLDER }],
      values: async () => new Map([["SPLIT_TOKEN", VALUE]]),
      contextFor: leafContexts(await loadCa(sbx.certPem, sbx.keyPem)),
      upstreamCa: world.certPem,
    },
  });
});

afterAll(async () => {
  await proxy?.close();
  upstream?.stop(true);
  tmp?.cleanup();
});

/** A terminated connection to split.test through the proxy, as the sandbox opens one. */
async function open(): Promise<TLSSocket> {
  const raw = netConnect({ path: proxy.socketPath });
  const authority = `split.test:${upstream.port}`;
  await new Promise<void>((resolve, reject) => {
    raw.once("error", reject);
    raw.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
    let head = "";
    const on = (d: Buffer) => {
      head += d.toString("latin1");
      if (!head.includes("\r\n\r\n")) return;
      raw.off("data", on);
      head.startsWith("HTTP/1.1 200") ? resolve() : reject(new Error(head));
    };
    raw.on("data", on);
  });
  const t = tlsConnect({ socket: raw, servername: "split.test", ca: sbxCa });
  await new Promise<void>((resolve, reject) => {
    t.once("secureConnect", resolve);
    t.once("error", reject);
  });
  return t;
}

/** One GET on the connection; everything the proxy answers, to the end of the answer (its last chunk or its length). */
function get(t: TLSSocket, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = "";
    const done = () => {
      const end = out.indexOf("\r\n\r\n");
      if (end < 0) return false;
      const len = /content-length: (\d+)/i.exec(out.slice(0, end));
      return len ? out.length >= end + 4 + Number(len[1]) : out.endsWith("\r\n0\r\n\r\n");
    };
    const on = (d: Buffer) => {
      out += d.toString("latin1");
      if (!done()) return;
      t.off("data", on);
      t.off("error", reject);
      resolve(out);
    };
    t.on("data", on);
    t.on("error", reject);
    t.write(`GET ${path} HTTP/1.1\r\nHost: split.test:${upstream.port}\r\n\r\n`);
  });
}

/** A chunked body's bytes. */
function unchunk(s: string): string {
  let out = "";
  for (let i = 0; ; ) {
    const eol = s.indexOf("\r\n", i);
    const n = parseInt(s.slice(i, eol), 16);
    if (!(n > 0)) return out;
    out += s.slice(eol + 2, eol + 2 + n);
    i = eol + 2 + n + 2;
  }
}

/** Every way of cutting the value into `n` pieces (n - 1 cuts, each strictly inside it). */
function cutsInto(n: 2 | 3): number[][] {
  const out: number[][] = [];
  for (let i = 1; i < VALUE.length; i++) {
    if (n === 2) out.push([i]);
    else for (let j = i + 1; j < VALUE.length; j++) out.push([i, j]);
  }
  return out;
}

describe("never-reflected: the real value cut across the upstream's writes reaches the sandbox only as the placeholder", () => {
  for (const where of ["header", "length", "chunked"] as const) {
    for (const n of [2, 3] as const) {
      test(`${where === "header" ? "in a header" : `in a ${where === "length" ? "length-framed" : "chunked"} body`}, in ${n} pieces, at every offset`, async () => {
        const t = await open();
        try {
          const failed: string[] = [];
          for (const cuts of cutsInto(n)) {
            const out = await get(t, `/v1/${where}/${cuts.join("/")}`);
            const end = out.indexOf("\r\n\r\n");
            const head = out.slice(0, end);
            const body = /transfer-encoding: chunked/i.test(head) ? unchunk(out.slice(end + 4)) : out.slice(end + 4);
            // The value never; the placeholder whole, where the value was; nothing else of the answer changed.
            const want = where === "header" ? head.includes(`X-Echo: Bearer ${PLACEHOLDER}\r\n`) && body === "ok" : body === `${FILLER}${PLACEHOLDER}${FILLER}`;
            if (out.includes(VALUE) || !want) failed.push(`${cuts.join(",")}: ${out.includes(VALUE) ? "the value shown" : "not the answer with the placeholder"}`);
          }
          expect(failed).toEqual([]);
        } finally {
          t.destroy();
        }
      });
    }
  }
});
