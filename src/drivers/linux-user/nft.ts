// nftables rules for Linux guests: render (pure, golden-tested) and parse `nft -j list table` back into state.
//
// Layout of the sbx-owned table (`inet sbx`): a map `guests` from socket UID to `jump sb_<id>`, one base chain
// on the output hook that dispatches through it, and one chain per sandbox. Adding or removing a sandbox
// touches only its chains and its map elements, in one `nft -f -` transaction.
//
// Local services (a guest's own dev server on its loopback): in run mode a guest may open a TCP connection to a
// loopback address, and its conntrack entry is marked with the guest's uid. On input, a map `guests_in` from that
// mark jumps to the guest's `si_<id>` chain, which accepts the connection only when the socket it reaches belongs
// to the guest's own cgroup (`socket cgroupv2`: a socket carries the cgroup of the process that made it, and a guest
// cannot leave its cgroup). Everything else it reaches there (your services, another guest's) is reset. Replies on
// loopback of a connection already accepted pass. Without a v2 cgroup hierarchy none of this is rendered.
//
// The transparent path: a map `guests_nat` from socket UID to `jump sn_<id>` on the nat output hook, where a guest's
// DNS (UDP 53 to anywhere) and its TCP to the named addresses (`127.77.0.0/16`, every port: the allowlist decides
// which port of a name is allowed, as on the proxy path) are redirected to its own proxy port (TCP: the proxy tells them from its proxy clients by SO_ORIGINAL_DST; UDP: the daemon's DNS stub). The
// filter chain then sees them as what they are after the redirect, 127.0.0.1:<port>.
import { z } from "zod";
import { NAME_RANGE } from "../../core/transparent";
import { chainName, logPrefix } from "./naming";

export const DEFAULT_TABLE = "sbx";

/** running: only 127.0.0.1:<proxyPort> over TCP; stopped: nothing at all. Everything else is logged and rejected. */
export type FirewallMode = "run" | "stop";

export interface SandboxRules {
  id: string;
  uid: number;
  mode: FirewallMode;
  /** Required in run mode: the sandbox's proxy port on 127.0.0.1. */
  proxyPort?: number;
  /** Run mode: the guest's v2 cgroup, so it may reach servers of its own on its loopback (see above). */
  local?: { level: number; path: string };
  /** Run mode: the transparent path's redirects (see above). */
  transparent?: boolean;
}

/** The marker comment on the last rule of a sandbox chain: what inspect reads back. */
export function marker(r: SandboxRules): string {
  const port = r.mode === "run" ? ` port=${r.proxyPort}` : "";
  const local = r.mode === "run" && r.local ? ` local=${r.local.level}:${r.local.path}` : "";
  const transparent = r.mode === "run" && r.transparent ? " transparent" : "";
  return `sbx id=${r.id} uid=${r.uid} mode=${r.mode}${port}${local}${transparent}`;
}

function checkRules(r: SandboxRules): void {
  if (!Number.isInteger(r.uid) || r.uid <= 0) throw new Error(`nft: guest uid must be a positive integer, got ${r.uid}`);
  if (r.mode === "run") {
    const p = r.proxyPort;
    if (p === undefined || !Number.isInteger(p) || p < 1 || p > 65535) throw new Error(`nft: proxy port must be 1-65535, got ${p}`);
    if (r.local && (!/^[a-z0-9/_-]+$/.test(r.local.path) || !Number.isInteger(r.local.level) || r.local.level < 1)) throw new Error(`nft: bad cgroup ${JSON.stringify(r.local)}`);
  }
}

/**
 * The table, its map and the dispatching base chain; safe to load again (the base chain is flushed and
 * refilled in the same transaction, so there is no moment without the dispatch rule).
 */
