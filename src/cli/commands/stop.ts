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
    const { withDaemonManager } = await import("../../client/sandboxes");
    const name = args[0] ?? "";
    // The daemon stops the container, then its guards; then one last fetch of its commits into the host repo.
    const changed = await withDaemonManager(ctx, (m) => m.stop(name, { cwd: ctx.cwd, repoFlag: opts.repo as string | undefined }));
    ctx.render.out(changed ? `stopped ${name}` : `${name} was not running`);
    return 0;
  },
};
