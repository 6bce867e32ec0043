// A terminated connection's two TLS ends on Bun's own sockets: the sandbox's side (its descriptor taken over from
// node:net, then TLS started on it as a server) and the upstream's (Bun.connect with TLS, verified as node:tls would),
// each behind the few node:net-shaped calls and events the reader (connection.ts) and the pool (upstream.ts) use.
//
// Why: node:tls under Bun is these same native sockets with node's streams machinery on top (Readable buffers, a
// Writable queue, pipe), and on a 2-core machine that CPU is what a terminated download loses against direct
// (bench/terminate.bench.ts: a bare relay on Bun's sockets moved 1.12-1.51x the node:tls relay's MB/s at 0.64-0.91x its
// CPU; Bun's TLS on one side only gained nothing). Where a side cannot be moved (no fd passing here, bytes already read
// or queued by node:net), the caller keeps node:tls.
import { EventEmitter } from "node:events";
import type { Socket as NodeSocket } from "node:net";
import { checkServerIdentity } from "node:tls";
import type { Socket } from "bun";
import { fdPassing } from "../../shims/fd-pass";

type Raw = Socket<NativeTls>;

/** One TLS end, node:net-shaped: data/end/error/close/drain/timeout events, write/end/destroy/pause/resume/setTimeout. */
export class NativeTls extends EventEmitter {
  destroyed = false;
  readable = true;
  writable = true;
  writableNeedDrain = false;
  /** The name the client's TLS asked for (server side), once its handshake is done. */
  servername: string | undefined;
  private s: Raw | null = null;
  /** Bytes write() accepted that the socket could not take yet (Bun copies nothing: each is a view we keep). */
  private queue: Uint8Array[] = [];
  /** What arrived while paused (a read already under way when pause() was called). */
  private held: Buffer[] = [];
  private paused = false;
  /** Reads held until `release` whatever pause/resume say (the server's side, until its server name is checked). */
  private gated = false;
  private ending = false;
  private idleMs = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;

  attach(s: Raw): void {
    if (this.s === s) return;
    if (this.destroyed) return void s.terminate();
    this.s = s;
    if (this.paused) s.pause();
    this.flush();
  }

  write(d: Uint8Array | string): boolean {
    if (this.destroyed || this.ending) return false;
    const b = typeof d === "string" ? Buffer.from(d, "latin1") : d;
    this.touch();
    if (this.s === null || this.queue.length > 0) {
      this.queue.push(b);
      this.writableNeedDrain = true;
      return false;
    }
    const n = this.s.write(b);
    if (n >= b.length) return true;
    this.queue.push(b.subarray(Math.max(n, 0)));
    this.writableNeedDrain = true;
    return false;
  }

  /** Writes `d`, then ends the TLS (close_notify, FIN) once all is out. */
  end(d?: Uint8Array | string): this {
    if (d !== undefined && d.length > 0) this.write(d);
    this.ending = true;
    this.writable = false;
    if (this.queue.length === 0) this.s?.end();
    return this;
  }

  destroy(err?: Error): this {
    if (this.destroyed) return this;
    this.s?.terminate();
    this.closed(err);
    return this;
  }

  pause(): this {
    this.paused = true;
    this.s?.pause();
    return this;
  }

  resume(): this {
    this.paused = false;
    this.s?.resume();
    while (!this.paused && !this.gated && this.held.length > 0 && !this.destroyed) this.emit("data", this.held.shift()!);
    return this;
  }

  /** Holds what is read until `release` (set before any read). */
  gate(): void {
    this.gated = true;
  }

  release(): void {
    this.gated = false;
    if (!this.paused) this.resume();
  }

  isPaused(): boolean {
    return this.paused;
  }

  /** node:net's inactivity timeout: a `timeout` event after `ms` with nothing read or written (0: none). */
  setTimeout(ms: number): this {
    this.idleMs = ms;
    this.touch();
    return this;
  }

  private touch(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = this.idleMs > 0 && !this.destroyed ? setTimeout(() => this.emit("timeout"), this.idleMs) : null;
  }

  private flush(): void {
    const s = this.s;
    if (s === null) return;
    while (this.queue.length > 0) {
      const d = this.queue[0]!;
      const n = s.write(d);
      if (n < d.length) return void (this.queue[0] = d.subarray(Math.max(n, 0)));
      this.queue.shift();
    }
    if (this.ending) return void s.end();
    if (this.writableNeedDrain) {
      this.writableNeedDrain = false;
      this.emit("drain");
    }
  }

