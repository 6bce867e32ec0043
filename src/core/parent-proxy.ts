// Pure: the parent proxy, the host's own HTTP proxy that the daemon's outbound connections go through on a network
// where only it gets out. Where it is (the config file's `proxy`, else HTTPS_PROXY/HTTP_PROXY/ALL_PROXY in the daemon's
// environment), which destinations skip it (NO_PROXY, read exactly as curl reads it), and the CONNECT spoken to it.
// Every connection through it is a CONNECT to the name sbx judged, plain HTTP included, so the parent never sees a
// request sbx did not write and never judges anything sbx refused: it only ever narrows what gets out.
import { canonicalIp, classify, parseIPv4, parseIPv6 } from "./addresses";
import { normalizeHost } from "./allowlist";

/** Where a parent's credentials come from: the URL's own `user:password` (the environment's), or a stored secret. */
export type ParentCredentials = { kind: "inline"; user: string; password: string } | { kind: "secret"; name: string };

/** One parent proxy. */
export interface ParentEndpoint {
  /** Normalised (lower-case; an IPv6 address without brackets). */
  host: string;
  port: number;
  /** `http://host:port` as people see it: never credentials. */
  shown: string;
  credentials: ParentCredentials | null;
}

export interface ParentSettings {
  /** Where they were read: the config file's `proxy`, or the daemon's environment (`HTTPS_PROXY`, …). */
  source: "config" | "environment";
  /** For TLS and every other tunnel (https_proxy / HTTPS_PROXY, else all_proxy / ALL_PROXY). */
  https: ParentEndpoint | null;
  /** For plain HTTP (http_proxy / HTTP_PROXY, else all_proxy / ALL_PROXY). */
  http: ParentEndpoint | null;
  /** NO_PROXY as written (curl's reading: `noProxyMatches`). */
  noProxy: string;
}

/** What the config file's `proxy` holds (core/config.ts checks its shape). */
export interface ParentConfig {
  url: string;
  noProxy?: readonly string[];
  /** The name of a stored secret (`sbx secret set NAME`) holding `user:password`. */
  credentials?: string;
}

/** Which kind of connection a parent is chosen for: a tunnel (TLS, anything opaque) or a plain HTTP request. */
export type ParentScheme = "https" | "http";

/** Pure: `http://host:port`, an IPv6 host in brackets. */
function shownOf(host: string, port: number): string {
  return `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/**
 * Pure: a proxy URL as the environment or the config gives it (`http://[user:password@]host[:port][/]`, or without the
 * scheme as curl takes it), or why it cannot be used. Only `http://` proxies are spoken to (TLS to the proxy itself and
 * SOCKS are not); an absent port is 80, as the URL says.
 */
export function parseParentUrl(raw: string): { ok: true; endpoint: ParentEndpoint } | { ok: false; reason: string } {
  const text = raw.trim();
  if (text === "") return { ok: false, reason: "it is empty" };
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`;
  let u: URL;
  try {
    u = new URL(withScheme);
  } catch {
    return { ok: false, reason: "it is not a URL (http://host:port)" };
  }
  if (u.protocol !== "http:") return { ok: false, reason: `${u.protocol}// proxies are not supported; sbx speaks to an http:// proxy (CONNECT), as most company proxies are` };
  if ((u.pathname !== "/" && u.pathname !== "") || u.search !== "" || u.hash !== "") return { ok: false, reason: "a proxy URL names a host and a port, no path" };
  const host = normalizeHost(u.hostname);
  if (host === null) return { ok: false, reason: `'${u.hostname}' is not a host name or address` };
  const port = u.port === "" ? 80 : Number(u.port);
  let credentials: ParentCredentials | null = null;
  if (u.username !== "" || u.password !== "") {
    try {
      credentials = { kind: "inline", user: decodeURIComponent(u.username), password: decodeURIComponent(u.password) };
    } catch {
      return { ok: false, reason: "its user or password is not percent-encoded properly" };
    }
  }
  return { ok: true, endpoint: { host, port, shown: shownOf(host, port), credentials } };
}

/** The first variable of `names` that is set and not empty, with its name. */
function firstSet(env: Readonly<Record<string, string | undefined>>, names: readonly string[]): { name: string; value: string } | null {
  for (const name of names) {
    const value = env[name];
    if (value !== undefined && value.trim() !== "") return { name, value };
  }
  return null;
}

