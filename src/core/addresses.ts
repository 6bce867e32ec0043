// IP address parsing, CIDR matching and classification (loopback, private, metadata, …); pure, no I/O.

/** An address as bytes: 4 for IPv4, 16 for IPv6. */
export type IpBytes = Uint8Array;

export type AddressKind =
  | "public"
  | "unspecified"
  | "loopback"
  | "private"
  | "link-local"
  | "cgnat"
  | "multicast"
  | "broadcast"
  | "metadata"
  | "unique-local"
  | "reserved"
  | "documentation"
  | "benchmarking";

/** Parses a strict dotted-quad IPv4 address (no octal, hex or short forms). */
export function parseIPv4(s: string): IpBytes | null {
  const parts = s.split(".");
  if (parts.length !== 4) return null;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const p = parts[i]!;
    if (!/^(0|[1-9][0-9]{0,2})$/.test(p)) return null;
    const n = Number(p);
    if (n > 255) return null;
    out[i] = n;
  }
  return out;
}

/** Parses an IPv6 address (with `::` compression and an optional trailing dotted quad); no zone ids. */
export function parseIPv6(input: string): IpBytes | null {
  let s = input;
  if (s.startsWith("[") && s.endsWith("]")) s = s.slice(1, -1);
  if (s.length === 0 || s.includes("%")) return null;
  const words: number[] = [];
  let tail4: IpBytes | null = null;
  const lastColon = s.lastIndexOf(":");
  if (lastColon < 0) return null;
  const last = s.slice(lastColon + 1);
  if (last.includes(".")) {
    tail4 = parseIPv4(last);
    if (!tail4) return null;
    s = s.slice(0, lastColon + 1) + "0:0"; // placeholder words replaced below
  }
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const parseWords = (part: string): number[] | null => {
    if (part === "") return [];
    const ws = part.split(":");
    const out: number[] = [];
    for (const w of ws) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(w)) return null;
      out.push(parseInt(w, 16));
    }
    return out;
  };
  const head = parseWords(halves[0]!);
  if (!head) return null;
  if (halves.length === 2) {
    const rest = parseWords(halves[1]!);
    if (!rest) return null;
    const fill = 8 - head.length - rest.length;
    if (fill < 1) return null;
    words.push(...head, ...new Array<number>(fill).fill(0), ...rest);
  } else {
    if (head.length !== 8) return null;
    words.push(...head);
  }
  const out = new Uint8Array(16);
  for (let i = 0; i < 8; i++) {
    out[i * 2] = words[i]! >> 8;
    out[i * 2 + 1] = words[i]! & 0xff;
  }
  if (tail4) out.set(tail4, 12);
  return out;
}

export function parseIp(s: string): IpBytes | null {
  return parseIPv4(s) ?? (s.includes(":") ? parseIPv6(s) : null);
}

/** Canonical text: dotted quad, or RFC 5952 IPv6 (lowercase, longest zero run compressed). */
export function formatIp(b: IpBytes): string {
  if (b.length === 4) return Array.from(b).join(".");
  const mapped = embeddedMappedV4(b);
  if (mapped) return `::ffff:${Array.from(mapped).join(".")}`;
  const words: number[] = [];
  for (let i = 0; i < 8; i++) words.push((b[i * 2]! << 8) | b[i * 2 + 1]!);
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (ws: number[]) => ws.map((w) => w.toString(16)).join(":");
  if (bestStart < 0) return hex(words);
  return `${hex(words.slice(0, bestStart))}::${hex(words.slice(bestStart + bestLen))}`;
}

/** Canonical form of an IP literal, or null when s is not one. */
export function canonicalIp(s: string): string | null {
  const b = parseIp(s);
  return b ? formatIp(b) : null;
}

export interface Cidr {
  network: IpBytes;
  prefix: number;
}

