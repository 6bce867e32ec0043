// The proxy's plain-HTTP requests to servers: one request and its response on a pooled keep-alive connection to the
// checked address, framed by http1.ts (the request written there, the response read there, strictly).
//
// node:http's client did this before, at about 0.07 ms a request on loopback; this is the same work without its
// machinery. A connection goes back to the pool only when its response ended where its framing said and nothing
// else arrived; an idle one that sends anything, or is closed, is dropped.
import { connect, isIP, type Socket } from "node:net";
import { dialTls } from "./native-tls";
import { chunk, LAST_CHUNK, ResponseReader, type ResponseHead } from "./http1";
import { UPSTREAM_MAX_IDLE } from "../core/bounds";
import { parentStream, tlsThroughParent, type ParentRoute } from "../sys/parent";

/** How long an idle connection is kept (servers commonly close theirs after 5 s; going first avoids the race). */
const IDLE_MS = 4_000;
/** Idle connections kept per address and port. */
const MAX_IDLE = 16;
/**
 * Request body bytes held for a connection not yet ready (TCP connecting, TLS shaking hands, a parent's tunnel being
 * asked for): past this, `write` says wait and `drained` waits for the connection (invariant 14: a sandbox's upload is
 * held by its own socket, not the daemon's memory).
 */
export const QUEUED_MAX = 64 * 1024;

/**
 * A pool's dial for TLS to the server, verified (the runtime's roots, or `ca`), ready at `secureConnect`: its name is
 * `servername`, or the address dialled when that is a name; through the parent, TLS inside its tunnel to `via.host`.
 * Every TLS client of the proxy (the terminator's, the LLM proxy's) dials with this.
 */
export function tlsDial(o: { servername?: string; ca?: string } = {}): (address: string, port: number, via: Via | null) => Socket {
  return (address, port, via) => {
    const name = o.servername ?? (isIP(address) ? undefined : address);
    const tls = { ...(name ? { servername: name } : {}), ALPNProtocols: ["http/1.1"], ...(o.ca ? { ca: o.ca } : {}) };
    if (via) return tlsThroughParent(via.route, via.host, port, tls) as unknown as Socket;
    // Bun's own TLS socket, verified as node:tls verifies, without node's streams on top (native-tls.ts).
    return dialTls(address, port, { servername: name, ca: o.ca }) as unknown as Socket;
  };
}

/** A connection asked of the parent proxy: `CONNECT host:port` by name, on which the request then goes as it would. */
export interface Via {
  route: ParentRoute;
  host: string;
}

export interface UpstreamRequest {
  address: string;
  port: number;
  /** Through the parent proxy (the connection is kept per parent, name and port), or straight to `address`. */
  via?: Via | null;
  method: string;
  /** The whole request head, from `requestHead` (its framing agrees with `body`). */
  head: string;
  body: "none" | "length" | "chunked";
  /** Whether a pooled connection the server closed before answering may be replaced once (no body, a safe method). */
  replayable: boolean;
}

export interface ResponseSink {
  /** The final response's head; `length` as `ResponseReader` framed it. Throwing aborts the exchange (onError follows). */
  head(head: ResponseHead, length: number | "chunked" | "close"): void;
  /** Body bytes; false asks for a pause until `resume()`. */
  body(data: Buffer): boolean;
  /** The response is whole; `last`: its last body bytes, when they came with the end (one write for both). */
  end(last?: Buffer): void;
  /** Nothing more comes: `connected` says whether the server was reached at all (a 502's wording). */
  error(message: string, connected: boolean): void;
}

export interface Exchange {
  /** Request body bytes (framed here as `body` says); false: wait for `drained`. */
  write(data: Buffer): boolean;
  /** The request body is whole. */
  end(): void;
  /** Calls back once the connection can take more request body. */
  drained(cb: () => void): void;
  /** Stops reading the response until `resume` (the client is slow). */
  pause(): void;
  resume(): void;
  /** Gives up: the connection is closed, nothing more is called. */
  abort(): void;
}

/** What a connection's events go to: the exchange that has it, or nobody (idle, pooled). */
interface Owner {
  data(d: Buffer): void;
  end(): void;
  error(e: Error): void;
  close(): void;
}

interface Conn {
  s: Socket;
  key: string;
  owner: Owner | null;
  /** When it went back to the pool (performance.now()). */
  idleSince: number;
}

export class UpstreamPool {
  private readonly idle = new Map<string, Conn[]>();
  private readonly open = new Set<Conn>();
  private sweeper: ReturnType<typeof setInterval> | null = null;
  private closed = false;

