// The proxy's plain-HTTP requests to servers: one request and its response on a pooled keep-alive connection to the
// checked address, framed by http1.ts (the request written there, the response read there, strictly).
//
// node:http's client did this before, at about 0.07 ms a request on loopback; this is the same work without its
// machinery. A connection goes back to the pool only when its response ended where its framing said and nothing
// else arrived; an idle one that sends anything, or is closed, is dropped.
import { connect, type Socket } from "node:net";
import { chunk, LAST_CHUNK, ResponseReader, type ResponseHead } from "./http1";

/** How long an idle connection is kept (servers commonly close theirs after 5 s; going first avoids the race). */
const IDLE_MS = 4_000;
/** Idle connections kept per address and port. */
const MAX_IDLE = 16;

export interface UpstreamRequest {
  address: string;
  port: number;
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

export class UpstreamPool {
  private readonly idle = new Map<string, Socket[]>();
  private readonly open = new Set<Socket>();
  private readonly parked = new WeakMap<Socket, () => void>();
  private closed = false;

  constructor(private readonly connectTimeoutMs: number) {}

  /** Connections open now (in use and idle). */
  size(): number {
    return this.open.size;
  }

  /** Closes every connection; later requests fail. */
  close(): void {
    this.closed = true;
    for (const s of this.open) s.destroy();
    this.open.clear();
    this.idle.clear();
  }

  private take(key: string): Socket | null {
    const list = this.idle.get(key);
    while (list && list.length > 0) {
      const s = list.pop()!;
      this.parked.get(s)?.();
      if (!s.destroyed && s.readable && s.writable) return s;
      s.destroy();
    }
    return null;
  }

  private fresh(address: string, port: number): Socket {
    const s = connect({ host: address, port, noDelay: true, allowHalfOpen: false });
    this.open.add(s);
    s.once("close", () => this.open.delete(s));
    return s;
  }

  /** Back to the pool: idle until taken; any byte, end, error or the idle time drops it. */
  private park(key: string, s: Socket): void {
    const list = this.idle.get(key) ?? [];
    if (this.closed || list.length >= MAX_IDLE) return void s.destroy();
    const drop = () => {
      unpark();
      const l = this.idle.get(key);
      const i = l?.indexOf(s) ?? -1;
      if (i >= 0) l!.splice(i, 1);
      if (l && l.length === 0) this.idle.delete(key);
      s.destroy();
    };
    const timer = setTimeout(drop, IDLE_MS);
    timer.unref?.();
    const unpark = () => {
      clearTimeout(timer);
      s.off("data", drop);
      s.off("end", drop);
      s.off("error", drop);
      s.off("close", drop);
      this.parked.delete(s);
    };
    s.on("data", drop);
    s.on("end", drop);
    s.on("error", drop);
    s.on("close", drop);
    this.parked.set(s, unpark);
    list.push(s);
    this.idle.set(key, list);
    s.resume();
  }

  /** Sends one request to address:port and reads its response into `sink`. */
  request(r: UpstreamRequest, sink: ResponseSink): Exchange {
    const key = `${r.address}|${r.port}`;
    const reader = new ResponseReader(r.method);
    let s: Socket;
    let reused = false;
    let connected = false;
    let answered = false; // a byte of the response arrived
    let finished = false;
    let bodyDone = r.body === "none";
    let replaced = false;
    let timer: ReturnType<typeof setTimeout> | null = null;
    const queued: Buffer[] = [];

    const detach = () => {
      if (timer) clearTimeout(timer);
      timer = null;
      s.off("data", onData);
      s.off("end", onEnd);
      s.off("error", onError);
      s.off("close", onClose);
    };
    const finish = (reusable: boolean, last?: Buffer) => {
      finished = true;
      detach();
      if (reusable && bodyDone && !this.closed) this.park(key, s);
      else s.destroy();
      sink.end(last);
    };
    const fail = (message: string) => {
      if (finished) return;
      finished = true;
      detach();
      s.destroy();
      sink.error(message, connected);
    };
    const steps = (list: ReturnType<ResponseReader["push"]>) => {
      for (const step of list) {
        if (finished) return;
        if (step.kind === "head") {
          try {
            sink.head(step.head, step.length);
          } catch (e) {
            return fail((e as Error).message);
          }
        } else if (step.kind === "body") {
          // The last body bytes of a response that ends in this same read go with the end: one write to the client.
          const next = list[list.indexOf(step) + 1];
          if (next?.kind === "end") {
            finish(next.reusable, step.data);
            return;
          }
          if (!sink.body(step.data)) s.pause();
        } else if (step.kind === "end") finish(step.reusable);
        else fail(`a response that cannot be read: ${step.why}`);
      }
    };
    const onData = (d: Buffer) => {
      answered = true;
      steps(reader.push(d));
    };
    const onEnd = () => {
      if (!answered && retry()) return;
      steps(reader.eof());
    };
    const onError = (e: Error) => {
      if (!answered && retry()) return;
      fail(e.message);
    };
    const onClose = () => {
      if (finished) return;
      if (!answered && retry()) return;
      steps(reader.eof());
      fail("the connection closed");
    };
    const send = () => {
      connected = true;
      if (timer) clearTimeout(timer);
      timer = null;
      s.write(r.head, "latin1");
      for (const b of queued) s.write(b);
      queued.length = 0;
    };
    /** A pooled connection the server had closed: once, and only for a request that can be sent again as it is. */
    const retry = (): boolean => {
      if (!reused || replaced || !r.replayable || finished) return false;
      replaced = true;
      detach();
      s.destroy();
      start(false);
      return true;
    };
    const start = (pooled: boolean) => {
      const taken = pooled ? this.take(key) : null;
      reused = taken !== null;
      s = taken ?? this.fresh(r.address, r.port);
      s.on("data", onData);
      s.on("end", onEnd);
      s.on("error", onError);
      s.on("close", onClose);
      if (reused) {
        s.resume();
        send();
      } else {
        timer = setTimeout(() => s.destroy(new Error(`connect timed out after ${this.connectTimeoutMs} ms`)), this.connectTimeoutMs);
        s.once("connect", send);
      }
    };
    if (this.closed) {
      queueMicrotask(() => sink.error("the proxy is closing", false));
      return { write: () => true, end: () => undefined, drained: (cb) => cb(), pause: () => undefined, resume: () => undefined, abort: () => undefined };
    }
    start(true);

    const frame = (data: Buffer): Buffer[] => (r.body === "chunked" ? chunk(data) : [data]);
    return {
      write(data) {
        if (finished || data.length === 0) return true;
        const parts = frame(data);
        if (!connected) {
          queued.push(...parts);
          return true;
        }
        let ok = true;
        for (const p of parts) ok = s.write(p);
        return ok;
      },
      end() {
        if (bodyDone) return;
        bodyDone = true;
        if (r.body === "chunked") {
          if (connected && !finished) s.write(LAST_CHUNK);
          else queued.push(LAST_CHUNK);
        }
      },
      drained(cb) {
        if (!connected || finished || !s.writableNeedDrain) return void cb();
        s.once("drain", cb);
      },
      pause() {
        if (!finished) s.pause();
      },
      resume() {
        if (!finished) s.resume();
      },
      abort() {
        if (finished) return;
        finished = true;
        detach();
        s.destroy();
      },
    };
  }
}
