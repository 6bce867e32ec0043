// One client connection to the proxy, whichever way it came in (the proxy socket, the sandbox's handed-over port, a
// transparent listener's plain-HTTP port): every request on it is read here, strictly (http1.ts), and each is judged
// on its own: a CONNECT is decided (decision.ts) and handed to its carrier (tunnel.ts), a plain request is decided and
// forwarded (forward.ts), an origin-form one goes to the proxy's own endpoints (origin.ts), and every answer sbx makes
// itself is written by refusal.ts.
//
// Its states:
//   reading     waiting for a request head, or the rest of one (bounded by the socket's inactivity timeout)
//   deciding    a request is being checked (the policy, then one lookup); the client is paused
//   exchanging  a request is being answered (forwarded, or by the proxy's own endpoints): its body read, its answer written
//   carried     an allowed CONNECT was handed to its carrier: this reader is done with the connection
//   closing     the connection's last answer is going out; what the client sends now is read and dropped
//   closed      the socket is gone
import type { Socket } from "node:net";
import type { ProxyContext } from "./context";
import { parseAuthority, plainTarget, type Allowed, type Denied, type Site } from "./decision";
import { egressDestination, ForwardExchange, type ClientSide, type Destination } from "./forward";
import { BodyReader, MAX_HEAD, readRequestHead, type RequestHead } from "./http1";
import type { Origin } from "./origin";
import type { OwnAnswer } from "./sbx-endpoints";
import { answer, badGateway, badRequest, cut, endWith, refusal } from "./refusal";

export type ConnectionState = "reading" | "deciding" | "exchanging" | "carried" | "closing" | "closed";

/**
 * How long a connection is kept idle between requests (node:http's default), and how long it waits for a request on a
 * new one or for the rest of a head (a pause that long in the middle, not the whole).
 */
const KEEP_ALIVE_MS = 5_000;
const HEAD_TIMEOUT_MS = 60_000;

/** The way a connection came in: the proxy path (requests name their server; origin-form ones are the proxy's), or a transparent site. */
export type Way =
  | { kind: "proxy"; origin: Origin; plain?: PlainPreparer | null }
  | { kind: "transparent"; site: Site; plain?: PlainPreparer | null }
  | { kind: "terminated"; allowed: Allowed; terminator: RequestPreparer };

/** A request inside a terminated connection as it goes up, or a refusal: a 400's text, or a rule's 403 (`denied`). */
export type Prepared =
  | { ok: true; head: RequestHead; dest: Destination }
  /** `answer`: the whole answer to give instead of a 400 (an origin forwarder's refusal in its API's shape). */
  | { ok: false; message: string; denied?: Denied; answer?: (close: boolean) => Buffer };

/**
 * Origin-form requests the daemon answers by sending them on (the LLM key proxy, llm/handler.ts): each is made ready
 * there (its route, credential and scope judged; refused in its own API's shape), then forwarded like a plain request,
 * by this reader and upstream.ts's pool. Its answer streams as it comes.
 */
export interface OriginForwarder {
  /** Whether an origin-form target is this forwarder's. */
  handles(target: string): boolean;
  prepare(head: RequestHead): Promise<Prepared>;
  /** Its connections are ended (the proxy is closing). */
  close?(): void;
}

/** Makes each request inside a terminated connection ready to go up (terminate.ts). */
export interface RequestPreparer {
  prepare(allowed: Allowed, head: RequestHead): Promise<Prepared>;
}

/** Makes each allowed plain request ready to go up, where the sandbox has secrets bound (terminate.ts). */
export interface PlainPreparer {
  plain(allowed: Allowed, url: URL, head: RequestHead, target: string | undefined): Promise<Prepared>;
}

/** Pure: the path and query of a request target as the client wrote them (an absolute form's, after its authority). */
export function rawTarget(target: string): string {
  if (target.startsWith("/")) return target;
  const m = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/?#]*/.exec(target);
  const rest = m ? target.slice(m[0].length) : target;
  return rest.startsWith("/") ? rest : `/${rest}`;
}

const unambiguous = (why: string) => `sbx proxy: refused: ${why}; send one unambiguous HTTP/1.1 request.\n`;