  constructor(
    private readonly connectTimeoutMs: number,
    /** How long an idle connection is kept (tests shorten it). */
    private readonly idleMs = IDLE_MS,
    /**
     * Opens a connection that emits `connect` (default: TCP to the address, or the parent's tunnel for `via`); the
     * proxy's origin is one in memory.
     */
    private readonly dial?: (address: string, port: number, via: Via | null) => Socket,
    /** The event after which a new connection is the server's (TLS: `secureConnect`, once its certificate is checked). */
    private readonly ready: "connect" | "secureConnect" = "connect",
  ) {}

  /** Connections open now (in use and idle). */
  size(): number {
    return this.open.size;
  }

  /** Closes every connection; later requests fail. */
  close(): void {
    this.closed = true;
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
    for (const c of this.open) c.s.destroy();
    this.open.clear();
    this.idle.clear();
  }

  /** Idle connections kept now, over every address. */
  private idleCount(): number {
    let n = 0;
    for (const list of this.idle.values()) n += list.length;
    return n;
  }

  private take(key: string): Conn | null {
    const list = this.idle.get(key);
    while (list && list.length > 0) {
      const c = list.pop()!;
      if (list.length === 0) this.idle.delete(key);
      if (!c.s.destroyed && c.s.readable && c.s.writable) return c;
      c.s.destroy();
    }
    return null;
  }

  /**
   * A new connection. Its listeners are set once and pass events to its owner; with none (idle), any event drops it:
   * a byte nobody asked for, the server's end, an error.
   */
  private fresh(address: string, port: number, via: Via | null, key: string): Conn {
    const s = this.dial ? this.dial(address, port, via) : via ? parentStream(via.route, via.host, port) : connect({ host: address, port, noDelay: true, allowHalfOpen: false });
    const c: Conn = { s, key, owner: null, idleSince: 0 };
    this.open.add(c);
    s.on("data", (d: Buffer) => (c.owner ? c.owner.data(d) : this.drop(c)));
    s.on("end", () => (c.owner ? c.owner.end() : this.drop(c)));
    s.on("error", (e: Error) => (c.owner ? c.owner.error(e) : this.drop(c)));
    s.on("close", () => {
      this.open.delete(c);
      if (c.owner) c.owner.close();
      else this.drop(c);
    });
    return c;
  }

  private drop(c: Conn): void {
    const list = this.idle.get(c.key);
    const i = list?.indexOf(c) ?? -1;
    if (i >= 0) list!.splice(i, 1);
    if (list && list.length === 0) this.idle.delete(c.key);
    c.s.destroy();
  }

  /** Back to the pool, idle until taken (or dropped: see `fresh`; and after `idleMs`, by the sweep). */
  private park(c: Conn): void {
    c.owner = null;
    const list = this.idle.get(c.key) ?? [];
    // Per address, and in all (a sandbox talking to ever more servers cannot make its proxy keep ever more open).
    if (this.closed || list.length >= MAX_IDLE || this.idleCount() >= UPSTREAM_MAX_IDLE) return void c.s.destroy();
    c.idleSince = performance.now();
    list.push(c);
    this.idle.set(c.key, list);
    c.s.resume();
    if (this.sweeper === null) {
      // One timer for every idle connection, not one each: it stops when none is left.
      this.sweeper = setInterval(() => this.sweep(), this.idleMs / 4);
      this.sweeper.unref?.();
    }
  }

