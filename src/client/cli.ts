// How CLI verbs reach the daemon: one helper that connects (starting a daemon if needed) and says so on stderr.
import type { Env } from "../sys/env";
import type { Paths } from "../sys/paths";
import { connectDaemon } from "./autostart";
import type { DaemonClient } from "./client";

export interface CliLike {
  env: Env;
  paths: Paths;
  render: { info(line: string): void };
}

/** A connected client; `autoStart: false` for verbs that only report (status). */
export function daemonFor(ctx: CliLike, opts: { autoStart?: boolean } = {}): Promise<DaemonClient> {
  return connectDaemon({
    paths: ctx.paths,
    env: { ...ctx.env.raw },
    autoStart: opts.autoStart ?? true,
    onStart: (pid) => ctx.render.info(`started the sbx daemon (pid ${pid}; log ${ctx.paths.daemonLog})`),
  });
}