/**
 * Pure: the parent proxy the daemon's environment names, or null when it names none; `problems` says what was set and
 * cannot be used (a SOCKS or https:// proxy, a malformed URL): that variable is then not used, and `sbx doctor` says so.
 * Lower case first, as curl reads them (curl ignores upper-case HTTP_PROXY; a daemon is no CGI script, so it is read).
 */
export function parentFromEnv(env: Readonly<Record<string, string | undefined>>): { settings: ParentSettings | null; problems: string[] } {
  const problems: string[] = [];
  const pick = (names: readonly string[]): ParentEndpoint | null => {
    const v = firstSet(env, names);
    if (v === null) return null;
    const p = parseParentUrl(v.value);
    if (!p.ok) problems.push(`${v.name}: ${p.reason}`);
    return p.ok ? p.endpoint : null;
  };
  const all = ["all_proxy", "ALL_PROXY"];
  const https = pick(["https_proxy", "HTTPS_PROXY", ...all]);
  const http = pick(["http_proxy", "HTTP_PROXY", ...all]);
  const noProxy = firstSet(env, ["no_proxy", "NO_PROXY"])?.value ?? "";
  return { settings: https === null && http === null ? null : { source: "environment", https, http, noProxy }, problems };
}

/** Pure: the config file's parent proxy (one URL for every kind of connection; its credentials a stored secret's name). */
export function parentFromConfig(c: ParentConfig): { settings: ParentSettings | null; problems: string[] } {
  const p = parseParentUrl(c.url);
  if (!p.ok) return { settings: null, problems: [`proxy.url: ${p.reason}`] };
  if (p.endpoint.credentials !== null) return { settings: null, problems: ["proxy.url: credentials go in a stored secret named by proxy.credentials, never in the config file"] };
  const endpoint: ParentEndpoint = { ...p.endpoint, credentials: c.credentials ? { kind: "secret", name: c.credentials } : null };
  return { settings: { source: "config", https: endpoint, http: endpoint, noProxy: (c.noProxy ?? []).join(",") }, problems: [] };
}

/** Whether a name is an IPv4 literal curl would parse (inet_pton's dotted quad). */
function isV4(s: string): boolean {
  return parseIPv4(s) !== null;
}

/** curl's Curl_cidr4_match: no bits (or 32) is the exact address; more than 32 never matches. */
function cidr4(name: string, network: string, bits: number): boolean {
  const a = parseIPv4(name);
  const n = parseIPv4(network);
  if (bits > 32 || a === null || n === null) return false;
  if (bits === 0 || bits === 32) return a.every((b, i) => b === n[i]);
  return prefixEqual(a, n, bits);
}

/** curl's Curl_cidr6_match: no bits is the exact address; more than 128 never matches. */
function cidr6(name: string, network: string, bits: number): boolean {
  const a = parseIPv6(name);
  const n = network.includes("[") ? null : parseIPv6(network);
  if (bits > 128 || a === null || n === null) return false;
  return prefixEqual(a, n, bits === 0 ? 128 : bits);
}

function prefixEqual(a: Uint8Array, b: Uint8Array, bits: number): boolean {
  const whole = Math.floor(bits / 8);
  for (let i = 0; i < whole; i++) if (a[i] !== b[i]) return false;
  const rest = bits % 8;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return ((a[whole]! ^ b[whole]!) & mask) === 0;
}

/**
 * Pure: whether NO_PROXY sends `host` straight out, read exactly as curl's `Curl_check_noproxy` reads it: `*` alone
 * matches everything; otherwise comma-separated entries (blanks around them; an entry followed by anything but a comma
 * ends the list). For a name, an entry matches the name itself or any name under it, a leading and a trailing dot
 * ignored (`.corp` and `corp` both match `corp` and `a.corp`, never `acorp`); `*.corp` is read literally and so
 * matches nothing. For an IP literal, an entry is an address or `address/bits` (CIDR), compared as addresses; a name is
 * never resolved to be compared with a CIDR, and an address never matches a name entry. Ports are not part of it.
 */
