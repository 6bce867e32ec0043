// Allowlist patterns: parsing, canonical form, refusal of too-broad ones, host normalisation and matching; pure.
import { domainToASCII } from "node:url";
import { canonicalIp, cidrContains, classify, embeddedV4Breadth, formatCidr, formatIp, parseCidr, parseIp, type Cidr, type IpBytes } from "./addresses";
import { SbxError } from "./errors";

/** Ports a pattern without `:port` allows. */
export const DEFAULT_PORTS: readonly number[] = [443, 80];

export type AllowPattern =
  | { kind: "exact"; host: string; port: number | null }
  | { kind: "wildcard"; suffix: string; port: number | null }
  | { kind: "cidr"; cidr: Cidr; port: number | null }
  /**
   * A name paired with the one non-public address it resolves to (`registry.corp@10.1.2.3`): the name is allowed, and
   * reaches that address while it resolves there (a company's private DNS); another address is a new decision. The
   * address alone is not allowed by it.
   */
  | { kind: "pair"; host: string; address: IpBytes; port: number | null };

export type ParseResult = { ok: true; pattern: AllowPattern; canonical: string } | { ok: false; reason: string };

/**
 * Multi-label public suffixes under which any `*.suffix` would cover unrelated owners.
 * Not the whole Public Suffix List: single-label TLDs are refused by rule, and these are the
 * common second-level registries; the rule below catches `*.co.xx`-style ones too.
 */
const PUBLIC_SUFFIXES = new Set([
  "co.uk", "org.uk", "ac.uk", "gov.uk", "me.uk", "ltd.uk", "plc.uk", "net.uk", "sch.uk", "nhs.uk",
  "com.au", "net.au", "org.au", "edu.au", "gov.au", "id.au",
  "co.nz", "org.nz", "net.nz", "ac.nz", "govt.nz",
  "co.jp", "ne.jp", "or.jp", "ac.jp", "go.jp", "ad.jp", "ed.jp", "gr.jp", "lg.jp",
  "com.br", "net.br", "org.br", "gov.br", "com.cn", "net.cn", "org.cn", "gov.cn", "edu.cn",
  "co.in", "net.in", "org.in", "gov.in", "ac.in", "co.za", "org.za", "gov.za", "ac.za",
  "com.mx", "org.mx", "gob.mx", "co.kr", "or.kr", "go.kr", "ac.kr", "com.tw", "org.tw", "gov.tw",
  "com.sg", "org.sg", "gov.sg", "edu.sg", "com.hk", "org.hk", "gov.hk", "com.tr", "org.tr", "gov.tr",
  "com.ar", "org.ar", "gob.ar", "co.il", "org.il", "ac.il", "gov.il", "com.ua", "org.ua", "gov.ua",
  "co.id", "or.id", "go.id", "ac.id", "com.my", "org.my", "gov.my", "com.ph", "gov.ph", "co.th", "or.th", "go.th", "ac.th",
  "com.pl", "net.pl", "org.pl", "com.ru", "org.ru", "com.es", "org.es", "com.pt", "com.vn", "gov.vn", "com.eg", "com.sa", "com.pk", "com.ng", "co.ke",
  // Shared hosting where every subdomain belongs to someone else.
  "github.io", "gitlab.io", "herokuapp.com", "vercel.app", "netlify.app", "pages.dev", "workers.dev",
  "appspot.com", "cloudfront.net", "amazonaws.com", "azurewebsites.net", "blogspot.com", "firebaseapp.com", "web.app",
]);

/** Generic second-level labels that ccTLD registries sell under (`*.com.xx`, `*.co.xx`, …). */
const SECOND_LEVEL_GENERIC = new Set(["co", "com", "net", "org", "gov", "gob", "edu", "ac", "or", "ne", "go", "mil", "nic", "ltd", "plc"]);

/** Networks wider than 1/256 of the address space are refused (a /7 is two /8s of someone else's hosts). */
const MIN_V4_PREFIX = 8;
const MIN_V6_PREFIX = 8;

const LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;

/**
 * Normalises a host as a request names it: strips `[]` and a trailing dot, lowercases, applies IDNA
 * (WHATWG URL host parsing, which also turns `0x7f.1` or `2130706433` into `127.0.0.1`).
 * Returns null for anything that is not a valid host name or IP literal.
 */
export function normalizeHost(input: string): string | null {
  let h = input.trim();
  if (h.length === 0 || h.length > 300) return null;
  if (h.startsWith("[") && h.endsWith("]")) {
    return canonicalIp(h.slice(1, -1)) !== null && h.includes(":") ? canonicalIp(h.slice(1, -1)) : null;
  }
  if (h.includes(":")) {
    const ip = canonicalIp(h);
    return ip !== null && ip.includes(":") ? ip : null;
  }
  if (h.endsWith(".")) h = h.slice(0, -1);
  if (h.endsWith(".")) return null;
  const ascii = domainToASCII(h);
  if (ascii === "") return null;
  const ip = canonicalIp(ascii);
  if (ip !== null) return ip;
  return validHostName(ascii) ? ascii : null;
}

function validHostName(h: string): boolean {
  if (h.length === 0 || h.length > 253) return false;
  const labels = h.split(".");
  // The last label of a name is never all digits (those are IPv4 forms WHATWG already rewrote or rejected).
  if (/^[0-9]+$/.test(labels[labels.length - 1]!)) return false;
  return labels.every((l) => LABEL.test(l));
}

function parsePort(s: string): number | null {
  if (!/^[1-9][0-9]{0,4}$/.test(s)) return null;
  const n = Number(s);
  return n <= 65535 ? n : null;
}

/** Splits `host[:port]`, `[v6][:port]` or `v6` (bare, no port). */
function splitPort(s: string): { host: string; port: number | null } | { error: string } {
  if (s.startsWith("[")) {
    const close = s.indexOf("]");
    if (close < 0) return { error: "unclosed '['" };
    const host = s.slice(1, close);
    const rest = s.slice(close + 1);
    if (rest === "") return { host, port: null };
    if (!rest.startsWith(":")) return { error: `unexpected '${rest}' after ']'` };
    const port = parsePort(rest.slice(1));
    return port === null ? { error: `'${rest.slice(1)}' is not a port (1-65535)` } : { host, port };
  }
  const colons = s.split(":").length - 1;
  if (colons === 0) return { host: s, port: null };
  if (colons > 1) return { host: s, port: null }; // bare IPv6, which cannot carry a port without brackets
  const i = s.lastIndexOf(":");
  const port = parsePort(s.slice(i + 1));
  return port === null ? { error: `'${s.slice(i + 1)}' is not a port (1-65535)` } : { host: s.slice(0, i), port };
}

function tooBroadSuffix(suffix: string): string | null {
  const labels = suffix.split(".");
  if (labels.length === 1) return `'*.${suffix}' covers a whole top-level domain`;
  if (PUBLIC_SUFFIXES.has(suffix)) return `'*.${suffix}' covers a public suffix whose subdomains belong to unrelated owners`;
  if (labels.length === 2 && labels[1]!.length === 2 && SECOND_LEVEL_GENERIC.has(labels[0]!)) {
    return `'*.${suffix}' covers a country's public registry ('${suffix}')`;
  }
  return null;
}

