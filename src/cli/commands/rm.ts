// sbx rm: remove a sandbox (container, volumes, overlays, clone, the host's sandbox-<name> remote config; its refs stay)
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
    const { daemon, outOf, whereOf } = await import("../../client/sandboxes");
    const name = args[0] ?? "";
    // The daemon stops it and removes it; the host keeps refs/remotes/sandbox-<name>/* (nothing made inside is lost).
    const client = await daemon(ctx);
    const { lost } = await client.lifecycle("rm", { ...whereOf(ctx, opts.repo as string | undefined), name, force: opts.force === true }, outOf(ctx));
    if (lost.length > 0) ctx.render.info(`${lost.length} commit(s) no host branch has are kept only as sandbox-${name}/* refs in the repo (--force)`);
    ctx.render.info(`its branches stay in the repo as sandbox-${name}/*; a new sandbox named ${name} moves them to refs/sbx-retired/${name}/<time>/*`);
    ctx.render.out(`removed ${name}`);
    return 0;
  },
};
