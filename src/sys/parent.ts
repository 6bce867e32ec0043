// The parent proxy's I/O (core/parent-proxy.ts says where it is and which destinations skip it): the route a
// destination takes, the CONNECT spoken to the parent, and what every outbound path of the daemon builds on it: the
// egress proxy's tunnels and pooled connections, the LLM proxy's agents, the agents' downloads (fetch), and a relay that
// lends host tools (git, gh) the parent for one call without the parent's credentials ever entering their environment.
import { connect, type Socket } from "node:net";
import { duplexPair, type Duplex } from "node:stream";
import { connect as tlsConnect, type ConnectionOptions } from "node:tls";
import { Agent as HttpAgent, type ClientRequestArgs } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import { normalizeHost } from "../core/allowlist";
import {
  basicAuthorization,
  BodyEnd,
  closingAnswerHead,
  connectHead,
  forwardHead,
  interimAnswer,
  parentFor,
  parentFromConfig,
  parentFromEnv,
  parentRefusalText,
  readParentAnswer,
  relayRefusal,
  storedCredentials,
  type ParentConfig,
  type ParentEndpoint,
  type ParentScheme,
  type ParentSettings,
} from "../core/parent-proxy";
import type { Config } from "../core/config";
import { loadConfig } from "./config-file";
import type { Env } from "./env";
import type { Paths } from "./paths";

/** One parent, as a connection through it needs it. */
export interface ParentRoute {
  readonly endpoint: ParentEndpoint;
  /** The Proxy-Authorization to send it now (a stored secret is read at each connection: rotation applies at once). */
  authorization(): { ok: true; value: string | null } | { ok: false; reason: string };
}

/** Which parent a destination goes through: the daemon's one router, made from the settings at its start. */
export class ParentRouter {
  private readonly routes = new Map<ParentEndpoint, ParentRoute>();

  constructor(
    readonly settings: ParentSettings | null,
    /** A stored secret's value by name, now (the config's `proxy.credentials`); null when it is not set. */
    private readonly secret: (name: string) => string | null = () => null,
  ) {}

  /** The parent for a connection of `scheme` to `host` (the name sbx judged), or null: straight out. */
  route(scheme: ParentScheme, host: string): ParentRoute | null {
    const e = parentFor(this.settings, scheme, normalizeHost(host) ?? host);
    return e === null ? null : this.routeOf(e);
  }

  /** Every parent (its host is never a sandbox's destination: decision.ts). */
  endpoints(): ParentEndpoint[] {
    const s = this.settings;
    if (s === null) return [];
    return [...new Set([s.https, s.http].filter((e): e is ParentEndpoint => e !== null))];
  }

  private routeOf(e: ParentEndpoint): ParentRoute {
    let r = this.routes.get(e);
    if (!r) {
      const secret = this.secret;
      r = {
        endpoint: e,
        authorization() {
          const c = e.credentials;
          if (c === null) return { ok: true, value: null };
          if (c.kind === "inline") return { ok: true, value: basicAuthorization(c.user, c.password) };
          const s = storedCredentials(secret(c.name), c.name);
          return s.ok ? { ok: true, value: s.authorization } : s;
        },
      };
      this.routes.set(e, r);
    }
    return r;
  }
}

/** A connection the parent would not carry (or could not be asked): `status` is its answer's, when it answered. */
export class ParentError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
    this.name = "ParentError";
  }
}

/** The event a socket from `dialParent` emits once the parent has opened the tunnel. */
export const TUNNEL_OPEN = "sbx:tunnel-open";

/** A connection to a parent, asking it for one destination. */
export interface ParentDial {
  /** The socket to the parent: the destination's once TUNNEL_OPEN is emitted (paused then; what came early put back). */
  readonly socket: Socket;
  /** Bytes of sbx's CONNECT and of the parent's answer: not the destination's (a tunnel's counts leave them out). */
  readonly overhead: { sent: number; received: number };
}

/**
 * runs: a TCP connection to the parent, and `CONNECT host:port` on it (the name sbx judged: the parent resolves it).
 * Nothing but the parent's answer is read until TUNNEL_OPEN, so a caller attaches its readers only then. A refusal, an
 * answer that cannot be read, or an end before one destroys the socket with a ParentError that names the parent (as
 * people see it: never its credentials) and its status.
 */
