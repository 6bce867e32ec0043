// Plain HTTP through the proxy on both ways in (the proxy socket, node:http's; the sandbox's handed-over port, read by
// http1.ts), to servers that answer every way a response can be framed, and to hostile ones: what the client gets,
// what the server is sent, and that a pooled connection never carries a response that was not its request's.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { createServer, connect, type Socket } from "node:net";
import { join } from "node:path";
import { fdPassing } from "../../../shims/fd-pass";
import type { EgressEvent } from "../../../src/core/egress-events";
import { startEgressProxy, type EgressProxy } from "../../../src/proxy/egress-proxy";
import { tempDir } from "./helpers";

const lib = fdPassing();
type Way = "socket" | "port";
const ways: Way[] = lib ? ["socket", "port"] : ["socket"];

/** What a scripted server answers a path with: raw bytes (it keeps the connection unless told), or a function. */
type Script = string | ((c: Socket, req: { head: string; body: Buffer }, nth: number) => void);

let tmp: ReturnType<typeof tempDir>;
let proxy: EgressProxy;
let port = 0;
let handedPort = 0;
/** Request heads the server read, in order, and how many connections it took. */
const heads: string[] = [];
let connections = 0;
const events: EgressEvent[] = [];
/** Which of the server's connections (numbered as accepted) answered a path last. */
const servedBy = new Map<string, number>();
const scripts = new Map<string, Script>();

