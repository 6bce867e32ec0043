// Strict HTTP/1.1 framing for the proxy's plain-HTTP path, as pure code: the reader of a sandbox's request heads, the
// reader of bodies and of a server's responses, and the writers of the heads the proxy sends either way.
//
// Where a message ends, and whether a connection can carry another, is decided here, and anything a lenient parser
// would have to guess at is refused instead: both Content-Length and Transfer-Encoding, more than one of either, a
// coding other than exactly `chunked`, obs-fold, a bare CR or LF, control characters, a chunk size that is not hex or
// too long, a head over `MAX_HEAD` bytes, a version other than HTTP/1.0 or 1.1 (HTTP/0.9, HTTP/2's preface).

/** The most a head (or a trailer section) may be: node's default `maxHeaderSize`, the limit the proxy had. */
export const MAX_HEAD = 16 * 1024;
/** The most a chunk-size line may be (with its extensions). */
const MAX_CHUNK_LINE = 4 * 1024;
/** Interim (1xx) responses read before a final one; more is an error. */
const MAX_INTERIM = 16;

export type Header = [name: string, value: string];

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A field value's characters (HTAB, SP, VCHAR, obs-text); no CR, LF, NUL or other controls. */
const VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const STATUS_LINE = /^HTTP\/1\.([01]) ([1-9][0-9]{2})(?: ([\t\x20-\x7e\x80-\xff]*))?$/;
const REQUEST_LINE = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+) ([\x21-\x7e]+) HTTP\/1\.([01])$/;
const CHUNK_LINE = /^([0-9A-Fa-f]{1,12})(?:[\t ]*;[\t\x20-\x7e\x80-\xff]*)?$/;
/** A byte's value as a hex digit, or -1. */
const HEX = new Int8Array(256).fill(-1);
for (let v = 0; v < 16; v++) HEX[v.toString(16).charCodeAt(0)] = HEX[v.toString(16).toUpperCase().charCodeAt(0)] = v;
const CRLF = Buffer.from("\r\n", "latin1");
/** The blank line that ends a head. */
const HEAD_END = Buffer.from("\r\n\r\n", "latin1");

/**
 * Pure: the header lines of a head (after its first line), or why they are refused. `lines` are split on CRLF; a bare
 * CR or LF left in one is an error, as is obs-fold (a line that starts with white space) and a space before the colon.
 */
export function parseHeaderLines(lines: readonly string[]): Header[] | string {
  const out: Header[] = [];
  for (const line of lines) {
    if (line.includes("\r") || line.includes("\n")) return "a bare CR or LF in the head";
    if (line.startsWith(" ") || line.startsWith("\t")) return "a folded header line (obs-fold)";
    const colon = line.indexOf(":");
    if (colon <= 0) return "a header line with no name";
    const name = line.slice(0, colon);
    if (!TOKEN.test(name)) return "a header name that is not a token";
    const value = line.slice(colon + 1).replace(/^[\t ]+|[\t ]+$/g, "");
    if (!VALUE.test(value)) return `a control character in the value of ${name}`;
    out.push([name, value]);
  }
  return out;
}

export type Framing = { length: number } | "chunked" | "none";

/** Pure: how a message's body is framed, from its headers, or why that is ambiguous. */
export function bodyFraming(headers: readonly Header[]): Framing | { why: string } {
  let length: string | null = null;
  let coding: string | null = null;
  for (const [name, value] of headers) {
    const n = name.toLowerCase();
    if (n === "content-length") {
      if (length !== null) return { why: "more than one Content-Length" };
      length = value;
    } else if (n === "transfer-encoding") {
      if (coding !== null) return { why: "more than one Transfer-Encoding" };
      coding = value;
    }
  }
  if (length !== null && coding !== null) return { why: "both Content-Length and Transfer-Encoding" };
  if (coding !== null) return coding.toLowerCase() === "chunked" ? "chunked" : { why: "a Transfer-Encoding other than chunked" };
  if (length !== null) return /^[0-9]{1,15}$/.test(length) ? { length: Number(length) } : { why: "a Content-Length that is not a number" };
  return "none";
}

