// An allowed tunnel's bytes, once judged, carried by Bun sockets rather than node:net streams: both connections'
// descriptors are taken over (dup, then the node:net sockets let go) and relayed by shims/relay.ts.
//
// Why: node:net under Bun pushes every chunk through the streams machinery (Readable buffers, pipe, an object spread
// and a bind per chunk: most of the proxy's CPU per byte, measured with --cpu-prof), and on a 2-core machine that CPU
// is what the tunnel loses against direct. The relay is the same one the forwarder and `sbx port` use: backpressure
// (one chunk held per direction, the source paused), half-close both ways, and a byte count per direction that the
// tunnel's `closed` event reports as before. Where it cannot (no fd passing here, a node:net internal that is not
// there, bytes still queued in node:net's buffers), the caller keeps node:net's pipe.
import type { Socket as NodeSocket } from "node:net";
import type { Socket } from "bun";
import { fdPassing } from "../../shims/fd-pass";
import { relayClose, relayDrain, relayEarly, relayEnd, relayJoin, relaySide, type Side } from "../../shims/relay";

export interface NativePair {
  /** Bytes written to the upstream and to the client through the relay so far. */
  written(): { up: number; client: number };
  /** Cuts both (the proxy is closing). */
  destroy(): void;
}

/** The descriptor under a node:net socket of Bun's (an internal: undefined where it is not there). */
function fdOf(s: NodeSocket): number | undefined {
  const fd = (s as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  return typeof fd === "number" && fd >= 0 ? fd : undefined;
}

/** What a paused node:net socket has read and not yet given out. */
function buffered(s: NodeSocket): Buffer[] {
  const out: Buffer[] = [];
  for (let b = s.read() as Buffer | null; b !== null; b = s.read() as Buffer | null) out.push(b);
  return out;
}

/**
 * Moves `client` and `up` (both open, both paused, nothing piped between them, nothing waiting in their write buffers)
 * onto Bun sockets and relays between them; `toUp`: bytes the client sent that must go up first (a tunnel's judged
 * first bytes). Their 'close' listeners run once both ends are closed, as if the node:net sockets had closed then (so
 * admission and the proxy's socket set count the connection until it really ends). Null when it cannot: nothing was
 * changed, the caller pipes as before.
 */
export function adoptPair(client: NodeSocket, up: NodeSocket, toUp: Buffer, onEnd?: () => void): NativePair | null {
  const lib = fdPassing();
  if (!lib) return null;
  const cfd = fdOf(client);
  const ufd = fdOf(up);
  if (cfd === undefined || ufd === undefined) return null;
  if (client.writableLength > 0 || up.writableLength > 0 || !client.readable || !up.readable || client.destroyed || up.destroyed) return null;
  const fromClient = [toUp, ...buffered(client)].filter((b) => b.length > 0);
  const fromUp = buffered(up);
  let dc: number;
  let du: number;
  try {
    dc = lib.dup(cfd);
    du = lib.dup(ufd);
  } catch {
    return null;
  }
  // The node:net sockets let go of their descriptors (a close of one descriptor neither ends nor resets the
  // connection while the dup holds it); their listeners are kept for the real end.
  const closers = [client, up].map((s) => {
    const fns = s.listeners("close") as ((...a: unknown[]) => void)[];
    s.removeAllListeners("close");
    s.removeAllListeners("data");
    s.removeAllListeners("end");
    s.removeAllListeners("error");
    s.on("error", () => {});
    s.destroy();
    return { s, fns };
  });
  const natives: Socket<Side>[] = [];
  const fromUpBytes = fromUp.reduce((n, b) => n + b.length, 0);
  let cut = false;
  let open = 2;
  const ended = () => {
    onEnd?.();
    for (const { s, fns } of closers) for (const f of fns) f.call(s, false);
  };
  const closed = () => {
    if (--open === 0) ended();
  };
  const handlers = {
    open: (s: Socket<Side>) => {
      s.data = relaySide();
      s.pause();
    },
    data: relayEarly,
    drain: relayDrain,
    end: relayEnd,
    close: (s: Socket<Side>) => {
      relayClose(s);
      closed();
    },
    error: (s: Socket<Side>) => void s.data?.peer?.end(),
  };
  const adopt = (fd: number) => (Bun.connect as (o: unknown) => Promise<Socket<Side>>)({ fd, allowHalfOpen: true, data: relaySide(), socket: handlers });
  const pc = adopt(dc);
  const pu = adopt(du);
  void Promise.allSettled([pc, pu]).then(([c, u]) => {
    if (c.status !== "fulfilled" || u.status !== "fulfilled") {
      if (c.status === "fulfilled") c.value.terminate();
      else lib.close(dc);
      if (u.status === "fulfilled") u.value.terminate();
      else lib.close(du);
      open = 0;
      return ended();
    }
    const [cs, us] = [c.value, u.value];
    natives.push(cs, us);
    if (cut) {
      cs.terminate();
      us.terminate();
      return;
    }
    cs.setNoDelay(true);
    us.setNoDelay(true);
    cs.data.early = fromClient;
    us.data.early = fromUp;
    relayJoin(cs, us); // the client's early bytes go up, the client flows
    relayJoin(us, cs); // what node:net had read from the server goes down, the server flows
  });
  return {
    // What node:net had read from the server before is not counted again: the caller counted it as read then.
    written: () => ({ up: natives[1]?.data.written ?? 0, client: Math.max(0, (natives[0]?.data.written ?? 0) - fromUpBytes) }),
    destroy() {
      cut = true;
      for (const s of natives) s.terminate();
    },
  };
}
