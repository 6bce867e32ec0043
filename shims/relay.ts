// TCP → unix-socket relay: 127.0.0.1:<port> to a proxy socket, with backpressure and half-close handled by hand.
// Used by the in-sandbox forwarder (shims/forwarder.ts) and by the daemon's loopback guard for user-account sandboxes.
// It lives in shims/ because the forwarder runs inside Docker sandboxes from this mounted dir: Bun built-ins only, no
// node_modules, no module state. Fail closed: when the socket is absent or refuses, the client's connection is dropped.
// Bun.listen/Bun.connect rather than node:net (per-byte CPU measured within noise of node:net and node:http pipes).
import type { Socket } from "bun";

interface Side {
  peer: Socket<Side> | null;
  /** Bytes accepted for this socket that it could not take yet. */
  queue: Uint8Array[];
  /** The peer ended: send FIN once the queue is flushed. */
  endAfterFlush: boolean;
  finSent: boolean;
  finReceived: boolean;
  closed: boolean;
}

const side = (): Side => ({ peer: null, queue: [], endAfterFlush: false, finSent: false, finReceived: false, closed: false });

function maybeClose(s: Socket<Side>): void {
  if (s.data.finSent && s.data.finReceived && !s.data.closed) s.end();
}

function sendFin(s: Socket<Side>): void {
  if (s.data.finSent || s.data.closed) return;
  s.data.finSent = true;
  s.shutdown();
  maybeClose(s);
}

/** Writes to dst; what it cannot take is queued and the source paused until dst drains. */
function forward(src: Socket<Side>, dst: Socket<Side>, chunk: Uint8Array): void {
  if (dst.data.closed) return;
  if (dst.data.queue.length > 0) {
    dst.data.queue.push(chunk.slice());
    return;
  }
  const n = dst.write(chunk);
  if (n < chunk.length) {
    dst.data.queue.push(chunk.slice(Math.max(n, 0)));
    src.pause();
  }
}

function flush(s: Socket<Side>): void {
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

function onEnd(s: Socket<Side>): void {
  s.data.finReceived = true;
  const peer = s.data.peer;
  if (peer) {
    if (peer.data.queue.length === 0) sendFin(peer);
    else peer.data.endAfterFlush = true;
  } else s.data.endAfterFlush = true;
  maybeClose(s);
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
    data: (s: Socket<Side>, d: Uint8Array) => {
      if (s.data.peer) forward(s, s.data.peer, d);
      else s.data.queue.push(d.slice());
    },
    drain: (s: Socket<Side>) => flush(s),
    end: onEnd,
    close: (s: Socket<Side>) => {
      s.data.closed = true;
      open.delete(s);
      const peer = s.data.peer;
      if (peer && !peer.data.closed && !s.data.finReceived) peer.end();
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
      data(client, d) {
        if (client.data.peer) forward(client, client.data.peer, d);
        else {
          client.data.queue.push(d.slice());
          client.pause();
        }
      },
      open(client) {
        client.data = side();
        open.add(client);
        client.setNoDelay(true);
        Bun.connect<Side>({ unix: o.socketPath, allowHalfOpen: true, data: side(), socket: handlers }).then(
          (up) => {
            if (client.data.closed) return void up.end();
            open.add(up);
            up.data.peer = client;
            client.data.peer = up;
            const early = client.data.queue;
            client.data.queue = [];
            for (const c of early) forward(client, up, c);
            if (client.data.endAfterFlush) {
              client.data.endAfterFlush = false;
              if (up.data.queue.length === 0) sendFin(up);
              else up.data.endAfterFlush = true;
            }
            client.resume();
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
