// The per-sandbox egress proxy: its ways in (the sandbox's own unix socket, a listener its forwarder handed over, the
// transparent path's listeners), each connection read by the one reader (connection.ts), allowlist first.
//
// Where each part lives: decision.ts (allowlist, one lookup, address check), connection.ts (the reader, one state
// machine per connection), tunnel.ts (an allowed CONNECT carried), forward.ts (a plain request carried, through
// upstream.ts's pool), refusal.ts (every answer sbx writes itself), origin.ts and sbx-endpoints.ts (requests to the
// proxy itself), http1.ts (the framing all of them read and write), admission.ts (how many connections a sandbox may
// hold), transparent.ts (a transparent connection's name and checks).
import { existsSync, unlinkSync } from "node:fs";
import { createServer as createNetServer, type Server as NetServer, type Socket } from "node:net";
import type { PolicyLists } from "../core/egress";
import type { EgressEvent, EgressSandbox, TransparentNames } from "../core/egress-events";
import { Admission } from "./admission";
import { ClientConnection, type OriginForwarder } from "./connection";
import { hold, type Carrier, type ProxyContext } from "./context";
import { Decider, type Allowed, type ParentRouting, type Resolver } from "./decision";
import { Origin, type OriginHandler } from "./origin";
import { SbxEndpoints } from "./sbx-endpoints";
import { listenUnix } from "./socket";
import { terminates, Terminator, type SecretBinding } from "./terminate";
import { targetOrNull, transparentConnection, type TransparentDeps, type TransparentTarget } from "./transparent";
import { opaqueTunnel } from "./tunnel";
import { UpstreamPool } from "./upstream";
import { cut, endWith, refusal } from "./refusal";
import { Pacer, PROXY_REQUESTS_BURST, PROXY_REQUESTS_PER_SECOND } from "../core/bounds";

export { systemResolver, type Resolver } from "./decision";
export type { TransparentTarget } from "./transparent";

export interface EgressProxyOptions {
  socketPath: string;
  sandbox: EgressSandbox;
  /** Read on every request, so allowlist changes apply to the next one without a restart. */
  policy: () => PolicyLists;
  /** Uses up a one-time approval a connection relies on (decision.ts); without it one allows nothing. */
  consume?: (pattern: string) => boolean;
  /** Resolver seam; default: the system resolver (all addresses). */
  resolve?: Resolver;
  /** This host's own addresses, refused as destinations unless allowlisted; default: the network interfaces. */
  hostAddresses?: () => Iterable<string>;
  /** Decisions, for the audit log and pending approvals. Called synchronously: keep it cheap; errors are swallowed. */
  onDecision?: (e: EgressEvent) => void;
  /** Origin-form requests (`/llm/…`, `/sbx/egress…`); without one they get 400. `/health` and `/sbx/names|transparent` are the proxy's. */
  originHandler?: OriginHandler;
  /** Origin-form requests the proxy sends on itself, by its own reader and pool (the LLM routes: llm/handler.ts). */
  originForwarder?: OriginForwarder;
  /** The transparent path's name map; without it `/sbx/names` answers 404 and transparent connections are refused. */
  names?: TransparentNames;
  /** Transparent ports whose connections are read as plain HTTP (default: 80); the others are tunnels. */
  transparentHttpPorts?: readonly number[];
  /**
   * Who carries an allowed CONNECT (or transparent tunnel) from the decision on, instead of the opaque tunnel; null:
   * the tunnel. The seam for carrying some hosts otherwise (TLS termination for a host a secret is bound to).
   */
  carrierFor?: (allowed: Allowed) => Carrier | null;
  /**
   * The secrets bound for this sandbox (issue 37): a connection to a host one is bound to is terminated (terminate.ts)
   * and its requests' placeholders swapped; every other host stays a tunnel. Read per connection.
   */
  secrets?: SecretBinding;
  /**
   * The host's parent proxy (sys/parent.ts): where it applies, allowed connections go through it as a CONNECT for the
   * name sbx judged; it is never a destination itself. None: every connection goes straight to its checked address.
   */
  parent?: ParentRouting;
  connectTimeoutMs?: number;
  /**
   * How fast the sandbox may start requests (default PROXY_REQUESTS_BURST, then PROXY_REQUESTS_PER_SECOND); null: no
   * pace (benchmarks and load tests that measure the proxy's own cost, never a sandbox's proxy).
   */
  pace?: { burst: number; perSecond: number } | null;
}

export interface EgressProxy {
  readonly socketPath: string;
  readonly sandbox: EgressSandbox;
  /** Tunnels and forwarded requests in flight. */
  active(): number;
  /**
   * Also accepts this sandbox's connections on a listening socket (the forwarder's 127.0.0.1:<port>, handed over);
   * the fd is the proxy's from now on. The returned close stops accepting on it; open connections run on.
   * `transparentOf` picks out the transparent path's connections among those it accepts (a user-account guest's,
   * which the firewall redirected to this port): those go where `serveTransparent`'s go.
   */
  serveListener(fd: number, opts?: { transparentOf?: (s: Socket) => TransparentTarget | null }): { close(): void };
  /**
   * Accepts the sandbox's transparent connections on a listening socket: each is carried under the name its address
   * stands for (`names`), as CONNECT name:port would be, or as plain HTTP on port 80. `targetOf` says where a
   * connection was headed (default: its own local address and port, as a listener inside the sandbox sees it).
   */
  serveTransparent(fd: number, targetOf?: (s: Socket) => TransparentTarget | null): { close(): void };
  /** Stops listening, cuts every connection, removes the socket. Idempotent. */
  close(): Promise<void>;
}

