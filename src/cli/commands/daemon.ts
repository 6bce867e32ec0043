// sbx daemon: run the controller in the foreground (logs on stderr); `sbx service install` runs it for you at login.
import type { Command } from "commander";
import { SbxError } from "../../core/errors";
import type { Verb } from "../verb";

const LEVELS = ["debug", "info", "warn", "error"] as const;
type Level = (typeof LEVELS)[number];

export const daemon: Verb = {
  name: "daemon",
  summary: "run the controller in the foreground",
  declare(cmd: Command) {
    cmd.option("--log-level <level>", "debug | info | warn | error", "info");
  },
  async run(ctx, _args, opts) {
    const level = String(opts.logLevel ?? "info") as Level;
    if (!LEVELS.includes(level)) {
      throw new SbxError("usage", `unknown log level '${String(opts.logLevel)}'`, { hint: "Use one of: debug, info, warn, error." });
    }
    const { runDaemonForeground } = await import("../../daemon/main");
    return runDaemonForeground({ env: ctx.env, logLevel: level, exec: ctx.exec });
  },
};
