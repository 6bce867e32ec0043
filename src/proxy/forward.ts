// One plain HTTP exchange: a request read by the connection (connection.ts) goes up re-framed, never as the bytes
// that came (its head written by http1.ts, its body passed on as it is read), on a pooled keep-alive connection
// (upstream.ts) to the checked address, or to the proxy's own origin; the answer is written back to the client,
// framed for it (chunked for an HTTP/1.1 client when its length is unknown, to the close for HTTP/1.0).
import type { ProxyContext } from "./context";
import { reachText, type Allowed } from "./decision";
import type { StreamReplacer } from "../core/stream-replace";
import { chunk, LAST_CHUNK, requestHead, responseHead, withoutHopByHop, type Framing, type Header, type RequestHead } from "./http1";
import type { Exchange, UpstreamPool, Via } from "./upstream";

/** The bytes as a Buffer without copying them (Buffer.from of a Uint8Array copies). */
function asBuffer(u: Uint8Array): Buffer {
  return Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
}

/** Pieces shorter than this are joined into one write; longer ones go as they are. */
const JOIN_BELOW = 16 * 1024;

/** Methods whose request, with no body, may be sent again on a fresh connection when a pooled one was closed. */
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** What an exchange needs of the client's connection. */
export interface ClientSide {
  write(data: Buffer): boolean;
  onceDrain(cb: () => void): void;
  /** The client ended its side already: this answer is the connection's last. */
  readonly ended: boolean;
  /** The answer is written: the connection reads its next request, or ends (`close`). */
  answered(close: boolean): void;
  /** It failed before any of the answer went out: sbx's own 502 with `message` goes instead (or `answer`'s). */
  failed(message: string, close: boolean, answer?: (close: boolean) => Buffer): void;
  /** It failed once part of the answer went out: only the connection's end can tell the client. */
  destroy(): void;
}

/** What of an answer's head reaches the client besides its status. */
export interface ShownHead {
  reason: string;
  headers: Header[];
}

/** Where a request goes, and what is told of it. */
export interface Destination {
  pool: UpstreamPool;
  address: string;
  port: number;
  /** Through the parent proxy, asking it for this name (upstream.ts `Via`), or straight to `address`. */
  via?: Via | null;
  /** The request target as it goes up (origin-form). */
  target: string;
  /** The Host header sent (the checked authority), or null to pass the client's own on (the proxy's origin). */
  host: string | null;
  /** The exchange is over: `ok` when its answer was whole. Called once. */
  done(ok: boolean, bytesUp: number, bytesDown: number): void;
  /** What the client is told (a 502's text, and the caller's event) when it failed before the answer began. */
  failure(why: string, connected: boolean): string;
  /** The whole answer to give for that failure instead of sbx's plain 502 (the LLM proxy's is in its API's shape). */
  failedAnswer?(message: string, close: boolean): Buffer;
  /**
   * Sees the exchange as it passes, and says what goes (the LLM key proxy, llm/handler.ts): the request's headers as
   * sent up (hop-by-hop ones gone: credentials stripped, the host's added), its body read, the answer's head as the
   * client gets it, its body once written. Nothing is held: each is called as the bytes go by.
   */
  tap?: {
    headers(sent: Header[]): Header[];
    requestBody(data: Buffer): void;
    requestEnd(): void;
    answerHead(status: number, head: ShownHead): ShownHead;
    /** Answer body bytes, after they were written to the client. */
    answerBody(data: Buffer): void;
  };
  /**
   * Rewrites on the way (a terminated request to a host a secret is bound to, terminate.ts): the request body's
   * placeholders swapped for values, and the answer's values turned back into placeholders, head and body. Each keeps
   * a byte count (placeholders are as long as their values), so the framing stays as it was.
   */
  rewrite?: {
    requestBody: StreamReplacer | null;
    /**
     * The answer's head as the client gets it: its reason phrase and every header's name and value (any of them may
     * hold a value). Throws when the answer cannot be checked (an encoded body): the client gets a 502 that says why.
     */
    responseHead(head: ShownHead): ShownHead;
    responseBody: StreamReplacer;
  };
}

/**
 * One request and its answer. The request's body is the connection's to read (`write`, `end`); the answer's head waits
 * for its first body bytes (one write, not two), so a server that fails before its body still gets the client a 502.
 */
