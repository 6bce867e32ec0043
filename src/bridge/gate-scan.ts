// The push's scan in the gate: every line, message and tag the pushed commits add, read as git's log streams, on a
// thread of its own (scan-worker.ts); the pure reading is scan.ts's.
import { streamRun } from "../sys/exec";
import { exemptExact, SECRET_PATTERNS, type SecretFinding, type SecretPattern } from "../core/secrets";
import { MAX_ARCHIVE_BYTES } from "../core/archive";
import { SCAN_INLINE_BYTES, SCAN_INLINE_LINES, SCAN_MAX_BLOBS, SCAN_MAX_FINDINGS } from "../core/bounds";
import { SCAN_LOG_ARGS, ScanSession, scanTag, type NamedBlob, type ScanDone } from "./scan";
import type { FromScan, ToScan } from "./scan-worker";
import { gateGit, gateRun, gitEnv, type Gate } from "./gate-git";
import { MissingObject, missingIn } from "./gate";

/** What a push's scan found: at most SCAN_MAX_FINDINGS findings (and how many more), or why it could not be read whole. */
export interface PushScan {
  findings: SecretFinding[];
  more: number;
  /** A bound the push went over (too many blobs to read whole): refused, saying so. */
  over?: string;
  /** Of the ids asked about (`reach`), those the walk showed as a pushed commit or a pushed commit's parent. */
  reached: ReadonlySet<string>;
  /** The paths the pushed commits' diffs touch (the CI-file check's), or null when the walk cannot say them all (ScanDone.paths). */
  paths: readonly string[] | null;
}

/**
 * Scans every line the pushed commits add (merges' own lines and binary files included), every pushed
 * commit's message and headers, and every pushed annotated tag's message, for secret-shaped strings. It is
 * also the completeness check: the walk fails on any pushed commit that is missing (as `rev-list` would)
 * and the diffs on any new tree or changed blob that is, so a pack that leans on objects the gate cannot
 * see is refused; unchanged trees and blobs are the parents' (checked the same way, or known).
 * Bounded (invariant 14): the log is read as it streams and dropped as it is read (a line of many MiB a window at a
 * time: LogScanner), the blobs it asks for are read one at a time as the log names them (each at most
 * MAX_ARCHIVE_BYTES, at most SCAN_MAX_BLOBS a push), and at most SCAN_MAX_FINDINGS findings are kept. The reading runs on
 * a thread of its own (scan-worker.ts), one chunk at a time, so the daemon's event loop serves other sandboxes meanwhile;
 * a log that ends within SCAN_INLINE_BYTES and SCAN_INLINE_LINES and names no blob to read (a push of a commit or a few)
 * is read here at once, which costs less than starting that thread.
 * `reach`: ids to look for as pushed commits or their parents (with one tip pushed, each one found is in its history).
 * runs: git log -p --cc -a -U0 --pretty=raw --full-index --no-textconv --no-ext-diff --no-renames --stdin (in the gate,
 *       read as it streams); git cat-file --batch-check (the types of pushed tips the log did not show);
 *       git cat-file tag <oid> (each annotated tag); git cat-file blob <oid> (only for binary files a merge changed against every parent)
 */
