// pflog0 monitor: parses `tcpdump -n -e -ttt -i pflog0` lines into blocked-connection audit events of sandbox UIDs.
//
// tcpdump needs root for the bpf device; the sudoers rule allows exactly MONITOR_ARGV and nothing else, and the
// parsing below runs as the host user. The runner takes a line stream, because Exec.run buffers to the end.
import { parseAnchorName } from "./naming";
import { BIN } from "./bin";

/** The one tcpdump invocation sudoers permits (line-buffered, no name lookups, link-level pflog header). */
export const MONITOR_ARGV: readonly string[] = [BIN.tcpdump, "-l", "-n", "-e", "-ttt", "-i", "pflog0"];

export function monitorCommand(): string[] {
  return [BIN.sudo, "-n", ...MONITOR_ARGV];
}

export interface PflogEvent {
  /** tcpdump's -ttt delta, as printed. */
  delta: string;
  anchor: string;
  /** The sandbox UID when the rule is in an sbx anchor. */
  uid: number | null;
  rule: number;
  action: "block" | "pass" | string;
  direction: "in" | "out" | string;
  iface: string;
  proto: "tcp" | "udp" | "other";
  src: string;
  srcPort: number | null;
  dst: string;
  dstPort: number | null;
  /** For DNS queries tcpdump decodes: the name asked for (tunnelling shows up here). */
  query: string | null;
}

const LINE = /^\s*(\S+)\s+rule\s+(\d+)\.(.+)\.(\d+)\/(\d+)\((\w+)\):\s+(\w+)\s+(in|out)\s+on\s+(\S+):\s+(.*)$/;

/** `1.2.3.4.443` or `2606:4700::1111.443` → address and port (addresses without a port stay whole). */
function splitHostPort(s: string): [string, number | null] {
  const m = /^(.*)\.(\d+)$/.exec(s);
  if (!m) return [s, null];
  const host = m[1]!;
  // A bare IPv4 address without a port also ends in ".<digits>": it has only three dots.
  if (!host.includes(":") && host.split(".").length < 4) return [s, null];
  return [host, Number(m[2])];
}

/** One tcpdump line → event; null for lines that are not pflog entries (headers, truncated output). Pure. */
export function parsePflogLine(line: string): PflogEvent | null {
  const m = LINE.exec(line);
  if (!m) return null;
  const body = m[10]!;
  const a = /^(\S+)\s+>\s+(\S+):(?:\s+(.*))?$/.exec(body);
  if (!a) return null;
  const [src, srcPort] = splitHostPort(a[1]!);
  const [dst, dstPort] = splitHostPort(a[2]!);
  const rest = a[3] ?? "";
  const proto: PflogEvent["proto"] = /^Flags \[/.test(rest) ? "tcp" : /^UDP\b|^\d+\+?\s|\b[A-Z]+\?\s/.test(rest) ? "udp" : "other";
  const q = /\b(?:A|AAAA|TXT|MX|CNAME|NS|PTR|SRV|HTTPS|SVCB|ANY)\?\s+(\S+?)\.?\s/.exec(`${rest} `);
  return {
    delta: m[1]!,
    rule: Number(m[2]),
    anchor: m[3]!,
    uid: parseAnchorName(m[3]!),
    action: m[7]!,
    direction: m[8]!,
    iface: m[9]!,
    proto,
    src,
    srcPort,
    dst,
    dstPort,
    query: q ? q[1]! : null,
  };
}

export interface AuditEvent {
  sandboxId: string;
  kind: "pf";
  action: "blocked";
  detail: { uid: number; proto: string; dst: string; dstPort: number | null; iface: string; query: string | null };
}

/** Streams of text lines (e.g. a long-running process's stdout). */
export interface LineSource {
  lines(argv: readonly string[]): AsyncIterable<string>;
}

export interface MonitorOptions {
  /** Maps a UID to the sandbox id it belongs to (null: not one of ours, ignored). */
  sandboxOf: (uid: number) => string | null;
  emit: (e: AuditEvent) => void;
  /** Repeats of the same (uid, proto, dst, port) within this window are dropped (default 10 s). */
  dedupeMs?: number;
  now?: () => number;
}

/** Runs the monitor until the stream ends; returns how many events it emitted. runs: sudo -n tcpdump -l -n -e -ttt -i pflog0 */
export async function runMonitor(source: LineSource, opts: MonitorOptions): Promise<number> {
  const window = opts.dedupeMs ?? 10_000;
  const now = opts.now ?? Date.now;
  const last = new Map<string, number>();
  let n = 0;
  for await (const line of source.lines(monitorCommand())) {
    const e = parsePflogLine(line);
    if (!e || e.uid === null || e.action !== "block") continue;
    const id = opts.sandboxOf(e.uid);
    if (id === null) continue;
    const key = `${e.uid}|${e.proto}|${e.dst}|${e.dstPort}|${e.query}`;
    const t = now();
    const prev = last.get(key);
    if (prev !== undefined && t - prev < window) continue;
    last.set(key, t);
    opts.emit({ sandboxId: id, kind: "pf", action: "blocked", detail: { uid: e.uid, proto: e.proto, dst: e.dst, dstPort: e.dstPort, iface: e.iface, query: e.query } });
    n++;
  }
  return n;
}