export class ForwardExchange {
  private readonly x: Exchange;
  private pending: Buffer | null = null;
  /** How the answer's body goes to the client. */
  private to: "length" | "chunked" | "close" = "length";
  private close: boolean;
  /** Part of the answer was written to the client. */
  private responding = false;
  private over = false;
  private bytesUp = 0;
  private bytesDown = 0;

  /** Starts it, or says why its head cannot be written (a 400). */
  static start(client: ClientSide, req: RequestHead, dest: Destination): ForwardExchange | { why: string } {
    // `Expect: 100-continue` is answered here, once the request is allowed; the server gets the body at once.
    const expects = req.headers.some(([n, val]) => n.toLowerCase() === "expect" && val.toLowerCase() === "100-continue");
    let head: string;
    try {
      const sent = withoutHopByHop(req.headers).filter(([n]) => {
        const k = n.toLowerCase();
        return (dest.host === null || k !== "host") && !(expects && k === "expect");
      });
      // The Host sent is the authority checked, whatever the client's said (it said the same, or was refused).
      const all = dest.host === null ? sent : [["Host", dest.host] as Header, ...sent];
      head = requestHead(req.method, dest.target, dest.tap ? dest.tap.headers(all) : all, req.framing);
    } catch (e) {
      dest.done(false, 0, 0);
      return { why: (e as Error).message };
    }
    if (expects && req.framing !== "none") client.write(Buffer.from("HTTP/1.1 100 Continue\r\n\r\n", "latin1"));
    return new ForwardExchange(client, req, dest, head);
  }

  private constructor(
    private readonly client: ClientSide,
    req: RequestHead,
    private readonly dest: Destination,
    head: string,
  ) {
    this.close = !req.keepAlive || client.ended;
    const framing = req.framing;
    this.x = dest.pool.request(
      { address: dest.address, port: dest.port, via: dest.via ?? null, method: req.method, head, body: framing === "none" ? "none" : framing === "chunked" ? "chunked" : "length", replayable: framing === "none" && SAFE_METHODS.has(req.method) },
      {
        head: (h, length) => {
          const given: ShownHead = { reason: h.reason, headers: withoutHopByHop(h.headers) };
          const tapped = dest.tap ? dest.tap.answerHead(h.status, given) : given;
          const { reason, headers } = dest.rewrite ? dest.rewrite.responseHead(tapped) : tapped;
          let clientFraming: Framing;
          if (length === 0) {
            // No body: a length the server gave (a HEAD's, a 304's) goes on as it is.
            const given = h.headers.find(([n]) => n.toLowerCase() === "content-length")?.[1];
            clientFraming = given === undefined ? "none" : { length: Number(given) };
            this.to = "length";
          } else if (typeof length === "number") {
            clientFraming = { length };
            this.to = "length";
          } else if (req.version === "1.1") {
            clientFraming = "chunked";
            this.to = "chunked";
          } else {
            // An HTTP/1.0 client knows no chunks: the body ends with the connection.
            clientFraming = "none";
            this.to = "close";
            this.close = true;
          }
          this.pending = Buffer.from(responseHead(h.status, reason, headers, clientFraming, this.close), "latin1");
        },
        body: (data) => {
          this.bytesDown += data.length;
          // Scanned in pieces: the bulk of a chunk goes on as a view of it, never copied to join what was held back.
          const parts = dest.rewrite ? dest.rewrite.responseBody.pushParts(data) : [data];
          if (parts.length === 0) return true;
          const more = this.out(parts.flatMap((p) => this.encode(asBuffer(p))));
          if (dest.tap) for (const p of parts) dest.tap.answerBody(asBuffer(p));
          if (more) return true;
          // Paused at each full write, resumed at the drain: once per upstream read (≈512 KB). Letting 2 MB wait in the
          // client's buffer instead was measured (bench/terminate): 2-3x the proxy's CPU per 50 MB, Bun's TLS socket
          // handling a backed-up write buffer far worse than a pause.
          client.onceDrain(() => this.x.resume());
          return false;
        },
        end: (last) => {
          if (last) this.bytesDown += last.length;
          const rw = dest.rewrite?.responseBody;
          const tail = rw ? Buffer.concat([rw.push(last ?? new Uint8Array(0)), rw.end()]) : last;
          this.out([...(tail && tail.length > 0 ? this.encode(tail) : []), ...(this.to === "chunked" ? [LAST_CHUNK] : [])]);
          if (tail && tail.length > 0) dest.tap?.answerBody(tail);
          this.finish(true);
          client.answered(this.close);
        },
        error: (why, connected) => {
          this.finish(false);
          // Part of the answer went out: the client can only be told by the connection's end.
          if (this.responding) return void client.destroy();
          this.pending = null;
          const message = dest.failure(why, connected);
          client.failed(message, this.close, dest.failedAnswer ? (close) => dest.failedAnswer!(message, close) : undefined);
        },
      },
    );
  }

