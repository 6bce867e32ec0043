// What the parts of one sandbox's proxy share (its sandbox and decisions, its event sink, the sockets it holds and what
// is in flight), and the seam where an allowed CONNECT is handed to whoever carries it.
import type { Duplex } from "node:stream";
import type { EgressEvent, EgressSandbox } from "../core/egress-events";
import type { Allowed, Decider } from "./decision";
import type { UpstreamPool } from "./upstream";

/**
 * Carries an allowed connection from here on: `client` (paused; `first` holds the bytes read after its CONNECT head,
 * if any) to `allowed.address` and nowhere else. `replies`: the proxy path, whose client waits for
 * `200 Connection Established` (or a refusal); the transparent path's client hears nothing from the proxy.
 * The opaque tunnel (tunnel.ts) is the one carrier today; a TLS terminator for the hosts a secret is bound to would be
 * another, chosen per allowed connection by `carrierFor`.
 */
export type Carrier = (allowed: Allowed, client: Duplex, first: Buffer, replies: boolean) => void;

export interface ProxyContext {
  readonly sandbox: EgressSandbox;
  readonly decider: Decider;
  /** Decisions to the sink (audit, pending approvals, the feed); never throws. */
  emit(e: EgressEvent): void;
  readonly connectTimeoutMs: number;
  /** Plain HTTP's connections to servers, kept alive per checked address and port. */
  readonly pool: UpstreamPool;
  /** Every socket the proxy holds, on either side: all are cut when it closes. */
  readonly sockets: Set<Duplex>;
  /** Tunnels and forwarded requests in flight. */
  inFlight: number;
  /** Who carries an allowed CONNECT (or transparent connection) from here on. */
  carrierFor(allowed: Allowed): Carrier;
  /**
   * Takes the sandbox's next turn to start a request (invariant 14: a burst, then a steady rate, in order): how many ms
   * to wait for it, 0 for now.
   */
  turn(): number;
}

/** Holds a socket in the proxy's set until it closes. */
export function hold(ctx: ProxyContext, s: Duplex): void {
  ctx.sockets.add(s);
  s.once("close", () => ctx.sockets.delete(s));
}
