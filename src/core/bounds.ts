// Every bound on what one sandbox can make the daemon store, hold open, buffer or compute (invariant 14, bounded), in one
// place, with the pure helpers that apply them. Each is per sandbox and enforced before the work is done; what goes over
// one is refused with a message that says which bound, and that refusal's own audit row is bounded and budgeted too.
//
// Bounds kept beside the code they guard (each named here so this file is the list):
//   proxy/http1.ts        MAX_HEAD                 16 KiB: a request or response head, a trailer section
//   core/transparent.ts   MAX_NAMES                16,384 names a sandbox's DNS stub may give out (then 507)
//   store/store.ts        MAX_PENDING              100 pending approvals per sandbox (then only audited)
//   proxy/listener-handoff.ts  MAX_PENDING         8 handoffs in progress on listen.sock; one listener per slot
//   shims/exec-frames.ts  MAX_FRAME                1 MiB: one exec-agent frame
//   shims/dns.ts          MAX_QUERY_BYTES          4 KiB: one DNS query
//   core/secrets.ts       MAX_DECODED              1 MiB of decoded text per scanned line (here: per window)
//   core/archive.ts       the archive bounds       what a gzip or zip blob may unpack to

// ── audit rows ─────────────────────────────────────────────────────────────

/** Bytes of one audit row's detail (as JSON), whatever wrote it: longer values are cut, and said to be. */
export const AUDIT_DETAIL_MAX = 4096;
/** Rows a sandbox's traffic may write at once (a burst), then AUDIT_ROWS_PER_SECOND; the rest are counted, not written. */
export const AUDIT_ROWS_BURST = 200;
export const AUDIT_ROWS_PER_SECOND = 1;
/**
 * The audit kinds a sandbox's own traffic writes (proxy decisions and asks, bridge commands, LLM requests, ref sync,
 * limits it hit, its services' crashes and health turns): budgeted per sandbox. What a person did (lifecycle, allowlist, sessions, the daemon's own) never is.
 */
export const BUDGETED_AUDIT_KINDS: ReadonlySet<string> = new Set(["egress", "guard", "limit", "service"]);
/** Distinct actions a sandbox's held-back count names (the rest are counted under "other"). */
export const AUDIT_HELD_ACTIONS_MAX = 16;

// ── the bridge ─────────────────────────────────────────────────────────────

/** Requests one sandbox may have at the bridge at once (one runs, the rest wait their turn); more are refused (429). */
export const BRIDGE_MAX_REQUESTS = 8;
/** Bytes of a bridge request's first line (its JSON header: argv, cwd, …). */
export const BRIDGE_MAX_HEADER = 1024 * 1024;
/** Bytes of a push's pack (streamed into `index-pack`, never held). */
export const BRIDGE_MAX_PACK = 512 * 1024 * 1024;
/** Bytes of a file the sandbox names for gh (`--body-file`), read once by descriptor. */
export const BRIDGE_MAX_BODY_FILE = 1024 * 1024;

// ── the push scan ──────────────────────────────────────────────────────────

/**
 * The scan reads `git log -p` as it streams; a line longer than this is scanned in windows of this many characters, each
 * overlapping the one before by SCAN_OVERLAP, so nothing longer than a window is ever held and a secret (or its
 * encoding) up to SCAN_OVERLAP long that straddles a boundary is whole in one window. A window is what one line's
 * decodings covered before (core/secrets.ts MAX_DECODED), so a line up to it is read exactly as a whole line was.
 */
export const SCAN_WINDOW = 1024 * 1024;
export const SCAN_OVERLAP = 64 * 1024;
/** Bytes of `git log -p` the scan reads between two garbage collections (its own garbage, collected as it goes). */
export const SCAN_GC_BYTES = 8 * 1024 * 1024;
/**
 * A push whose whole `git log -p` is at most this many bytes and lines (a commit or a few, the push agents make all day)
 * is read on the bridge's own thread once the log has ended, instead of starting the scan's thread (whose start cost a
 * one-commit push more than the rest of its scan). Its worst case, lines built to be slow to decode, is a few ms of the
 * daemon's event loop (measured: 16 KiB of 8-byte `%41%41` lines 10 ms on a loaded 2-core machine; these bounds
 * allow at most a quarter of that many lines).
 */