/** Headers that describe one hop, never passed on: a proxy speaks for itself on each side. */
const HOP_BY_HOP = new Set(["connection", "proxy-connection", "keep-alive", "proxy-authorization", "proxy-authenticate", "te", "trailer", "transfer-encoding", "upgrade"]);

/** Pure: a head's headers without the hop-by-hop ones (nor those its Connection header names). */
export function withoutHopByHop(list: readonly Header[]): Header[] {
  let drop: Set<string> = HOP_BY_HOP;
  for (const [k, v] of list) {
    if (k.toLowerCase() !== "connection") continue;
    if (drop === HOP_BY_HOP) drop = new Set(HOP_BY_HOP);
    for (const t of v.split(",")) drop.add(t.trim().toLowerCase());
  }
  return list.filter(([k]) => !drop.has(k.toLowerCase()));
}

/** Pure: text fit for a header line or a reason phrase: printable ASCII only (a refused host may be anything), bounded. */
export function headerSafe(s: string): string {
  return s.replace(/[^\x20-\x7e]/g, "?").slice(0, 300);
}

/** Whether the Connection headers among these name `token` (close, keep-alive). */
export function connectionSays(headers: readonly Header[], token: string): boolean {
  return headers.some(([n, v]) => n.toLowerCase() === "connection" && v.split(",").some((t) => t.trim().toLowerCase() === token));
}

/** A head's lines, split on CRLF only: a bare CR or LF stays inside a line, where the line's check finds it. */
function splitLines(text: string): string[] {
  return text.split("\r\n");
}

// ── bodies ────────────────────────────────────────────────────────────────

/**
 * Reads one body, framed by a length, by chunks, or by the end of the connection. It holds no bytes: `read` takes
 * what the caller has, and says how much of it was used (a chunk-size line not yet whole is left for the next call).
 */
export class BodyReader {
  private left: number;
  private at: "data" | "size" | "crlf" | "trailers" | "close" | "done";
  private trailerBytes = 0;
  private readonly chunked: boolean;

  constructor(framing: { length: number } | "chunked" | "close") {
    if (framing === "close") {
      this.at = "close";
      this.left = 0;
    } else if (framing === "chunked") {
      this.at = "size";
      this.left = 0;
    } else {
      this.at = framing.length === 0 ? "done" : "data";
      this.left = framing.length;
    }
    this.chunked = framing === "chunked";
  }

  get done(): boolean {
    return this.at === "done";
  }

  /** Body bytes in `buf` (slices of it), how many bytes were used, and whether the body is whole; or why not. */
  read(buf: Buffer): { data: Buffer[]; used: number } | { why: string } {
    const data: Buffer[] = [];
    let i = 0;
    while (i < buf.length) {
      if (this.at === "done") break;
      if (this.at === "close") {
        data.push(buf.subarray(i));
        i = buf.length;
        break;
      }
      if (this.at === "data") {
        const n = Math.min(this.left, buf.length - i);
        if (n > 0) data.push(buf.subarray(i, i + n));
        i += n;
        this.left -= n;
        if (this.left === 0) this.at = this.chunked ? "crlf" : "done";
        continue;
      }
      if (this.at === "crlf") {
        if (buf.length - i < 2) {
          if (buf[i] !== 0x0d) return { why: "chunk data longer than its size" };
          break;
        }
        if (buf[i] !== 0x0d || buf[i + 1] !== 0x0a) return { why: "chunk data longer than its size" };
        i += 2;
        this.at = "size";
        continue;
      }
      if (this.at === "size") {
        // The common chunk-size line, hex digits and CRLF, read from the bytes (a stream of small events is mostly these
        // lines: their text and a pattern each cost more than the relay). Anything else is read by the line below.
        const stop = Math.min(buf.length, i + 12);
        let j = i;
        let size = 0;
        while (j < stop) {
          const v = HEX[buf[j]!]!;
          if (v < 0) break;
          size = size * 16 + v;
          j++;
        }
        if (j > i && j + 1 < buf.length && buf[j] === 0x0d && buf[j + 1] === 0x0a) {
          i = j + 2;
          if (size === 0) this.at = "trailers";
          else {
            this.at = "data";
            this.left = size;
          }
          continue;
        }
      }
      // A line: a chunk size, or a trailer field (or the empty line that ends the trailers).
      const end = buf.indexOf(CRLF, i);
      if (end < 0) {
        if (buf.length - i > (this.at === "size" ? MAX_CHUNK_LINE : MAX_HEAD - this.trailerBytes)) return { why: this.at === "size" ? "a chunk-size line that is too long" : `a trailer section over ${MAX_HEAD} bytes` };
        break;
      }
      const line = buf.subarray(i, end).toString("latin1");
      i = end + 2;
      if (this.at === "size") {
        const m = CHUNK_LINE.exec(line);
        if (!m) return { why: "a chunk size that is not hex" };
        const size = parseInt(m[1]!, 16);
        if (size === 0) this.at = "trailers";
        else {
          this.at = "data";
          this.left = size;
        }
        continue;
      }
      // Trailers are read (so the end is found) and dropped.
      this.trailerBytes += line.length + 2;
      if (this.trailerBytes > MAX_HEAD) return { why: `a trailer section over ${MAX_HEAD} bytes` };
      if (line === "") {
        this.at = "done";
        break;
      }
      const h = parseHeaderLines([line]);
      if (typeof h === "string") return { why: `in the trailers: ${h}` };
    }
    return { data, used: i };
  }

