// sbx logs: the audit log (bridge commands, proxy decisions, blocked attempts, sync and session events), filtered, optionally
// followed, or exported whole as JSON lines (sbx's own records, or OCSF events) for a SIEM or a file.
import { realpathSync } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import { EXPORT_FORMATS, exportLine, type ExportFormat } from "../../core/audit-export";
import { ExitCode, SbxError } from "../../core/errors";
import type { DaemonClient } from "../../client/client";
import type { AuditView, LogsQuery } from "../../daemon/protocol";
import { VERSION } from "../../version";
import type { CliContext, Verb } from "../verb";

// Audit details carry what a sandbox chose (hosts, commands, ref names): each value is shown, never sent.
import { jsonText, printable } from "../../core/printable";
import { isoTime, isoTimes } from "../../core/time";

/** Pure: a detail value as a person reads it: bare when simple, quoted when it holds spaces, lists joined. */
function value(v: unknown): string {
  if (v === null || v === undefined) return "-";
  const t = Array.isArray(v)
    ? printable(v.map((x) => (typeof x === "string" ? x : JSON.stringify(x))).join(" "))
    : typeof v === "object"
      ? printable(JSON.stringify(v))
      : printable(String(v));
  return /\s/.test(t) || t === "" ? JSON.stringify(t) : t;
}

/**
 * Pure: one human line per entry: time, sandbox, kind, action, then the details as key=value. The time is ISO 8601
 * (UTC) on a terminal too: a log is read back and followed, where "3 min ago" would be stale as soon as printed.
 */
export function formatAudit(e: AuditView): string {
  const ts = isoTime(e.ts);
  const detail = Object.entries(e.detail)
    .filter(([, v]) => v !== null && v !== undefined && v !== "")
    .map(([k, v]) => `${printable(k)}=${value(v)}`)
    .join(" ");
  return `${ts}  ${printable(e.sandbox ?? "-").padEnd(12)} ${printable(e.kind).padEnd(9)} ${printable(e.action)}${detail ? `  ${detail}` : ""}`;
}