export async function scanNew(g: Gate, shas: string[], tips: string[], hostValues: readonly SecretPattern[] = [], exempt: readonly string[] = [], reach: readonly string[] = []): Promise<PushScan> {
  const stdin = [...shas, ...tips.map((t) => `^${t}`)].join("\n") + "\n";
  const patterns = exemptExact([...SECRET_PATTERNS, ...hostValues], exempt);
  const log = streamRun(g.exec, gateGit([...SCAN_LOG_ARGS]), { cwd: g.paths.repo, env: { ...g.tls?.(), ...gitEnv({ path: g.path, home: g.paths.home }) }, replaceEnv: true, stdin, timeoutMs: 15 * 60_000 });
  const reader = log.stdout.getReader();
  const failed = (end: { exitCode: number; stderr: string }) =>
    // A pack that leans on an object the gate cannot see (another sandbox's) is refused by name, not with git's words.
    missingIn(end.stderr) ?? new Error(`git log (the scan) exited ${end.exitCode}: ${end.stderr.trim().split("\n").slice(-3).join(" | ")}`);
  // The log's start, held until it ends (read here) or goes past the inline bounds (read on the thread).
  const early: Uint8Array[] = [];
  let ended = false;
  try {
    let bytes = 0;
    let lines = 0;
    while (bytes <= SCAN_INLINE_BYTES && lines <= SCAN_INLINE_LINES) {
      const { done, value } = await reader.read();
      if (done) {
        ended = true;
        break;
      }
      early.push(value);
      bytes += value.length;
      for (let k = value.indexOf(10); k !== -1; k = value.indexOf(10, k + 1)) lines++;
    }
  } catch (e) {
    reader.releaseLock();
    throw e;
  }
  if (ended) {
    const session = new ScanSession(patterns, shas, reach);
    const named = early.flatMap((c) => session.log(c));
    named.push(...session.flush());
    // A blob to read whole (an archive, a merge's binary result) is the thread's work, with the log read again there.
    if (named.length === 0) {
      reader.releaseLock();
      const end = await log.done;
      if (end.exitCode !== 0) throw failed(end);
      return done(g, shas, session.finish());
    }
  }
  const thread = new ScanThread();
  let blobs = 0;
  let over: string | undefined;
  const seen = new Set<string>();
  // Rare (a merge that changed a binary file against every parent; a gzip or zip file): one read per blob, as bytes, as
  // soon as the log names it (so no list grows), scanned on the thread. What is not an archive is scanned as text.
  const readNamed = async (named: NamedBlob[]) => {
    for (const { u, whole } of named) {
      if (over !== undefined) return;
      const key = `${whole ? "w" : "a"}${u.blob}`;
      if (seen.has(key) || (!whole && seen.has(`w${u.blob}`))) continue;
      if (seen.size < 4 * SCAN_MAX_BLOBS) seen.add(key);
      if (++blobs > SCAN_MAX_BLOBS) {
        over = `the commits hold more than ${SCAN_MAX_BLOBS} archives (or binary files a merge changed) to read whole; push fewer at a time`;
        return;
      }
      const bytes = await readBlob(g, u.blob, MAX_ARCHIVE_BYTES);
      if (bytes === null) continue; // over the bound: not unpacked (its text lines were scanned in the diff)
      await thread.ask({ t: "blob", u, whole, bytes });
    }
  };
  try {
    await thread.ask({ t: "start", patterns: patterns.map((p) => ({ id: p.id, description: p.description, source: p.regex.source, flags: p.regex.flags })), watch: shas, reach: [...reach] });
    try {
      for (const value of early) {
        await readNamed((await thread.ask({ t: "log", bytes: value })).named);
        if (over !== undefined) break;
      }
      while (!ended && over === undefined) {
        const { done, value } = await reader.read();
        if (done) break;
        // One chunk at a time: the next is read once the thread has read this one (git waits meanwhile).
        await readNamed((await thread.ask({ t: "log", bytes: value })).named);
      }
    } finally {
      if (over !== undefined) void reader.cancel().catch(() => undefined);
      reader.releaseLock();
    }
    const end = await log.done;
    if (over !== undefined) return { findings: [], more: 0, over, reached: new Set(), paths: null };
    if (end.exitCode !== 0) throw failed(end);
    await readNamed((await thread.ask({ t: "flush" })).named);
    if (over !== undefined) return { findings: [], more: 0, over, reached: new Set(), paths: null };
    const { t: _, ...r } = await thread.ask({ t: "finish" });
    return done(g, shas, r);
  } finally {
    thread.close();
  }
}

/**
 * The scan's end: a pushed tip the log did not show as a commit is a tag (log shows what it points at) or a commit
 * already known; only those are looked at (scanTags), so a push of new commits costs no extra process.
 */
async function done(g: Gate, shas: string[], r: ScanDone): Promise<PushScan> {
  const commits = new Set(r.commits);
  const tagFindings = await scanTags(g, shas.filter((s) => !commits.has(s)));
  const all = [...r.findings, ...tagFindings];
  return { findings: all.slice(0, SCAN_MAX_FINDINGS), more: r.more + Math.max(0, all.length - SCAN_MAX_FINDINGS), reached: new Set(r.reached), paths: r.paths };
}