  /** The connection ended: the end of a close-delimited body, else a body cut short. */
  eof(): boolean {
    if (this.at === "close") this.at = "done";
    return this.at === "done";
  }
}

// ── requests (from the sandbox) ───────────────────────────────────────────

export interface RequestHead {
  method: string;
  /** As sent: absolute-form (`http://…`), authority-form (CONNECT), origin-form (`/…`) or `*`. */
  target: string;
  version: "1.0" | "1.1";
  headers: Header[];
  /** How its body is framed. */
  framing: Framing;
  /** Whether the client keeps the connection open after this exchange. */
  keepAlive: boolean;
}

export type RequestRead =
  | { kind: "more" }
  | { kind: "head"; head: RequestHead; size: number }
  | { kind: "refused"; why: string };

/**
 * Pure: the request head at the start of `buf` (empty lines before it skipped, as RFC 9112 lets a server do), with
 * the bytes it took; "more" while it is not whole; or why it is refused. At most one Host header.
 */
export function readRequestHead(buf: Buffer): RequestRead {
  let start = 0;
  while (buf.length - start >= 2 && buf[start] === 0x0d && buf[start + 1] === 0x0a) start += 2;
  if (buf.length - start >= 1 && buf[start] === 0x0a) return { kind: "refused", why: "a bare LF where CRLF is required" };
  const end = buf.indexOf(HEAD_END, start);
  if (end < 0) {
    if (buf.length - start > MAX_HEAD) return { kind: "refused", why: `a request head over ${MAX_HEAD} bytes` };
    // A head can be seen to be wrong before it is whole: not HTTP/1 at all (HTTP/2's preface), or a bare LF (with
    // which it may never be whole).
    if (buf.subarray(start, start + 12).toString("latin1") === "PRI * HTTP/2") return { kind: "refused", why: "HTTP/2's preface: this proxy speaks HTTP/1.1" };
    for (let lf = buf.indexOf(0x0a, start); lf >= 0; lf = buf.indexOf(0x0a, lf + 1)) {
      if (buf[lf - 1] !== 0x0d) return { kind: "refused", why: "a bare LF where CRLF is required" };
    }
    return { kind: "more" };
  }
  if (end + 4 - start > MAX_HEAD) return { kind: "refused", why: `a request head over ${MAX_HEAD} bytes` };
  const [first, ...lines] = splitLines(buf.subarray(start, end).toString("latin1"));
  if (first!.startsWith("PRI * HTTP/2")) return { kind: "refused", why: "HTTP/2's preface: this proxy speaks HTTP/1.1" };
  const m = REQUEST_LINE.exec(first!);
  if (!m) {
    if (first!.includes("\r") || first!.includes("\n")) return { kind: "refused", why: "a bare CR or LF in the request line" };
    return { kind: "refused", why: / HTTP\/\d/.test(first!) ? "a request line that is not HTTP/1.0 or HTTP/1.1's" : "a request line with no HTTP/1.x version (HTTP/0.9 is not spoken)" };
  }
  const headers = parseHeaderLines(lines);
  if (typeof headers === "string") return { kind: "refused", why: headers };
  const version = m[3] === "1" ? "1.1" : "1.0";
  const framing = bodyFraming(headers);
  if (typeof framing === "object" && "why" in framing) return { kind: "refused", why: framing.why };
  if (framing === "chunked" && version === "1.0") return { kind: "refused", why: "Transfer-Encoding in an HTTP/1.0 request" };
  if (headers.filter(([n]) => n.toLowerCase() === "host").length > 1) return { kind: "refused", why: "more than one Host header" };
  const keepAlive = version === "1.1" ? !connectionSays(headers, "close") : connectionSays(headers, "keep-alive");
  return { kind: "head", head: { method: m[1]!, target: m[2]!, version, headers, framing: framing as Framing, keepAlive }, size: end + 4 };
}