export function noProxyMatches(noProxy: string, rawHost: string): boolean {
  if (noProxy === "") return false;
  if (noProxy === "*") return true;
  let name = rawHost.toLowerCase();
  let type: "host" | "v4" | "v6" = "host";
  if (name.startsWith("[")) {
    const end = name.indexOf("]");
    if (end < 0) return false;
    name = name.slice(1, end);
    type = "v6";
  } else if (isV4(name)) type = "v4";
  else if (name.includes(":") && parseIPv6(name) !== null) type = "v6";
  else if (name.endsWith(".")) name = name.slice(0, -1);
  const blank = (c: string | undefined) => c === " " || c === "\t";
  let i = 0;
  while (i < noProxy.length) {
    while (blank(noProxy[i])) i++;
    const start = i;
    while (i < noProxy.length && !blank(noProxy[i]) && noProxy[i] !== ",") i++;
    let token = noProxy.slice(start, i).toLowerCase();
    if (token !== "") {
      if (type === "host") {
        if (token.endsWith(".")) token = token.slice(0, -1);
        if (token.startsWith(".")) token = token.slice(1);
        if (token.length === name.length ? token === name : token.length < name.length && name.endsWith(`.${token}`)) return true;
      } else {
        const slash = token.indexOf("/");
        const bits = slash < 0 ? 0 : Number.parseInt(token.slice(slash + 1), 10) || 0;
        const network = slash < 0 ? token : token.slice(0, slash);
        if (type === "v6" ? cidr6(name, network, bits) : cidr4(name, network, bits)) return true;
      }
    }
    while (blank(noProxy[i])) i++;
    if (i < noProxy.length && noProxy[i] !== ",") break;
    while (noProxy[i] === ",") i++;
  }
  return false;
}

/** Pure: the parent for a connection of `scheme` to `host`, or null when it goes straight out (none, or NO_PROXY). */
export function parentFor(s: ParentSettings | null, scheme: ParentScheme, host: string): ParentEndpoint | null {
  const p = s === null ? null : scheme === "https" ? s.https : s.http;
  if (p === null || noProxyMatches(s!.noProxy, host)) return null;
  return p;
}

/** Pure: NO_PROXY entries curl reads otherwise than people often mean (`*.corp` is literal; only `*` alone is "all"). */
export function noProxySurprises(noProxy: string): string[] {
  if (noProxy === "*") return [];
  const entries = noProxy.split(",").map((t) => t.trim());
  return [
    ...entries.filter((t) => /[ \t]/.test(t)).map((t) => `'${t}': separate entries with commas (curl, and sbx, read up to the blank and stop)`),
    ...entries
      .filter((t) => t.includes("*"))
      .map((t) => (t === "*" ? `'*' matches everything only alone; beside other entries it matches nothing` : `'${t}' is read literally (write '${t.replace(/^\*+\.?/, ".")}' for a domain and every name under it)`)),
  ];
}

/** Pure: `Basic base64(user:password)`. */
export function basicAuthorization(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`, "utf8").toString("base64")}`;
}

/** Pure: a stored secret's `user:password` as Basic credentials, or why not (never the value itself). */
export function storedCredentials(value: string | null, name: string): { ok: true; authorization: string } | { ok: false; reason: string } {
  if (value === null) return { ok: false, reason: `the stored secret ${name} (proxy.credentials) is not set: sbx secret set ${name}` };
  const i = value.indexOf(":");
  if (i <= 0 || /[\r\n]/.test(value)) return { ok: false, reason: `the stored secret ${name} (proxy.credentials) must hold user:password on one line` };
  return { ok: true, authorization: basicAuthorization(value.slice(0, i), value.slice(i + 1)) };
}

