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
    const { daemon, outOf, whereOf } = await import("../../client/sandboxes");
    const name = args[0] ?? "";
    const client = await daemon(ctx);
    const { changed } = await client.lifecycle("stop", { ...whereOf(ctx, opts.repo as string | undefined), name }, outOf(ctx));
    ctx.render.out(changed ? `stopped ${name}` : `${name} was not running`);
    return 0;
  },
};
