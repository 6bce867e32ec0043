// Byte relay between two Bun sockets (a CONNECT tunnel's client and upstream), and a node Duplex view of a Bun socket for node:http.
//
// Why Bun sockets: node:http's CONNECT socket piped through node streams costs about a third more CPU per byte than
// Bun.listen/Bun.connect with a hand-made loop (bench/proxy.bench.ts); on a 2-core machine that CPU is the throughput.
import { Duplex } from "node:stream";
import type { Socket } from "bun";

/** Per-socket state, on `socket.data`. One shape for both ends of a tunnel and for sockets handed to node:http. */
export interface Conn {
  /** head: reading the first request head; pending: CONNECT being decided; tunnel: relaying; final: answering then closing; http: handed to node:http. */
  mode: "head" | "pending" | "tunnel" | "final" | "http";
  /** The first request's bytes while the head is read; client bytes that arrive while the CONNECT is decided. */
  early: Uint8Array[];
  earlyBytes: number;
  peer: Socket<Conn> | null;
  /** Bytes accepted for this socket that it could not take yet; its peer is paused meanwhile. */
  queue: Uint8Array[];
  /** Send FIN once the queue is flushed (the peer ended). */
  endAfterFlush: boolean;
  finSent: boolean;
  finReceived: boolean;
  closed: boolean;
  /** Bytes read from this socket while relaying: counted per chunk as one integer add, reported once at close. */
  bytesIn: number;
  duplex: SocketDuplex | null;
  timer: ReturnType<typeof setTimeout> | null;
  onClose: (() => void) | null;
}

export function newConn(mode: Conn["mode"]): Conn {
  return {
    mode,
    early: [],
    earlyBytes: 0,
    peer: null,
    queue: [],
    endAfterFlush: false,
    finSent: false,
    finReceived: false,
    closed: false,
    bytesIn: 0,
    duplex: null,
    timer: null,
    onClose: null,
  };
}

function maybeClose(s: Socket<Conn>): void {
  if (s.data.finSent && s.data.finReceived && !s.data.closed) s.end();
}

/** Half-closes s (FIN) once; closes it when the other direction has ended too. */
export function sendFin(s: Socket<Conn>): void {
  if (s.data.finSent || s.data.closed) return;
  s.data.finSent = true;
  s.shutdown();
  maybeClose(s);
}

/**
 * Writes chunk to dst straight away when dst has nothing queued (the common case: no copy). What dst cannot take is
 * copied (the chunk is the runtime's receive buffer, reused after this call) and src is paused until dst drains.
 */
export function forward(src: Socket<Conn> | null, dst: Socket<Conn>, chunk: Uint8Array): void {
  if (dst.data.closed) return;
  if (dst.data.queue.length > 0) {
    dst.data.queue.push(chunk.slice());
    src?.pause();
    return;
  }
  const n = dst.write(chunk);
  if (n < chunk.length) {
    dst.data.queue.push(chunk.slice(Math.max(n, 0)));
    src?.pause();
  }
}

/** On drain: writes what is queued; once empty, the paused peer reads again and a pending FIN goes out. */
export function flush(s: Socket<Conn>): void {
  const q = s.data.queue;
  while (q.length > 0) {
    const c = q[0]!;
    const n = s.write(c);
    if (n < c.length) {
      if (n < 0) return;
      q[0] = c.subarray(n);
      return;
    }
    q.shift();
  }
  const peer = s.data.peer;
  if (peer && !peer.data.closed) peer.resume();
  if (s.data.endAfterFlush) sendFin(s);
}

/** The peer of s gets s's FIN after what is queued for it; nothing is cut until both directions are done. */
export function relayEnd(s: Socket<Conn>): void {
  s.data.finReceived = true;
  const peer = s.data.peer;
  if (peer) {
    if (peer.data.queue.length === 0) sendFin(peer);
    else peer.data.endAfterFlush = true;
  }
  maybeClose(s);
}

/** A close without a FIN before it (reset, error, destroy) takes the other side down; a clean one was passed on already. */
export function relayClose(s: Socket<Conn>): void {
  const peer = s.data.peer;
  if (peer && !peer.data.closed && !s.data.finReceived) peer.end();
}

/**
 * A Bun socket as a node Duplex, so node:http can serve a connection that Bun.listen accepted
 * (`server.emit("connection", duplex)`). Reads are pushed from the socket's data handler; writes wait for drain.
 */
export class SocketDuplex extends Duplex {
  private pending: { buf: Uint8Array; cb: (e?: Error | null) => void } | null = null;
  private idle: { ms: number; timer: ReturnType<typeof setTimeout> | null } = { ms: 0, timer: null };

  constructor(private readonly socket: Socket<Conn>) {
    super({ allowHalfOpen: true });
  }

  get remoteAddress(): string {
    return "127.0.0.1";
  }

  /** From the socket's data handler: the chunk is copied (the runtime reuses its buffer). */
  socketData(d: Uint8Array): void {
    this.touch();
    if (!this.push(Buffer.from(d))) this.socket.pause();
  }

  socketEnded(): void {
    this.push(null);
  }

  socketClosed(): void {
    const p = this.pending;
    this.pending = null;
    if (this.idle.timer) clearTimeout(this.idle.timer);
    p?.cb(new Error("socket closed"));
    if (!this.destroyed) this.destroy();
  }

  socketDrained(): void {
    const p = this.pending;
    if (!p) return;
    const n = this.socket.write(p.buf);
    if (n < 0) {
      this.pending = null;
      return p.cb(new Error("socket closed"));
    }
    if (n < p.buf.length) {
      p.buf = p.buf.subarray(n);
      return;
    }
    this.pending = null;
    p.cb();
  }

  override _read(): void {
    if (!this.socket.data.closed) this.socket.resume();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    this.touch();
    const n = this.socket.write(chunk);
    if (n < 0) return cb(new Error("socket closed"));
    if (n < chunk.length) {
      this.pending = { buf: chunk.subarray(n), cb };
      return;
    }
    cb();
  }

  override _final(cb: (e?: Error | null) => void): void {
    if (!this.socket.data.closed && !this.socket.data.finSent) {
      this.socket.data.finSent = true;
      this.socket.shutdown();
      if (this.socket.data.finReceived) this.socket.end();
    }
    cb();
  }

  override _destroy(err: Error | null, cb: (e: Error | null) => void): void {
    if (this.idle.timer) clearTimeout(this.idle.timer);
    if (!this.socket.data.closed) this.socket.end();
    cb(err);
  }

  // The parts of net.Socket that node:http calls.
  setTimeout(ms: number, cb?: () => void): this {
    if (cb) this.once("timeout", cb);
    this.idle.ms = ms;
    this.touch();
    return this;
  }
  setNoDelay(): this {
    return this;
  }
  setKeepAlive(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }

  private touch(): void {
    if (this.idle.timer) clearTimeout(this.idle.timer);
    this.idle.timer = this.idle.ms > 0 ? setTimeout(() => this.emit("timeout"), this.idle.ms) : null;
  }
}
