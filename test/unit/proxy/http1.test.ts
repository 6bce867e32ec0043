// The proxy's strict HTTP/1.1 framing (src/proxy/http1.ts): what a request head and a response are taken to be, what
// is refused, and the heads the proxy writes. Hostile inputs first; the property tests are in http1-fuzz.test.ts.
import { describe, expect, test } from "bun:test";
import { BodyReader, readRequestHead, requestHead, ResponseReader, responseHead, type ResponseStep } from "../../../src/proxy/http1";

const b = (s: string) => Buffer.from(s, "latin1");

/** Everything a response reader made of `text`, pushed in one piece, then (optionally) the end of the connection. */
function readAll(method: string, text: string, eof = false): { status?: number; body: string; end?: boolean; error?: string } {
  const r = new ResponseReader(method);
  const steps: ResponseStep[] = [...r.push(b(text)), ...(eof ? r.eof() : [])];
  const out: { status?: number; body: string; end?: boolean; error?: string } = { body: "" };
  for (const s of steps) {
    if (s.kind === "head") out.status = s.head.status;
    else if (s.kind === "body") out.body += s.data.toString("latin1");
    else if (s.kind === "end") out.end = s.reusable;
    else out.error = s.why;
  }
  return out;
}

describe("request heads", () => {
  test("absolute-form, authority-form and origin-form are read with their framing and keep-alive", () => {
    const r = readRequestHead(b("GET http://a.test/x?y HTTP/1.1\r\nHost: a.test\r\nAccept: */*\r\n\r\nNEXT"));
    expect(r).toEqual({
      kind: "head",
      size: 61,
      head: { method: "GET", target: "http://a.test/x?y", version: "1.1", headers: [["Host", "a.test"], ["Accept", "*/*"]], framing: "none", keepAlive: true },
    });
    const c = readRequestHead(b("CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n"));
    expect(c.kind === "head" && c.head.target).toBe("a.test:443");
    const p = readRequestHead(b("POST /llm/x HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc"));
    expect(p.kind === "head" && [p.head.framing, p.head.keepAlive]).toEqual([{ length: 3 }, false]);
    const k = readRequestHead(b("GET http://a.test/ HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
    expect(k.kind === "head" && k.head.keepAlive).toBe(true);
    const t = readRequestHead(b("POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: Chunked\r\nConnection: close\r\n\r\n"));
    expect(t.kind === "head" && [t.head.framing, t.head.keepAlive]).toEqual(["chunked", false]);
  });

  test("a head not yet whole is 'more'; empty lines before a request line are skipped", () => {
    expect(readRequestHead(b("GET http://a.test/ HTTP/1.1\r\nHost: a"))).toEqual({ kind: "more" });
    expect(readRequestHead(b(""))).toEqual({ kind: "more" });
    const r = readRequestHead(b("\r\n\r\nGET http://a.test/ HTTP/1.1\r\n\r\n"));
    expect(r.kind === "head" && r.size).toBe(35);
  });

  const refused: [string, string][] = [
    ["CL and TE", "POST http://a/ HTTP/1.1\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n"],
    ["two CLs", "POST http://a/ HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n"],
    ["a CL list", "POST http://a/ HTTP/1.1\r\nContent-Length: 2, 2\r\n\r\n"],
    ["a signed CL", "POST http://a/ HTTP/1.1\r\nContent-Length: +2\r\n\r\n"],
    ["a CL of 16 digits", "POST http://a/ HTTP/1.1\r\nContent-Length: 1234567890123456\r\n\r\n"],
    ["TE xchunked", "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: xchunked\r\n\r\n"],
    ["TE chunked, identity", "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked, identity\r\n\r\n"],
    ["TE gzip, chunked", "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"],
    ["two TEs", "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"],
    ["TE in HTTP/1.0", "POST http://a/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"],
    ["space before the colon", "GET http://a/ HTTP/1.1\r\nHost : a\r\n\r\n"],
    ["obs-fold", "GET http://a/ HTTP/1.1\r\nX: a\r\n b\r\n\r\n"],
    ["a bare LF", "GET http://a/ HTTP/1.1\nHost: a\n\n"],
    ["a bare LF after a CRLF line", "GET http://a/ HTTP/1.1\r\nHost: a\n"],
    ["a bare CR in a value", "GET http://a/ HTTP/1.1\r\nX: a\rb\r\n\r\n"],
    ["a bare CR in the request line", "GET http://a/\r HTTP/1.1\r\n\r\n"],
    ["NUL in a value", "GET http://a/ HTTP/1.1\r\nX: a\x00b\r\n\r\n"],
    ["DEL in a value", "GET http://a/ HTTP/1.1\r\nX: a\x7fb\r\n\r\n"],
    ["a control character in a name", "GET http://a/ HTTP/1.1\r\nX\x01: a\r\n\r\n"],
    ["no name", "GET http://a/ HTTP/1.1\r\n: a\r\n\r\n"],
    ["two Host headers", "GET http://a/ HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"],
    ["HTTP/0.9", "GET http://a/\r\n\r\n"],
    ["CR LF inside the target", "GET http://a/x\r\nX-Injected: y HTTP/1.1\r\n\r\n"],
    ["HTTP/2.0 on HTTP/1", "GET http://a/ HTTP/2.0\r\n\r\n"],
    ["HTTP/1.2", "GET http://a/ HTTP/1.2\r\n\r\n"],
    ["lower-case version", "GET http://a/ http/1.1\r\n\r\n"],
    ["two spaces", "GET  http://a/ HTTP/1.1\r\n\r\n"],
    ["a tab for a space", "GET\thttp://a/ HTTP/1.1\r\n\r\n"],
    ["a space in the target", "GET http://a/x y HTTP/1.1\r\n\r\n"],
    ["a non-ASCII target", "GET http://a/\xe9 HTTP/1.1\r\n\r\n"],
    ["a method that is not a token", "G@T http://a/ HTTP/1.1\r\n\r\n"],
    ["HTTP/2's preface, whole", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"],
    ["HTTP/2's preface, its start", "PRI * HTTP/2.0\r\n"],
    ["an oversized head", `GET http://a/ HTTP/1.1\r\nX: ${"a".repeat(17_000)}\r\n\r\n`],
    ["an oversized head not yet whole", `GET http://a/ HTTP/1.1\r\nX: ${"a".repeat(17_000)}`],
  ];
  for (const [name, text] of refused) {
    test(`refused: ${name}`, () => {
      const r = readRequestHead(b(text));
      expect({ name, kind: r.kind }).toEqual({ name, kind: "refused" });
    });
  }
  test("each refusal says why", () => {
    expect(readRequestHead(b(refused[0]![1]))).toEqual({ kind: "refused", why: "both Content-Length and Transfer-Encoding" });
    expect(readRequestHead(b("GET http://a/\r\n\r\n"))).toEqual({ kind: "refused", why: "a request line with no HTTP/1.x version (HTTP/0.9 is not spoken)" });
  });
});

describe("bodies", () => {
  test("a chunked body: extensions allowed, trailers read and dropped, the bytes after it left alone", () => {
    const r = new BodyReader("chunked");
    const text = b("3;ext=1\r\nabc\r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\nNEXT");
    const out = r.read(text);
    if ("why" in out) throw new Error(out.why);
    expect(Buffer.concat(out.data).toString()).toBe("abc0123456789");
    expect(r.done).toBe(true);
    expect(text.subarray(out.used).toString()).toBe("NEXT");
  });

  test("a size of 12 hex digits (the most) with leading zeros, in either case, is read as it says", () => {
    const r = new BodyReader("chunked");
    const out = r.read(b("00000000000a\r\n0123456789\r\n00000000000B\r\nabcdefghijk\r\n0\r\n\r\n"));
    if ("why" in out) throw new Error(out.why);
    expect([Buffer.concat(out.data).toString(), r.done]).toEqual(["0123456789abcdefghijk", true]);
  });

  test("a chunked body read byte by byte gives the same bytes", () => {
    const r = new BodyReader("chunked");
    const text = b("3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
    let pending = Buffer.alloc(0);
    let got = "";
    for (const byte of text) {
      pending = Buffer.concat([pending, Buffer.from([byte])]);
      const out = r.read(pending);
      if ("why" in out) throw new Error(out.why);
      got += Buffer.concat(out.data).toString();
      pending = pending.subarray(out.used);
    }
    expect([got, r.done, pending.length]).toEqual(["abcde", true, 0]);
  });

  for (const [name, text] of [
    ["a size that is not hex", "zz\r\nab\r\n0\r\n\r\n"],
    ["a size that overflows", "fffffffffffffffff1\r\nab\r\n0\r\n\r\n"],
    ["a signed size", "+2\r\nab\r\n0\r\n\r\n"],
    ["a space before the size", " 2\r\nab\r\n0\r\n\r\n"],
    ["data longer than its size", "2\r\nabc\r\n0\r\n\r\n"],
    ["two other bytes where the CRLF after the data goes", "2\r\nabXY0\r\n\r\n"],
    ["a bare LF after the size", "2\nab\r\n0\r\n\r\n"],
    ["a bare CR after the size", "2\rab\r\n0\r\n\r\n"],
    ["13 hex digits, one past the most", "0000000000002\r\nab\r\n0\r\n\r\n"],
    ["a 0x prefix", "0x2\r\nab\r\n0\r\n\r\n"],
    ["a NUL in an extension", "2;a\x00\r\nab\r\n0\r\n\r\n"],
    ["a folded trailer", "0\r\nX: a\r\n b\r\n\r\n"],
    ["a size line that never ends", "1".repeat(5000)],
  ] as const) {
    test(`chunked, refused: ${name}`, () => {
      const out = new BodyReader("chunked").read(b(text));
      expect({ name, refused: "why" in out }).toEqual({ name, refused: true });
    });
  }

  test("a length body stops at its length; a close-delimited one ends with the connection", () => {
    const r = new BodyReader({ length: 3 });
    const out = r.read(b("abcdef"));
    expect("why" in out ? out : [Buffer.concat(out.data).toString(), out.used, r.done]).toEqual(["abc", 3, true]);
    const c = new BodyReader("close");
    const o2 = c.read(b("xyz"));
    expect("why" in o2 ? null : Buffer.concat(o2.data).toString()).toBe("xyz");
    expect([c.done, c.eof(), c.done]).toEqual([false, true, true]);
    expect(new BodyReader({ length: 3 }).eof()).toBe(false);
  });
});

describe("responses", () => {
  test("Content-Length, chunked, close-delimited, and whether the connection can be used again", () => {
    expect(readAll("GET", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")).toEqual({ status: 200, body: "ok", end: true });
    expect(readAll("GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")).toEqual({ status: 200, body: "ok", end: true });
    expect(readAll("GET", "HTTP/1.1 200 OK\r\n\r\nuntil the end", true)).toEqual({ status: 200, body: "until the end", end: false });
    expect(readAll("GET", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")).toEqual({ status: 200, body: "ok", end: false });
    expect(readAll("GET", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")).toEqual({ status: 200, body: "ok", end: false });
    expect(readAll("GET", "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n")).toEqual({ status: 200, body: "", end: true });
  });

  test("no body for HEAD, 204 and 304, whatever the headers say; bytes after the end make the connection unusable", () => {
    expect(readAll("HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")).toEqual({ status: 200, body: "", end: true });
    expect(readAll("GET", "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n")).toEqual({ status: 204, body: "", end: true });
    expect(readAll("GET", "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n")).toEqual({ status: 304, body: "", end: true });
    expect(readAll("GET", "HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\n\r\n")).toEqual({ status: 204, body: "", end: false });
    expect(readAll("GET", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")).toEqual({ status: 200, body: "ok", end: false });
  });

  test("interim responses are skipped; 101 is refused", () => {
    expect(readAll("POST", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx")).toEqual({ status: 201, body: "x", end: true });
    expect(readAll("GET", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n").error).toMatch(/101/);
  });

  test("a response whose end the server cut is an error, as is no response at all", () => {
    expect(readAll("GET", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nok", true).error).toMatch(/middle/);
    expect(readAll("GET", "", true).error).toMatch(/without a response/);
  });

  for (const [name, text] of [
    ["CL and TE", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n"],
    ["two CLs", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok"],
    ["TE gzip, chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"],
    ["TE chunked, twice", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"],
    ["obs-fold", "HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 0\r\n\r\n"],
    ["a bare LF", "HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n"],
    ["NUL in a value", "HTTP/1.1 200 OK\r\nX: a\x00\r\nContent-Length: 0\r\n\r\n"],
    ["a CR in the reason", "HTTP/1.1 200 O\rK\r\nContent-Length: 0\r\n\r\n"],
    ["HTTP/2", "HTTP/2 200\r\n\r\n"],
    ["a status of two digits", "HTTP/1.1 20 OK\r\n\r\n"],
    ["a bad chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nq\r\n"],
    ["an oversized head", `HTTP/1.1 200 OK\r\nX: ${"a".repeat(17_000)}\r\n\r\n`],
    ["an oversized head not yet whole", `HTTP/1.1 200 OK\r\nX: ${"a".repeat(17_000)}`],
  ] as const) {
    test(`responses, refused: ${name}`, () => {
      expect({ name, error: typeof readAll("GET", text).error }).toEqual({ name, error: "string" });
    });
  }
});

describe("the heads the proxy writes", () => {
  test("framing comes from the framing given, never from the header list", () => {
    expect(requestHead("POST", "/a?b", [["host", "a.test"], ["Content-Length", "99"], ["transfer-encoding", "x"], ["X-A", "1"]], { length: 3 })).toBe(
      "POST /a?b HTTP/1.1\r\nhost: a.test\r\nX-A: 1\r\nContent-Length: 3\r\n\r\n",
    );
    expect(requestHead("GET", "/", [["host", "a"]], "chunked")).toBe("GET / HTTP/1.1\r\nhost: a\r\nTransfer-Encoding: chunked\r\n\r\n");
    expect(requestHead("GET", "/", [["host", "a"]], "none")).toBe("GET / HTTP/1.1\r\nhost: a\r\n\r\n");
    expect(responseHead(200, "OK", [["x", "1"]], { length: 2 }, true)).toBe("HTTP/1.1 200 OK\r\nx: 1\r\nConnection: close\r\nContent-Length: 2\r\n\r\n");
  });

  test("nothing can end a line early", () => {
    expect(() => requestHead("GET", "/a b", [], "none")).toThrow();
    expect(() => requestHead("GET", "/a\r\nX: y", [], "none")).toThrow();
    expect(() => requestHead("G T", "/", [], "none")).toThrow();
    expect(() => requestHead("GET", "/", [["X", "a\r\nHost: evil"]], "none")).toThrow();
    expect(() => requestHead("GET", "/", [["X\r\nY", "a"]], "none")).toThrow();
    expect(() => requestHead("GET", "http://a/", [], "none")).toThrow();
    expect(() => responseHead(200, "OK\r\nX: y", [], "none", false)).toThrow();
    expect(() => responseHead(99, "OK", [], "none", false)).toThrow();
  });
});