export function renderBase(table = DEFAULT_TABLE): string {
  return [
    `table inet ${table} {`,
    `\tmap guests {`,
    `\t\ttype uid : verdict`,
    `\t}`,
    `\tmap guests_in {`,
    `\t\ttype mark : verdict`,
    `\t}`,
    `\tmap guests_nat {`,
    `\t\ttype uid : verdict`,
    `\t}`,
    `\tchain output {`,
    `\t\ttype filter hook output priority filter; policy accept;`,
    `\t}`,
    `\tchain input {`,
    `\t\ttype filter hook input priority filter; policy accept;`,
    `\t}`,
    `\tchain nat_output {`,
    `\t\ttype nat hook output priority -100; policy accept;`,
    `\t}`,
    `}`,
    `flush chain inet ${table} output`,
    `flush chain inet ${table} input`,
    `flush chain inet ${table} nat_output`,
    `table inet ${table} {`,
    `\tchain output {`,
    `\t\tmeta skuid vmap @guests comment "sbx dispatch"`,
    `\t}`,
    `\tchain input {`,
    `\t\tiifname "lo" ct state new ct mark vmap @guests_in comment "sbx dispatch in"`,
    `\t}`,
    `\tchain nat_output {`,
    `\t\tmeta skuid vmap @guests_nat comment "sbx dispatch nat"`,
    `\t}`,
    `}`,
    ``,
  ].join("\n");
}

/**
 * One sandbox's chain and map element. The chain is declared, flushed and refilled; the element is added,
 * deleted and added again (nft 1.0.6 has no `destroy`), so loading this twice converges to the same state.
 * Blocked packets are logged (rate-limited, so a guest cannot flood the kernel log) and rejected, so a
 * blocked connect fails at once instead of hanging for minutes.
 */
export function renderSandbox(r: SandboxRules, table = DEFAULT_TABLE): string {
  checkRules(r);
  const chain = chainName(r.id);
  const inChain = inChainName(r.id);
  const natChain = natChainName(r.id);
  const rules: string[] = [];
  if (r.mode === "run") rules.push(`ip daddr 127.0.0.1 tcp dport ${r.proxyPort} accept`);
  const transparent = r.mode === "run" && r.transparent === true;
  // After the nat chain's redirect the guest's DNS is UDP to its port: the stub's.
  if (transparent) rules.push(`ip daddr 127.0.0.1 udp dport ${r.proxyPort} accept`);
  const natRules = transparent
    ? [`ip daddr ${NAME_RANGE} meta l4proto tcp redirect to :${r.proxyPort}`, `udp dport 53 redirect to :${r.proxyPort}`]
    : [];
  const local = r.mode === "run" ? r.local : undefined;
  if (local) {
    rules.push(`oifname "lo" ct state established,related accept`);
    rules.push(`oifname "lo" ip daddr 127.0.0.0/8 meta l4proto tcp ct state new ct mark set ${r.uid} accept`);
    rules.push(`oifname "lo" ip6 daddr ::1 meta l4proto tcp ct state new ct mark set ${r.uid} accept`);
  }
  const inRules = [...(local ? [`socket cgroupv2 level ${local.level} "${local.path}" accept`] : []), `reject with tcp reset comment "${marker(r)}"`];
  rules.push(`limit rate 10/second burst 20 packets log prefix "${logPrefix(r.uid)}" level warn`);
  rules.push(`reject with icmpx admin-prohibited comment "${marker(r)}"`);
  return [
    ...chainAndElement(table, chain, rules, "guests", r.uid),
    ...chainAndElement(table, inChain, inRules, "guests_in", r.uid),
    ...chainAndElement(table, natChain, natRules, "guests_nat", r.uid),
    ``,
  ].join("\n");
}

/**
 * One chain declared, flushed and refilled with `rules` (none: left empty), and the element of `map` that jumps to it
 * added, deleted and added again (nft 1.0.6 has no `destroy`): loading it twice converges to the same state.
 */