/** The scan's thread (scan-worker.ts): one message at a time, each answered once read; its failure fails the scan. */
class ScanThread {
  private readonly worker = new Worker(new URL("./scan-worker.ts", import.meta.url).href);
  private pending: { resolve: (m: FromScan) => void; reject: (e: Error) => void } | null = null;
  private failed: Error | null = null;

  constructor() {
    this.worker.onmessage = (ev: MessageEvent<FromScan>) => {
      const p = this.pending;
      this.pending = null;
      if (ev.data.t === "error") p?.reject(new Error(`the push scan failed: ${ev.data.message}`));
      else p?.resolve(ev.data);
    };
    this.worker.onerror = (ev: ErrorEvent) => {
      this.failed = new Error(`the push scan's thread failed: ${ev.message}`);
      this.pending?.reject(this.failed);
      this.pending = null;
    };
  }

  ask(m: Extract<ToScan, { t: "finish" }>): Promise<Extract<FromScan, { t: "done" }>>;
  ask(m: Exclude<ToScan, { t: "finish" }>): Promise<Extract<FromScan, { t: "ok" }>>;
  ask(m: ToScan): Promise<FromScan> {
    if (this.failed) return Promise.reject(this.failed);
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.worker.postMessage(m);
    });
  }

  close(): void {
    this.worker.terminate();
  }
}

/**
 * A blob's bytes, or null when it is larger than `max`.
 * runs: git cat-file -s <oid>; git cat-file blob <oid> (in the gate)
 */
async function readBlob(g: Gate, blob: string, max: number): Promise<Uint8Array | null> {
  const size = Number((await gateRun(g, ["cat-file", "-s", blob])).stdout.trim());
  if (!(size <= max)) return null;
  const r = streamRun(g.exec, gateGit(["cat-file", "blob", blob]), { cwd: g.paths.repo, env: { ...g.tls?.(), ...gitEnv({ path: g.path, home: g.paths.home }) }, replaceEnv: true, timeoutMs: 60_000 });
  const bytes = new Uint8Array(await new Response(r.stdout).arrayBuffer());
  const done = await r.done;
  if (done.exitCode !== 0) throw new Error(`git cat-file blob ${blob} exited ${done.exitCode}: ${done.stderr.trim()}`);
  return bytes;
}

/** How deep a chain of tags pointing at tags the gate follows before it refuses the push. */
const MAX_TAG_DEPTH = 8;

/**
 * The messages of the annotated tags among the pushed tips, and of any tag they point at (the commits
 * they lead to are in the log walk).
 * runs: git cat-file --batch-check=%(objectname) %(objecttype) (in the gate); git cat-file tag <oid> (each tag)
 */
export async function scanTags(g: Gate, shas: string[]): Promise<SecretFinding[]> {
  if (shas.length === 0) return [];
  const r = await gateRun(g, ["cat-file", "--batch-check=%(objectname) %(objecttype)"], { stdin: shas.join("\n") + "\n" });
  // The log skips a pushed tip it cannot find (--ignore-missing, so a known tip the gate lacks cuts nothing): here it is
  // refused.
  const gone = /^([0-9a-f]{40,64}) missing$/m.exec(r.stdout);
  if (gone) throw new MissingObject("object", gone[1]!);
  let tags = r.stdout.split("\n").flatMap((l) => (/^[0-9a-f]{40,64} tag$/.test(l) ? [l.slice(0, l.indexOf(" "))] : []));
  const findings: SecretFinding[] = [];
  const seen = new Set<string>();
  for (let depth = 0; tags.length > 0; depth++) {
    if (depth >= MAX_TAG_DEPTH) throw new Error(`a chain of more than ${MAX_TAG_DEPTH} tags pointing at tags`);
    const next: string[] = [];
    const read = await Promise.all(tags.map((t) => gateRun(g, ["cat-file", "tag", t])));
    tags.forEach((t, i) => {
      seen.add(t);
      const { tag, findings: f } = scanTag(t, read[i]!.stdout);
      findings.push(...f);
      if (tag.type === "tag" && /^[0-9a-f]{40,64}$/.test(tag.object) && !seen.has(tag.object)) next.push(tag.object);
    });
    tags = [...new Set(next)];
  }
  return findings;
}