/** Pure: `host:port` as a CONNECT names it (an IPv6 host in brackets). */
export function connectAuthority(host: string, port: number): string {
  return `${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/** Pure: the CONNECT sbx sends a parent: the name sbx judged (never an address the host resolved; see ARCHITECTURE.md). */
export function connectHead(host: string, port: number, authorization: string | null): string {
  const a = connectAuthority(host, port);
  return `CONNECT ${a} HTTP/1.1\r\nHost: ${a}\r\n${authorization !== null ? `Proxy-Authorization: ${authorization}\r\n` : ""}\r\n`;
}

/** The most of a parent's answer to a CONNECT that is read before it counts as no answer. */
export const MAX_PARENT_HEAD = 16 * 1024;

export type ParentAnswer =
  | { kind: "more" }
  /** The tunnel is open; `size`: the bytes of the head (what follows is the server's). */
  | { kind: "open"; size: number }
  /** The parent refused, with its status and reason phrase (printable ASCII, at most 100 characters). */
  | { kind: "refused"; status: number; reason: string }
  | { kind: "malformed"; why: string };

/** Pure: reads a parent's answer to a CONNECT: a 2xx opens the tunnel, anything else refuses it. */
export function readParentAnswer(buf: Uint8Array): ParentAnswer {
  const text = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength).toString("latin1");
  const end = text.indexOf("\r\n\r\n");
  if (end < 0) return buf.byteLength > MAX_PARENT_HEAD ? { kind: "malformed", why: `no end of its answer within ${MAX_PARENT_HEAD} bytes` } : { kind: "more" };
  const line = text.slice(0, text.indexOf("\r\n"));
  const m = /^HTTP\/1\.[01] ([0-9]{3})(?: (.*))?$/.exec(line);
  if (!m) return { kind: "malformed", why: "its answer is not an HTTP/1.x status line" };
  const status = Number(m[1]);
  if (status >= 200 && status < 300) return { kind: "open", size: end + 4 };
  return { kind: "refused", status, reason: (m[2] ?? "").replace(/[^\x20-\x7e]/g, "?").slice(0, 100) };
}

/**
 * Pure: what a sandbox is told when the parent would not carry its connection (a 502's text): the parent as people see
 * it and its status, never its credentials (they are not in `shown`, and nothing of the request is repeated).
 */
export function parentRefusalText(shown: string, status: number, reason: string): string {
  const what = status === 407 ? "it wants credentials sbx does not have or it refused them (proxy.credentials in the config file)" : status === 403 ? "the company proxy's own policy refused this destination" : "it could not reach the destination";
  return `the parent proxy ${shown} answered ${status}${reason ? ` ${reason}` : ""}: ${what}`;
}

/**
 * Pure: the proxy variables for a host tool (git, gh) whose connections go through the parent, given the URL it is to
 * use (`http://[user:password@]host:port`): both cases of each, as curl, git and Go read them; NO_PROXY as the settings
 * have it.
 */
export function proxyVariables(url: string, noProxy: string): Record<string, string> {
  const out: Record<string, string> = { HTTPS_PROXY: url, https_proxy: url, HTTP_PROXY: url, http_proxy: url };
  if (noProxy !== "") {
    out.NO_PROXY = noProxy;
    out.no_proxy = noProxy;
  }
  return out;
}

/** The variables that name a proxy in an environment (for a service unit, and for what sbx never passes on). */
export const PROXY_VARIABLES = ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"] as const;

/** What a host tool asked sbx's relay for (sys/parent-relay.ts): a CONNECT, with the relay's own credentials, or not. */
export type RelayRequest =
  | { kind: "more" }
  | { kind: "connect"; host: string; port: number; authorization: string | null; size: number }
  | { kind: "bad"; status: 400 | 405; why: string };

/** A request's head to one of sbx's relays, read up to its blank line. */
interface RelayHead {
  kind: "head";
  method: string;
  target: string;
  headers: string[];
  /** The head's bytes, blank line included. */
  size: number;
}

/** Pure: the head of a request to a relay, once it is all there (bounded by MAX_PARENT_HEAD). */
function readRelayHead(buf: Uint8Array): RelayHead | { kind: "more" } | { kind: "bad"; status: 400; why: string } {
  const text = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength).toString("latin1");
  const end = text.indexOf("\r\n\r\n");
  if (end < 0) return buf.byteLength > MAX_PARENT_HEAD ? { kind: "bad", status: 400, why: "a request head too long" } : { kind: "more" };
  const [line, ...headers] = text.slice(0, end).split("\r\n");
  const m = /^([A-Z]+) (\S+) HTTP\/1\.[01]$/.exec(line ?? "");
  if (!m) return { kind: "bad", status: 400, why: "not an HTTP/1.x request" };
  return { kind: "head", method: m[1]!, target: m[2]!, headers, size: end + 4 };
}

/** Pure: a CONNECT's head as the relays carry it: `host:port`, and at most one Proxy-Authorization. */
function connectOf(h: RelayHead): RelayRequest {
  const a = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):([0-9]{1,5})$/.exec(h.target);
  const host = a ? normalizeHost(a[1] ?? a[2]!) : null;
  const port = a ? Number(a[3]) : 0;
  if (host === null || port < 1 || port > 65535) return { kind: "bad", status: 400, why: "a CONNECT names host:port" };
  const auth = h.headers.filter((x) => /^proxy-authorization:/i.test(x)).map((x) => x.slice(x.indexOf(":") + 1).trim());
  if (auth.length > 1) return { kind: "bad", status: 400, why: "more than one Proxy-Authorization" };
  return { kind: "connect", host, port, authorization: auth[0] ?? null, size: h.size };
}