function chainAndElement(table: string, chain: string, rules: readonly string[], map: string, key: number): string[] {
  return [
    `table inet ${table} {`,
    `\tchain ${chain} {`,
    `\t}`,
    `}`,
    `flush chain inet ${table} ${chain}`,
    ...(rules.length ? [`table inet ${table} {`, `\tchain ${chain} {`, ...rules.map((l) => `\t\t${l}`), `\t}`, `}`] : []),
    `add element inet ${table} ${map} { ${key} : jump ${chain} }`,
    `delete element inet ${table} ${map} { ${key} }`,
    `add element inet ${table} ${map} { ${key} : jump ${chain} }`,
  ];
}

/** The nat chain of a sandbox (the transparent path's redirects of its guest's DNS and named connections). */
export function natChainName(id: string): string {
  return `sn_${id}`;
}

/** The input chain of a sandbox (its guest's connections to loopback, checked by the socket they reach). */
export function inChainName(id: string): string {
  return `si_${id}`;
}

/** Removes one sandbox's map elements (every UID that jumps to its chain) and then its chain. */
export function renderRemove(
  id: string,
  uids: readonly number[],
  table = DEFAULT_TABLE,
  input: { uids: readonly number[]; chain: boolean } = { uids: [], chain: false },
  nat: { uids: readonly number[]; chain: boolean } = { uids: [], chain: false },
): string {
  const chain = chainName(id);
  return [
    ...uids.map((u) => `delete element inet ${table} guests { ${u} }`),
    `delete chain inet ${table} ${chain}`,
    ...input.uids.map((u) => `delete element inet ${table} guests_in { ${u} }`),
    ...(input.chain ? [`delete chain inet ${table} ${inChainName(id)}`] : []),
    ...nat.uids.map((u) => `delete element inet ${table} guests_nat { ${u} }`),
    ...(nat.chain ? [`delete chain inet ${table} ${natChainName(id)}`] : []),
    ``,
  ].join("\n");
}

// ── read back ────────────────────────────────────────────────────────────────

/** What the table holds for one sandbox chain. */
export interface ChainState {
  chain: string;
  /** Parsed from the marker comment; null when the chain exists but carries no sbx marker (foreign or half-made). */
  rules: SandboxRules | null;
  /** UIDs whose map element jumps to this chain. */
  uids: number[];
  /** Its input chain (si_<id>) is there, and the marks whose guests_in element jumps to it. */
  inChain: boolean;
  inUids: number[];
  /** Its nat chain (sn_<id>) is there, and the UIDs whose guests_nat element jumps to it. */
  natChain: boolean;
  natUids: number[];
}

export interface TableState {
  exists: boolean;
  /** True when the map and the dispatch rule are both there. */
  baseOk: boolean;
  chains: Map<string, ChainState>;
}

const NftJson = z.object({
  nftables: z.array(z.record(z.string(), z.unknown())),
});

const MapObj = z.object({ name: z.string(), elem: z.array(z.tuple([z.unknown(), z.unknown()])).optional() });
const ChainObj = z.object({ name: z.string() });
const RuleObj = z.object({ chain: z.string(), comment: z.string().optional(), expr: z.array(z.unknown()).optional() });

export function parseMarker(comment: string): SandboxRules | null {
  const m = /^sbx id=([a-z0-9]+) uid=(\d+) mode=(run|stop)(?: port=(\d+))?(?: local=(\d+):([a-z0-9/_-]+))?( transparent)?$/.exec(comment);
  if (!m) return null;
  const r: SandboxRules = { id: m[1]!, uid: Number(m[2]), mode: m[3] as FirewallMode };
  if (m[4] !== undefined) r.proxyPort = Number(m[4]);
  if (m[5] !== undefined && m[6] !== undefined) r.local = { level: Number(m[5]), path: m[6] };
  if (m[7] !== undefined) r.transparent = true;
  return r;
}

