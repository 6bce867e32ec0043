// The egress decision for one connection or request, as the proxy makes it: the allowlist first (before any DNS), then
// one lookup, then the address check; the address a verdict returns is the only one connected to. Also what a plain
// request's target and Host header are taken to name (what is checked is what is sent).
import { lookup } from "node:dns/promises";
import { networkInterfaces } from "node:os";
import { canonicalIp, classify } from "../core/addresses";
import type { ParentEndpoint, ParentScheme } from "../core/parent-proxy";
import type { ParentRoute } from "../sys/parent";
import { normalizeHost } from "../core/allowlist";
import { checkAddresses, compilePolicy, decide, onceRelied, patternFor, type BlockReason, type CompiledPolicy, type PolicyLists, type PolicySource } from "../core/egress";
import { judgeRequest } from "../core/rules";
import type { EgressEvent, EgressPath, EgressSandbox } from "../core/egress-events";
import { headerSafe, type Header } from "./http1";

export type Resolver = (host: string) => Promise<string[]>;

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

/**
 * Allowed: connect to `address` (checked), and to nothing else; or, where a parent proxy applies (`parent`), ask it
 * for `host:port` by name (the parent resolves it; `address` is what the host's own lookup gave and sbx checked, or ""
 * when the host could not resolve it). `requests`: a rule names the host, so each request is judged
 * (`Decider.request`); `wholeHost`: the pattern that allows every request, if one does.
 */
export type Allowed = {
  ok: true;
  path: EgressPath;
  host: string;
  port: number;
  address: string;
  parent: ParentRoute | null;
  source: PolicySource;
  pattern: string;
  requests: boolean;
  wholeHost: { pattern: string; source: PolicySource } | null;
};
/**
 * Refused by the policy (a 403 on the proxy path; recorded as a pending approval where `suggest` says what allows it).
 * `fix`: the command that changes it, when it is not `sbx allow <suggest>` (a rule's).
 */
export type Denied = { ok: false; status: 403; path: EgressPath; host: string; port: number; reason: BlockReason; detail: string; suggest: string | null; fix?: string | null };
/** A request judged inside an allowed connection: allowed as this canonical target, or refused. */
export type RequestAllowed = { ok: true; target: string; by: string };
/** Allowed by name, but its lookup failed (a 502). */
export type Unreachable = { ok: false; status: 502; host: string; port: number; message: string };
export type Verdict = Allowed | Denied | Unreachable;

export interface DeciderOptions {
  sandbox: EgressSandbox;
  /** Read on every check, so allowlist changes apply to the next one without a restart. */
  policy: () => PolicyLists;
  /** Resolver seam; default: the system resolver (all addresses). */
  resolve?: Resolver;
  /** This host's own addresses, refused as destinations unless allowlisted; default: the network interfaces. */
  hostAddresses?: () => Iterable<string>;
  /** Where denials and lookup failures are told (the proxy's event sink). */
  emit: (e: EgressEvent) => void;
  /** The host's parent proxy (sys/parent.ts): which destinations go through it, and what it is (never a destination). */
  parent?: ParentRouting;
  /**
   * Uses up a one-time approval (`--once`) a connection relies on; false when it is gone (another connection used it,
   * or it lapsed). Without it a one-time approval allows nothing.
   */
  consume?: (pattern: string) => boolean;
}

/** The parent proxy as the decision sees it (sys/parent.ts's ParentRouter). */
export interface ParentRouting {
  route(scheme: ParentScheme, host: string): ParentRoute | null;
  endpoints(): readonly ParentEndpoint[];
}

/** Pure: how an allowed connection is reached, for people: `host:port (address)`, and the parent it goes through. */
export function reachText(v: Pick<Allowed, "host" | "port" | "address" | "parent">): string {
  const at = `${authorityText(v.host, v.port)}${v.address ? ` (${v.address})` : ""}`;
  return v.parent ? `${at} through the parent proxy ${v.parent.endpoint.shown}` : at;
}

/** One sandbox's decisions: its policy read per check (compiled once per change), its denials told as they are made. */
export class Decider {
  private cacheKey = "";
  private cached: CompiledPolicy | null = null;
  private own: { at: number; set: Set<string> } | null = null;
  private readonly resolve: Resolver;
  private parentOwn: { at: number; list: { address: string; port: number }[] } | null = null;

  constructor(private readonly o: DeciderOptions) {
    this.resolve = o.resolve ?? systemResolver;
  }

