// The per-sandbox egress proxy: CONNECT tunnels and absolute-URI HTTP on the sandbox's own unix socket (and on a listener its forwarder handed over), and the transparent path's connections (a named address's), allowlist first.
import { lookup } from "node:dns/promises";
import { existsSync, unlinkSync } from "node:fs";
import { createServer, STATUS_CODES, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import { connect, createServer as createNetServer, type Server as NetServer, type Socket } from "node:net";
import { networkInterfaces } from "node:os";
import type { Duplex } from "node:stream";
import { canonicalIp } from "../core/addresses";
import { askableName } from "../core/dns";
import { transparentPortsOf } from "../core/transparent";
import { normalizeHost } from "../core/allowlist";
import { allowCommand, blockedMessage, checkAddresses, compilePolicy, decide, type BlockReason, type CompiledPolicy, type PolicyLists, type PolicySource } from "../core/egress";
import { readClientHello } from "../core/tls";
import { BodyReader, chunk, LAST_CHUNK, MAX_HEAD, readRequestHead, requestHead, responseHead, type Framing, type Header, type RequestHead } from "./http1";
import { listenUnix } from "./socket";
import { Pacer, PORTS_MAX_HELD, PROXY_MAX_CONNECTIONS, PROXY_REQUESTS_BURST, PROXY_REQUESTS_PER_SECOND } from "../core/bounds";
import { UpstreamPool, type Exchange } from "./upstream";

export type Resolver = (host: string) => Promise<string[]>;

export interface ProxySandbox {
  id: number;
  name: string;
}

/** How a request reached the proxy: named by the client (proxy variables), or caught by the transparent path. */
export type EgressPath = "proxy" | "transparent";

export type EgressEvent =
  | {
      type: "denied";
      sandbox: ProxySandbox;
      path: EgressPath;
      method: string;
      host: string;
      port: number;
      reason: BlockReason;
      detail: string;
      /** The pattern that would allow it (the host, `host:port`, or the refused address). */
      suggest: string | null;
      at: number;
    }
  | {
      type: "closed";
      sandbox: ProxySandbox;
      path: EgressPath;
      method: string;
      host: string;
      port: number;
      address: string;
      source: PolicySource;
      pattern: string;
      bytesUp: number;
      bytesDown: number;
      durationMs: number;
      at: number;
    }
  | { type: "error"; sandbox: ProxySandbox; path: EgressPath; method: string; host: string; port: number; address: string | null; message: string; at: number };

/** The transparent path's name map, as the proxy reads it (policy/name-map.ts). */
export interface ProxyNames {
  /** The address that stands for a name (given out now when it has none), or null when the map is full. */
  addressOf(name: string): string | null;
  /** The name an address stands for, or null when it was never given out. */
  nameOf(address: string): string | null;
}

/** Where a transparent connection was headed: the address and port the client dialled. */
export type TransparentTarget = { address: string; port: number };

export interface EgressProxyOptions {
  socketPath: string;
  sandbox: ProxySandbox;
  /** Read on every request, so allowlist changes apply to the next one without a restart. */
  policy: () => PolicyLists;
  /** Resolver seam; default: the system resolver (all addresses). */
  resolve?: Resolver;
  /** This host's own addresses, refused as destinations unless allowlisted; default: the network interfaces. */
  hostAddresses?: () => Iterable<string>;
  /** Decisions, for the audit log and pending approvals. Called synchronously: keep it cheap; errors are swallowed. */
  onDecision?: (e: EgressEvent) => void;
  /** Origin-form requests (`/llm/…`); without one they get 400. `/health` is answered by the proxy. */
  originHandler?: (req: IncomingMessage, res: ServerResponse) => void;
  /** The transparent path's name map; without it `/sbx/names` answers 404 and transparent connections are refused. */
  names?: ProxyNames;
  /** Transparent ports whose connections are read as plain HTTP (default: 80); the others are tunnels. */
  transparentHttpPorts?: readonly number[];
  connectTimeoutMs?: number;
  /**
   * How fast the sandbox may start requests (default PROXY_REQUESTS_BURST, then PROXY_REQUESTS_PER_SECOND); null: no
   * pace (benchmarks and load tests that measure the proxy's own cost, never a sandbox's proxy).
   */
  pace?: { burst: number; perSecond: number } | null;
}

export interface EgressProxy {
  readonly socketPath: string;
  readonly sandbox: ProxySandbox;
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

export const HEALTH_PATH = "/health";
/** Where the sandbox's DNS stub asks for the address of a name: `GET /sbx/names?name=NAME`. */
export const NAMES_PATH = "/sbx/names";
/**
 * Where a container's forwarder learns which ports its transparent path listens on: `GET /sbx/transparent?known=P,…`
 * answers at once when the set differs from `known`, else when it changes (`sbx allow host:port`), else after a minute.
 */
export const TRANSPARENT_PATH = "/sbx/transparent";
const PORTS_HOLD_MS = 55_000;
const PORTS_POLL_MS = 250;
/** Long polls held at once per sandbox (its forwarder needs one); more are answered at once, so none can pile up. */
const MAX_PORTS_HELD = PORTS_MAX_HELD;
/** How long a tunnel waits for the rest of a ClientHello the client has begun before it gives up. */
const HELLO_TIMEOUT_MS = 10_000;

/** runs: the system resolver (getaddrinfo) for one name, all addresses. */
export const systemResolver: Resolver = async (host) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

function interfaceAddresses(): string[] {
  const out: string[] = [];
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) {
    const c = canonicalIp(a.address);
    if (c) out.push(c);
  }
  return out;
}

const HOP_BY_HOP = new Set([
  "connection",
  "proxy-connection",
  "keep-alive",
  "proxy-authorization",
  "proxy-authenticate",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

function forwardHeaders(h: IncomingHttpHeaders): Record<string, string | string[]> {
  const drop = new Set(HOP_BY_HOP);
  const conn = h["connection"];
  if (typeof conn === "string") for (const t of conn.split(",")) drop.add(t.trim().toLowerCase());
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined && !drop.has(k)) out[k] = v;
  return out;
}

/**
 * How long the sandbox's port keeps an idle connection between requests (node:http's default), and how long it waits
 * for a request on a new one or for the rest of a head (a pause that long in the middle, not the whole).
 */
const KEEP_ALIVE_MS = 5_000;
const HEAD_TIMEOUT_MS = 60_000;

/** A head's headers without the hop-by-hop ones (nor those its Connection header names). */
function withoutHopByHop(list: readonly Header[]): Header[] {
  let drop: Set<string> = HOP_BY_HOP;
  for (const [k, v] of list) {
    if (k.toLowerCase() !== "connection") continue;
    if (drop === HOP_BY_HOP) drop = new Set(HOP_BY_HOP);
    for (const t of v.split(",")) drop.add(t.trim().toLowerCase());
  }
  return list.filter(([k]) => !drop.has(k.toLowerCase()));
}

/** Methods whose request, with no body, may be sent again on a fresh connection when a pooled one was closed. */
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** forwardHeaders' object as a list (several values: several lines). */
function headerList(h: Record<string, string | string[]>): Header[] {
  const out: Header[] = [];
  for (const [k, v] of Object.entries(h)) {
    if (Array.isArray(v)) for (const x of v) out.push([k, x]);
    else out.push([k, v]);
  }
  return out;
}

/** A server's response headers as they go to the client: hop-by-hop ones (and those its Connection names) dropped. */
function responseHeaders(list: readonly Header[]): Record<string, string | string[]> {
  const drop = new Set(HOP_BY_HOP);
  for (const [k, v] of list) if (k.toLowerCase() === "connection") for (const t of v.split(",")) drop.add(t.trim().toLowerCase());
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of list) {
    const n = k.toLowerCase();
    if (drop.has(n)) continue;
    const had = out[n];
    out[n] = had === undefined ? v : Array.isArray(had) ? [...had, v] : [had, v];
  }
  return out;
}

/** Header-safe text: printable ASCII only (a refused host may be anything). */
function headerSafe(s: string): string {
  return s.replace(/[^\x20-\x7e]/g, "?").slice(0, 300);
}

function target(host: string, port: number): string {
  return `${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/**
 * Pure: a Host header's authority, normalised (port 80 when it names none); undefined when there is no header, null
 * when it is not one authority (several values, garbage).
 */
export function hostHeaderAuthority(h: string | string[] | undefined): { host: string; port: number } | null | undefined {
  if (h === undefined) return undefined;
  if (Array.isArray(h) || h.trim() === "") return null;
  const t = h.trim();
  const a = /:\d+$/.test(t) && !(t.startsWith("[") && t.endsWith("]")) ? parseAuthority(t) : { host: t, port: 80 };
  if (!a || !(a.port >= 1 && a.port <= 65535)) return null;
  const host = normalizeHost(a.host);
  return host === null ? null : { host, port: a.port };
}

/**
 * Pure: why a parsed request's framing is refused, or null. A request is forwarded only when its end is unambiguous:
 * HTTP/1.1 or 1.0, at most one Content-Length (digits) or one `Transfer-Encoding: chunked`, never both. Anything else
 * is how request smuggling starts (a server that reads the framing otherwise would see a second request in the body).
 */
export function framingProblem(httpVersion: string, rawHeaders: readonly string[]): string | null {
  if (httpVersion !== "1.1" && httpVersion !== "1.0") return `HTTP/${headerSafe(httpVersion)} is not HTTP/1.1`;
  let lengths = 0;
  let codings = 0;
  let coding = "";
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase();
    if (name === "content-length") {
      lengths++;
      if (!/^[0-9]{1,15}$/.test(rawHeaders[i + 1]!)) return "a Content-Length that is not a number";
    } else if (name === "transfer-encoding") {
      codings++;
      coding = rawHeaders[i + 1]!;
    }
  }
  if (lengths > 1) return "more than one Content-Length";
  if (codings > 1) return "more than one Transfer-Encoding";
  if (lengths > 0 && codings > 0) return "both Content-Length and Transfer-Encoding";
  if (codings > 0 && coding.toLowerCase() !== "chunked") return "a Transfer-Encoding other than chunked";
  if (codings > 0 && httpVersion === "1.0") return "Transfer-Encoding in an HTTP/1.0 request";
  return null;
}

/** Splits a CONNECT authority `host:port` or `[v6]:port`; null when malformed. */
export function parseAuthority(s: string): { host: string; port: number } | null {
  let host: string;
  let portText: string;
  if (s.startsWith("[")) {
    const close = s.indexOf("]");
    if (close < 0 || s[close + 1] !== ":") return null;
    host = s.slice(0, close + 1);
    portText = s.slice(close + 2);
  } else {
    const i = s.lastIndexOf(":");
    if (i <= 0) return null;
    host = s.slice(0, i);
    portText = s.slice(i + 1);
  }
  if (!/^[0-9]{1,5}$/.test(portText)) return null;
  return { host, port: Number(portText) };
}

type Verdict =
  | { ok: true; path: EgressPath; host: string; port: number; address: string; source: PolicySource; pattern: string }
  | { ok: false; status: 403; host: string; port: number; reason: BlockReason; header: string; body: string; phrase: string }
  | { ok: false; status: 502; host: string; port: number; reason: null; header: null; body: string };

export async function startEgressProxy(opts: EgressProxyOptions): Promise<EgressProxy> {
  const sandbox = { id: opts.sandbox.id, name: opts.sandbox.name };
  const resolve = opts.resolve ?? systemResolver;
  const connectTimeoutMs = opts.connectTimeoutMs ?? 10_000;
  const emit = (e: EgressEvent) => {
    try {
      opts.onDecision?.(e);
    } catch {
      // A broken sink must never break the sandbox's network.
    }
  };

  // The policy is read per request; compiling is cached on its text so an unchanged list is not re-parsed.
  let cacheKey = "";
  let cached: CompiledPolicy | null = null;
  const currentPolicy = (): CompiledPolicy => {
    const lists = opts.policy();
    // Every list the decision reads is in the key: a change to any of them applies to the next request.
    const key = `${lists.sandbox.join("\n")}\0${lists.global.join("\n")}\0${(lists.published ?? []).join("\n")}`;
    if (cached === null || key !== cacheKey) {
      cached = compilePolicy(lists);
      cacheKey = key;
    }
    return cached;
  };

  let own: { at: number; set: Set<string> } | null = null;
  const hostOwn = (): Set<string> => {
    const now = Date.now();
    if (own === null || now - own.at > 10_000) {
      const list = opts.hostAddresses ? [...opts.hostAddresses()] : interfaceAddresses();
      own = { at: now, set: new Set(list.map((a) => canonicalIp(a) ?? a)) };
    }
    return own.set;
  };

  const refuse = (path: EgressPath, method: string, host: string, port: number, reason: BlockReason, detail: string, suggest: string | null): Verdict => {
    emit({ type: "denied", sandbox, path, method, host, port, reason, detail, suggest, at: Date.now() });
    return {
      ok: false,
      status: 403,
      host,
      port,
      reason,
      header: headerSafe(`${reason} ${target(host, port)}`),
      body: blockedMessage(sandbox.name, headerSafe(target(host, port)), headerSafe(detail), suggest),
      phrase: blockedPhrase(headerSafe(target(host, port)), suggest === null ? null : allowCommand(headerSafe(suggest), sandbox.name)),
    };
  };

  /** The decision, then one lookup, then the address check: the address returned is the only one connected to. */
  const check = async (path: EgressPath, method: string, rawHost: string, port: number): Promise<Verdict> => {
    const policy = currentPolicy();
    const d = decide(policy, rawHost, port);
    if (!d.allow) return refuse(path, method, d.host, port, d.reason, d.detail, d.suggest);
    let addresses: string[];
    if (d.ip) addresses = [d.host];
    else {
      try {
        addresses = await resolve(d.host);
      } catch (e) {
        const message = `could not resolve ${d.host}: ${(e as Error).message}`;
        emit({ type: "error", sandbox, path, method, host: d.host, port, address: null, message, at: Date.now() });
        return { ok: false, status: 502, host: d.host, port, reason: null, header: null, body: `sbx proxy: ${message}\n` };
      }
    }
    const a = checkAddresses(policy, d.host, addresses, port, hostOwn());
    if (!a.ok) return refuse(path, method, d.host, port, a.reason, a.detail, a.suggest);
    return { ok: true, path, host: d.host, port, address: a.address, source: d.source, pattern: d.pattern };
  };

  const clientSockets = new Set<Duplex>();
  const upstreamSockets = new Set<Socket>();
  let inFlight = 0;
  // Plain HTTP's connections to servers, kept alive per checked address and port.
  const upstream = new UpstreamPool(connectTimeoutMs);

  const track = (s: Duplex) => {
    clientSockets.add(s);
    s.once("close", () => clientSockets.delete(s));
  };
  // What the sandbox may hold open at once (invariant 14): PROXY_MAX_CONNECTIONS of its connections, on every path. The
  // next is refused before anything of it is read, and said (an `error` decision, audited) once a second at most.
  let refusedSince = 0;
  let toldAt = 0;
  /** Refused connections still being closed. */
  let refusing = 0;
  /** Connections refused for the bound: whatever they send is never acted on (node:http may still parse it). */
  const overBound = new WeakSet<Duplex>();
  const admit = (s: Duplex, how: "http" | "cut"): boolean => {
    if (clientSockets.has(s)) return true;
    if (clientSockets.size < PROXY_MAX_CONNECTIONS) {
      track(s);
      return true;
    }
    refusedSince++;
    overBound.add(s);
    const message = `${PROXY_MAX_CONNECTIONS} connections of this sandbox are open at once; more are refused until some close`;
    const now = Date.now();
    if (now - toldAt >= 1000) {
      toldAt = now;
      emit({ type: "error", sandbox, path: how === "cut" ? "transparent" : "proxy", method: "CONNECT", host: "(any)", port: 0, address: null, message: `${message} (${refusedSince} refused)`, at: now });
      refusedSince = 0;
    }
    s.on("error", () => s.destroy());
    // The refusals themselves are bounded too: at most PROXY_MAX_CONNECTIONS are being answered at once; past that a
    // connection is closed at once without one.
    if (how === "cut" || refusing >= PROXY_MAX_CONNECTIONS) {
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
  // The work the sandbox may start (invariant 14): each request (and transparent connection) takes its turn, a burst
  // at once and then a steady rate, in order; the rest wait on their own connection (at most PROXY_MAX_CONNECTIONS).
  const pace = opts.pace === undefined ? { burst: PROXY_REQUESTS_BURST, perSecond: PROXY_REQUESTS_PER_SECOND } : opts.pace;
  const pacer = pace === null ? null : new Pacer(pace.burst, pace.perSecond);
  const turn = () => pacer?.delay(Date.now()) ?? 0;
  const paced = (fn: () => void) => {
    const d = turn();
    if (d === 0) fn();
    else setTimeout(fn, d);
  };
  const server = createServer();
  server.on("connection", (s: Duplex) => void admit(s, "http"));
  const badRequest = (_err: unknown, socket: Duplex) => {
    if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
    socket.destroy();
  };
  server.on("clientError", badRequest);
  /** A request whose framing is ambiguous: 400 with the reason, and the connection is closed (its bytes are unread). */
  const refuseFraming = (req: IncomingMessage, res: ServerResponse): boolean => {
    const why = framingProblem(req.httpVersion, req.rawHeaders);
    if (why === null) return false;
    res.shouldKeepAlive = false;
    plain(res, 400, `sbx proxy: refused: ${why}; send one unambiguous HTTP/1.1 request.\n`, { Connection: "close" });
    res.once("finish", () => req.socket.end());
    return true;
  };

  /** Sends a final response on a CONNECT socket; a client that never closes its side is cut after a grace period. */
  const finalResponse = (client: Duplex, text: string | Buffer) => {
    client.on("end", () => client.destroy());
    client.resume(); // drain (and discard) whatever the client pipelined, so closing never resets the response away
    client.end(text);
    const t = setTimeout(() => client.destroy(), 5_000);
    client.once("close", () => clearTimeout(t));
  };

  server.on("connect", (req: IncomingMessage, client: Duplex, head: Buffer) => {
    if (overBound.has(client)) return void client.destroy();
    client.pause();
    paced(() => {
      if (!client.destroyed) connectRequest(req.url ?? "", client, head);
    });
  });

  /** A CONNECT (from node:http's parser or the sandbox's port's): the authority checked, then a tunnel or a refusal. */
  const connectRequest = (authority: string, client: Duplex, head: Buffer) => {
    client.pause();
    clientSockets.add(client);
    client.once("close", () => clientSockets.delete(client));
    client.on("error", () => client.destroy());
    const auth = parseAuthority(authority);
    if (!auth) {
      finalResponse(client, "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    void check("proxy", "CONNECT", auth.host, auth.port).then((v) => {
      if (client.destroyed) return;
      if (!v.ok) {
        const body = Buffer.from(v.body);
        // The hint is in the reason phrase: what npm and `curl -v` print of a refused CONNECT (the body nobody shows).
        const status = v.status === 403 ? `403 ${v.phrase}` : "502 Bad Gateway";
        const blocked = v.header === null ? "" : `X-Sbx-Blocked: ${v.header}\r\n`;
        finalResponse(
          client,
          `HTTP/1.1 ${status}\r\n${blocked}Content-Type: text/plain; charset=utf-8\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${v.body}`,
        );
        return;
      }
      tunnel(v, client, head);
    });
  };

  /** Cuts a transparent connection the way a refused connect looks to its client (a reset where the socket can). */
  const cut = (client: Duplex) => {
    const s = client as Duplex & { resetAndDestroy?: () => void };
    try {
      if (typeof s.resetAndDestroy === "function") return void s.resetAndDestroy();
    } catch {
      // Bun's sockets of an HTTP server's CONNECT cannot reset: a close says the same.
    }
    client.destroy();
  };

  /**
   * Carries a checked connection. The client's first bytes are read before any of them go up: a TLS ClientHello must
   * name the host that was checked (or none), or the tunnel is refused (`server-name-mismatch`): a connection checked
   * as one name must not ask the server for another (domain fronting). Bytes the server sends first flow at once.
   * On the proxy path the client hears `200 Connection Established` (or a 502); on the transparent path, nothing.
   */
  const tunnel = (v: Extract<Verdict, { ok: true }>, client: Duplex, head: Buffer) => {
    const started = performance.now();
    const replies = v.path === "proxy";
    inFlight++;
    const up = connect({ host: v.address, port: v.port, allowHalfOpen: true, noDelay: true });
    upstreamSockets.add(up);
    let established = false;
    let first: Buffer = head;
    let named = false; // the first bytes were read and agree
    let refused = false;
    const timer = setTimeout(() => up.destroy(new Error(`connect timed out after ${connectTimeoutMs} ms`)), connectTimeoutMs);
    let helloTimer: ReturnType<typeof setTimeout> | null = null;
    let flowing = false;
    /** The client ended its side before it sent a byte (pipe() will not pass on an end that came before it). */
    let endedFirst = false;
    const go = () => {
      if (!established || !named || refused || flowing) return;
      flowing = true;
      if (helloTimer) clearTimeout(helloTimer);
      if (first.length > 0) up.write(first);
      if (endedFirst) up.end();
      else client.pipe(up);
    };
    // A client that ends before its first bytes were judged: with none, the server hears the end and may still answer
    // (it may be one that speaks first); with a ClientHello begun, nothing of it goes up. Either way nothing is left
    // waiting for bytes that will never come (the tunnel and its server connection stayed open until the server gave up).
    client.once("end", () => {
      if (flowing || refused) return;
      client.off("data", onFirst);
      if (helloTimer) clearTimeout(helloTimer);
      if (first.length > 0) {
        refused = true;
        up.destroy();
        return void cut(client);
      }
      endedFirst = true;
      named = true;
      go();
    });
    const onFirst = (c: Buffer) => {
      first = first.length === 0 ? c : Buffer.concat([first, c]);
      judge();
      // A ClientHello begun must end soon; a client that has sent nothing yet may wait as long as it likes.
      if (!named && !refused && helloTimer === null) {
        helloTimer = setTimeout(() => {
          if (named || refused) return;
          refused = true;
          client.off("data", onFirst);
          up.destroy();
          cut(client);
        }, HELLO_TIMEOUT_MS);
      }
    };
    /** Reads what the client sent first: carried on once it names this host (or is not TLS), refused otherwise. */
    const judge = () => {
      const r = readClientHello(first);
      if (r.kind === "more") return;
      client.off("data", onFirst);
      client.pause();
      const asked = r.kind === "hello" && r.serverName !== null ? normalizeHost(r.serverName) : null;
      const ipTarget = canonicalIp(v.host) !== null;
      const mismatch =
        r.kind === "malformed"
          ? `its TLS ClientHello is malformed (${r.why})`
          : r.kind === "hello" && r.serverName !== null && !ipTarget && asked !== v.host
            ? `it was checked as ${v.host}, but its TLS ClientHello asks the server for ${headerSafe(r.serverName)}`
            : null;
      if (mismatch !== null) {
        refused = true;
        refuse(v.path, "CONNECT", v.host, v.port, "server-name-mismatch", mismatch, null);
        up.destroy();
        if (replies && !established) finalResponse(client, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        else cut(client);
        return;
      }
      named = true;
      go();
    };
    const readFirst = () => {
      if (first.length > 0) judge();
      if (named || refused) return;
      client.on("data", onFirst);
      client.resume();
    };
    up.once("connect", () => {
      clearTimeout(timer);
      if (refused) return;
      established = true;
      if (replies) client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      up.pipe(client);
      // A proxy client sends its ClientHello only after the 200; a transparent one has sent it already.
      if (replies) readFirst();
      go();
    });
    if (!replies) readFirst();
    // Half-close both ways: pipe() ends the other side when one side ends; nothing is cut until both are done.
    const onError = (e: Error) => {
      if (!established && !client.destroyed && !refused) {
        const message = `could not connect to ${target(v.host, v.port)} (${v.address}): ${e.message}`;
        emit({ type: "error", sandbox, path: v.path, method: "CONNECT", host: v.host, port: v.port, address: v.address, message, at: Date.now() });
        if (!replies) return void cut(client);
        const body = `sbx proxy: ${message}\n`;
        finalResponse(client, `HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
        return;
      }
      client.destroy();
      up.destroy();
    };
    up.on("error", onError);
    client.on("error", () => up.destroy());
    client.once("close", () => {
      if (helloTimer) clearTimeout(helloTimer);
      if (!up.destroyed && up.writableEnded === false) up.destroy();
    });
    up.once("close", () => {
      clearTimeout(timer);
      if (helloTimer) clearTimeout(helloTimer);
      upstreamSockets.delete(up);
      inFlight--;
      if (!client.destroyed && !client.writableEnded) client.destroy();
      if (established && !refused) {
        emit({
          type: "closed",
          sandbox,
          path: v.path,
          method: "CONNECT",
          host: v.host,
          port: v.port,
          address: v.address,
          source: v.source,
          pattern: v.pattern,
          bytesUp: up.bytesWritten,
          bytesDown: up.bytesRead,
          durationMs: Math.round(performance.now() - started),
          at: Date.now(),
        });
      }
    });
  };

  /**
   * A plain HTTP request for `url`, from the proxy path (absolute-form) or the transparent path (origin-form, its URL
   * made from the name its connection stands for). What is checked is what is sent: a Host header naming another
   * authority than the target (a virtual host the allowlist never saw, on an allowed address) is refused, and the
   * forwarded Host is always the target's.
   */
  const plainRequest = (path: EgressPath, req: IncomingMessage, res: ServerResponse, parsed: URL) => {
    if (parsed.protocol !== "http:") {
      plain(res, 400, `sbx proxy: ${parsed.protocol} URLs go through CONNECT; only http: is forwarded as a plain request.\n`);
      return;
    }
    const port = parsed.port === "" ? 80 : Number(parsed.port);
    const claimed = hostHeaderAuthority(req.headers.host);
    if (claimed !== undefined && (claimed === null || claimed.host !== normalizeHost(parsed.hostname) || claimed.port !== port)) {
      if (path === "transparent") refuse(path, req.method ?? "GET", normalizeHost(parsed.hostname) ?? parsed.hostname, port, "server-name-mismatch", `its Host header names ${headerSafe(String(req.headers.host))}`, null);
      plain(res, 400, `sbx proxy: the Host header (${headerSafe(String(req.headers.host))}) names another authority than the request target (${headerSafe(parsed.host)}); send them alike.\n`);
      return;
    }
    req.pause();
    void check(path, req.method ?? "GET", parsed.hostname, port).then((v) => {
      if (res.destroyed || req.destroyed) return;
      if (!v.ok) {
        const headers: Record<string, string> = { "Content-Type": "text/plain; charset=utf-8" };
        if (v.header !== null) headers["X-Sbx-Blocked"] = v.header;
        req.resume();
        plain(res, v.status, v.body, headers, v.status === 403 ? v.phrase : undefined);
        return;
      }
      forward(v, req, res, parsed);
    });
  };

  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    if (overBound.has(req.socket)) return void req.socket.destroy();
    // (Not paused meanwhile: a body waits in the request's own buffer, and the socket's, as for a slow handler.)
    paced(() => {
      if (res.destroyed || req.socket.destroyed) return;
      request(req, res);
    });
  });
  const request = (req: IncomingMessage, res: ServerResponse) => {
    if (refuseFraming(req, res)) return;
    const url = req.url ?? "";
    if (url.startsWith("/")) {
      if ((req.method === "GET" || req.method === "HEAD") && (url === HEALTH_PATH || url.startsWith(`${HEALTH_PATH}?`))) {
        const body = JSON.stringify({ ok: true, sandbox: sandbox.name });
        res.writeHead(200, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) });
        res.end(req.method === "HEAD" ? undefined : body);
        return;
      }
      if (url === NAMES_PATH || url.startsWith(`${NAMES_PATH}?`)) return void answerName(req, res);
      if (url === TRANSPARENT_PATH || url.startsWith(`${TRANSPARENT_PATH}?`)) return void answerPorts(req, res);
      if (opts.originHandler) {
        opts.originHandler(req, res);
        return;
      }
      plain(res, 400, "sbx proxy: send requests through it as a proxy (absolute URI or CONNECT), not to it.\n");
      return;
    }
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      plain(res, 400, "sbx proxy: malformed request target.\n");
      return;
    }
    plainRequest("proxy", req, res, parsed);
  };

  /** `GET /sbx/names?name=NAME`: the address that stands for a name (the DNS stub inside asks), given out now if new. */
  const answerName = (req: IncomingMessage, res: ServerResponse) => {
    const json = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text), "Cache-Control": "no-store" });
      res.end(text);
    };
    if (!opts.names) return json(404, { error: "not-found", message: "this sandbox has no transparent path" });
    if (req.method !== "GET") return json(405, { error: "method", message: "GET only" });
    const name = new URL(req.url ?? "", "http://x").searchParams.get("name") ?? "";
    const host = askableName(name.toLowerCase().replace(/\.$/, ""));
    if (host === null) return json(400, { error: "name", message: "not a host name" });
    const address = opts.names.addressOf(host);
    if (address === null) return json(507, { error: "full", message: "this sandbox was given as many names as it may have" });
    json(200, { name: host, address });
  };

  let portsHeld = 0;
  /** `GET /sbx/transparent?known=…`: the transparent ports now, once they differ from what the forwarder knows. */
  const answerPorts = (req: IncomingMessage, res: ServerResponse) => {
    const send = (ports: number[]) => {
      const text = JSON.stringify({ ports });
      res.writeHead(200, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text), "Cache-Control": "no-store" });
      res.end(text);
    };
    if (!opts.names) return void plain(res, 404, "sbx proxy: this sandbox has no transparent path.\n");
    const knownText = new URL(req.url ?? "", "http://x").searchParams.get("known") ?? "";
    const known = knownText.slice(0, 400);
    const now = () => transparentPortsOf(opts.policy());
    const started = Date.now();
    let timer: ReturnType<typeof setTimeout> | null = null;
    let holding = false;
    const release = () => {
      if (timer) clearTimeout(timer);
      timer = null;
      if (holding) portsHeld--;
      holding = false;
    };
    const tick = () => {
      timer = null;
      if (res.destroyed) return release();
      const ports = now();
      if (ports.join(",") !== known || Date.now() - started >= PORTS_HOLD_MS || (!holding && portsHeld >= MAX_PORTS_HELD)) {
        release();
        return send(ports);
      }
      if (!holding) {
        holding = true;
        portsHeld++;
      }
      timer = setTimeout(tick, PORTS_POLL_MS);
    };
    res.once("close", release);
    tick();
  };

  /** Transparent ports whose connections are read as plain HTTP. */
  const httpPorts = new Set(opts.transparentHttpPorts ?? [80]);

  /** One transparent connection: the name its address stands for, then the same checks as the proxy path's. */
  const transparent = (s: Socket, to: TransparentTarget | null) => {
    if (!admit(s, "cut")) return;
    s.on("error", () => s.destroy());
    const address = to?.address.startsWith("::ffff:") ? to.address.slice(7) : to?.address;
    const name = address === undefined ? null : (opts.names?.nameOf(address) ?? null);
    if (to === null || name === null) {
      const shown = to === null ? "an unknown address" : target(address ?? "?", to.port);
      emit({ type: "denied", sandbox, path: "transparent", method: "CONNECT", host: address ?? "?", port: to?.port ?? 0, reason: "unnamed-address", detail: `${shown} stands for no name the sandbox looked up (connect by name)`, suggest: null, at: Date.now() });
      return void cut(s);
    }
    if (httpPorts.has(to.port)) return void sandboxConnection(s, { name, port: to.port });
    s.pause();
    paced(() => {
      if (s.destroyed) return;
      void check("transparent", "CONNECT", name, to.port).then((v) => {
        if (s.destroyed) return;
        if (!v.ok) return void cut(s);
        tunnel(v, s, Buffer.alloc(0));
      });
    });
  };

  const forward = (v: Extract<Verdict, { ok: true }>, req: IncomingMessage, res: ServerResponse, url: URL) => {
    const started = performance.now();
    inFlight++;
    let bytesUp = 0;
    let bytesDown = 0;
    let finished = false;
    const done = (ok: boolean) => {
      if (finished) return;
      finished = true;
      inFlight--;
      if (ok) {
        emit({
          type: "closed",
          sandbox,
          path: v.path,
          method: req.method ?? "GET",
          host: v.host,
          port: v.port,
          address: v.address,
          source: v.source,
          pattern: v.pattern,
          bytesUp,
          bytesDown,
          durationMs: Math.round(performance.now() - started),
          at: Date.now(),
        });
      }
    };
    const method = req.method ?? "GET";
    // The body goes up framed as it came (framingProblem allowed only these): a body sent with no framing (a GET's,
    // say) would be read by the server as the next request on this pooled connection, one the allowlist never saw.
    const body = req.headers["transfer-encoding"] !== undefined ? "chunked" : req.headers["content-length"] !== undefined ? "length" : "none";
    let head: string;
    try {
      // The Host sent is the authority checked (the client's said the same, or was refused), and only that one.
      const sent = headerList(forwardHeaders(req.headers)).filter(([n]) => n !== "host");
      head = requestHead(method, `${url.pathname}${url.search}`, [["Host", url.host], ...sent], body === "length" ? { length: Number(req.headers["content-length"]) } : body);
    } catch (e) {
      done(false);
      return void plain(res, 400, `sbx proxy: refused: ${(e as Error).message}.\n`);
    }
    // Connected to exactly the checked address (an IP: no lookup happens).
    const x = upstream.request({ address: v.address, port: v.port, method, head, body, replayable: body === "none" && SAFE_METHODS.has(method) }, {
      head(h) {
        res.writeHead(h.status, h.reason, responseHeaders(h.headers));
      },
      body(data) {
        bytesDown += data.length;
        if (res.write(data)) return true;
        res.once("drain", () => x.resume());
        return false;
      },
      end(last) {
        if (last) bytesDown += last.length;
        res.end(last);
        done(true);
      },
      error(why, connected) {
        done(false);
        if (res.headersSent) return void res.destroy();
        const message = connected ? `${target(v.host, v.port)} (${v.address}) sent ${why}` : `could not reach ${target(v.host, v.port)} (${v.address}): ${why}`;
        emit({ type: "error", sandbox, path: v.path, method, host: v.host, port: v.port, address: v.address, message, at: Date.now() });
        plain(res, 502, `sbx proxy: ${message}\n`);
      },
    });
    req.on("data", (c: Buffer) => {
      bytesUp += c.length;
      if (!x.write(c)) {
        req.pause();
        x.drained(() => req.resume());
      }
    });
    req.once("end", () => x.end());
    req.resume();
    res.once("close", () => {
      if (!finished) {
        done(false);
        x.abort();
      }
    });
  };

  /**
   * A connection on the sandbox's own port (the listener handed over), read by http1.ts rather than node:http: the
   * proxy's requests (CONNECT and absolute-form plain HTTP) are read strictly and answered here, each pipelined one
   * checked on its own and forwarded as `forward` does. An origin-form request (`/health`, `/llm/…`, `/sbx/…`) hands the
   * connection, its bytes unread, to the node:http server that serves those on the proxy socket.
   * With `site` it is the transparent path's plain HTTP: a connection to the address that stands for a name, whose
   * requests are origin-form for that name (an absolute form or Host naming another server is a 400); no CONNECT.
   */
  const sandboxConnection = (s: Socket, site?: { name: string; port: number }) => {
    const path: EgressPath = site ? "transparent" : "proxy";
    if (!admit(s, site ? "cut" : "http")) return;
    s.on("error", () => s.destroy());
    let buf: Buffer = Buffer.alloc(0);
    /** An exchange is under way: bytes that come now are its request body, or the next request (kept). */
    let busy = false;
    /** Handed over, tunnelled, or closing: this reader is done with the connection. */
    let gone = false;
    let clientEnded = false;
    let body: BodyReader | null = null;
    let exchange: Exchange | null = null;
    /** Ends the exchange under way (the client went away). */
    let cancel: (() => void) | null = null;
    /** Part of the exchange's answer was written to the client. */
    let responding = false;
    /** The request at the head of `buf` has had its turn (see `pacer`). */
    let paid = false;
    /** Counts the exchange's request body bytes, for its audit event. */
    let countUp: (n: number) => void = () => undefined;
    // Waiting for a request (or the rest of one) is bounded by the socket's own inactivity timeout, not a timer each.
    let waiting = 0;
    const wait = (ms: number) => {
      if (waiting !== ms) s.setTimeout(ms);
      waiting = ms;
    };
    const stopWaiting = () => {
      if (waiting !== 0) s.setTimeout(0);
      waiting = 0;
    };
    s.on("timeout", () => {
      if (waiting !== 0) s.destroy();
    });
    wait(HEAD_TIMEOUT_MS);
    const leave = () => {
      gone = true;
      stopWaiting();
      s.off("data", onData);
      s.off("end", onEnd);
    };
    /** The last answer on this connection: what the client sent after it is read and dropped, then it is closed. */
    const closeWith = (text: string | Buffer) => {
      leave();
      finalResponse(s, text);
    };
    const refuseRaw = (status: number, text: string, close: boolean, extra: Header[] = [], phrase?: string) => {
      const payload = Buffer.from(text);
      const head = responseHead(status, phrase ?? STATUS_CODES[status] ?? "", [...extra, ["Content-Type", "text/plain; charset=utf-8"]], { length: payload.length }, close);
      const out = Buffer.concat([Buffer.from(head, "latin1"), payload]);
      if (close) return closeWith(out);
      s.write(out);
      busy = false;
      next();
    };

    const onData = (d: Buffer) => {
      buf = buf.length === 0 ? d : Buffer.concat([buf, d]);
      if (body !== null) return pumpBody();
      if (!busy) return next();
      // Waiting for a response: what comes is the next request; past a head's worth the client waits too.
      if (buf.length > MAX_HEAD) s.pause();
    };
    const onEnd = () => {
      clientEnded = true;
      if (!busy) finish();
    };
    /** The client has said all it will, and had its answers: the connection ends once they are written. */
    const finish = () => {
      leave();
      s.end();
    };
    s.on("data", onData);
    s.on("end", onEnd);
    s.once("close", () => {
      stopWaiting();
      cancel?.();
    });

    /** The next request on the connection, once the one before it is answered. */
    const next = () => {
      if (gone || busy || s.destroyed) return;
      if (clientEnded && buf.length === 0) return finish();
      if (s.isPaused()) s.resume();
      if (buf.length === 0) return wait(KEEP_ALIVE_MS);
      const r = readRequestHead(buf);
      // The rest of a head, unless the client has said all it will (then it never comes).
      if (r.kind === "more") return clientEnded ? finish() : wait(HEAD_TIMEOUT_MS);
      stopWaiting();
      if (r.kind === "refused") return refuseRaw(400, `sbx proxy: refused: ${r.why}; send one unambiguous HTTP/1.1 request.\n`, true);
      const { head } = r;
      // Its turn (origin-form requests take theirs on the node:http server they go to).
      if (!paid && !(!site && head.target.startsWith("/"))) {
        const d = turn();
        if (d > 0) {
          paid = true;
          busy = true;
          s.pause();
          setTimeout(() => {
            busy = false;
            next();
          }, d);
          return;
        }
      }
      paid = false;
      if (site && head.method === "CONNECT") {
        leave();
        return cut(s);
      }
      if (!site && head.target.startsWith("/")) {
        // Origin-form: the node:http server's, from this request on (its bytes unread, as they came).
        leave();
        s.pause();
        s.unshift(buf);
        server.emit("connection", s);
        s.resume();
        return;
      }
      buf = buf.subarray(r.size);
      if (head.method === "CONNECT") {
        if (head.framing !== "none" && !(typeof head.framing === "object" && head.framing.length === 0)) {
          return refuseRaw(400, "sbx proxy: refused: a CONNECT with a body; the bytes after its head are the tunnel's.\n", true);
        }
        leave();
        return connectRequest(head.target, s, buf);
      }
      busy = true;
      plainRaw(head);
    };

    /** An absolute-form request: the same checks as `plainRequest`, then forwarded, its answer written here. */
    const plainRaw = (head: RequestHead) => {
      // A refusal ends the connection when the client asked for that, or sent a body (which is not read).
      const closeAfter = head.framing !== "none" || !head.keepAlive;
      let parsed: URL;
      try {
        // On the transparent path, origin-form, as a client that thinks it talks to the server sends.
        parsed = site && head.target.startsWith("/") ? new URL(`http://${site.port === 80 ? site.name : `${site.name}:${site.port}`}${head.target}`) : new URL(head.target);
      } catch {
        return refuseRaw(400, "sbx proxy: malformed request target.\n", closeAfter);
      }
      if (site && (normalizeHost(parsed.hostname) !== site.name || (parsed.port === "" ? 80 : Number(parsed.port)) !== site.port)) {
        refuse(path, head.method, site.name, site.port, "server-name-mismatch", `its request names ${headerSafe(parsed.host)}`, null);
        return refuseRaw(400, `sbx proxy: this connection is for ${site.name}; the request names ${headerSafe(parsed.host)}.\n`, closeAfter);
      }
      if (parsed.protocol !== "http:") {
        return refuseRaw(400, `sbx proxy: ${parsed.protocol} URLs go through CONNECT; only http: is forwarded as a plain request.\n`, closeAfter);
      }
      const port = parsed.port === "" ? 80 : Number(parsed.port);
      const hostText = head.headers.find(([n]) => n.toLowerCase() === "host")?.[1];
      const claimed = hostHeaderAuthority(hostText);
      if (claimed !== undefined && (claimed === null || claimed.host !== normalizeHost(parsed.hostname) || claimed.port !== port)) {
        if (site) refuse(path, head.method, site.name, site.port, "server-name-mismatch", `its Host header names ${headerSafe(String(hostText))}`, null);
        return refuseRaw(400, `sbx proxy: the Host header (${headerSafe(String(hostText))}) names another authority than the request target (${headerSafe(parsed.host)}); send them alike.\n`, closeAfter);
      }
      s.pause();
      void check(path, head.method, parsed.hostname, port).then((v) => {
        if (gone || s.destroyed) return;
        if (!v.ok) {
          const extra: Header[] = v.header === null ? [] : [["X-Sbx-Blocked", v.header]];
          return refuseRaw(v.status, v.body, closeAfter, extra, v.status === 403 ? v.phrase : undefined);
        }
        forwardRaw(v, head, parsed);
      });
    };

    const forwardRaw = (v: Extract<Verdict, { ok: true }>, head: RequestHead, url: URL) => {
      const started = performance.now();
      inFlight++;
      let bytesUp = 0;
      let bytesDown = 0;
      let finished = false;
      const method = head.method;
      const done = (ok: boolean) => {
        if (finished) return;
        finished = true;
        inFlight--;
        exchange = null;
        cancel = null;
        if (ok) {
          emit({ type: "closed", sandbox, path: v.path, method, host: v.host, port: v.port, address: v.address, source: v.source, pattern: v.pattern, bytesUp, bytesDown, durationMs: Math.round(performance.now() - started), at: Date.now() });
        }
      };
      const framing = head.framing;
      // `Expect: 100-continue` is answered here, once the request is allowed; the server gets the body at once.
      const expects = head.headers.some(([n, val]) => n.toLowerCase() === "expect" && val.toLowerCase() === "100-continue");
      let up: string;
      try {
        // The Host sent is the authority checked, whatever the client's said (it said the same, or was refused above).
        const sent = withoutHopByHop(head.headers).filter(([n]) => {
          const k = n.toLowerCase();
          return k !== "host" && !(expects && k === "expect");
        });
        up = requestHead(method, `${url.pathname}${url.search}`, [["Host", url.host], ...sent], framing);
      } catch (e) {
        done(false);
        return refuseRaw(400, `sbx proxy: refused: ${(e as Error).message}.\n`, true);
      }
      if (expects && framing !== "none") s.write("HTTP/1.1 100 Continue\r\n\r\n");
      // The answer's head waits for its first body bytes (one write, not two); `to` is how the body goes to the client.
      let pending: Buffer | null = null;
      let to: "length" | "chunked" | "close" = "length";
      let close = !head.keepAlive || clientEnded;
      responding = false;
      const out = (parts: Buffer[]) => {
        const all = pending ? [pending, ...parts] : parts;
        pending = null;
        responding = true;
        return s.write(all.length === 1 ? all[0]! : Buffer.concat(all));
      };
      const encode = (data: Buffer): Buffer[] => (to === "chunked" ? chunk(data) : [data]);
      exchange = upstream.request({ address: v.address, port: v.port, method, head: up, body: framing === "none" ? "none" : framing === "chunked" ? "chunked" : "length", replayable: framing === "none" && SAFE_METHODS.has(method) }, {
        head(h, length) {
          const headers = withoutHopByHop(h.headers);
          let clientFraming: Framing;
          if (length === 0) {
            // No body: a length the server gave (a HEAD's, a 304's) goes on as it is.
            const given = h.headers.find(([n]) => n.toLowerCase() === "content-length")?.[1];
            clientFraming = given === undefined ? "none" : { length: Number(given) };
            to = "length";
          } else if (typeof length === "number") {
            clientFraming = { length };
            to = "length";
          } else if (head.version === "1.1") {
            clientFraming = "chunked";
            to = "chunked";
          } else {
            // An HTTP/1.0 client knows no chunks: the body ends with the connection.
            clientFraming = "none";
            to = "close";
            close = true;
          }
          pending = Buffer.from(responseHead(h.status, h.reason, headers, clientFraming, close), "latin1");
        },
        body(data) {
          bytesDown += data.length;
          if (out(encode(data))) return true;
          s.once("drain", () => exchange?.resume());
          return false;
        },
        end(last) {
          if (last) bytesDown += last.length;
          out([...(last ? encode(last) : []), ...(to === "chunked" ? [LAST_CHUNK] : [])]);
          done(true);
          // A request body the server did not wait for is not read to its end: the connection cannot go on.
          if (close || body !== null) return void closeWith(Buffer.alloc(0));
          busy = false;
          next();
        },
        error(why, connected) {
          done(false);
          // Part of the answer went out: the client can only be told by the connection's end.
          if (responding) return void s.destroy();
          pending = null;
          const message = connected ? `${target(v.host, v.port)} (${v.address}) sent ${why}` : `could not reach ${target(v.host, v.port)} (${v.address}): ${why}`;
          emit({ type: "error", sandbox, path: v.path, method, host: v.host, port: v.port, address: v.address, message, at: Date.now() });
          refuseRaw(502, `sbx proxy: ${message}\n`, close || body !== null);
        },
      });
      cancel = () => {
        exchange?.abort();
        done(false);
      };
      countUp = (n) => void (bytesUp += n);
      body = framing === "none" ? null : new BodyReader(framing);
      s.resume();
      if (body !== null) pumpBody();
    };

    /** Request body bytes as they come, to the server; the bytes after the body stay for the next request. */
    const pumpBody = () => {
      const r = body!.read(buf);
      if ("why" in r) {
        // The server has the head and the body's good part, never a byte that was not checked: it is cut off.
        const wrote = responding;
        body = null;
        cancel?.();
        if (wrote) return void s.destroy();
        return refuseRaw(400, `sbx proxy: refused: ${r.why}; send one unambiguous HTTP/1.1 request.\n`, true);
      }
      buf = buf.subarray(r.used);
      for (const d of r.data) {
        countUp(d.length);
        if (!exchange!.write(d)) {
          s.pause();
          exchange!.drained(() => s.resume());
        }
      }
      if (body!.done) {
        body = null;
        exchange!.end();
      }
    };
  };

  await listenUnix(server, opts.socketPath);

  const listeners = new Set<NetServer>();
  let closing: Promise<void> | null = null;
  /** Accepts on a listening socket handed over (its fd is the proxy's from now on); the returned close stops that. */
  const acceptOn = (fd: number, onSocket: (s: Socket) => void): { close(): void } => {
    if (closing) throw new Error("the proxy is closing");
    // allowHalfOpen as the HTTP server's own sockets have it: a tunnel's client may end its side and still read.
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
    active: () => inFlight,
    serveListener(fd, lopts) {
      const pick = lopts?.transparentOf;
      return acceptOn(fd, (s) => {
        const to = pick ? targetOrNull(pick, s) : null;
        if (to !== null) return void transparent(s, to);
        sandboxConnection(s);
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
        for (const s of clientSockets) s.destroy();
        for (const s of upstreamSockets) s.destroy();
        upstream.close();
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
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

function plain(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}, phrase?: string): void {
  const h = { "Content-Type": "text/plain; charset=utf-8", ...headers, "Content-Length": Buffer.byteLength(body) };
  if (phrase === undefined) res.writeHead(status, h);
  else res.writeHead(status, phrase, h);
  res.end(body);
}

/**
 * Pure: the reason phrase of a refusal, `sbx: <target> is not allowed (<command>)`, printable ASCII only (a reason
 * phrase ends at CR/LF, and a client prints it raw), at most 200 characters.
 */
export function blockedPhrase(targetText: string, command: string | null): string {
  const s = `sbx: ${targetText} is not allowed (${command ?? "it cannot be allowed"})`;
  return s.replace(/[^\x20-\x7e]/g, "?").slice(0, 200);
}

/** Where a transparent connection was headed, or null when that cannot be told (a lookup that throws tells nothing). */
function targetOrNull(of: (s: Socket) => TransparentTarget | null, s: Socket): TransparentTarget | null {
  try {
    return of(s);
  } catch {
    return null;
  }
}
