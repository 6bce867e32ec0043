// The per-sandbox egress proxy: its ways in (the sandbox's own unix socket, a listener its forwarder handed over, the
// transparent path's listeners), each connection read by the one reader (connection.ts), allowlist first.
//
// Where each part lives: decision.ts (allowlist, one lookup, address check), connection.ts (the reader, one state
// machine per connection), tunnel.ts (an allowed CONNECT carried), forward.ts (a plain request carried, through
// upstream.ts's pool), refusal.ts (every answer sbx writes itself), origin.ts and sbx-endpoints.ts (requests to the
// proxy itself), http1.ts (the framing all of them read and write).
import { existsSync, unlinkSync } from "node:fs";
import { createServer as createNetServer, type Server as NetServer, type Socket } from "node:net";
import type { PolicyLists } from "../core/egress";
import type { EgressEvent, EgressSandbox, TransparentNames } from "../core/egress-events";
import { ClientConnection } from "./connection";
import { hold, type Carrier, type ProxyContext } from "./context";
import { authorityText, Decider, type Allowed, type Resolver } from "./decision";
import { cut } from "./refusal";
import { Origin, type OriginHandler } from "./origin";
import { SbxEndpoints } from "./sbx-endpoints";
import { listenUnix } from "./socket";
import { terminates, Terminator, type SecretBinding } from "./terminate";
import { opaqueTunnel } from "./tunnel";
import { UpstreamPool } from "./upstream";
import { Pacer, PROXY_MAX_CONNECTIONS, PROXY_REQUESTS_BURST, PROXY_REQUESTS_PER_SECOND } from "../core/bounds";

export { systemResolver, type Resolver } from "./decision";

/** Where a transparent connection was headed: the address and port the client dialled. */
export type TransparentTarget = { address: string; port: number };

export interface EgressProxyOptions {
  socketPath: string;
  sandbox: EgressSandbox;
  /** Read on every request, so allowlist changes apply to the next one without a restart. */
  policy: () => PolicyLists;
  /** Resolver seam; default: the system resolver (all addresses). */
  resolve?: Resolver;
  /** This host's own addresses, refused as destinations unless allowlisted; default: the network interfaces. */
  hostAddresses?: () => Iterable<string>;
  /** Decisions, for the audit log and pending approvals. Called synchronously: keep it cheap; errors are swallowed. */
  onDecision?: (e: EgressEvent) => void;
  /** Origin-form requests (`/llm/…`, `/sbx/egress…`); without one they get 400. `/health` and `/sbx/names|transparent` are the proxy's. */
  originHandler?: OriginHandler;
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
  const decider = new Decider({ sandbox, policy: opts.policy, emit, ...(opts.resolve ? { resolve: opts.resolve } : {}), ...(opts.hostAddresses ? { hostAddresses: opts.hostAddresses } : {}) });
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
      (terminator && terminates(opts.secrets!.secrets(), allowed.host) ? terminator.carrier : (tunnel ??= opaqueTunnel(ctx))),
  };
  const terminator = opts.secrets ? new Terminator(ctx, opts.secrets) : null;
  const origin = new Origin(new SbxEndpoints({ sandboxName: sandbox.name, policy: opts.policy, ...(opts.names ? { names: opts.names } : {}) }), opts.originHandler, connectTimeoutMs);
  // What the sandbox may hold open at once (invariant 14): PROXY_MAX_CONNECTIONS of its connections, on every way in.
  // The next is refused before anything of it is read (a 503 that says why; a transparent one cut), and said (an
  // `error` decision, audited) once a second at most. The refusals are bounded too: at most PROXY_MAX_CONNECTIONS are
  // being answered at once, past that a connection is closed at once without one.
  const clients = new Set<Socket>();
  let refusing = 0;
  let refusedSince = 0;
  let toldAt = 0;
  const admit = (s: Socket, how: "proxy" | "transparent"): boolean => {
    if (clients.size < PROXY_MAX_CONNECTIONS) {
      clients.add(s);
      s.once("close", () => clients.delete(s));
      return true;
    }
    refusedSince++;
    const message = `${PROXY_MAX_CONNECTIONS} connections of this sandbox are open at once; more are refused until some close`;
    const now = Date.now();
    if (now - toldAt >= 1000) {
      toldAt = now;
      emit({ type: "error", sandbox, path: how, method: "CONNECT", host: "(any)", port: 0, address: null, message: `${message} (${refusedSince} refused)`, at: now });
      refusedSince = 0;
    }
    s.on("error", () => s.destroy());
    if (how === "transparent" || refusing >= PROXY_MAX_CONNECTIONS) {
      cut(s);
      return false;
    }
    refusing++;
    const body = `sbx proxy: ${message}.\n`;
    s.resume(); // read and dropped, so the close is not a reset that loses the answer
    s.end(`HTTP/1.1 503 sbx: too many connections from this sandbox\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    // A second for the client to read it and close (closing first would reset it away); a client that never does is cut.
    const t = setTimeout(() => s.destroy(), 1000);
    s.once("close", () => {
      clearTimeout(t);
      refusing--;
    });
    return false;
  };
  /** A connection on the proxy path (the socket, the sandbox's port). */
  const proxied = (s: Socket) => {
    if (!admit(s, "proxy")) return;
    hold(ctx, s);
    new ClientConnection(s, ctx, { kind: "proxy", origin });
  };

  /** Transparent ports whose connections are read as plain HTTP. */
  const httpPorts = new Set(opts.transparentHttpPorts ?? [80]);
  /** One transparent connection: the name its address stands for, then the same checks as the proxy path's. */
  const transparent = (s: Socket, to: TransparentTarget | null) => {
    if (!admit(s, "transparent")) return;
    hold(ctx, s);
    s.on("error", () => s.destroy());
    const address = to?.address.startsWith("::ffff:") ? to.address.slice(7) : to?.address;
    const name = address === undefined ? null : (opts.names?.nameOf(address) ?? null);
    if (to === null || name === null) {
      const shown = to === null ? "an unknown address" : authorityText(address ?? "?", to.port);
      emit({ type: "denied", sandbox, path: "transparent", method: "CONNECT", host: address ?? "?", port: to?.port ?? 0, reason: "unnamed-address", detail: `${shown} stands for no name the sandbox looked up (connect by name)`, suggest: null, at: Date.now() });
      return void cut(s);
    }
    if (httpPorts.has(to.port)) return void new ClientConnection(s, ctx, { kind: "transparent", site: { name, port: to.port } });
    s.pause();
    const go = () => {
      if (s.destroyed) return;
      void decider.check("transparent", "CONNECT", name, to.port).then((v) => {
        if (s.destroyed) return;
        if (!v.ok) return void cut(s);
        ctx.carrierFor(v)(v, s, Buffer.alloc(0), false);
      });
    };
    const d = ctx.turn();
    if (d > 0) setTimeout(go, d);
    else go();
  };

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

/** Where a transparent connection was headed, or null when that cannot be told (a lookup that throws tells nothing). */
function targetOrNull(of: (s: Socket) => TransparentTarget | null, s: Socket): TransparentTarget | null {
  try {
    return of(s);
  } catch {
    return null;
  }
}