export function dialParent(route: ParentRoute, host: string, port: number): ParentDial {
  const e = route.endpoint;
  const socket = connect({ host: e.host, port: e.port, noDelay: true, allowHalfOpen: true });
  const overhead = { sent: 0, received: 0 };
  const auth = route.authorization();
  if (!auth.ok) {
    queueMicrotask(() => socket.destroy(new ParentError(`the parent proxy ${e.shown} cannot be used: ${auth.reason}`, null)));
    return { socket, overhead };
  }
  socket.once("connect", () => {
    const head = connectHead(host, port, auth.value);
    overhead.sent = Buffer.byteLength(head, "latin1");
    socket.write(head, "latin1");
  });
  let buf: Buffer = Buffer.alloc(0);
  const stop = () => {
    socket.off("data", onData);
    socket.off("end", onEnd);
  };
  const onData = (d: Buffer) => {
    buf = buf.length === 0 ? d : Buffer.concat([buf, d]);
    const a = readParentAnswer(buf);
    if (a.kind === "more") return;
    stop();
    if (a.kind === "open") {
      overhead.received = a.size;
      socket.pause();
      const rest = buf.subarray(a.size);
      if (rest.length > 0) socket.unshift(rest);
      socket.emit(TUNNEL_OPEN);
      return;
    }
    const message = a.kind === "refused" ? parentRefusalText(e.shown, a.status, a.reason) : `the parent proxy ${e.shown} gave an answer that cannot be read (${a.why})`;
    socket.destroy(new ParentError(message, a.kind === "refused" ? a.status : null));
  };
  const onEnd = () => {
    stop();
    socket.destroy(new ParentError(`the parent proxy ${e.shown} closed the connection before it answered`, null));
  };
  socket.on("data", onData);
  socket.on("end", onEnd);
  return { socket, overhead };
}

/**
 * A relay's client `s` (paused, its CONNECT read) carried to `host:port` through the parent (the relays of
 * parent-relay.ts and build-relay.ts): `200 Connection established` once the parent opened the tunnel, then `first`
 * (what the client sent after its request) and bytes both ways; a failure before that is the client's 502, naming why.
 * Returns the socket to the parent, for the caller to count and cut.
 */
export function relayThroughParent(s: Socket, route: ParentRoute, host: string, port: number, first: Buffer): Socket {
  const { socket: up } = dialParent(route, host, port);
  let opened = false;
  up.once(TUNNEL_OPEN, () => {
    opened = true;
    s.write("HTTP/1.1 200 Connection established\r\n\r\n");
    if (first.length > 0) up.write(first);
    up.pipe(s);
    s.pipe(up);
    s.resume();
  });
  up.on("error", (e: Error) => {
    if (!opened && !s.destroyed) s.end(relayRefusal(502, e.message));
    else s.destroy();
  });
  s.once("close", () => up.destroy());
  return up;
}

/** An answer's head longer than this is cut (a real one is a few hundred bytes). */
const MAX_ANSWER_HEAD = 65_536;

/**
 * A relay's client `s` (paused, its plain request's head read) carried to the parent as one request (the relays of
 * parent-relay.ts and build-relay.ts): `head` (readForwardOrConnect's, `Connection: close`) with the parent's
 * credentials, then the body's bytes (`early`, what came after the head, then the client's), exactly to its end
 * (BodyEnd) and no further: what follows it is never passed to the parent unread. The parent's answer is the client's;
 * a failure before it is the client's 502, naming why. Returns the socket to the parent, for the caller to count and cut.
 */
