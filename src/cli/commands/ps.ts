// sbx ps: the daemon's interactive sessions (join one with `sbx attach <session>`).
import type { Command } from "commander";
import { ExitCode } from "../../core/errors";
import type { Verb } from "../verb";

export const ps: Verb = {
  name: "ps",
  summary: "list interactive sessions",
  declare(cmd: Command) {
    cmd.option("--json", "print JSON").option("-v, --verbose", "the command as it runs (for `sbx run AGENT`: sbx's launcher), not as it was started");
  },
  async run(ctx, _args, opts) {
    const { daemonFor } = await import("../../client/cli");
    const client = await daemonFor(ctx);
    const { sessions } = await client.sessions();
    if (opts.json) {
      ctx.render.json(sessions);
      return ExitCode.ok;
    }
    if (sessions.length === 0) {
      ctx.render.info("no sessions");
      return ExitCode.ok;
    }
    ctx.render.table(
      ["SESSION", "SANDBOX", "PID", "CLIENTS", "STARTED", "STATUS", "COMMAND"],
      sessions.map((s) => [
        s.id,
        s.sandbox,
        String(s.pid),
        String(s.clients),
        ctx.render.when(s.startedAt),
        s.exitCode === null ? "running" : `exited ${s.exitCode}`,
        (opts.verbose ? s.argv : s.command).join(" ") || "(shell)",
      ]),
      { COMMAND: "end" },
    );
    return ExitCode.ok;
  },
};