  /** The policy now; compiling is cached on its text so an unchanged list is not parsed again. */
  private current(): CompiledPolicy {
    const lists = this.o.policy();
    // Every list the decision reads is in the key: a change to any of them applies to the next request.
    const key = `${lists.sandbox.join("\n")}\0${lists.global.join("\n")}\0${(lists.published ?? []).join("\n")}\0${lists.rules?.length ? JSON.stringify(lists.rules) : ""}\0${JSON.stringify(lists.level ?? null)}\0${(lists.once ?? []).join("\n")}`;
    if (this.cached === null || key !== this.cacheKey) {
      this.cached = compilePolicy(lists);
      this.cacheKey = key;
    }
    return this.cached;
  }

  private hostOwn(): Set<string> {
    const now = Date.now();
    if (this.own === null || now - this.own.at > 10_000) {
      const list = this.o.hostAddresses ? [...this.o.hostAddresses()] : interfaceAddresses();
      this.own = { at: now, set: new Set(list.map((a) => canonicalIp(a) ?? a)) };
    }
    return this.own.set;
  }

  /** A refusal, told (a `denied` event: the audit row and pending approval) as it is made. */
  deny(path: EgressPath, method: string, host: string, port: number, reason: BlockReason, detail: string, suggest: string | null, fix?: string | null): Denied {
    this.o.emit({ type: "denied", sandbox: this.o.sandbox, path, method, host, port, reason, detail, suggest, at: Date.now() });
    return { ok: false, status: 403, path, host, port, reason, detail, suggest, ...(fix !== undefined ? { fix } : {}) };
  }

  /**
   * One request inside an allowed connection whose requests are judged (a rule names its host): the rules as they are
   * now, on the canonical path the upstream will act on, which is what is sent. Connections whose requests are not
   * judged pass as they are.
   */
  request(allowed: Allowed, method: string, target: string): RequestAllowed | Denied {
    if (!allowed.requests) return { ok: true, target, by: allowed.pattern };
    const policy = this.current();
    // The lists now (a rule removed since the connection was made no longer allows; a whole-host allow added since does).
    const d = decide(policy, allowed.host, allowed.port);
    const whole = d.allow ? d.wholeHost : null;
    const v = judgeRequest(policy.rules, { host: allowed.host, port: allowed.port, method, target }, whole);
    if (!v.ok) {
      if (!d.allow) return this.deny(allowed.path, method, allowed.host, allowed.port, d.reason, d.detail, d.suggest);
      return this.deny(allowed.path, method, allowed.host, allowed.port, v.reason, v.detail, null, v.reason === "path-unreadable" ? undefined : v.fix);
    }
    return { ok: true, target: `${v.path}${v.query ? `?${v.query}` : ""}`, by: v.by };
  }

  /**
   * The decision, then one lookup, then the address check: the address returned is the only one connected to. Where a
   * parent proxy applies, the connection asks it for the name instead (see `Allowed`): the allowlist and the address
   * check are as they are without one, on the host's own lookup; a name the host cannot resolve goes to the parent by
   * name (on a network where only the proxy resolves outside names). The parent itself is never a destination.
   */
  async check(path: EgressPath, method: string, rawHost: string, port: number): Promise<Verdict> {
    const policy = this.current();
    const d = decide(policy, rawHost, port);
    const parents = this.o.parent?.endpoints() ?? [];
    // Before the allowlist, so no approval is offered for it: through sbx, the parent would carry the sandbox anywhere
    // the company's proxy goes, with the host's standing there, and nothing of it judged.
    // (A parent on the host's loopback is that address and port only: the host's other published services stay.)
    const named = parents.find((e) => e.host === d.host && (e.port === port || canonicalIp(e.host) === null || classify(e.host) !== "loopback"));
    if (named) return this.deny(path, method, d.host, port, "host-address", `${d.host} is the parent proxy sbx itself goes out through (${named.shown}): a sandbox never reaches it`, null);
    if (!d.allow) return this.deny(path, method, d.host, port, d.reason, d.detail, d.suggest);
    const route = this.o.parent?.route(method === "CONNECT" ? "https" : "http", d.host) ?? null;
    // The host's own services (a published loopback address) are reached here, never through the parent (which would
    // reach its own loopback instead).
    const allowed = (address: string): Allowed => ({ ok: true, path, host: d.host, port, address, parent: address !== "" && classify(address) === "loopback" ? null : route, source: d.source, pattern: d.pattern, requests: d.requests, wholeHost: d.wholeHost });
    let addresses: string[] = [];
    // Where the host cannot resolve the name, the parent is asked for it by name: no answer of the host's to check.
    let unresolved = false;
    if (d.ip) addresses = [d.host];
    else {
      try {
        addresses = await this.resolve(d.host);
      } catch (e) {
        if (!route) {
          const message = `could not resolve ${d.host}: ${(e as Error).message}`;
          this.o.emit({ type: "error", sandbox: this.o.sandbox, path, method, host: d.host, port, address: null, message, at: Date.now() });
          return { ok: false, status: 502, host: d.host, port, message };
        }
        unresolved = true;
      }
    }
    let address = "";
    if (!unresolved) {
      const a = checkAddresses(policy, d.host, addresses, port, this.hostOwn());
      if (!a.ok) return this.deny(path, method, d.host, port, a.reason, a.detail, a.suggest);
      address = a.address;
      if (parents.length > 0) {
        const own = await this.parentAddresses(parents);
        for (const raw of addresses) {
          const addr = canonicalIp(raw);
          // On the host's loopback only the parent's own port is the parent (the host's other published services stay).
          const hit = addr === null ? undefined : own.find((p) => p.address === addr && (p.port === port || classify(addr) !== "loopback"));
          if (hit) return this.deny(path, method, d.host, port, "host-address", `${d.host === addr ? addr : `${d.host} resolves to ${addr}, which`} is the parent proxy sbx itself goes out through: a sandbox never reaches it`, null);
        }
      }
    }
    // A one-time approval allows one connection: used up now, or, gone meanwhile, not at all.
    const once = onceRelied(policy, d, addresses, port);
    for (const p of once.required) {
      if (!(this.o.consume?.(p) ?? false)) return this.deny(path, method, d.host, port, "not-allowlisted", `${d.host} was allowed once, and that connection was made already`, patternFor(d.host, port));
    }
    for (const p of once.alsoCovering) this.o.consume?.(p);
    return allowed(address);
  }

