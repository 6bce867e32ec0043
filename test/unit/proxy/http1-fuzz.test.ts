// Property and fuzz tests of the proxy's HTTP/1.1 framing (src/proxy/http1.ts), seeded so a failure can be replayed
// (SBX_FUZZ_SEED=n). Well-formed messages, cut anywhere, read back as they were written; mutated ones never throw, and
// whatever a reader accepts is unambiguous and can be written again without a line the reader did not see.
import { describe, expect, test } from "bun:test";
import { BodyReader, readRequestHead, requestHead, ResponseReader, type Header, type ResponseStep } from "../../../src/proxy/http1";
import { rng } from "../../support/rng";

const SEED = Number(process.env.SBX_FUZZ_SEED ?? 21);
const ROUNDS = 1500;


const TCHAR = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

function gen(r: () => number) {
  const int = (n: number) => Math.floor(r() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
  const token = (max = 12) => Array.from({ length: 1 + int(max) }, () => pick([...TCHAR])).join("");
  const value = () => {
    const chars = Array.from({ length: int(30) }, () => String.fromCharCode(r() < 0.9 ? 0x21 + int(94) : r() < 0.5 ? 0x20 : 0x80 + int(128)));
    return chars.join("").trim();
  };
  const headers = (): Header[] => {
    const reserved = new Set(["content-length", "transfer-encoding", "host", "connection"]);
    return Array.from({ length: int(6) }, () => [token(), value()] as Header).filter(([n]) => !reserved.has(n.toLowerCase()));
  };
  const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => int(256)));
  /** The body as chunks: random sizes, hex in either case, leading zeros, extensions, trailers. */
  const chunked = (body: Buffer): Buffer => {
    const parts: Buffer[] = [];
    let at = 0;
    while (at < body.length) {
      const n = Math.min(body.length - at, 1 + int(700));
      let hex = n.toString(16);
      if (r() < 0.3) hex = hex.toUpperCase();
      if (r() < 0.2) hex = `00${hex}`;
      const ext = r() < 0.2 ? `;${token(5)}=${token(5)}` : "";
      parts.push(Buffer.from(`${hex}${ext}\r\n`, "latin1"), body.subarray(at, at + n), Buffer.from("\r\n", "latin1"));
      at += n;
    }
    const trailers = r() < 0.3 ? `${token()}: ${value()}\r\n` : "";
    parts.push(Buffer.from(`0\r\n${trailers}\r\n`, "latin1"));
    return Buffer.concat(parts);
  };
  /** Cuts a buffer into pieces at random places (one byte at a time, sometimes). */
  const cut = (buf: Buffer): Buffer[] => {
    const out: Buffer[] = [];
    let at = 0;
    while (at < buf.length) {
      const n = r() < 0.1 ? 1 : 1 + int(Math.max(1, buf.length / 3));
      out.push(buf.subarray(at, at + n));
      at += n;
    }
    return out;
  };
  return { int, pick, token, value, headers, bytes, chunked, cut };
}

