// The push scan's reading, on a thread of its own: the daemon's one event loop serves every sandbox's proxy and bridge,
// and a push's scan is the most CPU one request can ask for (a MiB window of a long line took 450 ms there), so it runs
// here (invariant 14: one sandbox's push does not stall another's requests). The main thread streams `git log -p` in and
// reads the blobs named; this thread reads them (scan.ts) and answers each message once it is read, so at most one chunk
// is ever waiting.
import { isGzip, isZip } from "../core/archive";
import { LogScanner, latin1, scanArchive, scanUnshown, type UnshownBlob } from "./scan";
import { SCAN_GC_BYTES, SCAN_MAX_FINDINGS } from "../core/bounds";
import type { SecretFinding, SecretPattern } from "../core/secrets";

/** A pattern as it crosses to the thread (a RegExp as its source and flags). */
export interface WirePattern {
  id: string;
  description: string;
  source: string;
  flags: string;
}

export type ToScan =
  | { t: "start"; patterns: WirePattern[]; watch: string[] }
  | { t: "log"; bytes: Uint8Array }
  | { t: "blob"; u: UnshownBlob; whole: boolean; bytes: Uint8Array }
  /** The log ended: its last line is read (its blobs named); then the blobs, then `finish`. */
  | { t: "flush" }
  | { t: "finish" };

export type FromScan =
  /** The blobs the log named so far (taken: each is named once). */
  | { t: "ok"; named: { u: UnshownBlob; whole: boolean }[] }
  | { t: "done"; findings: SecretFinding[]; more: number; commits: string[] }
  | { t: "error"; message: string };

declare const self: Worker;

let scanner: LogScanner | null = null;
let patterns: SecretPattern[] = [];
const extra: SecretFinding[] = [];
let extraMore = 0;
const dec = new TextDecoder();
let ended: { findings: SecretFinding[]; more: number } | null = null;
let sinceGc = 0;

const reply = (m: FromScan) => self.postMessage(m);

/** What the log named since the last answer. */
function named(): { u: UnshownBlob; whole: boolean }[] {
  const s = scanner!;
  return [...s.unshown.splice(0).map((u) => ({ u, whole: true })), ...s.archives.splice(0).map((u) => ({ u, whole: false }))];
}

self.onmessage = (ev: MessageEvent<ToScan>) => {
  const m = ev.data;
  try {
    if (m.t === "start") {
      patterns = m.patterns.map((p) => ({ id: p.id, description: p.description, regex: new RegExp(p.source, p.flags) }));
      scanner = new LogScanner(patterns, new Set(m.watch));
      return reply({ t: "ok", named: [] });
    }
    if (m.t === "log") {
      scanner!.write(dec.decode(m.bytes, { stream: true }));
      // What the scan made of each line is garbage at once; left to itself the collector let a push of tens of MiB
      // raise the daemon's memory by hundreds of MiB. A collection per SCAN_GC_BYTES read keeps this thread's heap to a
      // few windows' worth (it pauses this thread only).
      sinceGc += m.bytes.length;
      if (sinceGc >= SCAN_GC_BYTES) {
        sinceGc = 0;
        Bun.gc(true);
      }
      return reply({ t: "ok", named: named() });
    }
    if (m.t === "blob") {
      const found = isGzip(m.bytes) || isZip(m.bytes) ? scanArchive(m.u, m.bytes, patterns) : m.whole ? scanUnshown(m.u, latin1(m.bytes), patterns) : [];
      for (const f of found) {
        if (extra.length < SCAN_MAX_FINDINGS) extra.push(f);
        else extraMore++;
      }
      return reply({ t: "ok", named: [] });
    }
    if (m.t === "flush") {
      scanner!.write(dec.decode());
      ended = scanner!.end();
      return reply({ t: "ok", named: named() });
    }
    const r = ended ?? scanner!.end();
    reply({ t: "done", findings: [...r.findings, ...extra].slice(0, SCAN_MAX_FINDINGS), more: r.more + extraMore + Math.max(0, r.findings.length + extra.length - SCAN_MAX_FINDINGS), commits: [...scanner!.commits] });
  } catch (e) {
    reply({ t: "error", message: (e as Error).message });
  }
};
