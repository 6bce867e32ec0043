// sbx logs: the audit log (bridge commands, proxy decisions, blocked attempts, sync and session events), optionally followed.
import { realpathSync } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import { ExitCode } from "../../core/errors";
import type { AuditView } from "../../daemon/protocol";
import type { Verb } from "../verb";

/** Pure: one human line per entry. */
export function formatAudit(e: AuditView): string {
  const ts = new Date(e.ts).toISOString().replace("T", " ").slice(0, 19);
  const detail = Object.keys(e.detail).length ? ` ${JSON.stringify(e.detail)}` : "";
  return `${ts}  ${(e.sandbox ?? "-").padEnd(12)} ${e.kind.padEnd(8)} ${e.action}${detail}`;
}

export const logs: Verb = {
  name: "logs",
  summary: "show the audit log",
  declare(cmd: Command) {
    cmd
      .option("--sandbox <name>", "only this sandbox")
      .option("--repo <path>", "the repo of --sandbox when several repos have one of that name")
      .option("--follow", "keep printing new entries")
      .option("--json", "print JSON lines")
      .option("-n, --lines <n>", "how many recent entries to show first", "100");
  },
  async run(ctx, _args, opts) {
    const { daemonFor } = await import("../../client/cli");
    const client = await daemonFor(ctx);
    const sandbox = typeof opts.sandbox === "string" ? opts.sandbox : undefined;
    const repo = typeof opts.repo === "string" ? realpathSync(resolve(ctx.cwd, opts.repo)) : undefined;
    const print = (e: AuditView) => (opts.json ? ctx.render.out(JSON.stringify(e)) : ctx.render.out(formatAudit(e)));
    const base = { ...(sandbox ? { sandbox } : {}), ...(repo ? { repo } : {}) };
    const first = await client.logs({ ...base, limit: Math.max(1, Number(opts.lines) || 100) });
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