/** Pure: reads a host tool's request to the relay: only `CONNECT host:port` is carried. */
export function readRelayRequest(buf: Uint8Array): RelayRequest {
  const h = readRelayHead(buf);
  if (h.kind !== "head") return h;
  if (h.method !== "CONNECT") return { kind: "bad", status: 405, why: "only CONNECT is carried to the parent proxy" };
  return connectOf(h);
}

/** What `docker build` is given of the parent proxy: build args, and what the person should know about them. */
export interface BuildProxy {
  /**
   * Docker's predefined proxy args (HTTP_PROXY, HTTPS_PROXY, NO_PROXY, each in both cases): the parent's address as it
   * is, or a per-build relay's (`http://sbx:<one-build password>@<bridge gateway>:<port>`); never the parent's login.
   */
  args: Record<string, string>;
  notes: string[];
}

/** A per-build relay (sys/build-relay.ts) as buildProxyArgs is told of it: its URL, or why there is none. */
export type BuildRelayOffer = { url: string } | { unavailable: string };

/** Pure: whether a build reaches this parent only through a relay: it wants a login, or it is on the host's loopback. */
export function buildNeedsRelay(e: ParentEndpoint): boolean {
  return e.credentials !== null || isLoopbackHost(e.host);
}

/** Pure: whether any of the parent's endpoints needs a per-build relay (so one is opened only then). */
export function buildRelayWanted(s: ParentSettings | null): boolean {
  return s !== null && [s.https, s.http].some((e) => e !== null && buildNeedsRelay(e));
}

function isLoopbackHost(host: string): boolean {
  const ip = canonicalIp(host);
  return host === "localhost" || host.endsWith(".localhost") || (ip !== null && classify(ip) === "loopback");
}

/**
 * Pure: the parent proxy as an image build's steps need it (apt, npm, pip in a Dockerfile go out as the engine's
 * network allows, which on a company network is through its proxy). Docker's predefined proxy args are the way:
 * they reach every RUN step's environment and stay out of the image's history and cache key (unless a Dockerfile
 * declares them with ARG). Never the parent's credentials: any step (an npm install script included) could read them,
 * and a Dockerfile's `ARG HTTPS_PROXY` would write them into the image's history. A parent that wants a login, or one
 * on this machine's loopback (a build container's loopback is its own), is given through `relay`, a per-build relay
 * whose password dies with the build; without one such a parent is left out, with a note that says why.
 */
export function buildProxyArgs(s: ParentSettings | null, relay?: BuildRelayOffer): BuildProxy {
  if (s === null) return { args: {}, notes: [] };
  const args: Record<string, string> = {};
  const notes: string[] = [];
  const note = (n: string) => {
    if (!notes.includes(n)) notes.push(n);
  };
  const usable = (e: ParentEndpoint | null): string | null => {
    if (e === null) return null;
    if (!buildNeedsRelay(e)) return e.shown;
    if (relay !== undefined && "url" in relay) return relay.url;
    const why = relay === undefined ? "no per-build relay was opened" : relay.unavailable;
    if (isLoopbackHost(e.host)) note(`the parent proxy ${e.shown} is on this machine's loopback, which an image build's steps reach only through sbx's per-build relay, and ${why}: builds go out as the container engine's own network allows`);
    else note(`the parent proxy ${e.shown} wants a login, which sbx never puts into an image build (every step could read it, and a Dockerfile's ARG would keep it in the image's history); it lends it through a per-build relay, and ${why}: a build step that goes out through the proxy gets its 407`);
    return null;
  };
  const https = usable(s.https);
  const http = usable(s.http);
  if (https) args.HTTPS_PROXY = args.https_proxy = https;
  if (http) args.HTTP_PROXY = args.http_proxy = http;
  if ((https || http) && s.noProxy.trim() !== "") args.NO_PROXY = args.no_proxy = s.noProxy;
  return { args, notes };
}

/**
 * What a tool asked a relay that lends the parent (the bridge's for git's plain http:// remotes, the per-build relay
 * for a build's apt): a CONNECT (as readRelayRequest), or a plain HTTP request in absolute form.
 */