/** Parses and validates one pattern as a user types it; too-broad patterns are refused with the reason. */
export function parsePattern(raw: string): ParseResult {
  const input = raw.trim();
  if (input === "") return { ok: false, reason: "empty pattern" };
  if (input === "*" || input === "*.*" || input === "*:*") return { ok: false, reason: "'*' would allow every host" };
  const split = splitPort(input);
  if ("error" in split) return { ok: false, reason: split.error };
  const { host, port } = split;
  const portText = port === null ? "" : `:${port}`;
  if (host.includes("@")) return parsePair(host, port);

  // CIDR or IP literal
  if (host.includes("/") || parseIp(host.startsWith("[") ? host.slice(1, -1) : host)) {
    const c = parseCidr(host);
    if (!c) return { ok: false, reason: `'${host}' is not a valid IP address or CIDR (host bits must be zero)` };
    const min = c.network.length === 4 ? MIN_V4_PREFIX : MIN_V6_PREFIX;
    if (c.prefix < min) return { ok: false, reason: `'${host}' is too broad: networks wider than /${min} are refused` };
    // The host's own services are published, never allowlisted: the proxy runs on the host.
    if (reachesHost(c)) {
      return { ok: false, reason: `'${host}' is the host's own ${c.network.length === 4 && c.network[0] === 0 ? "unspecified address (which reaches its loopback)" : "loopback"}: an allowlist never reaches it; to let one sandbox reach one service of the host: sbx publish NAME 127.0.0.1:PORT` };
    }
    // An IPv6 network that carries IPv4 addresses is as broad as the IPv4 network it stands for (::ffff:0:0/96 is all of IPv4).
    const wide = embeddedV4Breadth(c).find((b) => b.v4Prefix < MIN_V4_PREFIX);
    if (wide) return { ok: false, reason: `'${host}' is too broad: as ${wide.name} addresses it covers an IPv4 network /${wide.v4Prefix}; networks wider than /${MIN_V4_PREFIX} are refused` };
    const max = c.network.length * 8;
    const text = c.prefix === max ? formatCidr(c).replace(/\/\d+$/, "") : formatCidr(c);
    const canonical = port === null ? text : text.includes(":") ? `[${text}]${portText}` : `${text}${portText}`;
    return { ok: true, pattern: { kind: "cidr", cidr: c, port }, canonical };
  }

  if (host.startsWith("*.")) {
    const rest = host.slice(2);
    if (rest.includes("*")) return { ok: false, reason: "only one leading '*.' is allowed" };
    const suffix = normalizeHost(rest);
    if (suffix === null || parseIp(suffix)) return { ok: false, reason: `'${rest}' is not a valid domain name` };
    const broad = tooBroadSuffix(suffix);
    if (broad) return { ok: false, reason: `${broad}; name the domain you need, e.g. '*.example.${suffix}'` };
    return { ok: true, pattern: { kind: "wildcard", suffix, port }, canonical: `*.${suffix}${portText}` };
  }
  if (host.includes("*")) return { ok: false, reason: "a wildcard must be a leading '*.' (as in '*.example.com')" };

  const h = normalizeHost(host);
  if (h === null) return { ok: false, reason: `'${host}' is not a valid host name` };
  if (h === "localhost" || h.endsWith(".localhost")) return { ok: false, reason: `'${host}' is the host's own loopback: an allowlist never reaches it; to let one sandbox reach one service of the host: sbx publish NAME 127.0.0.1:PORT` };
  if (parseIp(h)) return parsePattern(h.includes(":") ? `[${h}]${portText}` : `${h}${portText}`);
  return { ok: true, pattern: { kind: "exact", host: h, port }, canonical: `${h}${portText}` };
}

