// pflog0 monitor: parses `tcpdump -n -e -ttt -i pflog0` lines into blocked raw connections of sandbox UIDs (pure parts).
//
// What tcpdump prints for pflog with -e (print-pflog.c, BSD and Darwin alike):
//   <delta> rule <anchor-rule-nr>.<ruleset>.<sub-rule-nr>/<reason>( [uid <socket uid>])?: <action> <dir> on <if>: <packet>
// <ruleset> is the ANCHOR'S OWN NAME, the last path component (`sbx_7001`, not `com.apple/sbx_7001`), cut at 15
// bytes (PFLOG_RULESET_NAME_SIZE 16); `[uid N]` is the socket owner pf looked up for the `user` match. With -e no
// "IP " prefix precedes the packet. tcpdump needs root for /dev/bpf: sudoers allows exactly MONITOR_ARGV, and the
// parsing runs as the host user in the daemon (src/daemon/pflog-audit.ts starts and restarts it).
import { BIN } from "./bin";

/** The one tcpdump invocation sudoers permits (line-buffered, no name lookups, link-level pflog header). */
export const MONITOR_ARGV: readonly string[] = [BIN.tcpdump, "-l", "-n", "-e", "-ttt", "-i", "pflog0"];

/** runs: sudo -n /usr/sbin/tcpdump -l -n -e -ttt -i pflog0 (the exact command the sudoers rule names). */
export function monitorCommand(): string[] {
  return [BIN.sudo, "-n", ...MONITOR_ARGV];
}

export interface PflogEvent {
  /** tcpdump's -ttt delta, as printed. */
  delta: string;
  /** The ruleset (anchor name) the logging rule is in; "" for a main-ruleset rule. */
  anchor: string;
  /** The sandbox UID named by an sbx anchor (`sbx_<uid>`), else null. */
  uid: number | null;
  /** The socket owner pf reported (`[uid N]`), when it did. */
  socketUid: number | null;
  rule: number;
  action: "block" | "pass" | string;
  direction: "in" | "out" | string;
  iface: string;
  family: "ipv4" | "ipv6";
  proto: "tcp" | "udp" | "other";
  src: string;
  srcPort: number | null;
  dst: string;
  dstPort: number | null;
  /** For DNS queries tcpdump decodes: the name asked for (tunnelling shows up here). */
  query: string | null;
}

const HEAD =
  /^\s*(\S+)\s+rule\s+(\d+)(?:\.(.*?)\.(\d+))?\/[^:\s]*?(?:\(\w[\w-]*\))?((?:\s+\[[a-z]+\s+\d+\])*):\s+([\w-]+)\s+(in\/out|in|out)\s+on\s+(\S+?):\s+(.*)$/;

/** The sandbox UID of an sbx anchor as pflog names it (`sbx_7001`); the full path (`com.apple/sbx_7001`) is accepted too. */
export function parsePflogRuleset(ruleset: string): number | null {
  const m = /^(?:com\.apple\/)?sbx_(\d{1,10})$/.exec(ruleset);
  return m ? Number(m[1]) : null;
}

/** `1.2.3.4.443` or `2606:4700::1111.443` → address and port (addresses without a port stay whole). */
function splitHostPort(s: string): [string, number | null] {
  const m = /^(.*)\.(\d+)$/.exec(s);
  if (!m) return [s, null];
  const host = m[1]!;
  // A bare IPv4 address without a port also ends in ".<digits>": it has only three dots.
  if (!host.includes(":") && host.split(".").length < 4) return [s, null];
  return [host, Number(m[2])];
}

/** One tcpdump line → event; null for lines that are not pflog entries (headers, sudo's messages, truncated output). Pure. */
export function parsePflogLine(line: string): PflogEvent | null {
  const m = HEAD.exec(line.replace(/\r$/, ""));
  if (!m) return null;
  const tags = m[5] ?? "";
  const uidTag = /\[uid\s+(\d+)\]/.exec(tags);
  const body = m[9]!.replace(/^IP6?\s+/, "");
  const a = /^(\S+)\s+>\s+(\S+?):(?:\s+(.*))?$/.exec(body);
  if (!a) return null;
  const [src, srcPort] = splitHostPort(a[1]!);
  const [dst, dstPort] = splitHostPort(a[2]!);
  const rest = a[3] ?? "";
  const proto: PflogEvent["proto"] = /^Flags \[/.test(rest) ? "tcp" : /^UDP\b|^\d+\+?\s|\b[A-Z]+\?\s/.test(rest) ? "udp" : "other";
  const q = /\b(?:A|AAAA|TXT|MX|CNAME|NS|PTR|SRV|HTTPS|SVCB|ANY)\?\s+(\S+?)\.?\s/.exec(`${rest} `);
  const anchor = m[3] ?? "";
  return {
    delta: m[1]!,
    rule: Number(m[2]),
    anchor,
    uid: parsePflogRuleset(anchor),
    socketUid: uidTag ? Number(uidTag[1]) : null,
    action: m[6]!,
    direction: m[7]!,
    iface: m[8]!,
    family: src.includes(":") || dst.includes(":") ? "ipv6" : "ipv4",
    proto,
    src,
    srcPort,
    dst,
    dstPort,
    query: q ? q[1]! : null,
  };
}

/**
 * The audit entry a blocked packet becomes (`store.audit({sandboxId, ...auditOfPflog(e)})`): the same kind, action and
 * detail fields as the Linux kernel-log monitor's `auditOf`, plus the DNS name when tcpdump decoded one.
 */
export function auditOfPflog(e: PflogEvent & { uid: number }): { kind: string; action: string; detail: Record<string, unknown> } {
  const where = e.dstPort !== null ? `${e.dst}:${e.dstPort}` : e.dst;
  return {
    kind: "egress",
    action: "blocked-raw",
    detail: {
      uid: e.uid,
      proto: e.proto,
      family: e.family,
      dst: e.dst,
      dport: e.dstPort,
      src: e.src,
      out: e.iface,
      summary: `${e.proto} ${where}${e.query ? ` (${e.query})` : ""}`,
      ...(e.query ? { query: e.query } : {}),
    },
  };
}

export interface PflogFilterOptions {
  /** Repeats of the same (uid, proto, dst, port, query) within this window are dropped (default 10 s: SYN retries). */
  dedupeMs?: number;
  now?: () => number;
}

/**
 * Line → the blocked packet of an sbx anchor worth reporting, or null (not pflog, not a block, not an sbx anchor,
 * a repeat within the window). Keeps only a bounded map of recent keys.
 */
export function pflogFilter(opts: PflogFilterOptions = {}): (line: string) => (PflogEvent & { uid: number }) | null {
  const window = opts.dedupeMs ?? 10_000;
  const now = opts.now ?? Date.now;
  const last = new Map<string, number>();
  return (line) => {
    const e = parsePflogLine(line);
    if (!e || e.uid === null || e.action !== "block") return null;
    const key = `${e.uid}|${e.proto}|${e.dst}|${e.dstPort}|${e.query}`;
    const t = now();
    const prev = last.get(key);
    if (prev !== undefined && t - prev < window) return null;
    last.set(key, t);
    if (last.size > 2000) for (const [k, v] of last) if (t - v >= window) last.delete(k);
    return e as PflogEvent & { uid: number };
  };
}
