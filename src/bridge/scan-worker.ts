// The push scan's reading, on a thread of its own: the daemon's one event loop serves every sandbox's proxy and bridge,
// and a push's scan is the most CPU one request can ask for (a MiB window of a long line took 450 ms there), so it runs
// here (invariant 14: one sandbox's push does not stall another's requests). The main thread streams `git log -p` in and
// reads the blobs named; this thread reads them (scan.ts) and answers each message once it is read, so at most one chunk
// is ever waiting.
import { ScanSession, type NamedBlob, type ScanDone, type UnshownBlob } from "./scan";
import { SCAN_GC_BYTES } from "../core/bounds";

/** A pattern as it crosses to the thread (a RegExp as its source and flags). */
export interface WirePattern {
  id: string;
  description: string;
  source: string;
  flags: string;
}

export type ToScan =
  /** `reach`: ids to look for as commits or parents (ScanDone.reached). */
  | { t: "start"; patterns: WirePattern[]; watch: string[]; reach: string[] }
  | { t: "log"; bytes: Uint8Array }
  | { t: "blob"; u: UnshownBlob; whole: boolean; bytes: Uint8Array }
  /** The log ended: its last line is read (its blobs named); then the blobs, then `finish`. */
  | { t: "flush" }
  | { t: "finish" };

export type FromScan =
  /** The blobs the log named so far (taken: each is named once). */
  | { t: "ok"; named: NamedBlob[] }
  | ({ t: "done" } & ScanDone)
  | { t: "error"; message: string };

declare const self: Worker;

let session: ScanSession | null = null;
let sinceGc = 0;

const reply = (m: FromScan) => self.postMessage(m);

self.onmessage = (ev: MessageEvent<ToScan>) => {
  const m = ev.data;
  try {
    if (m.t === "start") {
      session = new ScanSession(m.patterns.map((p) => ({ id: p.id, description: p.description, regex: new RegExp(p.source, p.flags) })), m.watch, m.reach);
      return reply({ t: "ok", named: [] });
    }
    if (m.t === "log") {
      const named = session!.log(m.bytes);
      // What the scan made of each line is garbage at once; left to itself the collector let a push of tens of MiB
      // raise the daemon's memory by hundreds of MiB. A collection per SCAN_GC_BYTES read keeps this thread's heap to a
      // few windows' worth (it pauses this thread only).
      sinceGc += m.bytes.length;
      if (sinceGc >= SCAN_GC_BYTES) {
        sinceGc = 0;
        Bun.gc(true);
      }
      return reply({ t: "ok", named });
    }
    if (m.t === "blob") {
      session!.blob(m.u, m.whole, m.bytes);
      return reply({ t: "ok", named: [] });
    }
    if (m.t === "flush") return reply({ t: "ok", named: session!.flush() });
    reply({ t: "done", ...session!.finish() });
  } catch (e) {
    reply({ t: "error", message: (e as Error).message });
  }
};
