// In-sandbox forwarder: 127.0.0.1:<port> → the sandbox's proxy unix socket. Bun built-ins only; the sandbox's long-lived process.
//
// Usage: bun forwarder.ts [--port N]   (or SBX_PROXY_PORT); socket from SBX_PROXY_SOCKET (default /run/sbx/proxy.sock).
// Fail closed: when the socket is absent or refuses, the client's connection is dropped; nothing else is tried.
// Bun.listen/Bun.connect rather than node:net: about 1.5x the throughput; backpressure is handled here by hand.
import type { Socket } from "bun";

function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const portText = argValue("--port") ?? process.env.SBX_PROXY_PORT ?? "3128";
const socketPath = process.env.SBX_PROXY_SOCKET ?? "/run/sbx/proxy.sock";
const port = Number(portText);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`sbx forwarder: bad port '${portText}'\n`);
  process.exit(64);
}

/** One side of a forwarded connection. */
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
  } else s.data.endAfterFlush = true; // the client ended before the proxy answered: pass it on once connected
  maybeClose(s);
}

function onClose(s: Socket<Side>): void {
  s.data.closed = true;
  const peer = s.data.peer;
  // A clean end (FIN) was already passed on by onEnd; a close without one (reset, error) takes the other side down.
  if (peer && !peer.data.closed && !s.data.finReceived) peer.end();
}

const handlers = {
  data: (s: Socket<Side>, d: Uint8Array) => {
    if (s.data.peer) forward(s, s.data.peer, d);
    else s.data.queue.push(d.slice()); // client bytes before the proxy connection is up
  },
  drain: (s: Socket<Side>) => flush(s),
  end: onEnd,
  close: onClose,
  error: (s: Socket<Side>) => void s.data.peer?.end(),
};

const listener = Bun.listen<Side>({
  hostname: "127.0.0.1",
  port,
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
      client.setNoDelay(true);
      Bun.connect<Side>({ unix: socketPath, allowHalfOpen: true, data: side(), socket: handlers }).then(
        (up) => {
          if (client.data.closed) return void up.end();
          up.data.peer = client;
          client.data.peer = up;
          // Early client bytes (queued on the client side) go up first.
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

// One line on stdout so a supervisor (or a test) learns the port when 0 was asked for.
process.stdout.write(`sbx forwarder listening on 127.0.0.1:${listener.port} → ${socketPath}\n`);

for (const sig of ["SIGTERM", "SIGINT"] as const) process.on(sig, () => process.exit(0));
