// TCP → unix-socket relay: 127.0.0.1:<port> to a proxy socket, with backpressure and half-close handled by hand.
// Used by the in-sandbox forwarder (shims/forwarder.ts) and by the daemon's loopback guard for user-account sandboxes.
// It lives in shims/ because the forwarder runs inside Docker sandboxes from this mounted dir: Bun built-ins only, no
// node_modules, no module state. Fail closed: when the socket is absent or refuses, the client's connection is dropped.
// Bun.listen/Bun.connect rather than node:net (per-byte CPU measured within noise of node:net and node:http pipes).
import type { Socket } from "bun";

/**
 * One end of a relayed pair as the relay drives it: a Bun socket, or anything that behaves like one (the port
 * forwarder's framed fallback). `write` returns how many bytes it took now; the rest is the relay's to queue.
 */
export interface RelayEnd {
  data: Side;
  write(b: Uint8Array): number;
  /** Ends the writing side (FIN) and keeps reading. */
  shutdown(): void;
  /** Closes it. */
  end(): void;
  pause(): void;
  resume(): void;
}

export interface Side {
  peer: RelayEnd | null;
  /** Bytes accepted for this socket that it could not take yet. */
  queue: Uint8Array[];
  /**
   * What this socket sent before its peer existed (a client while its upstream is made), and whether it ended then.
   * Kept apart from `queue`, which is bytes *for* it: a drain before the upstream exists must not send them back.
   */
  early: Uint8Array[];
  earlyEnd: boolean;
  /** The peer ended: send FIN once the queue is flushed. */
  endAfterFlush: boolean;
  finSent: boolean;
  finReceived: boolean;
  closed: boolean;
  /** Bytes written to this end so far (what its peer sent through the relay): the byte count a caller audits. */
  written: number;
}

export const relaySide = (): Side => ({ peer: null, queue: [], early: [], earlyEnd: false, endAfterFlush: false, finSent: false, finReceived: false, closed: false, written: 0 });

function maybeClose(s: RelayEnd): void {
  if (s.data.finSent && s.data.finReceived && !s.data.closed) s.end();
}

function sendFin(s: RelayEnd): void {
  if (s.data.finSent || s.data.closed) return;
  s.data.finSent = true;
  s.shutdown();
  maybeClose(s);
}

/**
 * Writes to dst; what it cannot take is queued and the source paused until dst drains. At most one chunk (the one that
 * did not fit, plus what the source had in flight) is held per direction, whatever the reader does: a peer that never
 * reads costs the relay a bounded few bytes, not the stream.
 */
export function relayForward(src: RelayEnd, dst: RelayEnd, chunk: Uint8Array): void {
  if (dst.data.closed) return;
  dst.data.written += chunk.length;
  if (dst.data.queue.length > 0) {
    dst.data.queue.push(chunk.slice());
    src.pause();
    return;
  }
  const n = dst.write(chunk);
  if (n < chunk.length) {
    dst.data.queue.push(chunk.slice(Math.max(n, 0)));
    src.pause();
  }
}

/** dst can take more: what was queued for it goes, then its peer may send again. */
export function relayDrain(s: RelayEnd): void {
  const q = s.data.queue;
  while (q.length > 0) {
    const c = q[0]!;
    const n = s.write(c);
    if (n < c.length) {
      q[0] = c.subarray(Math.max(n, 0));
      return;
    }
    q.shift();
  }
  s.data.peer?.resume();
  if (s.data.endAfterFlush) sendFin(s);
}

/** s sent its FIN: its peer gets one once what is queued for it is written. */
export function relayEnd(s: RelayEnd): void {
  s.data.finReceived = true;
  const peer = s.data.peer;
  if (peer) {
    if (peer.data.queue.length === 0) sendFin(peer);
    else peer.data.endAfterFlush = true;
  } else s.data.earlyEnd = true;
  maybeClose(s);
}

/** s is gone: a peer still open is closed unless s had ended cleanly (then the peer finishes its half on its own). */
export function relayClose(s: RelayEnd): void {
  s.data.closed = true;
  const peer = s.data.peer;
  if (peer && !peer.data.closed && !s.data.finReceived) peer.end();
}

/**
 * Joins a client that was accepted (and paused, its early bytes in its queue, its early FIN in endAfterFlush) with
 * the upstream made for it: the early bytes go up, then both flow.
 */
export function relayJoin(client: RelayEnd, up: RelayEnd): void {
  up.data.peer = client;
  client.data.peer = up;
  const early = client.data.early;
  client.data.early = [];
  for (const c of early) relayForward(client, up, c);
  if (client.data.earlyEnd) {
    client.data.earlyEnd = false;
    if (up.data.queue.length === 0) sendFin(up);
    else up.data.endAfterFlush = true;
  }
  client.resume();
}

/** A client's bytes before its upstream exists: kept (copied: Bun reuses the buffer) and the client paused. */
export function relayEarly(client: RelayEnd, d: Uint8Array): void {
  if (client.data.peer) return relayForward(client, client.data.peer, d);
  client.data.early.push(d.slice());
  client.pause();
}

export interface TcpRelayOptions {
  /** Loopback address to listen on (default 127.0.0.1). */
  hostname?: string;
  /** 0 picks a free port (tests). */
  port: number;
  /** Accept on this already-listening socket instead of binding port (the forwarder's hand-made listener; `port` names it). */
  fd?: number;
  /** The unix socket every connection is relayed to. */
  socketPath: string;
}

export interface TcpRelay {
  readonly hostname: string;
  readonly port: number;
  /** Connections currently relayed. */
  active(): number;
  /** Stops listening and drops every open connection. */
  close(): void;
  /** Stops accepting; connections already relayed run to their end. */
  stopAccepting(): void;
}

/** Starts the relay; throws (EADDRINUSE, …) when the port cannot be bound, so a guard fails and the sandbox stays fenced. */
export function startTcpRelay(o: TcpRelayOptions): TcpRelay {
  const hostname = o.hostname ?? "127.0.0.1";
  if (hostname !== "127.0.0.1" && hostname !== "::1") throw new Error(`tcp relay: refusing to listen on ${hostname}: loopback only`);
  const open = new Set<Socket<Side>>();
  const handlers = {
    data: relayEarly,
    drain: relayDrain,
    end: relayEnd,
    close: (s: Socket<Side>) => {
      open.delete(s);
      relayClose(s);
    },
    error: (s: Socket<Side>) => void s.data.peer?.end(),
  };
  // Bun.listen takes `fd` (an already-listening socket) at run time; its types only know hostname/port.
  const where = (o.fd === undefined ? { hostname, port: o.port } : { fd: o.fd }) as { hostname: string; port: number };
  const listener = Bun.listen<Side>({
    ...where,
    allowHalfOpen: true,
    socket: {
      ...handlers,
      data: relayEarly,
      open(client) {
        client.data = relaySide();
        open.add(client);
        client.setNoDelay(true);
        Bun.connect<Side>({ unix: o.socketPath, allowHalfOpen: true, data: relaySide(), socket: handlers }).then(
          (up) => {
            if (client.data.closed) return void up.end();
            open.add(up);
            relayJoin(client, up);
          },
          () => client.end(),
        );
      },
    },
  });
  let listening = true;
  return {
    hostname,
    port: o.fd === undefined ? listener.port : o.port,
    active: () => [...open].filter((s) => s.data.peer !== null).length / 2,
    close() {
      if (listening) listener.stop(true);
      listening = false;
      for (const s of open) s.end();
      open.clear();
    },
    stopAccepting() {
      if (listening) listener.stop(false);
      listening = false;
    },
  };
}
