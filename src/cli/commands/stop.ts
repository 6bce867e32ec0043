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
    // Loaded here, not at the top: `sbx --help` and `--version` must not pay for it.
    const { cliDeps, withManager } = await import("../../lifecycle/open");
    const name = args[0] ?? "";
    const changed = await withManager(cliDeps(ctx), (m) => m.stop(name, { cwd: ctx.cwd, repoFlag: opts.repo as string | undefined }));
    ctx.render.out(changed ? `stopped ${name}` : `${name} was not running`);
    return 0;
  },
};