export class ClientConnection implements ClientSide {
  private st: ConnectionState = "reading";
  /** What the client sent that is not yet read: the rest of a head, a body, the next requests. */
  private buf: Buffer = Buffer.alloc(0);
  private clientEnded = false;
  /** The body of the request under way, while it is read. */
  private body: BodyReader | null = null;
  private exchange: ForwardExchange | null = null;
  /** Ends what is under way (a forwarded exchange, a long poll) when the client goes. */
  private cancel: (() => void) | null = null;
  /**
   * The request under way is to the proxy itself: a client that ends its side meanwhile has gone (as node:http has it,
   * which the origin handler was written for), and its answer is given up. A forwarded request is answered still.
   */
  private toSelf = false;
  /** The inactivity timeout set now (0: none). */
  private waiting = 0;
  /** The request at the head of `buf` has had its turn (ctx.turn). */
  private paid = false;

  constructor(
    private readonly s: Socket,
    private readonly ctx: ProxyContext,
    private readonly way: Way,
  ) {
    s.on("error", () => s.destroy());
    s.on("timeout", () => {
      if (this.waiting !== 0) s.destroy();
    });
    s.on("data", this.onData);
    s.on("end", this.onEnd);
    s.once("close", () => {
      this.st = "closed";
      this.stopWaiting();
      this.cancel?.();
    });
    this.wait(HEAD_TIMEOUT_MS);
  }

  get state(): ConnectionState {
    return this.st;
  }

  private get site(): Site | null {
    return this.way.kind === "transparent" ? this.way.site : null;
  }

  // ── the client side, as an exchange sees it ─────────────────────────────

  get ended(): boolean {
    return this.clientEnded;
  }

  write(data: Buffer): boolean {
    return this.s.write(data);
  }

  onceDrain(cb: () => void): void {
    this.s.once("drain", cb);
  }

  answered(close: boolean): void {
    this.exchangeOver();
    // A request body the server did not wait for is not read to its end: the connection cannot go on.
    this.reply(Buffer.alloc(0), close || this.body !== null);
  }

  failed(message: string, close: boolean, answer?: (close: boolean) => Buffer): void {
    this.exchangeOver();
    const c = close || this.body !== null;
    this.reply(answer ? answer(c) : badGateway(message, c), c);
  }

  destroy(): void {
    this.s.destroy();
  }

  // ── reading ─────────────────────────────────────────────────────────────

  // Waiting for a request (or the rest of one) is bounded by the socket's own inactivity timeout, not a timer each.
  private wait(ms: number): void {
    if (this.waiting !== ms) this.s.setTimeout(ms);
    this.waiting = ms;
  }

  private stopWaiting(): void {
    if (this.waiting !== 0) this.s.setTimeout(0);
    this.waiting = 0;
  }

