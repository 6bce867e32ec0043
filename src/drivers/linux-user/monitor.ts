// Reads sbx's firewall log lines back from the kernel log (`dmesg`) into audit events of blocked raw connections.
import type { Exec } from "../../sys/exec";

/** A packet the per-UID firewall rejected, as the kernel logged it. */
export interface BlockEvent {
  /** Seconds since boot, from the kernel timestamp (the cursor between polls). */
  ts: number;
  uid: number;
  family: "ipv4" | "ipv6";
  proto: string;
  src: string;
  dst: string;
  sport: number | null;
  dport: number | null;
  /** Output interface (`lo`, `eth0`, …). */
  out: string;
}

const LINE = /^(?:<\d+>)?\[\s*(\d+\.\d+)\]\s+sbx-block uid=(\d+) (.*)$/;

function field(rest: string, key: string): string | undefined {
  const m = new RegExp(`(?:^|\\s)${key}=(\\S*)`).exec(rest);
  return m ? m[1] : undefined;
}

/**
 * Parses one line of `dmesg --raw` (`<4>[  451.76] sbx-block uid=999 IN= OUT=eth0 SRC=… DST=… PROTO=TCP SPT=… DPT=…`);
 * null for any line that is not one of sbx's. Unknown or missing fields are kept empty, never guessed.
 */
export function parseBlockLine(line: string): BlockEvent | null {
  const m = LINE.exec(line.trimEnd());
  if (!m) return null;
  const rest = m[3]!;
  const src = field(rest, "SRC") ?? "";
  const dst = field(rest, "DST") ?? "";
  const num = (k: string) => {
    const v = field(rest, k);
    return v !== undefined && /^\d+$/.test(v) ? Number(v) : null;
  };
  return {
    ts: Number(m[1]),
    uid: Number(m[2]),
    family: src.includes(":") || dst.includes(":") ? "ipv6" : "ipv4",
    proto: (field(rest, "PROTO") ?? "").toLowerCase(),
    src,
    dst,
    sport: num("SPT"),
    dport: num("DPT"),
    out: field(rest, "OUT") ?? "",
  };
}

/** The audit entry a block event becomes (`store.audit({sandboxId, ...auditOf(e)})`). */
export function auditOf(e: BlockEvent): { kind: string; action: string; detail: Record<string, unknown> } {
  const where = e.dport !== null ? `${e.dst}:${e.dport}` : e.dst;
  return {
    kind: "egress",
    action: "blocked-raw",
    detail: { uid: e.uid, proto: e.proto, family: e.family, dst: e.dst, dport: e.dport, src: e.src, out: e.out, summary: `${e.proto} ${where}` },
  };
}

/**
 * Polls the kernel ring buffer and yields only lines newer than the last poll. `dmesg` is the one source that
 * works everywhere sbx runs (journald may be absent; `/dev/kmsg` is a file sbx would have to stream itself).
 * Lines that share the cursor's timestamp are deduplicated by content so nothing is reported twice.
 */
export class KernelLogMonitor {
  private lastTs = -1;
  private seenAtLast = new Set<string>();

  constructor(
    private readonly exec: Exec,
    /** Only events of these UIDs are returned (null: all of sbx's). */
    private readonly uids: (() => ReadonlySet<number>) | null = null,
  ) {}

  /** Starts from the end of the current log, so only what happens from now on is reported. */
  async skipExisting(): Promise<void> {
    await this.poll();
  }

  /** runs: dmesg --raw --kernel */
  async poll(): Promise<BlockEvent[]> {
    const r = await this.exec.run(["dmesg", "--raw", "--kernel"], { check: false, timeoutMs: 10_000 });
    if (r.exitCode !== 0) return [];
    const fresh: BlockEvent[] = [];
    const lines = r.stdout.split("\n");
    let maxTs = this.lastTs;
    const atMax = new Set<string>();
    for (const line of lines) {
      const e = parseBlockLine(line);
      if (!e) continue;
      if (e.ts < this.lastTs) continue;
      if (e.ts === this.lastTs && this.seenAtLast.has(line)) continue;
      if (e.ts > maxTs) {
        maxTs = e.ts;
        atMax.clear();
      }
      if (e.ts === maxTs) atMax.add(line);
      const want = this.uids?.();
      if (!want || want.has(e.uid)) fresh.push(e);
    }
    if (maxTs > this.lastTs) {
      this.lastTs = maxTs;
      this.seenAtLast = atMax;
    } else for (const l of atMax) this.seenAtLast.add(l);
    return fresh;
  }
}
