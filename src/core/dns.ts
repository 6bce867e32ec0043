// Which names the sandbox's DNS stub may give an address for, as the host decides it (the stub's wire format and answers: shims/dns.ts).
import { normalizeHost } from "./allowlist";
import { canonicalIp } from "./addresses";

/**
 * Pure: the host name a question asks about, when it is one the sandbox may be given an address for: a valid name
 * in printable ASCII (IDNs arrive as punycode), not an IP literal, not a reverse-lookup zone. null otherwise.
 */
export function askableName(name: string): string | null {
  if (name.length === 0 || !/^[\x21-\x7e]+$/.test(name)) return null;
  if (name.endsWith(".in-addr.arpa") || name.endsWith(".ip6.arpa") || name === "in-addr.arpa" || name === "ip6.arpa") return null;
  if (name === "invalid" || name.endsWith(".invalid")) return null; // RFC 6761: never resolves
  const h = normalizeHost(name);
  if (h === null || canonicalIp(h) !== null) return null;
  return h;
}
