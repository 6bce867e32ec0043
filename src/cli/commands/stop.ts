// sbx stop: stop a sandbox's container, keeping its clone and overlays
import type { Command } from "commander";
import type { Verb } from "../verb";

export const stop: Verb = {
  name: "stop",
  summary: "stop a sandbox (its clone and overlays stay)",
  declare(cmd: Command) {
    cmd.argument("<name>", "sandbox name").option("--repo <path>", "the repo the sandbox belongs to");
  },
  async run(ctx, args, opts) {
    const { withDaemonService } = await import("../../client/sandboxes");
    const name = args[0] ?? "";
    const changed = await withDaemonService(ctx, (s) => s.stop(name, { cwd: ctx.cwd, repoFlag: opts.repo as string | undefined }));
    ctx.render.out(changed ? `stopped ${name}` : `${name} was not running`);
    return 0;
  },
};