  private out(parts: Buffer[]): boolean {
    const all = this.pending ? [this.pending, ...parts] : parts;
    this.pending = null;
    this.responding = true;
    if (all.length === 1) return this.client.write(all[0]!);
    // Small pieces (a head, chunk framing, a placeholder) joined into one write; a large one written as it is, not
    // copied to join them. The last write says whether the client's side is full.
    let ok = true;
    let small: Buffer[] = [];
    for (const p of all) {
      if (p.length < JOIN_BELOW) {
        small.push(p);
        continue;
      }
      if (small.length > 0) this.client.write(small.length === 1 ? small[0]! : Buffer.concat(small));
      small = [];
      ok = this.client.write(p);
    }
    if (small.length > 0) ok = this.client.write(small.length === 1 ? small[0]! : Buffer.concat(small));
    return ok;
  }

  private encode(data: Buffer): Buffer[] {
    return this.to === "chunked" ? chunk(data) : [data];
  }

  private finish(ok: boolean): void {
    if (this.over) return;
    this.over = true;
    this.dest.done(ok, this.bytesUp, this.bytesDown);
  }

  /** Whether part of the answer went out already. */
  get began(): boolean {
    return this.responding;
  }

  /** Request body bytes; false: wait for `drained`. */
  write(data: Buffer): boolean {
    this.bytesUp += data.length;
    this.dest.tap?.requestBody(data);
    const rw = this.dest.rewrite?.requestBody;
    return this.x.write(rw ? asBuffer(rw.push(data)) : data);
  }

  drained(cb: () => void): void {
    this.x.drained(cb);
  }

  /** The request body is whole. */
  end(): void {
    const rw = this.dest.rewrite?.requestBody;
    if (rw) this.x.write(asBuffer(rw.end()));
    this.dest.tap?.requestEnd();
    this.x.end();
  }

  /** Gives up (the client went away, or its body was refused): nothing more is written. */
  cancel(): void {
    if (this.over) return;
    this.x.abort();
    this.finish(false);
  }
}

/**
 * An allowed plain request's destination: exactly the checked address (an IP: no lookup happens), its Host the checked
 * authority; counted in flight, and told as a `closed` event when its answer was whole or an `error` when it failed.
 */
export function egressDestination(ctx: ProxyContext, v: Allowed, method: string, url: URL, target?: string): Destination {
  const started = performance.now();
  ctx.inFlight++;
  return {
    pool: ctx.pool,
    address: v.address,
    port: v.port,
    via: v.parent ? { route: v.parent, host: v.host } : null,
    target: target ?? `${url.pathname}${url.search}`,
    host: url.host,
    done(ok, bytesUp, bytesDown) {
      ctx.inFlight--;
      if (!ok) return;
      const { host, port, address, source, pattern, path } = v;
      ctx.emit({ type: "closed", sandbox: ctx.sandbox, path, method, host, port, address, ...(v.parent ? { via: v.parent.endpoint.shown } : {}), source, pattern, target: url.pathname, bytesUp, bytesDown, durationMs: Math.round(performance.now() - started), at: Date.now() });
    },
    failure(why, connected) {
      const message = connected ? `${reachText(v)} sent ${why}` : `could not reach ${reachText(v)}: ${why}`;
      ctx.emit({ type: "error", sandbox: ctx.sandbox, path: v.path, method, host: v.host, port: v.port, address: v.address, ...(v.parent ? { via: v.parent.endpoint.shown } : {}), message, at: Date.now() });
      return message;
    },
  };
}