  private readonly onData = (d: Buffer) => {
    this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d]);
    if (this.body !== null) return this.pumpBody();
    if (this.st === "reading") return this.next();
    // Waiting for an answer: what comes is the next request; past a head's worth the client waits too.
    if (this.buf.length > MAX_HEAD) this.s.pause();
  };

  private readonly onEnd = () => {
    this.clientEnded = true;
    if (this.st === "reading") return this.finish();
    if (this.st === "exchanging" && this.toSelf) {
      this.cancel?.();
      this.exchangeOver();
      this.finish();
    }
  };

  /** This reader is done with the connection (carried, closing). */
  private leave(next: ConnectionState): void {
    this.st = next;
    this.stopWaiting();
    this.s.off("data", this.onData);
    this.s.off("end", this.onEnd);
  }

  /** The client has said all it will, and had its answers: the connection ends once they are written. */
  private finish(): void {
    this.leave("closing");
    this.s.end();
  }

  /** An answer to the request under way; then the next request, or (`close`) the end of the connection. */
  private reply(bytes: Buffer, close: boolean): void {
    if (close) {
      this.leave("closing");
      return endWith(this.s, bytes);
    }
    if (bytes.length > 0) this.s.write(bytes);
    this.st = "reading";
    this.next();
  }

  /** The next request on the connection, once the one before it is answered. */
  private next(): void {
    if (this.st !== "reading" || this.s.destroyed) return;
    if (this.clientEnded && this.buf.length === 0) return this.finish();
    if (this.s.isPaused()) this.s.resume();
    if (this.buf.length === 0) return this.wait(KEEP_ALIVE_MS);
    const r = readRequestHead(this.buf);
    // The rest of a head, unless the client has said all it will (then it never comes).
    if (r.kind === "more") return this.clientEnded ? this.finish() : this.wait(HEAD_TIMEOUT_MS);
    this.stopWaiting();
    if (r.kind === "refused") return this.reply(badRequest(unambiguous(r.why), true), true);
    const { head } = r;
    if ((this.site || this.way.kind === "terminated") && head.method === "CONNECT") {
      this.leave("closing");
      return cut(this.s);
    }
    // Its turn: a sandbox starts requests at the pace ctx.turn allows; meanwhile it waits here, read no further.
    if (!this.paid) {
      const d = this.ctx.turn();
      if (d > 0) {
        this.paid = true;
        this.st = "deciding";
        this.s.pause();
        setTimeout(() => {
          if (this.st !== "deciding") return;
          this.st = "reading";
          this.next();
        }, d);
        return;
      }
    }
    this.paid = false;
    this.buf = this.buf.subarray(r.size);
    if (this.way.kind === "terminated") return this.terminated(head, this.way);
    if (head.method === "CONNECT") return this.connect(head);
    if (this.way.kind === "proxy" && head.target.startsWith("/")) return this.toOrigin(head, this.way.origin);
    this.plain(head);
  }

  // ── what a request is for ───────────────────────────────────────────────

  /** A CONNECT: the authority checked, then its carrier has the connection, or a refusal ends it. */
  private connect(head: RequestHead): void {
    if (head.framing !== "none" && !(typeof head.framing === "object" && head.framing.length === 0)) {
      return this.reply(badRequest("sbx proxy: refused: a CONNECT with a body; the bytes after its head are the tunnel's.\n", true), true);
    }
    this.leave("deciding");
    this.s.pause();
    const auth = parseAuthority(head.target);
    if (!auth) {
      this.st = "closing";
      return endWith(this.s, badRequest("sbx proxy: a CONNECT names host:port (or [v6]:port).\n", true));
    }
    // What came after the head is the tunnel's first bytes.
    const first = this.buf;
    this.buf = Buffer.alloc(0);
    void this.ctx.decider.check("proxy", "CONNECT", auth.host, auth.port).then((v) => {
      if (this.s.destroyed) return;
      if (!v.ok) {
        this.st = "closing";
        return endWith(this.s, refusal(this.ctx.sandbox.name, v, true));
      }
      this.st = "carried";
      this.ctx.carrierFor(v)(v, this.s, first, true);
    });
  }

  /** A plain request: what it names and what its Host says agree, the authority is checked, then it is forwarded. */
  private plain(head: RequestHead): void {
    // A refusal ends the connection when the client asked for that, or sent a body (which is not read).
    const closeAfter = head.framing !== "none" || !head.keepAlive;
    const site = this.site;
    const path = site ? "transparent" : "proxy";
    const t = plainTarget(head, site);
    if (!t.ok) {
      if (site && t.mismatch !== null) this.ctx.decider.deny(path, head.method, site.name, site.port, "server-name-mismatch", t.mismatch, null);
      return this.reply(badRequest(t.message, closeAfter), closeAfter);
    }
    this.st = "deciding";
    this.s.pause();
    void this.ctx.decider.check(path, head.method, t.url.hostname, t.port).then((v) => {
      if (this.st !== "deciding" || this.s.destroyed) return;
      if (!v.ok) return this.reply(refusal(this.ctx.sandbox.name, v, closeAfter), closeAfter);
      let target: string | undefined;
      if (v.requests) {
        // A rule names the host: this request is judged on its path as sent (not as a URL parser would resolve it), and
        // the canonical form judged is what goes up.
        const r = this.ctx.decider.request(v, head.method, rawTarget(head.target));
        if (!r.ok) return this.reply(refusal(this.ctx.sandbox.name, r, closeAfter), closeAfter);
        target = r.target;
      }
      const secrets = this.way.kind === "terminated" ? null : this.way.plain;
      if (!secrets) return this.forward(head, egressDestination(this.ctx, v, head.method, t.url, target));
      // The sandbox may have secrets bound: swapped in only for a published service of the host, said elsewhere.
      this.prepared(secrets.plain(v, t.url, head, target), closeAfter);
    });
  }

  /** A request made ready elsewhere (terminate.ts: secrets swapped, or said as outside), then forwarded or refused. */
  private prepared(p: Promise<Prepared>, closeAfter: boolean, toSelf = false): void {
    void p.then(
      (p) => {
        if (this.st !== "deciding" || this.s.destroyed) return;
        if (!p.ok) return this.reply(p.answer ? p.answer(closeAfter) : p.denied ? refusal(this.ctx.sandbox.name, p.denied, closeAfter) : badRequest(p.message, closeAfter), closeAfter);
        this.forward(p.head, p.dest, toSelf);
      },
      (e: Error) => {
        if (this.st !== "deciding" || this.s.destroyed) return;
        this.reply(badGateway(`sbx proxy: ${e.message}`, closeAfter), closeAfter);
      },
    );
  }

  /** A request inside a terminated TLS connection (terminate.ts): made ready there (Host checked, secrets swapped), then forwarded. */
  private terminated(head: RequestHead, way: { allowed: Allowed; terminator: RequestPreparer }): void {
    const closeAfter = head.framing !== "none" || !head.keepAlive;
    this.st = "deciding";
    this.s.pause();
    this.prepared(way.terminator.prepare(way.allowed, head), closeAfter);
  }

  /** An origin-form request: the proxy's own endpoint answers, or the origin handler does, or it is refused. */
  private toOrigin(head: RequestHead, origin: Origin): void {
    const closeAfter = head.framing !== "none" || !head.keepAlive;
    const route = origin.route(head.method, head.target);
    this.toSelf = true;
    if (route.kind === "none") return this.reply(badRequest(route.message, closeAfter), closeAfter);
    if (route.kind === "handler") return this.forward(head, route.destination, true);
    if (route.kind === "forwarder") {
      this.st = "deciding";
      this.s.pause();
      return this.prepared(route.forwarder.prepare(head), closeAfter, true);
    }
    this.st = "exchanging";
    const aborted = new AbortController();
    this.cancel = () => aborted.abort();
    const give = (a: OwnAnswer | null) => {
      if (a === null || this.st !== "exchanging" || this.s.destroyed) return;
      this.cancel = null;
      const close = closeAfter || this.clientEnded;
      const headers: [string, string][] = a.noStore ? [["Cache-Control", "no-store"]] : [];
      this.reply(answer(a.status, a.body, { close, contentType: a.contentType, headers, head: head.method === "HEAD" }), close);
    };
    const a = route.endpoint(head.method, new URL(head.target, "http://sbx"), aborted.signal);
    // Answered at once when it can be (a client that sends and ends its side gets it); a long poll, when it is due.
    if (a instanceof Promise) void a.then(give);
    else give(a);
  }

  /** Forwards a request: its body read from here on as it comes, its answer written by the exchange. */
  private forward(head: RequestHead, dest: Destination, toSelf = false): void {
    this.toSelf = toSelf;
    const x = ForwardExchange.start(this, head, dest);
    if ("why" in x) return this.reply(badRequest(`sbx proxy: refused: ${x.why}.\n`, true), true);
    this.st = "exchanging";
    this.exchange = x;
    this.cancel = () => x.cancel();
    this.body = head.framing === "none" ? null : new BodyReader(head.framing);
    this.s.resume();
    if (this.body !== null) this.pumpBody();
  }

  private exchangeOver(): void {
    this.exchange = null;
    this.cancel = null;
  }

  /** Request body bytes as they come, to the server; the bytes after the body stay for the next request. */
  private pumpBody(): void {
    const x = this.exchange;
    const r = this.body!.read(this.buf);
    if ("why" in r) {
      // The server has the head and the body's good part, never a byte that was not checked: it is cut off.
      this.body = null;
      const wrote = x?.began ?? false;
      x?.cancel();
      this.exchangeOver();
      if (wrote) return void this.s.destroy();
      return this.reply(badRequest(unambiguous(r.why), true), true);
    }
    this.buf = this.buf.subarray(r.used);
    if (x === null) return;
    for (const d of r.data) {
      if (!x.write(d)) {
        this.s.pause();
        x.drained(() => this.s.resume());
      }
    }
    if (this.body!.done) {
      this.body = null;
      x.end();
    }
  }
}
