// The egress decision: sandbox list, then global list, then the built-in default; then the resolved-address check. Pure.
import { classify, formatIp, parseIp, type AddressKind } from "./addresses";
import { DEFAULT_PORTS, compilePatterns, matchesAddress, matchesName, normalizeHost, pairAllows, type AllowPattern } from "./allowlist";
import { compileRules, requestsJudged, ruleCoversHost, type CompiledRule, type Rule } from "./rules";

/** The built-in default: only the Claude API. Everything else is added by the user (or a preset). */
export const BUILTIN_ALLOWLIST: readonly string[] = Object.freeze(["api.anthropic.com"]);

/** The port the in-sandbox forwarder listens on unless told otherwise. */
export const DEFAULT_FORWARDER_PORT = 3128;

export interface PolicyLists {
  sandbox: readonly string[];
  global: readonly string[];
  /**
   * Services of the host this sandbox may reach (`sbx publish NAME 127.0.0.1:5432`): exact loopback `addr:port`. The
   * host's loopback is reachable by no other way.
   */
  published?: readonly string[];
  /** Rules that see requests (core/rules.ts): the sandbox's and the global ones, each saying which. */
  rules?: readonly Rule[];
  /**
   * The sandbox's level (core/levels.ts), in place of the built-in list: its patterns (source `level`), and whether it
   * opens every public name and address. Absent or null: the built-in list.
   */
  level?: { name: string; patterns: readonly string[]; open: boolean } | null;
  /** One-time approvals (`--once`): each allows one connection, then the proxy uses it up; tried after everything else. */
  once?: readonly string[];
}

export type PolicySource = "sandbox" | "global" | "builtin" | "published" | "level" | "once";

export type BlockReason =
  | "invalid-host"
  | "not-allowlisted"
  | "port-not-allowed"
  | "ip-literal"
  | "internal-address"
  | "host-address"
  /** A transparent connection to an address the sandbox's DNS stub never gave out (so it stands for no name). */
  | "unnamed-address"
  /** A TLS server name or HTTP Host that names another host than the one the connection was checked for. */
  | "server-name-mismatch"
  /** A request a deny rule covers (core/rules.ts). */
  | "denied-by-rule"
  /** A request to a host allowed only for some methods and paths, outside them. */
  | "request-not-allowed"
  /** A request whose path cannot be read one way only (judged where rules see requests). */
  | "path-unreadable";

export type Decision =
  | {
      allow: true;
      host: string;
      port: number;
      ip: boolean;
      source: PolicySource;
      pattern: string;
      /** Its requests are judged one by one (a rule names the host): HTTPS to it is terminated to see them. */
      requests: boolean;
      /** The pattern that allows the whole host, if one does (else only rules do, for some requests). */
      wholeHost: { pattern: string; source: PolicySource } | null;
    }
  | { allow: false; host: string; port: number; reason: BlockReason; detail: string; /** The pattern that would allow it. */ suggest: string | null };

interface CompiledEntry {
  text: string;
  pattern: AllowPattern;
  source: PolicySource;
}

/** A policy ready to match: patterns parsed once, in decision order. */
export interface CompiledPolicy {
  entries: readonly CompiledEntry[];
  invalid: readonly string[];
  /** Published host services, as canonical `addr:port` (`[::1]:port`). */
  published: ReadonlySet<string>;
  /** Rules that see requests, the sandbox's before the global ones. */
  rules: readonly CompiledRule[];
  /** The `open` level: any public name or address, on any port (the address check still refuses what is not public). */
  open: boolean;
}

/**
 * Pure: a host service as `sbx publish` takes it (`PORT`, `127.0.0.1:PORT`, `[::1]:PORT`, any 127/8 address), in its
 * canonical `addr:port` form, or why not.
 */
export function parsePublished(raw: string): { ok: true; endpoint: string } | { ok: false; reason: string } {
  const t = raw.trim();
  const m = /^(?:\[([^\]]+)\]|([^:\[\]]+)):(\d{1,5})$/.exec(t) ?? (/^\d{1,5}$/.test(t) ? [t, undefined, "127.0.0.1", t] : null);
  if (!m) return { ok: false, reason: `'${raw}' is not PORT or ADDRESS:PORT (e.g. 5432, 127.0.0.1:5432, [::1]:5432)` };
  const port = Number(m[3]);
  if (!(port >= 1 && port <= 65535)) return { ok: false, reason: `'${m[3]}' is not a port (1-65535)` };
  const bytes = parseIp(m[1] ?? m[2]!);
  if (!bytes || classify(bytes) !== "loopback") return { ok: false, reason: `'${m[1] ?? m[2]}' is not a loopback address of the host (127.0.0.0/8 or ::1): only the host's own services are published` };
  return { ok: true, endpoint: hostPort(formatIp(bytes), port) };
}