export async function startEgressProxy(opts: EgressProxyOptions): Promise<EgressProxy> {
  const sandbox = { id: opts.sandbox.id, name: opts.sandbox.name };
  const connectTimeoutMs = opts.connectTimeoutMs ?? 10_000;
  const emit = (e: EgressEvent) => {
    try {
      opts.onDecision?.(e);
    } catch {
      // A broken sink must never break the sandbox's network.
    }
  };
  const decider = new Decider({ sandbox, policy: opts.policy, emit, ...(opts.consume ? { consume: opts.consume } : {}), ...(opts.resolve ? { resolve: opts.resolve } : {}), ...(opts.hostAddresses ? { hostAddresses: opts.hostAddresses } : {}), ...(opts.parent ? { parent: opts.parent } : {}) });
  let tunnel: Carrier | null = null;
  // The work the sandbox may start (invariant 14): each request (and transparent tunnel) takes its turn, a burst at once
  // and then a steady rate, in order; the rest wait on their own connection (at most PROXY_MAX_CONNECTIONS).
  const pace = opts.pace === undefined ? { burst: PROXY_REQUESTS_BURST, perSecond: PROXY_REQUESTS_PER_SECOND } : opts.pace;
  const pacer = pace === null ? null : new Pacer(pace.burst, pace.perSecond);
  const ctx: ProxyContext = {
    turn: () => pacer?.delay(Date.now()) ?? 0,
    sandbox,
    decider,
    emit,
    connectTimeoutMs,
    pool: new UpstreamPool(connectTimeoutMs),
    sockets: new Set(),
    inFlight: 0,
    carrierFor: (allowed) =>
      opts.carrierFor?.(allowed) ??
      (terminator && (allowed.requests || terminates(opts.secrets!.secrets(), allowed.host))
        ? terminator.carrier
        : allowed.requests
          ? unseen
          : (tunnel ??= opaqueTunnel(ctx))),
  };
  // A host whose requests a rule judges, on a proxy with no CA to end its TLS: refused, never carried unseen.
  const unseen: Carrier = (allowed, client, _first, replies) => {
    const d = decider.deny(allowed.path, "CONNECT", allowed.host, allowed.port, "request-not-allowed", `rules judge each request to ${allowed.host}, and this proxy cannot end its TLS to see them`, null);
    if (replies) endWith(client, refusal(sandbox.name, d, true));
    else cut(client);
  };
  const terminator = opts.secrets ? new Terminator(ctx, opts.secrets) : null;
  const origin = new Origin(new SbxEndpoints({ sandboxName: sandbox.name, policy: opts.policy, ...(opts.names ? { names: opts.names } : {}) }), opts.originHandler, connectTimeoutMs, opts.originForwarder ?? null);
  // What the sandbox may hold open at once (invariant 14): admission.ts.
  const admission = new Admission({ sandbox, emit });
  /** A connection on the proxy path (the socket, the sandbox's port). */
  const proxied = (s: Socket) => {
    if (!admission.admit(s, "proxy")) return;
    hold(ctx, s);
    new ClientConnection(s, ctx, { kind: "proxy", origin, plain: terminator });
  };

  const t: TransparentDeps = { ctx, admission, plain: terminator, httpPorts: new Set(opts.transparentHttpPorts ?? [80]), ...(opts.names ? { names: opts.names } : {}) };
  const transparent = (s: Socket, to: TransparentTarget | null) => transparentConnection(t, s, to);

  // The proxy socket: a plain listener, its connections read like the sandbox's port's (allowHalfOpen: a tunnel's
  // client may end its side and still read).
  const server = createNetServer({ allowHalfOpen: true }, proxied);
  await listenUnix(server, opts.socketPath);

  const listeners = new Set<NetServer>();
  let closing: Promise<void> | null = null;
  /** Accepts on a listening socket handed over (its fd is the proxy's from now on); the returned close stops that. */
  const acceptOn = (fd: number, onSocket: (s: Socket) => void): { close(): void } => {
    if (closing) throw new Error("the proxy is closing");
    const l = createNetServer({ allowHalfOpen: true }, (s) => {
      s.setNoDelay(true);
      onSocket(s);
    });
    l.on("error", () => l.close());
    l.listen({ fd });
    listeners.add(l);
    return {
      close() {
        if (listeners.delete(l)) l.close();
      },
    };
  };
  return {
    socketPath: opts.socketPath,
    sandbox,
    active: () => ctx.inFlight,
    serveListener(fd, lopts) {
      const pick = lopts?.transparentOf;
      return acceptOn(fd, (s) => {
        const to = pick ? targetOrNull(pick, s) : null;
        if (to !== null) return void transparent(s, to);
        proxied(s);
      });
    },
    serveTransparent(fd, targetOf) {
      const where = targetOf ?? ((s: Socket) => (s.localAddress && s.localPort ? { address: s.localAddress, port: s.localPort } : null));
      return acceptOn(fd, (s) => transparent(s, targetOrNull(where, s)));
    },
    close() {
      closing ??= new Promise<void>((resolveClose) => {
        for (const l of listeners) l.close();
        listeners.clear();
        server.close(() => resolveClose());
        for (const s of ctx.sockets) s.destroy();
        ctx.pool.close();
        terminator?.close();
        origin.close();
      }).then(() => {
        try {
          if (existsSync(opts.socketPath)) unlinkSync(opts.socketPath);
        } catch {
          // already gone
        }
      });
      return closing;
    },
  };
}