export type ForwardOrConnect =
  | RelayRequest
  | {
      kind: "forward";
      host: string;
      port: number;
      authorization: string | null;
      /** Its head for the parent, up to the blank line: its own Proxy-Authorization and hop-by-hop headers gone, `Connection: close`. */
      head: string;
      /** Its body: none, a Content-Length's bytes, or chunked (read to its end: BodyEnd). */
      body: { length: number } | "chunked";
      size: number;
    };

/** Hop-by-hop headers (RFC 9110 7.6.1) and the proxy's own, never passed on; `Connection` names more. */
const HOP_BY_HOP = new Set(["connection", "proxy-connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade", "proxy-authorization", "proxy-authenticate"]);

/**
 * Pure: reads a tool's request to a relay that lends the parent: `CONNECT host:port` (readRelayRequest), or a plain
 * HTTP request in absolute form (`GET http://host[:port]/path`, as apt or git's libcurl sends one through HTTP_PROXY),
 * which the relay passes to the parent as it came, with the parent's own credentials in place of the relay's and one
 * request per connection (`Connection: close`: a kept-alive connection's next request would reach the parent unread).
 * Its body is read to its end and no further (a Content-Length, or chunked framing: BodyEnd); both at once, or any
 * other transfer coding, is refused (two readings of where it ends).
 */
export function readForwardOrConnect(buf: Uint8Array): ForwardOrConnect {
  const h = readRelayHead(buf);
  if (h.kind !== "head") return h;
  if (h.method === "CONNECT") return connectOf(h);
  const { target, headers } = h;
  let u: URL;
  try {
    u = new URL(target);
  } catch {
    return { kind: "bad", status: 400, why: "a request to a proxy names an absolute http:// URL" };
  }
  if (u.protocol !== "http:" || !target.toLowerCase().startsWith("http://")) return { kind: "bad", status: 400, why: "a request to a proxy names an absolute http:// URL (https goes by CONNECT)" };
  const host = normalizeHost(u.hostname);
  if (host === null) return { kind: "bad", status: 400, why: "the URL names no host" };
  if (u.username !== "" || u.password !== "") return { kind: "bad", status: 400, why: "a URL with a user in it" };
  const port = u.port === "" ? 80 : Number(u.port);
  // What was read is what is sent: the parent gets the authority as judged here, never the raw text it might read otherwise.
  const authority = connectAuthority(host, port);
  const auth: string[] = [];
  const named = new Set<string>();
  let length: number | null = null;
  let chunked = false;
  const kept: string[] = [];
  for (const h of headers) {
    const i = h.indexOf(":");
    if (i <= 0) return { kind: "bad", status: 400, why: "a header line without a name" };
    const name = h.slice(0, i).trim().toLowerCase();
    const value = h.slice(i + 1).trim();
    if (name === "proxy-authorization") auth.push(value);
    if (name === "connection") for (const t of value.split(",")) named.add(t.trim().toLowerCase());
    if (name === "transfer-encoding") {
      if (value.toLowerCase() !== "chunked" || chunked) return { kind: "bad", status: 400, why: "a transfer coding other than chunked alone" };
      chunked = true;
    }
    if (name === "content-length") {
      if (!/^[0-9]{1,15}$/.test(value) || (length !== null && length !== Number(value))) return { kind: "bad", status: 400, why: "a Content-Length that cannot be read" };
      length = Number(value);
    }
    kept.push(h);
  }
  if (auth.length > 1) return { kind: "bad", status: 400, why: "more than one Proxy-Authorization" };
  if (chunked && length !== null) return { kind: "bad", status: 400, why: "both a Content-Length and chunked" };
  const out = kept.filter((h) => {
    const name = h.slice(0, h.indexOf(":")).trim().toLowerCase();
    return !HOP_BY_HOP.has(name) && !named.has(name) && name !== "host";
  });
  const head = [`${h.method} http://${authority}${u.pathname}${u.search} HTTP/1.1`, `Host: ${authority}`, ...out, ...(chunked ? ["Transfer-Encoding: chunked"] : []), "Connection: close"].join("\r\n");
  return { kind: "forward", host, port, authorization: auth[0] ?? null, head, body: chunked ? "chunked" : { length: length ?? 0 }, size: h.size };
}

