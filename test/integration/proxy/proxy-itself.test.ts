// Requests to the proxy itself (origin-form: the LLM routes, /sbx/…) on both ways in, over real sockets: read by the
// same strict reader as everything else, handed to the origin handler re-framed, its answer streamed back as it comes,
// and given up when the client goes; what follows on the connection is read as any request is.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { IncomingMessage, ServerResponse } from "node:http";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { fdPassing } from "../../../shims/fd-pass";
import { startEgressProxy, type EgressProxy } from "../../../src/proxy/egress-proxy";
import { httpServer, tempDir } from "./helpers";

const lib = fdPassing();
type Way = "socket" | "port";
const ways: Way[] = lib ? ["socket", "port"] : ["socket"];

let tmp: ReturnType<typeof tempDir>;
let web: Awaited<ReturnType<typeof httpServer>>;
let proxy: EgressProxy;
let handedPort = 0;
/** What the origin handler saw: `METHOD url body=<bytes>`, and requests whose client went away before the answer. */
const seen: string[] = [];
const gone: string[] = [];
/** Releases the held event stream. */
let release: () => void = () => undefined;

function handler(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on("data", (d: Buffer) => chunks.push(d));
  res.on("close", () => {
    if (!res.writableFinished) gone.push(req.url ?? "");
  });
  req.on("end", () => {
    seen.push(`${req.method} ${req.url} body=${Buffer.concat(chunks).toString()}`);
    if (req.url === "/llm/stream") {
      // As the LLM route streams a provider's events: the head and the first event at once, the rest when it comes.
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      res.flushHeaders();
      res.write("data: first\n\n");
      release = () => res.end("data: last\n\n");
      return;
    }
    if (req.url === "/llm/never") return; // answers nothing: a client that goes must not leave it held
    res.end(`origin ${req.method} ${req.url} body=${Buffer.concat(chunks).length}`);
  });
}

beforeAll(async () => {
  tmp = tempDir();
  web = await httpServer();
  proxy = await startEgressProxy({
    socketPath: join(tmp.dir, "sb", "proxy.sock"),
    sandbox: { id: 1, name: "demo" },
    policy: () => ({ sandbox: [], global: [], published: [`127.0.0.1:${web.port}`] }),
    resolve: async () => [],
    originHandler: handler,
  });
  if (lib) {
    const l = lib.listenLoopback(0);
    handedPort = l.port;
    proxy.serveListener(l.fd);
  }
});
afterAll(async () => {
  await proxy.close();
  await web.close();
  tmp.cleanup();
});

const open = (way: Way, allowHalfOpen = false): Socket =>
  way === "socket" ? connect({ path: proxy.socketPath, allowHalfOpen }) : connect({ host: "127.0.0.1", port: handedPort, allowHalfOpen });

/** Everything read until `until(text)` holds (or 3 s pass). */
function readUntil(s: Socket, until: (text: string) => boolean): Promise<string> {
  return new Promise((resolve) => {
    let out = "";
    const t = setTimeout(() => done(), 3000);
    const done = () => {
      clearTimeout(t);
      s.off("data", onData);
      resolve(out);
    };
    const onData = (d: Buffer) => {
      out += d.toString("latin1");
      if (until(out)) done();
    };
    s.on("data", onData);
    s.on("close", done);
  });
}

describe("requests to the proxy itself", () => {
  for (const way of ways) {
    test(`${way}: an event stream reaches the client as it comes; the next request on the connection is forwarded`, async () => {
      const s = open(way);
      s.on("error", () => undefined);
      const first = readUntil(s, (t) => t.includes("data: first"));
      s.write("GET /llm/stream HTTP/1.1\r\nHost: 127.0.0.1:3128\r\n\r\n");
      const head = await first;
      expect(head).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      expect(head.toLowerCase()).toContain("content-type: text/event-stream");
      expect(head).toContain("data: first");
      expect(head).not.toContain("data: last");
      const rest = readUntil(s, (t) => t.includes("hello GET /after"));
      release();
      s.write(`GET http://127.0.0.1:${web.port}/after HTTP/1.1\r\nHost: 127.0.0.1:${web.port}\r\nConnection: close\r\n\r\n`);
      const tail = await rest;
      expect(tail).toContain("data: last");
      expect(tail).toContain(`hello GET /after host=127.0.0.1:${web.port}`);
      s.destroy();
    });

    test(`${way}: a chunked body reaches the handler whole, re-framed; an ambiguous one never reaches it`, async () => {
      seen.length = 0;
      const s = open(way);
      s.on("error", () => undefined);
      const out = readUntil(s, (t) => t.includes("body=5"));
      s.write("POST /sbx/egress/ask HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
      expect(await out).toContain("origin POST /sbx/egress/ask body=5");
      const refused = readUntil(s, (t) => t.includes("\r\n\r\n") && t.includes("refused"));
      s.write("POST /llm/x HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
      expect(await refused).toMatch(/^HTTP\/1\.1 400 /);
      await Bun.sleep(20);
      expect(seen).toEqual(["POST /sbx/egress/ask body=abcde"]);
      s.destroy();
    });

    test(`${way}: a client that ends its side before the handler answers has gone: the handler's request is closed`, async () => {
      gone.length = 0;
      const s = open(way, true);
      s.on("error", () => undefined);
      const closed = new Promise<void>((r) => s.on("close", () => r()));
      s.write("GET /llm/never HTTP/1.1\r\nHost: x\r\n\r\n");
      await Bun.sleep(50);
      s.end();
      await Promise.race([closed, Bun.sleep(3000)]);
      for (let i = 0; i < 100 && gone.length === 0; i++) await Bun.sleep(10);
      expect(gone).toEqual(["/llm/never"]);
      s.destroy();
    });
  }
});
