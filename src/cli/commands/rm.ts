// sbx rm: remove a sandbox (container, volumes, overlays, clone, the host's sandbox-<name> remote)
import type { Command } from "commander";
import type { Verb } from "../verb";

export const rm: Verb = {
  name: "rm",
  summary: "remove a sandbox; refuses while its clone holds commits no host ref has",
  declare(cmd: Command) {
    cmd
      .argument("<name>", "sandbox name")
      .option("--repo <path>", "the repo the sandbox belongs to")
      .option("--force", "remove even if the clone holds commits no host ref has");
  },
  async run(ctx, args, opts) {
    // Loaded here, not at the top: `sbx --help` and `--version` must not pay for them.
    const { cliDeps, withManager } = await import("../../lifecycle/open");
    const name = args[0] ?? "";
    const { lost } = await withManager(cliDeps(ctx), (m) =>
      m.rm(name, { cwd: ctx.cwd, repoFlag: opts.repo as string | undefined, force: opts.force === true }),
    );
    if (lost.length > 0) ctx.render.info(`discarded ${lost.length} unsynced commit(s) (--force)`);
    ctx.render.out(`removed ${name}`);
    return 0;
  },
};
