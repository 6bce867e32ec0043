// sbx logs: the audit log (bridge commands, proxy decisions, blocked attempts, sync and session events), filtered, optionally followed.
import { realpathSync } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import { ExitCode, SbxError } from "../../core/errors";
import type { AuditView } from "../../daemon/protocol";
import type { Verb } from "../verb";

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

export const logs: Verb = {
  name: "logs",
  summary: "show the audit log",
  declare(cmd: Command) {
    cmd
      .option("--sandbox <name>", "only this sandbox")
      .option("--repo <path>", "the repo of --sandbox when several repos have one of that name")
      .option("--kind <kind>", "only this kind: egress, bridge, lifecycle, ref-sync, allowlist, daemon, llm, …")
      .option("--since <when>", "only entries since then: a duration back (30s, 10m, 2h, 1d) or a time (2026-11-24T10:00Z)")
      .option("--follow", "keep printing new entries")
      .option("--json", "print JSON lines")
      .option("-n, --lines <n>", "how many recent entries to show first", "100");
  },
  async run(ctx, _args, opts) {
    const sandbox = typeof opts.sandbox === "string" ? opts.sandbox : undefined;
    if (sandbox === undefined && opts.repo !== undefined) {
      throw new SbxError("usage", "--repo says which repo's sandbox --sandbox names; without --sandbox it would change nothing", { hint: "e.g. sbx logs --sandbox demo --repo ~/src/app (without either: every sandbox's entries)." });
    }
    const repo = typeof opts.repo === "string" ? realpathSync(resolve(ctx.cwd, opts.repo)) : undefined;
    const print = (e: AuditView) => ctx.render.out(opts.json ? jsonText(isoTimes(e)) : formatAudit(e));
    const since = typeof opts.since === "string" ? parseSince(opts.since, Date.now()) : undefined;
    const kind = typeof opts.kind === "string" ? opts.kind : undefined;
    const lines = Number(opts.lines);
    if (!Number.isInteger(lines) || lines < 1 || lines > 10_000) {
      throw new SbxError("usage", `-n ${String(opts.lines)}: not a count of entries`, { hint: "Give a whole number from 1 to 10000, e.g. -n 50." });
    }
    const base = { ...(sandbox ? { sandbox } : {}), ...(repo ? { repo } : {}), ...(kind ? { kind } : {}), ...(since !== undefined ? { since } : {}) };
    // A bad --since or -n is refused before any daemon is reached (or started).
    const { daemonFor } = await import("../../client/cli");
    const client = await daemonFor(ctx);
    const first = await client.logs({ ...base, limit: lines });
    first.entries.forEach(print);
    if (!opts.follow) return ExitCode.ok;
    let cursor = first.cursor;
    for (;;) {
      const next = await client.logs({ ...base, after: cursor, waitMs: 25_000 });
      next.entries.forEach(print);
      cursor = next.cursor;
    }
  },
};