/** `name@address` (the port, if any, already split off): a name with the one non-public address it may resolve to. */
function parsePair(text: string, splitPortValue: number | null): ParseResult {
  const at = text.indexOf("@");
  const nameText = text.slice(0, at);
  let addrText = text.slice(at + 1);
  let port = splitPortValue;
  // An IPv6 address is bracketed, its port after the bracket (the split before saw several colons and took none).
  const v6 = /^\[([^\]]+)\](?::([0-9]+))?$/.exec(addrText);
  if (v6) {
    addrText = v6[1]!;
    if (v6[2] !== undefined) {
      port = parsePort(v6[2]);
      if (port === null) return { ok: false, reason: `'${v6[2]}' is not a port (1-65535)` };
    }
  }
  if (nameText.includes("*")) return { ok: false, reason: "a name paired with an address is one exact name (no '*.')" };
  const name = normalizeHost(nameText);
  if (name === null || parseIp(name)) return { ok: false, reason: `'${nameText}' is not a host name (name@address pairs a name with the address it resolves to)` };
  if (name === "localhost" || name.endsWith(".localhost")) return { ok: false, reason: `'${nameText}' is the host's own loopback: an allowlist never reaches it` };
  const address = parseIp(addrText);
  if (!address) return { ok: false, reason: `'${addrText}' is not an IP address (name@address pairs a name with the address it resolves to)` };
  const bits = address.length * 8;
  if (reachesHost({ network: address, prefix: bits })) return { ok: false, reason: `'${addrText}' is the host's own loopback or unspecified address: an allowlist never reaches it; to let one sandbox reach one service of the host: sbx publish NAME 127.0.0.1:PORT` };
  if (classify(address) === "public") return { ok: false, reason: `'${addrText}' is a public address: allow the name alone (${name})` };
  const a = formatIp(address);
  const canonical = `${name}@${a.includes(":") ? `[${a}]` : a}${port === null ? "" : `:${port}`}`;
  return { ok: true, pattern: { kind: "pair", host: name, address, port }, canonical };
}

/** Loopback and unspecified addresses (in any form, and any network holding one): the host's own services. */
const HOST_ITSELF = ["127.0.0.1", "0.0.0.0", "::1", "::"].map((a) => parseIp(a)!);
function reachesHost(c: Cidr): boolean {
  const k = classify(c.network);
  return k === "loopback" || k === "unspecified" || HOST_ITSELF.some((a) => a.length === c.network.length && cidrContains(c, a));
}

/** parsePattern for user input: throws a usage error (exit 64) saying why a pattern is refused. */
export function validatePattern(raw: string): { pattern: AllowPattern; canonical: string } {
  const r = parsePattern(raw);
  if (!r.ok) {
    throw new SbxError("usage", `refused allowlist pattern '${raw}': ${r.reason}`, {
      hint: "Allow exact hosts (api.example.com), a domain's subdomains (*.example.com), an IP or a CIDR no wider than /8, optionally with :port.",
    });
  }
  return { pattern: r.pattern, canonical: r.canonical };
}

function portOk(p: AllowPattern, port: number): boolean {
  return p.port === null ? DEFAULT_PORTS.includes(port) : p.port === port;
}

/** Whether a normalised host name matches the pattern's host part (ignoring ports). */
export function hostMatches(p: AllowPattern, host: string): boolean {
  switch (p.kind) {
    case "exact":
    case "pair":
      return p.host === host;
    case "wildcard":
      return host.endsWith(`.${p.suffix}`) && host.length > p.suffix.length + 1;
    case "cidr":
      return false;
  }
}

/** Whether the pattern allows connecting to this normalised name (not an IP) on this port. */
export function matchesName(p: AllowPattern, host: string, port: number): boolean {
  return hostMatches(p, host) && portOk(p, port);
}

/** Whether a pair pattern lets `host` reach this (non-public) address on this port: the name's own pairing. */
export function pairAllows(p: AllowPattern, host: string, addr: IpBytes, port: number): boolean {
  return p.kind === "pair" && p.host === host && p.address.length === addr.length && p.address.every((b, i) => b === addr[i]) && portOk(p, port);
}

/** Whether the pattern allows this IP address on this port (only IP and CIDR patterns ever do). */
export function matchesAddress(p: AllowPattern, addr: IpBytes, port: number): boolean {
  return p.kind === "cidr" && cidrContains(p.cidr, addr) && portOk(p, port);
}

/** Compiles stored patterns, skipping (and reporting) any that no longer parse. */
export function compilePatterns(raw: readonly string[]): { patterns: { text: string; pattern: AllowPattern }[]; invalid: string[] } {
  const patterns: { text: string; pattern: AllowPattern }[] = [];
  const invalid: string[] = [];
  for (const text of raw) {
    const r = parsePattern(text);
    if (r.ok) patterns.push({ text, pattern: r.pattern });
    else invalid.push(text);
  }
  return { patterns, invalid };
}