/** Pure: `--since` as epoch ms: a duration back from now (30s, 10m, 2h, 1d) or a date/time (2026-11-24, …T10:00Z). */
export function parseSince(text: string, now: number): number {
  const d = /^(\d+)\s*(s|m|h|d)$/.exec(text.trim());
  if (d) return now - Number(d[1]) * { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[d[2] as "s" | "m" | "h" | "d"];
  const t = Date.parse(text);
  if (!Number.isNaN(t)) return t;
  throw new SbxError("usage", `--since ${text}: not a duration or a time`, { hint: "e.g. --since 10m, --since 2h, --since 1d, or --since 2026-11-24T10:00Z" });
}

/** Pure: `--export FORMAT`, or undefined without it; anything else is refused. */
export function exportFormat(v: unknown): ExportFormat | undefined {
  if (v === undefined) return undefined;
  if (typeof v === "string" && (EXPORT_FORMATS as readonly string[]).includes(v)) return v as ExportFormat;
  throw new SbxError("usage", `--export ${String(v)}: not a format sbx writes`, { hint: `Give one of: ${EXPORT_FORMATS.join(", ")} (e.g. sbx logs --export ocsf --since 1d > audit.ocsf.jsonl).` });
}

/** Entries asked of the daemon at once when a whole log is exported or followed: memory stays this page's, not the log's. */
const PAGE = 500;
/** How long one follow request waits on the daemon for a new entry. */
const FOLLOW_WAIT_MS = 25_000;

/** Why printing stopped before it ended on its own: Ctrl-C, a TERM, or stdout gone (its reader closed, or it failed). */
type Stop = { why: "signal"; code: number } | { why: "output"; error: unknown };

interface Stopper {
  /** Aborted when printing must stop, its reason the Stop. */
  signal: AbortSignal;
  now(): Stop | null;
  off(): void;
}

/**
 * When printing must stop: SIGINT (130) or SIGTERM (143), taken here so the entry being written is written whole, or
 * stdout gone. `off` removes the handlers again.
 */
function stopWhen(ctx: CliContext): Stopper {
  const ctl = new AbortController();
  const set = (s: Stop) => {
    if (!ctl.signal.aborted) ctl.abort(s);
  };
  const onInt = () => set({ why: "signal", code: 130 });
  const onTerm = () => set({ why: "signal", code: 143 });
  const gone = ctx.render.stdoutGone;
  const onGone = () => set({ why: "output", error: gone.reason });
  if (gone.aborted) onGone();
  else gone.addEventListener("abort", onGone, { once: true });
  process.on("SIGINT", onInt);
  process.on("SIGTERM", onTerm);
  return {
    signal: ctl.signal,
    now: () => (ctl.signal.aborted ? (ctl.signal.reason as Stop) : null),
    off() {
      process.off("SIGINT", onInt);
      process.off("SIGTERM", onTerm);
      gone.removeEventListener("abort", onGone);
    },
  };
}

/**
 * `p`'s value, or null once `signal` aborts first (p is then left to the exit). A listener added for this one wait and
 * removed after it: racing each page against one promise that never settles kept every page alive through it (a
 * 60,000-row export grew to 270 MB).
 */
function unlessStopped<T>(p: Promise<T>, signal: AbortSignal): Promise<T | null> {
  if (signal.aborted) {
    p.catch(() => undefined);
    return Promise.resolve(null);
  }
  return new Promise<T | null>((resolve, reject) => {
    const onAbort = () => {
      p.catch(() => undefined);
      resolve(null);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

/** The exit code for how printing stopped: a signal's own, 0 for a reader that closed, 74 for output that failed. */
function stopCode(s: Stop): number {
  if (s.why === "signal") return s.code;
  const code = (s.error as NodeJS.ErrnoException | undefined)?.code;
  if (code === "EPIPE") return ExitCode.ok;
  throw new SbxError("unavailable", `could not write the output: ${(s.error as Error | undefined)?.message ?? String(s.error)}`, { exitCode: ExitCode.ioErr, hint: "Check where the output goes (a full disk, a closed terminal)." });
}

interface Reader {
  client: DaemonClient;
  base: LogsQuery;
  print(e: AuditView): void;
  /** Resolves once what was printed is out. */
  drained(): Promise<void>;
  stop: Stopper;
}

/**
 * One request to the daemon, given up (left to the exit) when printing must stop first. It is made only once what was
 * printed before is out: a reader slower than the daemon holds the next page back, never a log's worth in memory.
 */
async function ask(r: Reader, q: LogsQuery): Promise<{ entries: AuditView[]; cursor: number } | null> {
  await unlessStopped(r.drained(), r.stop.signal);
  if (r.stop.now()) return null;
  return unlessStopped(r.client.logs({ ...r.base, ...q }), r.stop.signal);
}

/** Every matching entry, oldest first, a page at a time; the cursor after the last, or null when stopped. */
async function pageAll(r: Reader): Promise<number | null> {
  let cursor = 0;
  for (;;) {
    const page = await ask(r, { after: cursor, limit: PAGE });
    if (page === null) return null;
    for (const e of page.entries) {
      if (r.stop.now()) return null;
      r.print(e);
    }
    cursor = page.cursor;
    if (page.entries.length < PAGE) return cursor;
  }
}

/** New entries as they come, until printing must stop; its exit code. */
async function follow(r: Reader, from: number): Promise<number> {
  let cursor = from;
  for (;;) {
    const next = await ask(r, { after: cursor, limit: PAGE, waitMs: FOLLOW_WAIT_MS });
    if (next === null) break;
    for (const e of next.entries) {
      if (r.stop.now()) break;
      r.print(e);
    }
    cursor = next.cursor;
    if (r.stop.now()) break;
  }
  return stopCode(r.stop.now()!);
}

export const logs: Verb = {
  name: "logs",
  summary: "show the audit log, or export it (JSON lines, OCSF)",
  declare(cmd: Command) {
    cmd
      .option("--sandbox <name>", "only this sandbox")
      .option("--repo <path>", "the repo of --sandbox when several repos have one of that name")
      .option("--kind <kind>", "only this kind: egress, allowlist, bridge, guard, lifecycle, session, daemon, limit, …")
      .option("--since <when>", "only entries since then: a duration back (30s, 10m, 2h, 1d) or a time (2026-11-24T10:00Z)")
      .option("--follow", "keep printing new entries (Ctrl-C, or the reader closing the pipe, ends it)")
      .option("--json", "print JSON lines")
      .option("--export <format>", `every matching entry as one JSON object a line: ${EXPORT_FORMATS.join(" or ")}`)
      .option("-n, --lines <n>", "how many recent entries to show first (default 100; with --export, every entry)")
      .addHelpText(
        "after",
        `
Export (a SIEM, a file that outlives the machine): one JSON object a line, oldest first; the filters above apply.
  jsonl  sbx's own record: id, time (ISO 8601 UTC), ts (epoch ms), sandboxId, sandbox, kind, action, detail
  ocsf   OCSF 1.8.0 events: egress connections as Network Activity (4001), the HTTP requests sbx read as
         HTTP Activity (4002), allowlist and bridge approvals as User Access Management (3005), the rest as
         Base Event (0) with the entry in "unmapped"
Secrets appear by name, never by value. A host or path a sandbox chose is inside a JSON string: it cannot break a line.

  sbx logs --export ocsf --since 1d > audit.ocsf.jsonl
  sbx logs --export jsonl --kind egress --follow | your-shipper
  sbx logs --export ocsf --follow | head -n 5      # ends quietly when head has its lines`,
      );
  },
  async run(ctx, _args, opts) {
    const sandbox = typeof opts.sandbox === "string" ? opts.sandbox : undefined;
    if (sandbox === undefined && opts.repo !== undefined) {
      throw new SbxError("usage", "--repo says which repo's sandbox --sandbox names; without --sandbox it would change nothing", { hint: "e.g. sbx logs --sandbox demo --repo ~/src/app (without either: every sandbox's entries)." });
    }
    const format = exportFormat(opts.export);
    if (format && opts.json) throw new SbxError("usage", "--json and --export both say how to print: give one", { hint: "--export jsonl is the stable record for scripts and SIEMs; --json is what `sbx logs` shows, as JSON." });
    const repo = typeof opts.repo === "string" ? realpathSync(resolve(ctx.cwd, opts.repo)) : undefined;
    // An export line is written as it is: `jsonText` leaves no control in it to show (terminalLine's walk over every
    // character cost a 60,000-row export 13 of its 16 s).
    const print = format
      ? (e: AuditView) => ctx.render.write("stdout", `${exportLine(format, e, VERSION)}\n`)
      : (e: AuditView) => ctx.render.out(opts.json ? jsonText(isoTimes(e)) : formatAudit(e));
    const since = typeof opts.since === "string" ? parseSince(opts.since, Date.now()) : undefined;
    const kind = typeof opts.kind === "string" ? opts.kind : undefined;
    // With --export and no -n, every entry (paged); otherwise the last N.
    const lines = opts.lines === undefined ? (format ? null : 100) : Number(opts.lines);
    if (lines !== null && (!Number.isInteger(lines) || lines < 1 || lines > 10_000)) {
      throw new SbxError("usage", `-n ${String(opts.lines)}: not a count of entries`, { hint: "Give a whole number from 1 to 10000, e.g. -n 50." });
    }
    const base = { ...(sandbox ? { sandbox } : {}), ...(repo ? { repo } : {}), ...(kind ? { kind } : {}), ...(since !== undefined ? { since } : {}) };
    // A bad --since, -n or --export is refused before any daemon is reached (or started).
    const { daemonFor } = await import("../../client/cli");
    const client = await daemonFor(ctx);
    const stop = stopWhen(ctx);
    try {
      const r: Reader = { client, base, print, drained: () => ctx.render.drained(), stop };
      let cursor: number | null;
      if (lines === null) cursor = await pageAll(r);
      else {
        const first = await ask(r, { limit: lines });
        cursor = first === null ? null : first.cursor;
        for (const e of first?.entries ?? []) if (!stop.now()) print(e);
      }
      if (stop.now()) return stopCode(stop.now()!);
      if (!opts.follow || cursor === null) return ExitCode.ok;
      return await follow(r, cursor);
    } finally {
      stop.off();
    }
  },
};