describe(`framing properties (seed ${SEED})`, () => {
  test("a response, however it is cut, reads back as written: status, body, and whether the connection is reusable", () => {
    const r = rng(SEED);
    const g = gen(r);
    for (let i = 0; i < ROUNDS; i++) {
      const status = g.pick([200, 201, 203, 206, 301, 404, 418, 500, 599]);
      const body = g.bytes(g.int(3000));
      const framing = g.pick(["length", "chunked", "close"] as const);
      const closeAsked = r() < 0.2;
      const lines = [`HTTP/1.1 ${status} ${g.token()} ${g.token()}`, ...g.headers().map(([n, v]) => `${n}: ${v}`)];
      if (closeAsked) lines.push("Connection: close");
      if (framing === "length") lines.push(`Content-Length: ${body.length}`);
      if (framing === "chunked") lines.push(`Transfer-Encoding: ${g.pick(["chunked", "Chunked", "CHUNKED"])}`);
      const wire = Buffer.concat([Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1"), framing === "chunked" ? g.chunked(body) : body]);
      const reader = new ResponseReader("GET");
      const steps: ResponseStep[] = [];
      for (const piece of g.cut(wire)) steps.push(...reader.push(piece));
      if (framing === "close") steps.push(...reader.eof());
      const errors = steps.filter((s) => s.kind === "error");
      expect({ i, errors }).toEqual({ i, errors: [] });
      const head = steps.find((s) => s.kind === "head");
      const got = Buffer.concat(steps.flatMap((s) => (s.kind === "body" ? [s.data] : [])));
      const end = steps.find((s) => s.kind === "end");
      expect({ i, status: head?.kind === "head" && head.head.status, same: got.equals(body), end }).toEqual({
        i,
        status,
        same: true,
        end: { kind: "end", reusable: framing !== "close" && !closeAsked },
      });
    }
  });

  test("a request head, however it is cut, reads back as written, and its body after it", () => {
    const r = rng(SEED + 1);
    const g = gen(r);
    for (let i = 0; i < ROUNDS; i++) {
      const method = g.pick(["GET", "POST", "PUT", "DELETE", "OPTIONS", g.token(8)]);
      const target = `http://${g.token(10).toLowerCase().replace(/[^a-z0-9]/g, "a")}.test/${encodeURIComponent(g.value())}`;
      const headers = g.headers();
      const body = g.bytes(g.int(2000));
      const framing = g.pick(["none", "length", "chunked"] as const);
      const lines = [`${method} ${target} HTTP/1.1`, ...headers.map(([n, v]) => `${n}: ${v}`)];
      if (framing === "length") lines.push(`Content-Length: ${body.length}`);
      if (framing === "chunked") lines.push("Transfer-Encoding: chunked");
      const head = Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1");
      const wire = Buffer.concat([head, framing === "none" ? Buffer.alloc(0) : framing === "chunked" ? g.chunked(body) : body, Buffer.from("NEXT")]);
      let buf = Buffer.alloc(0);
      let read: ReturnType<typeof readRequestHead> = { kind: "more" };
      const pieces = g.cut(wire);
      while (read.kind === "more" && pieces.length > 0) {
        buf = Buffer.concat([buf, pieces.shift()!]);
        read = readRequestHead(buf);
      }
      if (read.kind !== "head") throw new Error(`round ${i}: ${JSON.stringify(read)}`);
      expect({ i, method: read.head.method, target: read.head.target, headers: read.head.headers.slice(0, headers.length) }).toEqual({ i, method, target, headers });
      let rest = Buffer.concat([buf.subarray(read.size), ...pieces]);
      if (framing !== "none") {
        const reader = new BodyReader(read.head.framing === "chunked" ? "chunked" : (read.head.framing as { length: number }));
        const out = reader.read(rest);
        if ("why" in out) throw new Error(`round ${i}: ${out.why}`);
        expect({ i, same: Buffer.concat(out.data).equals(body), done: reader.done }).toEqual({ i, same: true, done: true });
        rest = rest.subarray(out.used);
      }
      expect(rest.toString()).toBe("NEXT");
    }
  });
});

describe(`framing under mutation (seed ${SEED})`, () => {
  /** A few random edits: bytes that matter to framing (CR, LF, NUL, space, tab, colon, comma, digits, hex) or any. */
  function mutate(r: () => number, buf: Buffer): Buffer {
    const g = gen(r);
    const bytes = [...buf];
    const n = 1 + g.int(3);
    for (let k = 0; k < n; k++) {
      const at = g.int(bytes.length + 1);
      const byte = r() < 0.7 ? g.pick([0x0d, 0x0a, 0x00, 0x20, 0x09, 0x3a, 0x2c, 0x30, 0x31, 0x61, 0x66, 0x7f, 0x0b, 0x0c]) : g.int(256);
      const op = g.int(3);
      if (op === 0) bytes.splice(at, 0, byte);
      else if (op === 1) bytes.splice(at, 1);
      else bytes[Math.min(at, bytes.length - 1)] = byte;
    }
    return Buffer.from(bytes);
  }
  const REQUESTS = [
    "POST http://a.test/x HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhello",
    "POST http://a.test/x HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    "GET http://a.test/x HTTP/1.1\r\nHost: a.test\r\nConnection: keep-alive\r\n\r\nGET http://b.test/ HTTP/1.1\r\n\r\n",
  ];

  test("whatever request head is accepted is unambiguous and is written again line for line", () => {
    const r = rng(SEED + 2);
    let accepted = 0;
    for (let i = 0; i < ROUNDS * 4; i++) {
      const wire = mutate(r, Buffer.from(REQUESTS[i % REQUESTS.length]!, "latin1"));
      const read = readRequestHead(wire);
      if (read.kind !== "head") continue;
      accepted++;
      const { head } = read;
      const names = head.headers.map(([n]) => n.toLowerCase());
      expect({ i, cl: names.filter((n) => n === "content-length").length <= 1, te: names.filter((n) => n === "transfer-encoding").length <= 1, both: names.includes("content-length") && names.includes("transfer-encoding") }).toEqual({ i, cl: true, te: true, both: false });
      for (const [n, v] of head.headers) expect({ i, n, ok: TOKEN.test(n) && VALUE.test(v) }).toEqual({ i, n, ok: true });
      expect({ i, target: /^[\x21-\x7e]+$/.test(head.target) }).toEqual({ i, target: true });
      // Written again (as the proxy would, to an origin-form path), it reads back as the same lines, and no more.
      const again = requestHead(head.method, "/", head.headers, head.framing);
      const back = readRequestHead(Buffer.from(again, "latin1"));
      if (back.kind !== "head") throw new Error(`round ${i}: ${JSON.stringify(back)}`);
      expect({ i, size: back.size, headers: back.head.headers.filter(([n]) => !/^(content-length|transfer-encoding)$/i.test(n)) }).toEqual({
        i,
        size: again.length,
        headers: head.headers.filter(([n]) => !/^(content-length|transfer-encoding)$/i.test(n)),
      });
      if (head.framing !== "none") new BodyReader(head.framing === "chunked" ? "chunked" : head.framing).read(wire.subarray(read.size));
    }
    // The mutations are not all fatal: some reach the accepting side (else this test would prove nothing).
    expect(accepted).toBeGreaterThan(100);
  });

  test("a mutated response never throws, and its steps are in order: one head, body, then one end or error", () => {
    const r = rng(SEED + 3);
    const RESPONSES = [
      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhello",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: 1\r\n\r\n",
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n",
    ];
    const g = gen(r);
    for (let i = 0; i < ROUNDS * 4; i++) {
      const wire = mutate(r, Buffer.from(RESPONSES[i % RESPONSES.length]!, "latin1"));
      const reader = new ResponseReader(g.pick(["GET", "HEAD"]));
      const steps: ResponseStep[] = [];
      for (const piece of g.cut(wire)) steps.push(...reader.push(piece));
      steps.push(...reader.eof());
      // h: head, b: body, e: end or error.
      const kinds = steps.map((s) => (s.kind === "head" ? "h" : s.kind === "body" ? "b" : "e")).join("");
      expect({ i, kinds, ok: /^(hb*)?e$/.test(kinds) }).toEqual({ i, kinds, ok: true });
    }
  });
});