  private closed(err?: Error): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.readable = false;
    this.writable = false;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    // As a node:net socket would, but never thrown for want of a listener: every caller listens for 'close'.
    if (err && this.listenerCount("error") > 0) this.emit("error", err);
    this.emit("close", err !== undefined);
  }

  /** Bun's handlers, one set for every NativeTls (the socket's data is its NativeTls). */
  static readonly handlers = {
    open: (s: Raw) => s.data.attach(s),
    data(s: Raw, d: Uint8Array) {
      const t = s.data;
      const b = Buffer.from(d.buffer, d.byteOffset, d.byteLength);
      t.touch();
      if (t.paused || t.gated) return void t.held.push(b);
      t.emit("data", b);
    },
    drain: (s: Raw) => s.data.flush(),
    end(s: Raw) {
      const t = s.data;
      t.readable = false;
      t.emit("end");
      // As node:net without allowHalfOpen: the peer's end ends ours once what was written is out.
      if (!t.ending) t.end();
    },
    close: (s: Raw, err?: Error) => s.data.closed(err),
    error: (s: Raw, err: Error) => s.data.closed(err),
  };
}

/** The descriptor under a node:net socket of Bun's (an internal: undefined where it is not there). */
function fdOf(s: NodeSocket): number | undefined {
  const fd = (s as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  return typeof fd === "number" && fd >= 0 ? fd : undefined;
}

/**
 * The sandbox's side: `client` (a paused node:net socket whose CONNECT was answered and nothing else read or queued)
 * taken over and TLS started on it as a server with `cert`/`key`; `named(servername)` is asked once its handshake is
 * done, and a false ends it. Its 'close' listeners run when the new end closes. Null when it cannot: nothing changed.
 */
export function serveTls(client: NodeSocket, first: Buffer, tls: { cert: string; key: string }, named: (servername: string) => boolean): NativeTls | null {
  const lib = fdPassing();
  const fd = fdOf(client);
  if (!lib || fd === undefined || first.length > 0 || client.writableLength > 0 || client.readableLength > 0 || client.destroyed) return null;
  let dup: number;
  try {
    dup = lib.dup(fd);
  } catch {
    return null;
  }
  const closers = client.listeners("close") as ((...a: unknown[]) => void)[];
  client.removeAllListeners();
  client.on("error", () => {});
  client.destroy();
  const t = new NativeTls();
  t.once("close", (hadError: boolean) => {
    for (const f of closers) f.call(client, hadError);
  });
  // Its authorization error is about the client's certificate, which is not asked for: only `ok` says it failed.
  const handshake = (s: Raw, ok: boolean) => {
    t.attach(s);
    const name = s.getServername?.() ?? "";
    t.servername = name;
    if (!named(name)) return void t.destroy(new Error(`TLS server name ${name} refused`));
    if (!ok) return void t.destroy(new Error("the TLS handshake failed"));
    t.release();
  };
  // Nothing it sends is read before its server name is checked.
  t.gate();
  (Bun.connect as (o: unknown) => Promise<Raw>)({ fd: dup, data: t, socket: { data() {}, close() {}, error() {} } }).then(
    (raw) => {
      if (t.destroyed) return void raw.terminate();
      const [, sock] = (raw.upgradeTLS as (o: unknown) => [Raw, Raw])({ isServer: true, data: t, tls: { ...tls, ALPNProtocols: "\x08http/1.1" }, socket: { ...NativeTls.handlers, handshake } });
      t.attach(sock);
    },
    (e: Error) => {
      lib.close(dup);
      t.destroy(e);
    },
  );
  return t;
}

/**
 * The upstream's side: TLS to `address:port`, its chain verified against `ca` (else the runtime's roots) and its
 * certificate against `servername` (else the address) as node:tls does; `secureConnect` once both hold, else an error.
 */
export function dialTls(address: string, port: number, o: { servername?: string | undefined; ca?: string | undefined }): NativeTls {
  const t = new NativeTls();
  const name = o.servername ?? address;
  const handshake = (s: Raw, _ok: boolean, err: Error | null) => {
    t.attach(s);
    if (err !== null) return void t.destroy(err);
    const wrong = checkServerIdentity(name, s.getPeerCertificate());
    if (wrong) return void t.destroy(wrong);
    t.emit("secureConnect");
  };
  (Bun.connect as (o: unknown) => Promise<Raw>)({
    hostname: address,
    port,
    data: t,
    tls: { ...(o.servername ? { serverName: o.servername } : {}), ...(o.ca ? { ca: o.ca } : {}), rejectUnauthorized: true, ALPNProtocols: "\x08http/1.1" },
    socket: { ...NativeTls.handlers, handshake },
  }).then(
    (s) => t.attach(s),
    (e: Error) => t.destroy(e),
  );
  return t;
}