// ── responses (from the server) ───────────────────────────────────────────

export interface ResponseHead {
  version: "1.0" | "1.1";
  status: number;
  reason: string;
  /** As sent, in order (names as the server spelled them); values latin1, trimmed. */
  headers: Header[];
}

/** What one push made of the bytes: the head, body bytes, the end, or why the response cannot be read. */
export type ResponseStep =
  /** `length`: the body's, as framed: a byte count (0: none), chunked, or until the server closes. */
  | { kind: "head"; head: ResponseHead; length: number | "chunked" | "close" }
  | { kind: "body"; data: Buffer }
  /** The response is whole. `reusable`: the connection may carry another request (nothing else arrived, and it said so). */
  | { kind: "end"; reusable: boolean }
  | { kind: "error"; why: string };

/**
 * Reads one response to a request (of `method`) from the bytes a server sends, pushed as they arrive. It holds only
 * what it has not yet made into steps. After "end" or "error" it takes nothing more; bytes after the end make the
 * connection not reusable.
 */
export class ResponseReader {
  private buf: Buffer = Buffer.alloc(0);
  private body: BodyReader | null = null;
  private state: "head" | "body" | "done" | "failed" = "head";
  private interim = 0;
  private keepAlive = false;

  constructor(private readonly method: string) {}

  /** Whether the response is whole or failed (nothing more is read). */
  get finished(): boolean {
    return this.state === "done" || this.state === "failed";
  }

  /** Bytes from the server. */
  push(data: Buffer): ResponseStep[] {
    if (this.finished) return [];
    this.buf = this.buf.length === 0 ? data : Buffer.concat([this.buf, data]);
    const steps: ResponseStep[] = [];
    if (this.state === "head" && !this.readHead(steps)) return steps;
    if (this.state === "body") this.readBody(steps);
    return steps;
  }

  /** The server closed its side: the end of a close-delimited body, else an error. */
  eof(): ResponseStep[] {
    if (this.finished) return [];
    if (this.state === "body" && this.body!.eof()) {
      this.state = "done";
      return [{ kind: "end", reusable: false }];
    }
    const none = this.state === "head" && this.buf.length === 0 && this.interim === 0;
    return [this.fail(none ? "the server closed the connection without a response" : "the server closed the connection in the middle of the response")];
  }

  private fail(why: string): ResponseStep {
    this.state = "failed";
    this.buf = Buffer.alloc(0);
    return { kind: "error", why };
  }

  private end(steps: ResponseStep[]): void {
    this.state = "done";
    steps.push({ kind: "end", reusable: this.keepAlive && this.buf.length === 0 });
    this.buf = Buffer.alloc(0);
  }