/** Parses `nft -j list table inet <table>` output (empty string: no table). */
export function parseTable(json: string): TableState {
  const state: TableState = { exists: false, baseOk: false, chains: new Map() };
  if (json.trim() === "") return state;
  const doc = NftJson.parse(JSON.parse(json));
  let hasMap = false;
  let hasInMap = false;
  let hasDispatch = false;
  let hasInDispatch = false;
  let hasNatMap = false;
  let hasNatDispatch = false;
  const elemTargets: [number, string][] = [];
  const inTargets: [number, string][] = [];
  const natTargets: [number, string][] = [];
  const inChains = new Set<string>();
  const natChains = new Set<string>();
  const elems = (m: z.infer<typeof MapObj>, into: [number, string][]) => {
    for (const [k, v] of m.elem ?? []) {
      const target = (v as { jump?: { target?: unknown } } | null)?.jump?.target;
      if (typeof k === "number" && typeof target === "string") into.push([k, target]);
    }
  };
  for (const obj of doc.nftables) {
    if ("table" in obj) state.exists = true;
    if ("map" in obj) {
      const m = MapObj.safeParse(obj.map);
      if (m.success && m.data.name === "guests") {
        hasMap = true;
        elems(m.data, elemTargets);
      }
      if (m.success && m.data.name === "guests_in") {
        hasInMap = true;
        elems(m.data, inTargets);
      }
      if (m.success && m.data.name === "guests_nat") {
        hasNatMap = true;
        elems(m.data, natTargets);
      }
    }
    if ("chain" in obj) {
      const c = ChainObj.safeParse(obj.chain);
      if (c.success && c.data.name.startsWith("sb_")) state.chains.set(c.data.name, { chain: c.data.name, rules: null, uids: [], inChain: false, inUids: [], natChain: false, natUids: [] });
      if (c.success && c.data.name.startsWith("si_")) inChains.add(c.data.name);
      if (c.success && c.data.name.startsWith("sn_")) natChains.add(c.data.name);
    }
  }
  for (const obj of doc.nftables) {
    if (!("rule" in obj)) continue;
    const r = RuleObj.safeParse(obj.rule);
    if (!r.success) continue;
    if (r.data.chain === "output" && r.data.comment === "sbx dispatch") hasDispatch = true;
    if (r.data.chain === "input" && r.data.comment === "sbx dispatch in") hasInDispatch = true;
    if (r.data.chain === "nat_output" && r.data.comment === "sbx dispatch nat") hasNatDispatch = true;
    const c = state.chains.get(r.data.chain);
    if (c && r.data.comment) c.rules = parseMarker(r.data.comment) ?? c.rules;
  }
  for (const [uid, target] of elemTargets) state.chains.get(target)?.uids.push(uid);
  for (const c of state.chains.values()) {
    const si = `si_${c.chain.slice(3)}`;
    c.inChain = inChains.has(si);
    c.inUids = inTargets.filter(([, t]) => t === si).map(([u]) => u);
    const sn = natChainName(c.chain.slice(3));
    c.natChain = natChains.has(sn);
    c.natUids = natTargets.filter(([, t]) => t === sn).map(([u]) => u);
  }
  state.baseOk = hasMap && hasDispatch && hasInMap && hasInDispatch && hasNatMap && hasNatDispatch;
  return state;
}

/** Whether the chain is exactly what `renderSandbox(want)` produces (as far as the marker and map say). */
export function chainMatches(c: ChainState | undefined, want: SandboxRules): boolean {
  if (!c || !c.rules) return false;
  const r = c.rules;
  return (
    r.id === want.id &&
    r.uid === want.uid &&
    r.mode === want.mode &&
    (want.mode === "stop" || r.proxyPort === want.proxyPort) &&
    (want.mode === "stop" || (r.local?.path ?? null) === (want.local?.path ?? null)) &&
    (want.mode === "stop" || (r.transparent === true) === (want.transparent === true)) &&
    c.natChain &&
    c.natUids.length === 1 &&
    c.natUids[0] === want.uid &&
    c.uids.length === 1 &&
    c.uids[0] === want.uid &&
    c.inChain &&
    c.inUids.length === 1 &&
    c.inUids[0] === want.uid
  );
}