/** Parses `addr/prefix` (host bits must be zero) or a bare address (a /32 or /128). */
export function parseCidr(s: string): Cidr | null {
  const slash = s.indexOf("/");
  const addr = parseIp(slash < 0 ? s : s.slice(0, slash));
  if (!addr) return null;
  const max = addr.length * 8;
  let prefix = max;
  if (slash >= 0) {
    const p = s.slice(slash + 1);
    if (!/^(0|[1-9][0-9]{0,2})$/.test(p)) return null;
    prefix = Number(p);
    if (prefix > max) return null;
  }
  for (let bit = prefix; bit < max; bit++) {
    if (addr[bit >> 3]! & (0x80 >> (bit & 7))) return null;
  }
  return { network: addr, prefix };
}

export function formatCidr(c: Cidr): string {
  return `${formatIp(c.network)}/${c.prefix}`;
}

/** Whether addr lies in cidr; IPv4-mapped IPv6 addresses match IPv4 networks. */
export function cidrContains(c: Cidr, addr: IpBytes): boolean {
  let a = addr;
  if (c.network.length === 4 && a.length === 16) {
    const v4 = embeddedMappedV4(a);
    if (!v4) return false;
    a = v4;
  }
  if (c.network.length !== a.length) return false;
  const full = c.prefix >> 3;
  for (let i = 0; i < full; i++) if (a[i] !== c.network[i]) return false;
  const rem = c.prefix & 7;
  if (rem === 0) return true;
  const mask = (0xff << (8 - rem)) & 0xff;
  return (a[full]! & mask) === (c.network[full]! & mask);
}

/** The IPv4 inside an IPv4-mapped IPv6 address (::ffff:a.b.c.d), else null. */
export function embeddedMappedV4(a: IpBytes): IpBytes | null {
  if (a.length !== 16) return null;
  for (let i = 0; i < 10; i++) if (a[i] !== 0) return null;
  if (a[10] !== 0xff || a[11] !== 0xff) return null;
  return a.slice(12);
}

function cidr(s: string): Cidr {
  const c = parseCidr(s);
  if (!c) throw new Error(`bad built-in CIDR ${s}`);
  return c;
}

/** Cloud metadata endpoints (AWS, GCP, Azure, OpenStack, ECS, Alibaba, AWS IPv6). Checked before the wider ranges. */
const METADATA: readonly Cidr[] = ["169.254.169.254/32", "169.254.170.2/32", "100.100.100.200/32", "fd00:ec2::254/128"].map(cidr);

const V4_TABLE: readonly [Cidr, AddressKind][] = (
  [
    ["0.0.0.0/32", "unspecified"],
    ["0.0.0.0/8", "reserved"],
    ["127.0.0.0/8", "loopback"],
    ["10.0.0.0/8", "private"],
    ["172.16.0.0/12", "private"],
    ["192.168.0.0/16", "private"],
    ["169.254.0.0/16", "link-local"],
    ["100.64.0.0/10", "cgnat"],
    ["192.0.0.0/24", "reserved"],
    ["192.0.2.0/24", "documentation"],
    ["198.51.100.0/24", "documentation"],
    ["203.0.113.0/24", "documentation"],
    ["198.18.0.0/15", "benchmarking"],
    ["224.0.0.0/4", "multicast"],
    ["255.255.255.255/32", "broadcast"],
    ["240.0.0.0/4", "reserved"],
  ] as const
).map(([c, k]) => [cidr(c), k]);

const V6_TABLE: readonly [Cidr, AddressKind][] = (
  [
    ["::/128", "unspecified"],
    ["::1/128", "loopback"],
    ["fe80::/10", "link-local"],
    ["fc00::/7", "unique-local"],
    ["ff00::/8", "multicast"],
    ["2001:db8::/32", "documentation"],
    ["100::/64", "reserved"],
    ["fec0::/10", "reserved"],
    // Deprecated IPv4-compatible addresses (::a.b.c.d): never a legitimate destination.
    ["::/96", "reserved"],
  ] as const
).map(([c, k]) => [cidr(c), k]);

