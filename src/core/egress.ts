// The egress decision: sandbox list, then global list, then the built-in default; then the resolved-address check. Pure.
import { classify, formatIp, parseIp, type AddressKind } from "./addresses";
import { DEFAULT_PORTS, compilePatterns, matchesAddress, matchesName, normalizeHost, type AllowPattern } from "./allowlist";

/** The built-in default: only the Claude API. Everything else is added by the user (or a preset). */
export const BUILTIN_ALLOWLIST: readonly string[] = Object.freeze(["api.anthropic.com"]);

/** The port the in-sandbox forwarder listens on unless told otherwise. */
export const DEFAULT_FORWARDER_PORT = 3128;

export interface PolicyLists {
  sandbox: readonly string[];
  global: readonly string[];
}

export type PolicySource = "sandbox" | "global" | "builtin";

export type BlockReason =
  | "invalid-host"
  | "not-allowlisted"
  | "port-not-allowed"
  | "ip-literal"
  | "internal-address"
  | "host-address";

export type Decision =
  | { allow: true; host: string; port: number; ip: boolean; source: PolicySource; pattern: string }
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
  add(BUILTIN_ALLOWLIST, "builtin");
  return { entries, invalid };
}

function hostPort(host: string, port: number): string {
  return `${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/** The pattern that allows host on port: the bare host on a default port, `host:port` otherwise. */
export function patternFor(host: string, port: number): string {
  return DEFAULT_PORTS.includes(port) ? host : hostPort(host, port);
}

/** The decision for one request, before any DNS lookup. */
export function decide(policy: CompiledPolicy, rawHost: string, port: number): Decision {
  const host = normalizeHost(rawHost);
  if (host === null || !Number.isInteger(port) || port < 1 || port > 65535) {
    return { allow: false, host: rawHost, port, reason: "invalid-host", detail: `'${rawHost}' is not a valid host name`, suggest: null };
  }
  const ip = parseIp(host);
  if (ip) {
    for (const e of policy.entries) {
      if (matchesAddress(e.pattern, ip, port)) return { allow: true, host, port, ip: true, source: e.source, pattern: e.text };
    }
    const ipOnOtherPort = policy.entries.some((e) => e.pattern.kind === "cidr" && matchesAddress({ ...e.pattern, port }, ip, port));
    return ipOnOtherPort
      ? { allow: false, host, port, reason: "port-not-allowed", detail: `port ${port} of ${host} is not allowed`, suggest: hostPort(host, port) }
      : { allow: false, host, port, reason: "ip-literal", detail: `${host} is an IP address that is not on the allowlist`, suggest: patternFor(host, port) };
  }
  for (const e of policy.entries) {
    if (matchesName(e.pattern, host, port)) return { allow: true, host, port, ip: false, source: e.source, pattern: e.text };
  }
  const nameOnOtherPort = policy.entries.some((e) => e.pattern.kind !== "cidr" && matchesName({ ...e.pattern, port }, host, port));
  return nameOnOtherPort
    ? { allow: false, host, port, reason: "port-not-allowed", detail: `port ${port} of ${host} is not allowed (only 443 and 80 unless a pattern names the port)`, suggest: hostPort(host, port) }
    : { allow: false, host, port, reason: "not-allowlisted", detail: `${host} is not on the allowlist`, suggest: patternFor(host, port) };
}

export type AddressCheck =
  | { ok: true; address: string }
  | { ok: false; reason: BlockReason; address: string; kind: AddressKind | "host"; detail: string; suggest: string };

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
    const allowlisted = policy.entries.some((e) => matchesAddress(e.pattern, bytes, port));
    if (!allowlisted) {
      const kind = classify(bytes);
      if (kind !== "public") {
        return {
          ok: false,
          reason: "internal-address",
          address: addr,
          kind,
          detail: `${host} resolves to ${addr}, a ${kind} address`,
          suggest: patternFor(addr, port),
        };
      }
      if (hostOwn.has(addr)) {
        return { ok: false, reason: "host-address", address: addr, kind: "host", detail: `${host} resolves to ${addr}, an address of this host`, suggest: patternFor(addr, port) };
      }
    }
    first ??= addr;
  }
  if (first === null) {
    return { ok: false, reason: "invalid-host", address: "", kind: "unspecified", detail: `${host} did not resolve to any address`, suggest: host };
  }
  return { ok: true, address: first };
}

/** The command that would allow a blocked destination for this sandbox. */
export function allowCommand(suggest: string, sandboxName: string): string {
  return `sbx allow ${suggest} --sandbox ${sandboxName}`;
}

/** The one-paragraph body of a 403: what was blocked, why, and the exact command to allow it. */
export function blockedMessage(sandboxName: string, target: string, detail: string, suggest: string | null): string {
  const fix =
    suggest === null
      ? "This request cannot be allowed as written."
      : `To allow it, run on the host: ${allowCommand(suggest, sandboxName)} (or add --global for every sandbox); the next request goes through, no restart needed.`;
  return `sbx blocked a connection from sandbox '${sandboxName}' to ${target}: ${detail}. ${fix}\n`;
}
