// Lends a host tool (the bridge's git and gh) the parent proxy for one call: tunnels (CONNECT) for an https:// URL,
// plain requests in absolute form for git's http:// remotes. A parent with no credentials is named to the tool as it
// is. A parent with credentials is not: gh runs formatters a sandbox chooses (`--jq '$ENV…'`), so nothing it must not
// see may be in its environment. The tool gets instead this relay on the host's loopback, with a one-call password of
// its own, good only for the host it was lent for (and names under it) while the call runs; the relay speaks to the
// parent with the real credentials, which stay in the daemon. Sandboxes never reach the host's loopback (invariant
// no-direct-egress), and a password that leaked through a formatter is dead when the call ends.
import { createServer, type Server, type Socket } from "node:net";
import { randomBytes, timingSafeEqual } from "node:crypto";
import { normalizeHost } from "../core/allowlist";
import { basicAuthorization, connectAuthority, proxyVariables, readForwardOrConnect, relayRefusal } from "../core/parent-proxy";
import { forwardThroughParent, relayThroughParent, type ParentRouter } from "./parent";

/** How long a tool has to send its CONNECT once it is connected. */
const HEAD_TIMEOUT_MS = 10_000;

interface Lease {
  /** The host the call was lent for: it and names under it may be asked for (a tunnel's: it alone). */
  host: string;
  /** The one port that may be asked for: the URL's (443 when it names none), a tunnel's (ssh's) own. */
  port: number;
  /** A tunnel's: `host:port` exactly, no name under it. */
  exact: boolean;
  /** How it may be asked: a CONNECT (an https:// URL, a tunnel), or plain requests in absolute form (an http:// URL). */
  plain: boolean;
  authorization: string;
}

/** Connections the relay holds at once: its callers are sbx's own host tools, one call each, a few at a time. */
const MAX_CONNECTIONS = 64;

/** The proxy variables for one call, and its end (after which a relay password no longer works). */
export interface ParentLease {
  env: Record<string, string>;
  release(): void;
}

const NONE: ParentLease = { env: {}, release: () => undefined };

/** One call's tunnel to exactly one host:port through the relay (ssh's ProxyCommand): where, the password, its end. */
export interface TunnelLease {
  /** The relay: `127.0.0.1:port`. */
  relay: string;
  /** The one-call password (Basic `sbx:<password>`): for the tool's environment, never its argv. */
  password: string;
  release(): void;
}

export class ParentRelay {
  private server: Server | null = null;
  private port = 0;
  private starting: Promise<void> | null = null;
  private readonly leases = new Map<string, Lease>();
  private readonly sockets = new Set<Socket>();
  /** Callers' connections open now (MAX_CONNECTIONS bounds them). */
  private clients = 0;

  constructor(private readonly router: ParentRouter) {}

  /** Relay passwords in force now (tests: each call's ends with it). */
  active(): number {
    return this.leases.size;
  }