  /** Reads heads (interim ones skipped) until the final one; true once the body is next. */
  private readHead(steps: ResponseStep[]): boolean {
    const bad = (why: string) => {
      steps.push(this.fail(why));
      return false;
    };
    for (;;) {
      const end = this.buf.indexOf(HEAD_END);
      if (end < 0) return this.buf.length > MAX_HEAD ? bad(`a response head over ${MAX_HEAD} bytes`) : false;
      if (end + 4 > MAX_HEAD) return bad(`a response head over ${MAX_HEAD} bytes`);
      const [first, ...lines] = splitLines(this.buf.subarray(0, end).toString("latin1"));
      this.buf = this.buf.subarray(end + 4);
      const m = STATUS_LINE.exec(first!);
      if (!m) return bad("a status line that is not HTTP/1.1's");
      const headers = parseHeaderLines(lines);
      if (typeof headers === "string") return bad(headers);
      const status = Number(m[2]);
      if (status < 200) {
        if (status === 101) return bad("101 Switching Protocols, which was not asked for");
        if (++this.interim > MAX_INTERIM) return bad("too many interim (1xx) responses");
        continue; // an interim response: the final one follows
      }
      const head: ResponseHead = { version: m[1] === "1" ? "1.1" : "1.0", status, reason: m[3] ?? "", headers };
      this.keepAlive = head.version === "1.1" && !connectionSays(headers, "close");
      const f = bodyFraming(headers);
      if (typeof f === "object" && "why" in f) return bad(f.why);
      // No body, whatever the headers say: a response to HEAD, 204 and 304 (RFC 9112 §6.3).
      if (this.method === "HEAD" || status === 204 || status === 304 || (typeof f === "object" && f.length === 0)) {
        steps.push({ kind: "head", head, length: 0 });
        this.end(steps);
        return false;
      }
      if (f === "none") this.keepAlive = false;
      steps.push({ kind: "head", head, length: f === "chunked" ? "chunked" : f === "none" ? "close" : f.length });
      this.body = new BodyReader(f === "none" ? "close" : f);
      this.state = "body";
      return true;
    }
  }

  private readBody(steps: ResponseStep[]): void {
    const r = this.body!.read(this.buf);
    if ("why" in r) return void steps.push(this.fail(r.why));
    for (const d of r.data) steps.push({ kind: "body", data: d });
    this.buf = this.buf.subarray(r.used);
    if (this.body!.done) this.end(steps);
  }
}

// ── heads the proxy writes ────────────────────────────────────────────────

/**
 * Pure: a request head for the server. The caller gives the header list it means to send (Host among it, hop-by-hop
 * ones gone) and the body's framing, which is written here and nowhere else: `Content-Length` when the length is known,
 * `Transfer-Encoding: chunked` when it is not, neither when there is no body. Throws on a method, target, name or
 * value that could end a line early: nothing the sandbox sends can add a line of its own.
 */
export function requestHead(method: string, target: string, headers: readonly Header[], body: Framing): string {
  if (!TOKEN.test(method)) throw new Error("a method that is not a token");
  if (!/^\/[\x21-\x7e]*$/.test(target)) throw new Error("a request target with spaces or control characters");
  return `${method} ${target} HTTP/1.1\r\n${headerBlock(headers, body)}`;
}

/**
 * Pure: a response head for the client: the server's status and headers (hop-by-hop ones already gone), framed as
 * the proxy sends the body (`close`: until the connection ends), and `Connection: close` when it will end after.
 */
export function responseHead(status: number, reason: string, headers: readonly Header[], body: Framing, close: boolean): string {
  if (!(status >= 100 && status <= 999) || !VALUE.test(reason)) throw new Error("a status line that is not one line");
  return `HTTP/1.1 ${status} ${reason}\r\n${headerBlock(close ? [...headers, ["Connection", "close"]] : headers, body)}`;
}

function headerBlock(headers: readonly Header[], body: Framing): string {
  let out = "";
  for (const [name, value] of headers) {
    const n = name.toLowerCase();
    if (n === "content-length" || n === "transfer-encoding") continue;
    if (!TOKEN.test(name) || !VALUE.test(value)) throw new Error(`a header that is not one line: ${name.replace(/[^\x21-\x7e]/g, "?").slice(0, 60)}`);
    out += `${name}: ${value}\r\n`;
  }
  if (body === "chunked") out += "Transfer-Encoding: chunked\r\n";
  else if (body !== "none") out += `Content-Length: ${body.length}\r\n`;
  return `${out}\r\n`;
}

/** One chunk of a chunked body (never the last: an empty buffer would end the body). */
export function chunk(data: Buffer): Buffer[] {
  return [Buffer.from(`${data.length.toString(16)}\r\n`, "latin1"), data, Buffer.from("\r\n", "latin1")];
}

/** The last chunk, with no trailers. */
export const LAST_CHUNK = Buffer.from("0\r\n\r\n", "latin1");