beforeAll(async () => {
  tmp = tempDir();
  // A server that frames requests the simple way (Content-Length or chunked, read whole) and answers by script.
  const server = createServer((c) => {
    const id = ++connections;
    let nth = 0;
    let buf = Buffer.alloc(0);
    c.on("error", () => undefined);
    c.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      for (;;) {
        const end = buf.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = buf.subarray(0, end).toString("latin1");
        const cl = /\r\ncontent-length: (\d+)/i.exec(head);
        let body = Buffer.alloc(0);
        let used = end + 4;
        if (cl) {
          if (buf.length < used + Number(cl[1])) return;
          body = buf.subarray(used, used + Number(cl[1]));
          used += Number(cl[1]);
        } else if (/\r\ntransfer-encoding: chunked/i.test(head)) {
          const parts: Buffer[] = [];
          let at = used;
          for (;;) {
            const le = buf.indexOf("\r\n", at);
            if (le < 0) return;
            const size = parseInt(buf.subarray(at, le).toString(), 16);
            if (size === 0) {
              if (buf.length < le + 4) return;
              at = le + 4;
              break;
            }
            if (buf.length < le + 2 + size + 2) return;
            parts.push(buf.subarray(le + 2, le + 2 + size));
            at = le + 2 + size + 2;
          }
          body = Buffer.concat(parts);
          used = at;
        }
        buf = buf.subarray(used);
        heads.push(head);
        const path = head.split(" ")[1]!.split("?")[0]!;
        servedBy.set(path, id);
        const script = scripts.get(path) ?? "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        nth++;
        if (typeof script === "string") c.write(script);
        else script(c, { head, body }, nth);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  port = (server.address() as { port: number }).port;
  proxy = await startEgressProxy({
    socketPath: join(tmp.dir, "sb", "proxy.sock"),
    sandbox: { id: 1, name: "demo" },
    policy: () => ({ sandbox: [`ok.test:${port}`], global: [], published: [`127.0.0.1:${port}`] }),
    resolve: async (h) => (h === "ok.test" ? ["127.0.0.1"] : []),
    onDecision: (e) => void events.push(e),
    connectTimeoutMs: 2000,
  });
  if (lib) {
    const l = lib.listenLoopback(0);
    handedPort = l.port;
    proxy.serveListener(l.fd);
  }
  closeServer = () => server.close();
});
let closeServer = () => undefined as unknown;
afterAll(async () => {
  await proxy.close();
  closeServer();
  tmp.cleanup();
});
beforeEach(() => {
  heads.length = 0;
});

const open = (way: Way, allowHalfOpen = false): Socket =>
  way === "socket" ? connect({ path: proxy.socketPath, allowHalfOpen }) : connect({ host: "127.0.0.1", port: handedPort, allowHalfOpen });

/**
 * Writes `text` on a fresh connection, reads until the proxy closes it (or 3 s pass). `halfClose`: the client ends its
 * side after the text and still reads.
 */
function exchange(way: Way, text: string | Buffer, halfClose = false): Promise<{ out: Buffer; closed: boolean }> {
  return new Promise((resolve) => {
    const s = open(way, halfClose);
    const chunks: Buffer[] = [];
    let closed = true;
    const t = setTimeout(() => {
      closed = false;
      s.destroy();
    }, 3000);
    s.on("data", (d: Buffer) => chunks.push(d));
    s.on("close", () => {
      clearTimeout(t);
      resolve({ out: Buffer.concat(chunks), closed });
    });
    s.on("error", () => undefined);
    if (halfClose) s.end(text);
    else s.write(text);
  });
}

/** Reads one response from a client's bytes the way a strict client would; null when there is none whole. */
function parse(out: Buffer, method = "GET"): { status: number; headers: Record<string, string>; body: Buffer; rest: Buffer } | null {
  const end = out.indexOf("\r\n\r\n");
  if (end < 0) return null;
  const [line, ...lines] = out.subarray(0, end).toString("latin1").split("\r\n");
  const status = Number(line!.split(" ")[1]);
  const headers: Record<string, string> = {};
  for (const l of lines) headers[l.slice(0, l.indexOf(":")).toLowerCase()] = l.slice(l.indexOf(":") + 1).trim();
  let at = end + 4;
  if (status < 200) return parse(out.subarray(at), method);
  if (method === "HEAD" || status === 204 || status === 304) return { status, headers, body: Buffer.alloc(0), rest: out.subarray(at) };
  if (headers["content-length"] !== undefined) {
    const n = Number(headers["content-length"]);
    return { status, headers, body: out.subarray(at, at + n), rest: out.subarray(at + n) };
  }
  if (headers["transfer-encoding"] === "chunked") {
    const parts: Buffer[] = [];
    for (;;) {
      const le = out.indexOf("\r\n", at);
      const size = parseInt(out.subarray(at, le).toString(), 16);
      if (size === 0) return { status, headers, body: Buffer.concat(parts), rest: out.subarray(le + 4) };
      parts.push(out.subarray(le + 2, le + 2 + size));
      at = le + 2 + size + 2;
    }
  }
  return { status, headers, body: out.subarray(at), rest: Buffer.alloc(0) };
}

const U = () => `http://ok.test:${port}`;
const H = () => `Host: ok.test:${port}\r\n`;
const BIG = Buffer.alloc(3 * 1024 * 1024, 0x61).map((_, i) => 0x61 + (i % 26));

describe("responses framed every way reach the client whole", () => {
  beforeAll(() => {
    scripts.set("/cl", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\n\r\nhello");
    scripts.set("/chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;e=1\r\nhel\r\n2\r\nlo\r\n0\r\nX-Trailer: t\r\n\r\n");
    scripts.set("/close", (c) => c.end("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello until the end"));
    scripts.set("/head", "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n");
    scripts.set("/204", "HTTP/1.1 204 No Content\r\n\r\n");
    scripts.set("/304", "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n");
    scripts.set("/interim", "HTTP/1.1 103 Early Hints\r\nLink: </s>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    scripts.set("/echo", (c, req) => c.write(`HTTP/1.1 200 OK\r\nContent-Length: ${String(req.body.length).length}\r\n\r\n${req.body.length}`));
    scripts.set("/big-cl", (c) => c.write(Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${BIG.length}\r\n\r\n`), BIG])));
    scripts.set("/big-chunked", (c) => {
      c.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
      for (let i = 0; i < BIG.length; i += 100_000) {
        const part = BIG.subarray(i, i + 100_000);
        c.write(`${part.length.toString(16)}\r\n`);
        c.write(part);
        c.write("\r\n");
      }
      c.write("0\r\n\r\n");
    });
  });

  for (const way of ways) {
    for (const [path, body] of [
      ["/cl", "hello"],
      ["/chunked", "hello"],
      ["/close", "hello until the end"],
      ["/interim", "ok"],
    ] as const) {
      test(`${way}: ${path}`, async () => {
        const r = await exchange(way, `GET ${U()}${path} HTTP/1.1\r\n${H()}Connection: close\r\n\r\n`);
        const p = parse(r.out);
        expect([p?.status, p?.body.toString(), r.closed]).toEqual([200, body, true]);
      });
    }
    test(`${way}: an HTTP/1.0 client gets a chunked answer whole, ended by the connection`, async () => {
      const r = await exchange(way, `GET ${U()}/chunked HTTP/1.0\r\n${H()}\r\n`);
      const p = parse(r.out);
      expect([p?.status, p?.headers["transfer-encoding"], p?.body.toString(), r.closed]).toEqual([200, undefined, "hello", true]);
    });
    test(`${way}: HEAD, 204 and 304 carry no body; HEAD keeps the server's length`, async () => {
      const h = parse((await exchange(way, `HEAD ${U()}/head HTTP/1.1\r\n${H()}Connection: close\r\n\r\n`)).out, "HEAD");
      expect([h?.status, h?.headers["content-length"], h?.rest.length]).toEqual([200, "1234", 0]);
      for (const [path, status] of [["/204", 204], ["/304", 304]] as const) {
        const r = await exchange(way, `GET ${U()}${path} HTTP/1.1\r\n${H()}Connection: close\r\n\r\n`);
        const p = parse(r.out);
        expect([p?.status, p?.rest.length, r.closed]).toEqual([status, 0, true]);
      }
    });
    test(`${way}: Expect: 100-continue gets its 100, and the body goes up`, async () => {
      const r = await exchange(way, `POST ${U()}/echo HTTP/1.1\r\n${H()}Expect: 100-continue\r\nContent-Length: 4\r\nConnection: close\r\n\r\nabcd`);
      expect(r.out.toString("latin1")).toStartWith("HTTP/1.1 100 Continue\r\n\r\n");
      expect(parse(r.out)?.body.toString()).toBe("4");
    });
    test(`${way}: 3 MB down (by length and by chunks) and up (chunked) arrive intact`, async () => {
      for (const path of ["/big-cl", "/big-chunked"]) {
        const p = parse((await exchange(way, `GET ${U()}${path} HTTP/1.1\r\n${H()}Connection: close\r\n\r\n`)).out);
        expect({ path, status: p?.status, same: p?.body.equals(BIG) }).toEqual({ path, status: 200, same: true });
      }
      const chunks = [];
      for (let i = 0; i < BIG.length; i += 65_536) {
        const part = BIG.subarray(i, i + 65_536);
        chunks.push(Buffer.from(`${part.length.toString(16)}\r\n`), part, Buffer.from("\r\n"));
      }
      const up = Buffer.concat([Buffer.from(`POST ${U()}/echo HTTP/1.1\r\n${H()}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n`), ...chunks, Buffer.from("0\r\n\r\n")]);
      expect(parse((await exchange(way, up)).out)?.body.toString()).toBe(String(BIG.length));
    });
  }
});

describe("what the server is sent", () => {
  // Only the port: node:http's server on the proxy socket drops the answer when its client half-closes (as before).
  test.skipIf(!lib)("port: a client that half-closes right after its request gets the whole answer", async () => {
    scripts.set("/big-cl", (c) => c.write(Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${BIG.length}\r\n\r\n`), BIG])));
    const r = await new Promise<Buffer>((resolve) => {
      const s = connect({ host: "127.0.0.1", port: handedPort, allowHalfOpen: true });
      const chunks: Buffer[] = [];
      s.on("data", (d: Buffer) => chunks.push(d));
      s.on("close", () => resolve(Buffer.concat(chunks)));
      s.end(`GET ${U()}/big-cl HTTP/1.1\r\n${H()}\r\n`);
    });
    expect(parse(r)?.body.equals(BIG)).toBe(true);
  });
  for (const way of ways) {
    test(`${way}: the audit event carries the body bytes each way`, async () => {
      events.length = 0;
      scripts.set("/count", (c, req) => c.write(`HTTP/1.1 200 OK\r\nContent-Length: ${String(req.body.length).length}\r\n\r\n${req.body.length}`));
      expect(parse((await exchange(way, `POST ${U()}/count HTTP/1.1\r\n${H()}Content-Length: 10\r\nConnection: close\r\n\r\n0123456789`)).out)?.body.toString()).toBe("10");
      await Bun.sleep(20);
      expect(events.filter((e) => e.type === "closed")).toEqual([expect.objectContaining({ type: "closed", method: "POST", host: "ok.test", address: "127.0.0.1", bytesUp: 10, bytesDown: 2 })]);
    });
    test(`${way}: one Host, the checked one; hop-by-hop headers and those Connection names are gone`, async () => {
      scripts.set("/cl", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
      await exchange(way, `GET ${U()}/cl?q=1 HTTP/1.1\r\nHost: OK.test:${port}\r\nProxy-Connection: keep-alive\r\nConnection: close, X-Drop\r\nX-Drop: 1\r\nX-Keep: 2\r\n\r\n`);
      const [head] = heads;
      const lines = head!.split("\r\n");
      expect(lines[0]).toBe("GET /cl?q=1 HTTP/1.1");
      expect(lines.filter((l) => /^host:/i.test(l))).toEqual([`Host: ok.test:${port}`]);
      expect(lines.some((l) => /^(proxy-connection|x-drop|connection|keep-alive):/i.test(l))).toBe(false);
      expect(lines.some((l) => /^x-keep: 2$/i.test(l))).toBe(true);
    });
  }
});

describe("a response the proxy cannot frame is refused, and its connection never carries another", () => {
  beforeAll(() => {
    scripts.set("/ok", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    scripts.set("/cl-te", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
    scripts.set("/two-cl", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok");
    scripts.set("/te-gzip", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n");
    scripts.set("/bad-chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n");
    scripts.set("/fold", "HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 2\r\n\r\nok");
    scripts.set("/nul", "HTTP/1.1 200 OK\r\nX-A: a\x00b\r\nContent-Length: 2\r\n\r\nok");
    scripts.set("/101", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: evil\r\n\r\nraw bytes");
    // One response, and right behind it another that no request asked for.
    scripts.set("/desync", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nINJECTED");
    scripts.set("/late", (c) => {
      c.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
      setTimeout(() => c.write("HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nINJECTED"), 30);
    });
  });

  for (const way of ways) {
    for (const path of ["/cl-te", "/two-cl", "/te-gzip", "/bad-chunk", "/fold", "/nul", "/101"]) {
      test(`${way}: ${path} → not passed on (502 or cut), and its connection is never used again`, async () => {
        const r = await exchange(way, `GET ${U()}${path} HTTP/1.1\r\n${H()}Connection: close\r\n\r\n`);
        const p = parse(r.out);
        expect({ path, status: p?.status ?? "cut", closed: r.closed }).toEqual({ path, status: p ? 502 : "cut", closed: true });
        const bad = servedBy.get(path);
        for (let i = 0; i < 3; i++) {
          const next = parse((await exchange(way, `GET ${U()}/ok HTTP/1.1\r\n${H()}Connection: close\r\n\r\n`)).out);
          expect(next?.body.toString()).toBe("ok");
          expect(servedBy.get("/ok")).not.toBe(bad);
        }
      });
    }
    for (const path of ["/desync", "/late"]) {
      test(`${way}: ${path}: bytes after a response are never read as the next request's answer`, async () => {
        const first = parse((await exchange(way, `GET ${U()}${path} HTTP/1.1\r\n${H()}Connection: close\r\n\r\n`)).out);
        expect(first?.body.toString()).toBe("ok");
        await Bun.sleep(60);
        for (let i = 0; i < 3; i++) {
          const r = await exchange(way, `GET ${U()}/ok HTTP/1.1\r\n${H()}Connection: close\r\n\r\n`);
          expect(r.out.toString("latin1")).not.toContain("INJECTED");
          expect(parse(r.out)?.body.toString()).toBe("ok");
        }
      });
    }
  }
});

describe("connections", () => {
  for (const way of ways) {
    test(`${way}: a refusal honours Connection: close, and says why`, async () => {
      for (const [text, status] of [
        [`GET http://evil.test:${port}/ HTTP/1.1\r\nHost: evil.test:${port}\r\nConnection: close\r\n\r\n`, 403],
        [`GET ${U()}/ HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n`, 400],
        [`GET https://ok.test/ HTTP/1.1\r\nHost: ok.test\r\nConnection: close\r\n\r\n`, 400],
      ] as const) {
        const r = await exchange(way, text);
        const p = parse(r.out);
        expect({ text, status: p?.status, closed: r.closed, why: (p?.body.length ?? 0) > 20 }).toEqual({ text, status, closed: true, why: true });
      }
    });
    test(`${way}: one client connection carries requests one after another, each answered; Connection: close ends it`, async () => {
      scripts.set("/ok", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
      const s = open(way);
      let got = Buffer.alloc(0);
      s.on("data", (d: Buffer) => (got = Buffer.concat([got, d])));
      const closed = new Promise<void>((r) => s.on("close", () => r()));
      for (let i = 0; i < 3; i++) {
        const before = got.length;
        s.write(`GET ${U()}/ok HTTP/1.1\r\n${H()}${i === 2 ? "Connection: close\r\n" : ""}\r\n`);
        for (let w = 0; w < 100 && !(got.length > before && parse(got.subarray(before))?.body.length === 2); w++) await Bun.sleep(10);
        expect(parse(got.subarray(before))?.body.toString()).toBe("ok");
      }
      await closed;
    });
    test(`${way}: a pooled connection the server closed is replaced for a request that can be sent again, not for one with a body`, async () => {
      // The server answers the first request on a connection and closes on the second without a word.
      scripts.set("/once", (c, _req, nth) => (nth === 1 ? c.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") : c.destroy()));
      // Each GET after the first finds the pooled connection, which the server then closes: the GET is sent again.
      for (let i = 0; i < 3; i++) {
        const r = parse((await exchange(way, `GET ${U()}/once HTTP/1.1\r\n${H()}Connection: close\r\n\r\n`)).out);
        expect({ i, body: r?.body.toString() }).toEqual({ i, body: "ok" });
      }
      // A request with a body is not: it may have been acted on. The client hears the connection was lost.
      const withBody = parse((await exchange(way, `POST ${U()}/once HTTP/1.1\r\n${H()}Content-Length: 2\r\nConnection: close\r\n\r\nhi`)).out);
      expect(withBody?.status).toBe(502);
    });
  }
  if (lib) {
    test("port: a client that ends with half a request after a whole one gets the answer, then the close (not the head timeout)", async () => {
      scripts.set("/ok", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
      const r = await exchange("port", `GET ${U()}/ok HTTP/1.1\r\n${H()}\r\nGET ${U()}/ok HTTP/1.1\r\nHost: ok`, true);
      expect([parse(r.out)?.body.toString(), r.closed]).toEqual(["ok", true]);
    });
    test("port: an origin-form request (/health) is served, also after a proxied request on the same connection", async () => {
      scripts.set("/ok", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
      const r = await exchange("port", `GET ${U()}/ok HTTP/1.1\r\n${H()}\r\nGET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      const first = parse(r.out);
      expect(first?.body.toString()).toBe("ok");
      const second = parse(first!.rest);
      expect([second?.status, JSON.parse(second?.body.toString() ?? "{}")]).toEqual([200, { ok: true, sandbox: "demo" }]);
    });
  }
});