export function forwardThroughParent(s: Socket, route: ParentRoute, head: string, early: Buffer, body: { length: number } | "chunked"): Socket | null {
  const auth = route.authorization();
  if (!auth.ok) {
    s.end(relayRefusal(502, `the parent proxy ${route.endpoint.shown} cannot be used: ${auth.reason}`));
    return null;
  }
  const up = connect({ host: route.endpoint.host, port: route.endpoint.port, noDelay: true, allowHalfOpen: true });
  const end = new BodyEnd(body);
  let answered = false;
  const pass = (d: Buffer): void => {
    let n: number;
    try {
      n = end.take(d);
    } catch (e) {
      // Framing that cannot be read: where the body ends is not known, so nothing more goes, and the request is cut.
      if (!answered && !s.destroyed) s.end(relayRefusal(400, `a request body that cannot be read: ${(e as Error).message}`));
      up.destroy();
      return;
    }
    if (n > 0) up.write(d.subarray(0, n));
    if (end.done) s.off("data", pass);
  };
  up.once("connect", () => {
    up.write(forwardHead(head, auth.value), "latin1");
    if (early.length > 0) pass(early);
    if (!end.done && !up.destroyed) {
      s.on("data", pass);
      s.resume();
    }
    up.on("data", answer);
  });
  // The answer's heads (an interim 1xx, then the final one) as closingAnswerHead passes them, then the rest as it comes.
  let got: Buffer = Buffer.alloc(0);
  const answer = (d: Buffer): void => {
    answered = true;
    got = got.length === 0 ? d : Buffer.concat([got, d]);
    for (;;) {
      const i = got.indexOf("\r\n\r\n");
      if (i < 0) {
        if (got.length > MAX_ANSWER_HEAD) {
          up.destroy();
          s.destroy();
        }
        return;
      }
      const text = got.subarray(0, i).toString("latin1");
      s.write(closingAnswerHead(text), "latin1");
      got = got.subarray(i + 4);
      if (!interimAnswer(text)) break;
    }
    up.off("data", answer);
    piped = true;
    if (got.length > 0) s.write(got);
    up.pipe(s);
  };
  // Ended before a whole head came: the client's connection ends too (once piped, pipe ends it).
  let piped = false;
  up.once("end", () => {
    if (!piped) s.end();
  });
  up.on("error", (e: Error) => {
    if (!answered && !s.destroyed) s.end(relayRefusal(502, `the parent proxy ${route.endpoint.shown}: ${e.message}`));
    else s.destroy();
  });
  s.once("close", () => up.destroy());
  return up;
}

/**
 * A connection to `host:port` through the parent as a stream that emits `connect` once the tunnel is open, as a new
 * TCP socket does (for a pool that waits for `connect`, or TLS laid over it, which may begin before: what it writes waits
 * in the pair). It ends when the parent's side ends, and fails with the parent's error.
 */
export function parentStream(route: ParentRoute, host: string, port: number): Socket {
  const [ours, theirs] = duplexPair();
  const { socket: raw } = dialParent(route, host, port);
  let ended = false;
  raw.once(TUNNEL_OPEN, () => {
    theirs.pipe(raw);
    raw.pipe(theirs);
    ours.emit("connect");
  });
  raw.once("end", () => (ended = true));
  raw.once("error", (e: Error) => ours.destroy(e));
  raw.once("close", () => {
    if (!ended && !ours.destroyed) ours.destroy();
  });
  ours.once("close", () => raw.destroy());
  return ours as unknown as Socket;
}

/** A TLS connection to `host:port` through the parent (verified as `tls` says: the caller's trust, the name checked). */
export function tlsThroughParent(route: ParentRoute, host: string, port: number, tls: ConnectionOptions) {
  return tlsConnect({ ...tls, socket: parentStream(route, host, port) as unknown as Duplex });
}

/** What node:http hands an Agent's createConnection. */
type ConnOpts = ClientRequestArgs & ConnectionOptions & { servername?: string };

function hostOf(o: ConnOpts): string {
  return String(o.host ?? o.hostname ?? "localhost").replace(/^\[|\]$/g, "");
}

/**
 * node:http(s) agents whose connections go through the parent where it applies (the LLM proxy's requests to the
 * providers: Bun's node:https does not read the proxy variables), straight out elsewhere; kept alive as before.
 */