  /** The parents' addresses (their names looked up as the sandbox's are; kept 10 s): a destination there is refused. */
  private async parentAddresses(parents: readonly ParentEndpoint[]): Promise<{ address: string; port: number }[]> {
    const now = Date.now();
    if (this.parentOwn !== null && now - this.parentOwn.at <= 10_000) return this.parentOwn.list;
    const list: { address: string; port: number }[] = [];
    for (const e of parents) {
      const ip = canonicalIp(e.host);
      const found = ip !== null ? [ip] : await this.resolve(e.host).catch(() => [] as string[]);
      for (const a of found) list.push({ address: canonicalIp(a) ?? a, port: e.port });
    }
    this.parentOwn = { at: now, list };
    return list;
  }
}

/** Pure: `host:port`, with an IPv6 host in brackets. */
export function authorityText(host: string, port: number): string {
  return `${host.includes(":") ? `[${host}]` : host}:${port}`;
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

/** The transparent path's plain HTTP: a connection to the address that stands for `name`, on `port`. */
export interface Site {
  name: string;
  port: number;
}

/**
 * What a plain request is for, or why it is refused (a 400; `mismatch`: on the transparent path, the detail of the
 * `server-name-mismatch` denial it is also recorded as). The proxy path takes absolute-form targets; a transparent site
 * takes origin-form ones, made absolute for its name, or an absolute form naming that same site. Either way a Host
 * header naming another authority than the target is refused: the forwarded Host is always the checked authority.
 */
export function plainTarget(head: { target: string; headers: readonly Header[] }, site: Site | null): { ok: true; url: URL; port: number } | { ok: false; message: string; mismatch: string | null } {
  let url: URL;
  try {
    url = site && head.target.startsWith("/") ? new URL(`http://${site.port === 80 ? site.name : `${site.name}:${site.port}`}${head.target}`) : new URL(head.target);
  } catch {
    return { ok: false, message: "sbx proxy: malformed request target.\n", mismatch: null };
  }
  if (site && (normalizeHost(url.hostname) !== site.name || (url.port === "" ? 80 : Number(url.port)) !== site.port)) {
    return { ok: false, message: `sbx proxy: this connection is for ${site.name}; the request names ${headerSafe(url.host)}.\n`, mismatch: `its request names ${headerSafe(url.host)}` };
  }
  if (url.protocol !== "http:") return { ok: false, message: `sbx proxy: ${url.protocol} URLs go through CONNECT; only http: is forwarded as a plain request.\n`, mismatch: null };
  const port = url.port === "" ? 80 : Number(url.port);
  const hostText = head.headers.find(([n]) => n.toLowerCase() === "host")?.[1];
  const claimed = hostHeaderAuthority(hostText);
  if (claimed !== undefined && (claimed === null || claimed.host !== normalizeHost(url.hostname) || claimed.port !== port)) {
    return {
      ok: false,
      message: `sbx proxy: the Host header (${headerSafe(String(hostText))}) names another authority than the request target (${headerSafe(url.host)}); send them alike.\n`,
      mismatch: site ? `its Host header names ${headerSafe(String(hostText))}` : null,
    };
  }
  return { ok: true, url, port };
}