export const SCAN_INLINE_BYTES = 16 * 1024;
export const SCAN_INLINE_LINES = 512;
/** Findings one push's scan keeps (a refusal names these, and how many more there were). */
export const SCAN_MAX_FINDINGS = 50;
/** Blobs one push's scan reads whole (gzip/zip members, merges' binary results); a push with more is refused. */
export const SCAN_MAX_BLOBS = 2000;
/**
 * Paths one push's scan keeps of those its diffs touch (for the CI-file check, which then needs no log of its own); past
 * this many the check reads them itself, with `git log --name-only`.
 */
export const SCAN_MAX_PATHS = 4096;

// ── the proxy socket and the sandbox's port ────────────────────────────────

/** Connections one sandbox may have open to its proxy at once (both paths, tunnels included); more are refused (503). */
export const PROXY_MAX_CONNECTIONS = 256;
/**
 * Requests (and transparent connections) of one sandbox its proxy starts work on: PROXY_REQUESTS_BURST at once, then
 * PROXY_REQUESTS_PER_SECOND; the rest wait their turn, in order (each on its own connection, so at most
 * PROXY_MAX_CONNECTIONS wait). A refused request costs the daemon's one thread about 0.3 to 0.5 ms (measured in the
 * soak): a sandbox flooding it takes at most a quarter of it, a burst of it at most about 60 ms, and another sandbox's requests are not
 * queued behind its flood. No ordinary client goes faster (tunnels count once, whatever they carry).
 */
export const PROXY_REQUESTS_BURST = 200;
export const PROXY_REQUESTS_PER_SECOND = 500;
/** Idle keep-alive connections to servers one sandbox's plain HTTP leaves in its proxy's pool, in all (16 per address). */
export const UPSTREAM_MAX_IDLE = 64;
/** `/sbx/transparent` long polls held at once per sandbox (its forwarder needs one); more are answered at once. */
export const PORTS_MAX_HELD = 4;
/** `/sbx/egress/approvals/ID?wait=S` long polls held at once per sandbox; more are refused (429). */
export const DESK_MAX_WAITS = 4;
/** Seconds one such wait may be held (the shim asks again until its own deadline). */
export const DESK_MAX_WAIT_S = 60;
/** Bytes of an ask's body. */
export const DESK_MAX_BODY = 8 * 1024;

// ── the exec agent socket ──────────────────────────────────────────────────

/** Connections to a sandbox's agent.sock at once (its agent, and one reconnecting); more are closed at once. */
export const AGENT_MAX_CONNECTIONS = 4;
/** Bytes a connection may send before its hello, and how long it has to say it. */
export const AGENT_HELLO_MAX = 4096;
export const AGENT_HELLO_MS = 10_000;

// ── the live feed, the dashboard, the daemon's log ─────────────────────────

/** Feed events one sandbox's traffic may publish at once, then FEED_EVENTS_PER_SECOND (a new approval always goes). */
export const FEED_EVENTS_BURST = 100;
export const FEED_EVENTS_PER_SECOND = 20;
/** Characters of one string in a feed event, and words of a bridge command shown. */
export const FEED_TEXT_MAX = 1024;
export const FEED_COMMAND_MAX = 64;
/** Events one dashboard connection may have waiting to be written; past that it is closed (the page reconnects). */
export const SSE_MAX_QUEUED = 256;
/** Log lines one sandbox's guards may write at once, then LOG_LINES_PER_SECOND; the rest are counted. */
export const LOG_LINES_BURST = 50;
export const LOG_LINES_PER_SECOND = 1;

// ── pending approvals ──────────────────────────────────────────────────────

/** Characters of a pending approval's subject (`host`) and of its reason. */
export const APPROVAL_HOST_MAX = 300;
export const APPROVAL_REASON_MAX = 600;

// ── helpers ────────────────────────────────────────────────────────────────

/** Pure: at most `max` characters of `s`; a cut one ends saying how much was cut. */
export function cutText(s: string, max: number): string {
  if (s.length <= max) return s;
  let note = `…[+${s.length - max} chars]`;
  // The note takes room too: say what is really cut (its own length can change by a digit once).
  for (let i = 0; i < 2; i++) note = `…[+${s.length - Math.max(0, max - note.length)} chars]`;
  return s.slice(0, Math.max(0, max - note.length)) + note;
}