export function parentAgents(router: ParentRouter): { http: HttpAgent; https: HttpsAgent } {
  class Https extends HttpsAgent {
    override createConnection(o: ConnOpts, cb: (err: Error | null, s?: Duplex) => void): Duplex | undefined {
      const host = hostOf(o);
      const route = router.route("https", host);
      if (route === null) return (HttpsAgent.prototype as unknown as { createConnection(o: ConnOpts, cb: unknown): Duplex }).createConnection.call(this, o, cb);
      return tlsThroughParent(route, host, Number(o.port ?? 443), { ...o, servername: o.servername ?? host, ALPNProtocols: ["http/1.1"] });
    }
  }
  class Http extends HttpAgent {
    override createConnection(o: ConnOpts, cb: (err: Error | null, s?: Duplex) => void): Duplex | undefined {
      const host = hostOf(o);
      const route = router.route("http", host);
      if (route === null) return (HttpAgent.prototype as unknown as { createConnection(o: ConnOpts, cb: unknown): Duplex }).createConnection.call(this, o, cb);
      // The socket to the parent itself, once the tunnel is open (a kept-alive connection must be a real socket).
      const { socket } = dialParent(route, host, Number(o.port ?? 80));
      const failed = (e: Error) => cb(e);
      socket.once("error", failed);
      socket.once(TUNNEL_OPEN, () => {
        socket.off("error", failed);
        cb(null, socket);
        socket.resume();
      });
      return undefined;
    }
  }
  return { http: new Http({ keepAlive: true }), https: new Https({ keepAlive: true }) };
}

/**
 * fetch through the parent where it applies (Bun's fetch takes `proxy`), for the daemon's downloads and sign-in
 * refreshes; elsewhere straight out with `proxy: false`: Bun's fetch would otherwise read the process's own
 * HTTP(S)_PROXY at each request, so a destination the config's `proxy.noProxy` sends straight out went through a proxy
 * the daemon's environment named (test/integration/sys/parent-fetch.test.ts).
 */
export function parentFetch(router: ParentRouter, base: typeof fetch = fetch): typeof fetch {
  const f = (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const route = router.route(url.protocol === "http:" ? "http" : "https", url.hostname);
    if (route === null) return base(input, { ...init, proxy: false } as RequestInit);
    const auth = route.authorization();
    if (!auth.ok) return Promise.reject(new ParentError(`the parent proxy ${route.endpoint.shown} cannot be used: ${auth.reason}`, null));
    const e = route.endpoint;
    // Bun's fetch takes the credentials in the proxy URL only: they stay in this process (never an argv or a child's env).
    const proxy = auth.value === null ? e.shown : `http://${userinfoOf(auth.value)}@${e.shown.slice("http://".length)}`;
    return base(input, { ...init, proxy } as RequestInit);
  };
  return Object.assign(f, { preconnect: base.preconnect }) as typeof fetch;
}

/** `Basic base64(user:password)` back to `user:password`, percent-encoded for a URL. */
function userinfoOf(basic: string): string {
  const text = Buffer.from(basic.replace(/^Basic /, ""), "base64").toString("utf8");
  const i = text.indexOf(":");
  return `${encodeURIComponent(text.slice(0, i))}:${encodeURIComponent(text.slice(i + 1))}`;
}

/**
 * The host's parent proxy: the config file's `proxy` when it has one (it wins whole: its URL, its NO_PROXY, its stored
 * credentials), else the daemon's environment's. What is set and cannot be used is in `problems` (the daemon logs it,
 * `sbx doctor` shows it).
 */
export function parentSettingsOf(config: ParentConfig | undefined, env: Readonly<Record<string, string | undefined>>): { settings: ParentSettings | null; problems: string[] } {
  return config ? parentFromConfig(config) : parentFromEnv(env);
}

/**
 * The host's parent proxy settings as every outbound path reads them: the config file's `proxy` (it wins whole), else
 * the environment's. A config file that cannot be read leaves the environment's; `unreadable` hears why.
 */
export function hostParentSettings(paths: Paths, env: Env, unreadable: (e: Error) => void = () => {}): { settings: ParentSettings | null; problems: string[] } {
  let config: Config | null = null;
  try {
    config = loadConfig(paths, env);
  } catch (e) {
    unreadable(e as Error);
  }
  return parentSettingsOf(config?.proxy, env.raw);
}