export function compilePolicy(lists: PolicyLists): CompiledPolicy {
  const entries: CompiledEntry[] = [];
  const invalid: string[] = [];
  const add = (raw: readonly string[], source: PolicySource) => {
    const c = compilePatterns(raw);
    for (const p of c.patterns) entries.push({ ...p, source });
    invalid.push(...c.invalid);
  };
  add(lists.sandbox, "sandbox");
  add(lists.global, "global");
  if (lists.level) add(lists.level.patterns, "level");
  else add(BUILTIN_ALLOWLIST, "builtin");
  const open = lists.level?.open === true;
  // Under `open` a one-time approval allows nothing more: it is not used up.
  if (!open) add(lists.once ?? [], "once");
  const published = new Set<string>();
  for (const raw of lists.published ?? []) {
    const r = parsePublished(raw);
    if (r.ok) published.add(r.endpoint);
    else invalid.push(raw);
  }
  const rules = compileRules(lists.rules ?? []);
  invalid.push(...rules.invalid);
  return { entries, invalid, published, rules: rules.rules, open };
}

function hostPort(host: string, port: number): string {
  return `${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/** The pattern that allows host on port: the bare host on a default port, `host:port` otherwise (a `name@address` pair too). */
export function patternFor(host: string, port: number): string {
  if (DEFAULT_PORTS.includes(port)) return host;
  return host.includes("@") ? `${host}:${port}` : hostPort(host, port);
}

/** Pure: a name paired with an address, as a pattern writes it (`registry.corp@10.1.2.3`, `name@[fd00::1]`). */
export function pairText(name: string, address: string): string {
  return `${name}@${address.includes(":") ? `[${address}]` : address}`;
}

/**
 * The name a sandbox reaches the host's 127.0.0.1 by (127.0.0.1 inside is the sandbox's own loopback, and in its
 * NO_PROXY): published services only, as any other loopback address.
 */
export const HOST_ALIAS = "host.sbx.internal";

/** An allow decision: by a pattern for the whole host, or (`byRule`) by a rule for some of its requests. */
function allowed(policy: CompiledPolicy, host: string, port: number, ip: boolean, source: PolicySource, pattern: string, byRule = false): Decision {
  const wholeHost = byRule ? null : { pattern, source };
  return { allow: true, host, port, ip, source, pattern, requests: requestsJudged(policy.rules, host, port, !byRule), wholeHost };
}

/** The decision for one request, before any DNS lookup. */
export function decide(policy: CompiledPolicy, rawHost: string, port: number): Decision {
  const named = normalizeHost(rawHost);
  const host = named === HOST_ALIAS ? "127.0.0.1" : named;
  if (host === null || !Number.isInteger(port) || port < 1 || port > 65535) {
    return { allow: false, host: rawHost, port, reason: "invalid-host", detail: `'${rawHost}' is not a valid host name`, suggest: null };
  }
  const ip = parseIp(host);
  if (ip) {
    const kind = classify(ip);
    if (kind === "loopback" || kind === "unspecified") {
      // The host's own services: published ones only (the address check after this says the same for names).
      const endpoint = hostPort(formatIp(ip), port);
      if (kind === "loopback" && policy.published.has(endpoint)) return allowed(policy, host, port, true, "published", endpoint);
      return {
        allow: false,
        host,
        port,
        reason: "host-address",
        detail: kind === "loopback" ? `${host} is the host's own loopback: a sandbox reaches a service of the host only once it is published for it` : `${host} is the unspecified address, which reaches the host's own services: never allowed`,
        suggest: kind === "loopback" ? endpoint : null,
      };
    }
    for (const e of policy.entries) {
      if (e.source !== "once" && matchesAddress(e.pattern, ip, port)) return allowed(policy, host, port, true, e.source, e.text);
    }
    const byRule = policy.rules.find((r) => r.effect === "allow" && ruleCoversHost(r, host, port));
    if (byRule) return allowed(policy, host, port, true, byRule.source, byRule.text, true);
    if (policy.open && kind === "public") return allowed(policy, host, port, true, "level", OPEN_PATTERN);
    // Last: a one-time approval, used up only when nothing lasting allows it.
    for (const e of policy.entries) {
      if (e.source === "once" && matchesAddress(e.pattern, ip, port)) return allowed(policy, host, port, true, e.source, e.text);
    }
    const ipOnOtherPort = policy.entries.some((e) => e.pattern.kind === "cidr" && matchesAddress({ ...e.pattern, port }, ip, port));
    return ipOnOtherPort
      ? { allow: false, host, port, reason: "port-not-allowed", detail: `port ${port} of ${host} is not allowed`, suggest: hostPort(host, port) }
      : { allow: false, host, port, reason: "ip-literal", detail: `${host} is an IP address that is not on the allowlist`, suggest: patternFor(host, port) };
  }
  for (const e of policy.entries) {
    if (e.source !== "once" && matchesName(e.pattern, host, port)) return allowed(policy, host, port, false, e.source, e.text);
  }
  const byRule = policy.rules.find((r) => r.effect === "allow" && ruleCoversHost(r, host, port));
  if (byRule) return allowed(policy, host, port, false, byRule.source, byRule.text, true);
  // Any name, which the address check then judges by where it resolves.
  if (policy.open) return allowed(policy, host, port, false, "level", OPEN_PATTERN);
  for (const e of policy.entries) {
    if (e.source === "once" && matchesName(e.pattern, host, port)) return allowed(policy, host, port, false, e.source, e.text);
  }
  const nameOnOtherPort = policy.entries.some((e) => e.pattern.kind !== "cidr" && matchesName({ ...e.pattern, port }, host, port));
  return nameOnOtherPort
    ? { allow: false, host, port, reason: "port-not-allowed", detail: `port ${port} of ${host} is not allowed (only 443 and 80 unless a pattern names the port)`, suggest: hostPort(host, port) }
    : { allow: false, host, port, reason: "not-allowlisted", detail: `${host} is not on the allowlist`, suggest: patternFor(host, port) };
}

export type AddressCheck =
  | { ok: true; address: string }
  | { ok: false; reason: BlockReason; address: string; kind: AddressKind | "host"; detail: string; suggest: string | null };

/** An entry the person made (for good, for a time or once): never a level's or the built-in list's. */
function personMade(e: CompiledEntry): boolean {
  return e.source === "sandbox" || e.source === "global" || e.source === "once";
}

/**
 * An entry the person made naming one address (a /32 or /128): the only kind that reaches an address that is not
 * public. A level's or the built-in list's never does (no level opens private, link-local or metadata ranges). A
 * one-time approval does, and is then used up (`onceRelied`).
 */
function isExactEntry(e: CompiledEntry): boolean {
  const p = e.pattern;
  return personMade(e) && p.kind === "cidr" && p.cidr.prefix === p.cidr.network.length * 8;
}

/**
 * The one-time approvals an allowed connection uses up. `required`: those it relies on (the decision's own, and each
 * that alone let one of its resolved non-public addresses through, exactly or paired with the name); a connection that
 * relies on none uses none. `alsoCovering`: every other one-time approval that would let it through (a name's and its
 * pairing's, approved together): used up with it, so one approval is one connection, never two.
 */
export function onceRelied(policy: CompiledPolicy, d: { host: string; source: PolicySource; pattern: string }, addresses: readonly string[], port: number): { required: string[]; alsoCovering: string[] } {
  const required = new Set<string>();
  if (d.source === "once") required.add(d.pattern);
  const all = new Set<string>();
  const once = policy.entries.filter((e) => e.source === "once");
  for (const e of once) if (matchesName(e.pattern, d.host, port)) all.add(e.text);
  for (const raw of addresses) {
    const bytes = parseIp(raw);
    if (!bytes || classify(bytes) === "public") continue;
    const covers = (e: CompiledEntry) => (isExactEntry(e) && matchesAddress(e.pattern, bytes, port)) || (personMade(e) && pairAllows(e.pattern, d.host, bytes, port));
    for (const e of once) if (covers(e)) all.add(e.text);
    if (policy.rules.some((r) => r.effect === "allow" && pairAllows(r.pattern, d.host, bytes, port))) continue;
    const covering = policy.entries.filter(covers);
    if (covering.length > 0 && covering.every((e) => e.source === "once")) required.add(covering[0]!.text);
  }
  if (required.size === 0) return { required: [], alsoCovering: [] };
  return { required: [...required], alsoCovering: [...all].filter((t) => !required.has(t)) };
}

/** What the `open` level's allow names as its pattern. */
export const OPEN_PATTERN = "* (level open)";

/**
 * After an allow decision: every address the name resolved to must be public (and not this host's own),
 * or itself allowlisted. A name with any forbidden address is refused whole (split-horizon and rebinding
 * tricks put one internal address among public ones). Returns the address to connect to: the first one.
 */
export function checkAddresses(
  policy: CompiledPolicy,
  host: string,
  addresses: readonly string[],
  port: number,
  hostOwn: ReadonlySet<string>,
): AddressCheck {
  let first: string | null = null;
  for (const raw of addresses) {
    const bytes = parseIp(raw);
    if (!bytes) continue;
    const addr = formatIp(bytes);
    const kind = classify(bytes);
    // The host's own services (its loopback, 0.0.0.0 / :: which reach it too, and its own addresses) are never
    // reachable from a sandbox, whatever the allowlist says: the proxy runs on the host.
    if (kind === "loopback" || kind === "unspecified" || hostOwn.has(addr)) {
      // A published service of the host (loopback, exact address and port) is the one way in.
      const endpoint = hostPort(addr, port);
      if (kind === "loopback" && policy.published.has(endpoint)) {
        first ??= addr;
        continue;
      }
      return {
        ok: false,
        reason: "host-address",
        address: addr,
        kind: hostOwn.has(addr) && kind !== "loopback" ? "host" : kind,
        detail: `${host === addr ? addr : `${host} resolves to ${addr}, which`} is ${kind === "loopback" ? "the host's own loopback: a sandbox reaches a service of the host only once it is published for it" : hostOwn.has(addr) ? "an address of this host: a sandbox never reaches the host's services that way" : "the unspecified address, which reaches the host's own services: never allowed"}`,
        suggest: kind === "loopback" ? endpoint : null,
      };
    }
    // Any other address that is not public (private, link-local, metadata, …) only as that exact address, never as
    // part of a network or through another form of it; or for a name paired with it (`name@address`: the name, while
    // it resolves there), which is what an approval of such a name allows. Only an entry or rule the person made does:
    // never a level's or the built-in list's.
    const paired = host !== addr && (policy.entries.some((e) => personMade(e) && pairAllows(e.pattern, host, bytes, port)) || policy.rules.some((r) => r.effect === "allow" && pairAllows(r.pattern, host, bytes, port)));
    if (kind !== "public" && !paired && !policy.entries.some((e) => isExactEntry(e) && matchesAddress(e.pattern, bytes, port))) {
      return {
        ok: false,
        reason: "internal-address",
        address: addr,
        kind,
        detail:
          host === addr
            ? `${addr} is a ${kind} address; only that exact address on the allowlist reaches it`
            : `${host} resolves to ${addr}, a ${kind} address; allowing ${pairText(host, addr)} lets ${host} reach it while it resolves there (another address is a new decision)`,
        suggest: host === addr ? patternFor(addr, port) : patternFor(pairText(host, addr), port),
      };
    }
    first ??= addr;
  }
  if (first === null) {
    return { ok: false, reason: "invalid-host", address: "", kind: "unspecified", detail: `${host} did not resolve to any address`, suggest: host };
  }
  return { ok: true, address: first };
}

/** A stored identity's published host services (canonical `addr:port`; anything else dropped). */
export function publishedOf(identity: Record<string, unknown>): string[] {
  const raw = Array.isArray(identity.publish) ? identity.publish : [];
  return raw.flatMap((e) => {
    const r = typeof e === "string" ? parsePublished(e) : null;
    return r?.ok ? [r.endpoint] : [];
  });
}

/** Whether a suggestion is a host service (published, not allowlisted): a loopback `addr:port`. */
export function isHostService(suggest: string): boolean {
  return parsePublished(suggest).ok && !/^\d+$/.test(suggest);
}

/** The command that would allow a blocked destination for this sandbox (`sbx publish` for a service of the host). */
export function allowCommand(suggest: string, sandboxName: string): string {
  return isHostService(suggest) ? `sbx publish ${sandboxName} ${suggest}` : `sbx allow ${suggest} --sandbox ${sandboxName}`;
}

/** The one-paragraph body of a 403: what was blocked, why, and the exact command to allow it (`command`: a rule's own). */
export function blockedMessage(sandboxName: string, target: string, detail: string, suggest: string | null, command?: string | null): string {
  const fix =
    command !== undefined
      ? command === null
        ? "A rule of the sandbox's policy level refuses it."
        : `To change it, run on the host: ${command}; the next request is judged again, no restart needed.`
      : suggest === null
      ? "This request cannot be allowed as written."
      : isHostService(suggest)
        ? `To let this sandbox reach that service of the host, run on the host: ${allowCommand(suggest, sandboxName)}; the next request goes through, no restart needed.`
        : `To allow it, run on the host: ${allowCommand(suggest, sandboxName)} (or add --global for every sandbox); the next request goes through, no restart needed.`;
  return `sbx blocked a connection from sandbox '${sandboxName}' to ${target}: ${detail}. ${fix}\n`;
}