interface Caps {
  text: number;
  items: number;
  depth: number;
}

/** Pure: a copy of `v` with every string, array and object within `caps` (what was cut is said in place). */
function capValue(v: unknown, caps: Caps, depth = 0): unknown {
  if (typeof v === "string") return cutText(v, caps.text);
  if (v === null || typeof v !== "object") return v;
  if (depth >= caps.depth) return Array.isArray(v) ? `[${v.length} items]` : "{…}";
  if (Array.isArray(v)) {
    const out = v.slice(0, caps.items).map((x) => capValue(x, caps, depth + 1));
    if (v.length > caps.items) out.push(`…[+${v.length - caps.items} more]`);
    return out;
  }
  const out: Record<string, unknown> = {};
  let n = 0;
  let keys = 0;
  for (const k in v as Record<string, unknown>) {
    if (!Object.prototype.hasOwnProperty.call(v, k)) continue;
    keys++;
    if (n >= caps.items) continue;
    out[cutText(k, 64)] = capValue((v as Record<string, unknown>)[k], caps, depth + 1);
    n++;
  }
  if (keys > n) out["…"] = `+${keys - n} more keys`;
  return out;
}

const SHRINK: readonly Caps[] = [
  { text: 1024, items: 64, depth: 6 },
  { text: 256, items: 32, depth: 4 },
  { text: 64, items: 16, depth: 3 },
  { text: 16, items: 8, depth: 2 },
];

/**
 * Pure: an audit row's detail within `max` bytes of JSON: as it is when it fits, else with strings, lists and depth cut
 * step by step (each cut said in place), else a note of its keys. Never reads more of a huge value than the caps.
 */
export function boundDetail(detail: Record<string, unknown>, max = AUDIT_DETAIL_MAX): Record<string, unknown> {
  for (const caps of SHRINK) {
    const d = capValue(detail, caps) as Record<string, unknown>;
    const bytes = byteLength(JSON.stringify(d));
    if (bytes <= max) return d;
  }
  const keys: string[] = [];
  for (const k in detail) if (keys.length < 16) keys.push(cutText(k, 64));
  return { cut: `detail over ${max} bytes`, keys };
}

/** Pure: UTF-8 length of a string without encoding it. */
export function byteLength(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/**
 * A token bucket per key (a sandbox): `burst` at once, refilled at `perSecond`. Pure: the clock is the caller's. Keys
 * idle long enough to be full again are forgotten, so its state stays bounded by the keys active lately.
 */
export class Budget {
  private readonly buckets = new Map<number, { tokens: number; at: number }>();
  constructor(
    readonly burst: number,
    readonly perSecond: number,
  ) {}

  /** Whether one more is allowed for `key` at `now` (ms), taking it if so. */
  take(key: number, now: number): boolean {
    let b = this.buckets.get(key);
    if (b === undefined) {
      b = { tokens: this.burst, at: now };
      this.buckets.set(key, b);
      if (this.buckets.size > 1024) this.forget(now);
    } else {
      b.tokens = Math.min(this.burst, b.tokens + (Math.max(0, now - b.at) / 1000) * this.perSecond);
      b.at = now;
    }
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  private forget(now: number): void {
    const full = (this.burst / Math.max(this.perSecond, 1e-9)) * 1000;
    for (const [k, b] of this.buckets) if (now - b.at >= full) this.buckets.delete(k);
  }
}

/**
 * Paces work in order: `burst` may start at once, then one every 1/perSecond s. `delay` reserves the next turn and says
 * how long to wait for it (0: now). Pure: the clock is the caller's; its state is one number.
 */
export class Pacer {
  private next = Number.NEGATIVE_INFINITY;
  constructor(
    readonly burst: number,
    readonly perSecond: number,
  ) {}

  delay(now: number): number {
    const step = 1000 / this.perSecond;
    const slot = Math.max(this.next, now - (this.burst - 1) * step);
    this.next = slot + step;
    return Math.max(0, slot - now);
  }
}