  private sweep(): void {
    const old = performance.now() - this.idleMs;
    for (const list of [...this.idle.values()]) for (const c of [...list]) if (c.idleSince < old) this.drop(c);
    if (this.idle.size === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
  }

  /** Sends one request to address:port and reads its response into `sink`. */
  // whole: one exchange's state (its connection, a retry on a closed pooled one, the body queued before it is ready), shared by the closures that drive it.
  request(r: UpstreamRequest, sink: ResponseSink): Exchange {
    const via = r.via ?? null;
    const key = via ? `${via.route.endpoint.shown}|${via.host}|${r.port}` : `${r.address}|${r.port}`;
    const reader = new ResponseReader(r.method);
    let c: Conn;
    let reused = false;
    let connected = false;
    let answered = false; // a byte of the response arrived
    let finished = false;
    let bodyDone = r.body === "none";
    let replaced = false;
    let timer: ReturnType<typeof setTimeout> | null = null;
    const queued: Buffer[] = [];
    let queuedBytes = 0;
    /** Who waits for the connection to take more (`drained` before it is ready, past QUEUED_MAX). */
    let waiting: Array<() => void> = [];

    const detach = () => {
      if (timer) clearTimeout(timer);
      timer = null;
      c.owner = null;
    };
    const finish = (reusable: boolean, last?: Buffer) => {
      finished = true;
      detach();
      if (reusable && bodyDone && !this.closed) this.park(c);
      else c.s.destroy();
      sink.end(last);
    };
    const fail = (message: string) => {
      if (finished) return;
      finished = true;
      detach();
      c.s.destroy();
      sink.error(message, connected);
    };
    const steps = (list: ReturnType<ResponseReader["push"]>) => {
      for (let i = 0; i < list.length; i++) {
        const step = list[i]!;
        if (finished) return;
        if (step.kind === "head") {
          try {
            sink.head(step.head, step.length);
          } catch (e) {
            return fail((e as Error).message);
          }
        } else if (step.kind === "body") {
          // What one read holds goes on as one piece: a chunked answer's burst (a provider's 500 events in one read, each
          // its own chunk) is one write to the client, not 500.
          let data = step.data;
          let j = i + 1;
          while (list[j]?.kind === "body") j++;
          if (j > i + 1) {
            data = Buffer.concat(list.slice(i, j).map((x) => (x as { data: Buffer }).data));
            i = j - 1;
          }
          // The last body bytes of a response that ends in this same read go with the end: one write to the client.
          const next = list[i + 1];
          if (next?.kind === "end") return finish(next.reusable, data);
          if (!sink.body(data)) c.s.pause();
        } else if (step.kind === "end") finish(step.reusable);
        else fail(`a response that cannot be read: ${step.why}`);
      }
    };
    const owner: Owner = {
      data(d) {
        answered = true;
        steps(reader.push(d));
      },
      end() {
        if (!answered && retry()) return;
        steps(reader.eof());
      },
      error(e) {
        if (!answered && retry()) return;
        fail(e.message);
      },
      close() {
        if (finished) return;
        if (!answered && retry()) return;
        steps(reader.eof());
        fail("the connection closed");
      },
    };
    const send = () => {
      connected = true;
      if (timer) clearTimeout(timer);
      timer = null;
      const ok = c.s.write(queued.length === 0 ? Buffer.from(r.head, "latin1") : Buffer.concat([Buffer.from(r.head, "latin1"), ...queued]));
      queued.length = 0;
      queuedBytes = 0;
      const w = waiting;
      waiting = [];
      for (const cb of w) ok ? cb() : c.s.once("drain", cb);
    };
    /** A pooled connection the server had closed: once, and only for a request that can be sent again as it is. */
    const retry = (): boolean => {
      if (!reused || replaced || !r.replayable || finished) return false;
      replaced = true;
      detach();
      c.s.destroy();
      start(false);
      return true;
    };
    const start = (pooled: boolean) => {
      const taken = pooled ? this.take(key) : null;
      reused = taken !== null;
      c = taken ?? this.fresh(r.address, r.port, via, key);
      c.owner = owner;
      if (reused) {
        c.s.resume();
        // After what is due now: a body that came with the head (the caller writes it next, in this same turn) goes up
        // in the head's write, one read for the server instead of two.
        const mine = c;
        queueMicrotask(() => {
          if (c === mine && !finished) send();
        });
      } else {
        const s = c.s;
        timer = setTimeout(() => s.destroy(new Error(`connect timed out after ${this.connectTimeoutMs} ms`)), this.connectTimeoutMs);
        s.once(this.ready, () => {
          if (c.s === s && !finished) send();
        });
      }
    };
    if (this.closed) {
      queueMicrotask(() => sink.error("the proxy is closing", false));
      return { write: () => true, end: () => undefined, drained: (cb) => cb(), pause: () => undefined, resume: () => undefined, abort: () => undefined };
    }
    start(true);

    return {
      write(data) {
        if (finished || data.length === 0) return true;
        const framed = r.body === "chunked" ? Buffer.concat(chunk(data)) : data;
        if (!connected) {
          queued.push(framed);
          queuedBytes += framed.length;
          return queuedBytes < QUEUED_MAX;
        }
        return c.s.write(framed);
      },
      end() {
        if (bodyDone) return;
        bodyDone = true;
        if (r.body === "chunked") {
          if (connected && !finished) c.s.write(LAST_CHUNK);
          else queued.push(LAST_CHUNK);
        }
      },
      drained(cb) {
        if (!connected && !finished && queuedBytes >= QUEUED_MAX) return void waiting.push(cb);
        if (!connected || finished || !c.s.writableNeedDrain) return void cb();
        c.s.once("drain", cb);
      },
      pause() {
        if (!finished) c.s.pause();
      },
      resume() {
        if (!finished) c.s.resume();
      },
      abort() {
        if (finished) return;
        finished = true;
        detach();
        c.s.destroy();
      },
    };
  }
}