  /**
   * The proxy variables for a host tool's one call to `url` (its host, and names under it: gh reaches api.<host>), or
   * none when no parent applies to that host. Release it when the call ends.
   */
  async lease(url: string): Promise<ParentLease> {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      return NONE;
    }
    const host = normalizeHost(u.hostname);
    if (host === null) return NONE;
    const route = this.router.route(u.protocol === "http:" ? "http" : "https", host);
    if (route === null) return NONE;
    const noProxy = this.router.settings?.noProxy ?? "";
    if (route.endpoint.credentials === null) return { env: proxyVariables(route.endpoint.shown, noProxy), release: () => undefined };
    await this.start();
    const token = randomBytes(18).toString("base64url");
    const port = u.port === "" ? (u.protocol === "http:" ? 80 : 443) : Number(u.port);
    this.leases.set(token, { host, port, exact: false, plain: u.protocol === "http:", authorization: basicAuthorization("sbx", token) });
    return {
      // git asks a proxy which login it wants first (anyauth): a 407 and the request again, on every call. The relay
      // wants Basic alone, so git is told so and sends it at once.
      env: { ...proxyVariables(`http://sbx:${token}@127.0.0.1:${this.port}`, noProxy), GIT_HTTP_PROXY_AUTHMETHOD: "basic" },
      release: () => void this.leases.delete(token),
    };
  }

  /**
   * A tunnel to exactly `host:port` through the parent for one call of a tool that cannot speak to a proxy itself (the
   * bridge's ssh, through bridge/ssh-parent-connect.ts), or null when no parent applies to `host` (NO_PROXY): then it
   * goes straight out. Always through the relay, a parent without credentials too: ssh needs a helper to send a CONNECT
   * anyway, and the relay holds the password to that one host and port (no names under it, no other port). `host`: a
   * normalised name or address (core/allowlist.ts normalizeHost). Release it when the call ends.
   */
  async tunnel(host: string, port: number): Promise<TunnelLease | null> {
    if (!Number.isInteger(port) || port < 1 || port > 65535 || normalizeHost(host) !== host) return null;
    if (this.router.route("https", host) === null) return null;
    await this.start();
    const token = randomBytes(18).toString("base64url");
    this.leases.set(token, { host, port, exact: true, plain: false, authorization: basicAuthorization("sbx", token) });
    return { relay: `127.0.0.1:${this.port}`, password: token, release: () => void this.leases.delete(token) };
  }

  /** Stops the relay: every call through it is cut. */
  close(): void {
    this.server?.close();
    this.server = null;
    this.starting = null;
    for (const s of this.sockets) s.destroy();
    this.leases.clear();
  }

  private start(): Promise<void> {
    this.starting ??= new Promise<void>((resolve, reject) => {
      const server = createServer({ allowHalfOpen: true }, (s) => this.serve(s));
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => {
        this.port = (server.address() as { port: number }).port;
        this.server = server;
        server.unref();
        resolve();
      });
    });
    return this.starting;
  }

  /** Which lease a Proxy-Authorization is (compared in constant time), or null. */
  private leaseOf(authorization: string | null): Lease | null {
    if (authorization === null) return null;
    const given = Buffer.from(authorization);
    for (const l of this.leases.values()) {
      const want = Buffer.from(l.authorization);
      if (want.length === given.length && timingSafeEqual(want, given)) return l;
    }
    return null;
  }

  private serve(s: Socket): void {
    if (this.clients >= MAX_CONNECTIONS) return void s.destroy();
    this.clients++;
    this.sockets.add(s);
    s.once("close", () => {
      this.clients--;
      this.sockets.delete(s);
    });
    // A caller that leaves before its request is done with: it is not held open (half-open) until the head timeout.
    const leftEarly = () => s.destroy();
    s.once("end", leftEarly);
    s.on("error", () => s.destroy());
    s.setTimeout(HEAD_TIMEOUT_MS, () => s.destroy());
    let buf: Buffer = Buffer.alloc(0);
    const answer = (status: 400 | 403 | 405 | 407, why: string) => {
      s.off("data", onData);
      s.off("end", leftEarly);
      s.end(relayRefusal(status, why));
    };
    const onData = (d: Buffer) => {
      buf = buf.length === 0 ? d : Buffer.concat([buf, d]);
      const r = readForwardOrConnect(buf);
      if (r.kind === "more") return;
      if (r.kind === "bad") return answer(r.status, r.why);
      const lease = this.leaseOf(r.authorization);
      if (lease === null) return answer(407, "this relay lends the parent proxy to sbx's own host tools, for one call each");
      // An https:// call is lent tunnels, an http:// one plain requests: never the other way.
      if ((r.kind === "forward") !== lease.plain) return answer(405, lease.plain ? "this call was lent the parent for plain http:// requests" : "this call was lent the parent for CONNECT only");
      const named = r.host === lease.host || (!lease.exact && r.host.endsWith(`.${lease.host}`));
      if (!named || r.port !== lease.port) {
        const lent = `${connectAuthority(lease.host, lease.port)}${lease.exact ? "" : " (and names under it)"}`;
        return answer(403, `this call was lent the parent proxy for ${lent}, not ${connectAuthority(r.host, r.port)}`);
      }
      const route = this.router.route(r.kind === "forward" ? "http" : "https", r.host);
      if (route === null) return answer(403, `${r.host} does not go through the parent proxy (NO_PROXY)`);
      s.off("data", onData);
      s.off("end", leftEarly);
      s.pause();
      s.setTimeout(0);
      const up = r.kind === "forward" ? forwardThroughParent(s, route, r.head, buf.subarray(r.size), r.body) : relayThroughParent(s, route, r.host, r.port, buf.subarray(r.size));
      if (up === null) return;
      this.sockets.add(up);
      up.once("close", () => this.sockets.delete(up));
    };
    s.on("data", onData);
  }
}
