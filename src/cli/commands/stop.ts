// sbx stop: stop a sandbox's container, keeping its clone and overlays
import type { Command } from "commander";
import type { Verb } from "../verb";

export const stop: Verb = {
  name: "stop",
  summary: "stop sandboxes (their clones and overlays stay)",
  declare(cmd: Command) {
    cmd
      .argument("[names...]", "sandbox names")
      .option("--all", "every sandbox of this repo")
      .option("--repo <path>", "the repo the sandboxes belong to");
  },
  async run(ctx, args, opts) {
    const { forEachSandbox, outOf, whereOf } = await import("../../client/sandboxes");
    const repoFlag = opts.repo as string | undefined;
    return forEachSandbox(ctx, "stop", args, { all: opts.all === true, repoFlag }, async (client, name) => {
      const { changed } = await client.lifecycle("stop", { ...whereOf(ctx, repoFlag), name }, outOf(ctx));
      ctx.render.out(changed ? `stopped ${name}` : `${name} was not running`);
    });
  },
};
