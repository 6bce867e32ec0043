// The daemon's side of the listener handoff: on a sandbox's listen.sock, take its 127.0.0.1:<port> listener and serve the proxy on it.
//
// Docker: the in-sandbox forwarder hands it over; linux-user: the daemon's own loopback guard does. The sender connects and sends its listening socket with SCM_RIGHTS (shims/handoff.ts). It arrives in the
// connection's first message; the connection is paused from its first moment so Bun never reads it, and the message is
// taken with recvmsg (polled briefly when it has not arrived yet).
// What may be adopted: a listening TCP socket bound to a loopback address, nothing else; anything else is closed and
// answered `refused <why>`. A sandbox can only send descriptors it already holds, and the proxy only accepts connections on
// this one, so the sandbox gains nothing; the socket being its own (per-sandbox path) is its identity, as for
// proxy.sock. One listener per slot (`slot`: by default one per sandbox; the proxy guard's are the proxy's and one per
// transparent port, so a sandbox can make the daemon hold a bounded few): a newer handoff to a slot replaces the older. The connection stays open while the listener is held; when either side
// closes it, the proxy stops accepting on it and the forwarder relays again.
import { rmSync } from "node:fs";
import type { Socket } from "bun";
import { type FdPassing, loopbackListener, type SocketInfo } from "../../shims/fd-pass";

export interface HandoffServer {
  /** Whether a forwarder's listener is being served now. */
  held(): boolean;
  /** Stops listening, lets go of the adopted listener, removes the socket. */
  close(): void;
}

export interface HandoffServerOptions {
  lib: FdPassing;
  path: string;
  /** Serves the proxy on a listening socket; the returned close stops accepting on it and closes it. */
  adopt: (fd: number, info: SocketInfo) => { close(): void };
  /** Why a listener may not be adopted, or null (default: `loopbackListener`). */
  refuse?: (info: SocketInfo | { error: string }) => string | null;
  /** Which of the few listeners a sandbox may have this one is (default: there is one). */
  slot?: (info: SocketInfo) => string;
  log: { warn(msg: string, fields?: Record<string, unknown>): void };
}

/** Handshakes in progress at once, and how long one may take to send (about 3 s of backoff). */
const MAX_PENDING = 8;
const MAX_TRIES = 36;

export function serveListenerHandoff(o: HandoffServerOptions): HandoffServer {
  rmSync(o.path, { force: true });
  /** The listeners held, by slot, each with the connection that handed it over. */
  const current = new Map<string, { sock: Socket<undefined>; listener: { close(): void } }>();
  const release = (sock: Socket<undefined>) => {
    for (const [k, c] of current) {
      if (c.sock !== sock) continue;
      c.listener.close();
      current.delete(k);
    }
  };
  const refuse = o.refuse ?? loopbackListener;
  const pending = new Set<Socket<undefined>>();
  const closed = new WeakSet<Socket<undefined>>();
  /** Reads the descriptor once it is there: the forwarder sends right after connecting, usually before this runs. */
  const take = (sock: Socket<undefined>, tries: number): void => {
    if (closed.has(sock)) return;
    const got = o.lib.recvFd((sock as unknown as { fd: number }).fd);
    if ("none" in got && got.none === "nothing yet" && tries < MAX_TRIES) {
      setTimeout(() => take(sock, tries + 1), Math.min(2 ** tries, 100));
      return;
    }
    pending.delete(sock);
    if ("none" in got) return void sock.end(`refused ${got.none === "nothing yet" ? "nothing was sent" : got.none}\n`);
    const info = o.lib.socketInfo(got.fd);
    const why = refuse(info) ?? ("error" in info ? info.error : null);
    if (why !== null || "error" in info) {
      o.lib.close(got.fd);
      o.log.warn("refused a listener handed over on listen.sock", { why });
      return void sock.end(`refused ${why}\n`);
    }
    let listener;
    try {
      listener = o.adopt(got.fd, info);
    } catch (e) {
      o.lib.close(got.fd);
      return void sock.end(`refused ${(e as Error).message.replace(/\n/g, " ")}\n`);
    }
    const key = o.slot ? o.slot(info) : "listener";
    const was = current.get(key);
    if (was) {
      release(was.sock);
      was.sock.end();
    }
    current.set(key, { sock, listener });
    sock.write("ok\n");
    sock.resume(); // from now on only its close matters (the forwarder gone); anything it sends is dropped
  };
  const old = process.umask(0o177); // the socket is 0600 from the start
  let server;
  try {
    server = Bun.listen<undefined>({
      unix: o.path,
      socket: {
        open(sock) {
          // Bun must never read this socket: a read without room for ancillary data drops the descriptor.
          sock.pause();
          if (pending.size >= MAX_PENDING) return void sock.end("refused too many handoffs at once\n");
          pending.add(sock);
          take(sock, 0);
        },
        data() {
          // Nothing is expected after the handoff; descriptors sent now are discarded by the kernel.
        },
        close(sock) {
          // Marked before the fd number can be reused, so a pending take() never reads another socket.
          pending.delete(sock);
          closed.add(sock);
          release(sock);
        },
        error() {
          /* close follows */
        },
      },
    });
  } finally {
    process.umask(old);
  }
  const srv = server;
  return {
    held: () => current.size > 0,
    close() {
      for (const c of [...current.values()]) {
        release(c.sock);
        c.sock.end();
      }
      srv.stop(true);
      rmSync(o.path, { force: true });
    },
  };
}