/** A chunk-size or trailer line longer than this is refused (a real one is a few bytes). */
const MAX_CHUNK_LINE = 1024;
/** All of a chunked body's trailer lines together. */
const MAX_TRAILERS = 8192;

/**
 * Pure, fed as the bytes come: where a forwarded request's body ends, so that the relay passes on exactly its bytes
 * and nothing after them (what follows would reach the parent unread). `take` says how many of the bytes given belong
 * to the body; `done` once its last one was counted. Chunked framing that cannot be read throws.
 */
export class BodyEnd {
  done: boolean;
  private left: number;
  private state: "length" | "size" | "data" | "cr" | "lf" | "trailer";
  private line = "";
  private trailers = 0;

  constructor(body: { length: number } | "chunked") {
    this.state = body === "chunked" ? "size" : "length";
    this.left = body === "chunked" ? 0 : body.length;
    this.done = body !== "chunked" && body.length === 0;
  }

  take(b: Uint8Array): number {
    let i = 0;
    while (i < b.length && !this.done) {
      if (this.state === "length" || this.state === "data") {
        const n = Math.min(this.left, b.length - i);
        i += n;
        this.left -= n;
        if (this.left === 0) {
          if (this.state === "length") this.done = true;
          else this.state = "cr";
        }
        continue;
      }
      const c = b[i++]!;
      if (this.state === "cr" || this.state === "lf") {
        if (c !== (this.state === "cr" ? 0x0d : 0x0a)) throw new Error("a chunk not followed by CRLF");
        this.state = this.state === "cr" ? "lf" : "size";
        continue;
      }
      if (c !== 0x0a) {
        this.line += String.fromCharCode(c);
        if (this.line.length > MAX_CHUNK_LINE) throw new Error("a chunk line too long");
        continue;
      }
      if (!this.line.endsWith("\r")) throw new Error("a chunk line not ended by CRLF");
      const line = this.line.slice(0, -1);
      this.line = "";
      if (this.state === "trailer") {
        this.trailers += line.length + 2;
        if (this.trailers > MAX_TRAILERS) throw new Error("trailers too long");
        if (line === "") this.done = true;
        continue;
      }
      const m = /^([0-9a-fA-F]{1,12})[ \t]*(;.*)?$/.exec(line);
      if (!m) throw new Error("a chunk size that cannot be read");
      this.left = Number.parseInt(m[1]!, 16);
      this.state = this.left === 0 ? "trailer" : "data";
    }
    return i;
  }
}

/**
 * Pure: an answer's head (up to its blank line, not included) as a relay passes it back for a forwarded request: the
 * connection closes after it (one request per connection), so it says so (`Connection: close`), or a client that kept
 * it for its next request would send that into a closed socket, and a body it cannot send twice (git's chunked push)
 * would fail. An interim answer (1xx) goes as it is.
 */
export function closingAnswerHead(head: string): string {
  const [line = "", ...headers] = head.split("\r\n");
  if (interimAnswer(head)) return `${head}\r\n\r\n`;
  const kept = headers.filter((h) => !/^(connection|keep-alive|proxy-connection)\s*:/i.test(h));
  return [line, ...kept, "Connection: close", "Proxy-Connection: close"].join("\r\n") + "\r\n\r\n";
}

/** Pure: whether an answer's head is an interim one (1xx: `100 Continue`), which the final answer follows. */
export function interimAnswer(head: string): boolean {
  return /^HTTP\/1\.[01] 1\d\d\b/.test(head);
}

/** Pure: the head sent to the parent for a forwarded request: its own, the parent's Proxy-Authorization (if any) added. */
export function forwardHead(head: string, authorization: string | null): string {
  return `${head}\r\n${authorization !== null ? `Proxy-Authorization: ${authorization}\r\n` : ""}\r\n`;
}

/** Pure: a relay's refusal as a proxy answers (a 407 names its scheme, so a client asks again with its credentials). */
export function relayRefusal(status: 400 | 403 | 405 | 407 | 502, why: string): string {
  const body = `sbx relay: ${why}\n`;
  const reason = { 400: "Bad Request", 403: "Forbidden", 405: "Method Not Allowed", 407: "Proxy Authentication Required", 502: "Bad Gateway" }[status];
  const challenge = status === 407 ? 'Proxy-Authenticate: Basic realm="sbx"\r\n' : "";
  return `HTTP/1.1 ${status} ${reason}\r\n${challenge}Content-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}