/**
 * IPv6 prefixes that carry an IPv4 address, and where (the bit its first bit is at; `inverted`: stored bitwise NOT,
 * as Teredo stores its client's address). An address in one of them is classified by what it carries, and an
 * allowlist CIDR in one is as broad as the IPv4 network it stands for.
 */
export const V4_EMBEDDINGS: readonly { name: string; prefix: Cidr; at: number; inverted?: boolean }[] = [
  { name: "IPv4-mapped", prefix: cidr("::ffff:0:0/96"), at: 96 },
  { name: "IPv4-compatible", prefix: cidr("::/96"), at: 96 },
  { name: "NAT64", prefix: cidr("64:ff9b::/96"), at: 96 },
  { name: "NAT64 local-use", prefix: cidr("64:ff9b:1::/48"), at: 96 },
  { name: "6to4", prefix: cidr("2002::/16"), at: 16 },
  { name: "Teredo server", prefix: cidr("2001::/32"), at: 32 },
  { name: "Teredo client", prefix: cidr("2001::/32"), at: 96, inverted: true },
];

/** Every IPv4 address an IPv6 address carries (none for one outside V4_EMBEDDINGS). */
export function embeddedV4s(a: IpBytes): IpBytes[] {
  if (a.length !== 16) return [];
  const out: IpBytes[] = [];
  for (const e of V4_EMBEDDINGS) {
    if (!cidrContains(e.prefix, a)) continue;
    // ::/96 holds :: and ::1 too, which are themselves (unspecified, loopback), not IPv4 addresses.
    if (e.name === "IPv4-compatible" && a[12] === 0 && a[13] === 0 && a[14] === 0 && a[15]! <= 1) continue;
    const v4 = new Uint8Array(4);
    for (let i = 0; i < 32; i++) {
      const bit = e.at + i;
      if (a[bit >> 3]! & (0x80 >> (bit & 7))) v4[i >> 3]! |= 0x80 >> (i & 7);
    }
    out.push(e.inverted ? v4.map((x) => ~x & 0xff) : v4);
  }
  return out;
}

/** How strict each kind is: the first non-public kind of what an address carries is its kind. */
const KIND_ORDER: readonly AddressKind[] = ["loopback", "unspecified", "metadata", "link-local", "private", "cgnat", "unique-local", "broadcast", "multicast", "reserved", "documentation", "benchmarking"];

/** What kind of address this is; "public" is the only kind the proxy connects to without an allowlist entry for it. */
export function classify(addr: IpBytes | string): AddressKind {
  const a = typeof addr === "string" ? parseIp(addr) : addr;
  if (!a) throw new Error(`not an IP address: ${String(addr)}`);
  for (const m of METADATA) if (cidrContains(m, a)) return "metadata";
  if (a.length === 16) {
    // Classified by every IPv4 address it carries: the strictest of them wins (Teredo carries two).
    const inner = embeddedV4s(a).map((v4) => classify(v4));
    if (inner.length > 0) return KIND_ORDER.find((k) => inner.includes(k)) ?? "public";
    for (const [c, k] of V6_TABLE) if (cidrContains(c, a)) return k;
    return "public";
  }
  for (const [c, k] of V4_TABLE) if (cidrContains(c, a)) return k;
  return "public";
}

/**
 * How many leading bits of IPv4 an IPv6 CIDR pins down, per embedding it overlaps: the whole embedding prefix inside
 * it is 0 (all of IPv4). Empty when it overlaps none. Pure.
 */
export function embeddedV4Breadth(c: Cidr): { name: string; v4Prefix: number }[] {
  if (c.network.length !== 16) return [];
  const out: { name: string; v4Prefix: number }[] = [];
  for (const e of V4_EMBEDDINGS) {
    const inside = c.prefix >= e.prefix.prefix && cidrContains(e.prefix, c.network);
    const covers = c.prefix <= e.prefix.prefix && cidrContains(c, e.prefix.network);
    if (!inside && !covers) continue;
    out.push({ name: e.name, v4Prefix: Math.max(0, Math.min(32, c.prefix - e.at)) });
  }
  return out;
}
