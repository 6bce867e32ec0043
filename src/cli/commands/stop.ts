// sbx stop: stop a sandbox's container, keeping its clone and overlays
import type { Command } from "commander";
import { sandboxArgument } from "../completion/offers";
import type { Verb } from "../verb";

export const stop: Verb = {
  name: "stop",
  summary: "stop sandboxes (their clones and overlays stay)",
  declare(cmd: Command) {
    cmd
      .addArgument(sandboxArgument("[names...]", "sandbox names"))
      .option("--all", "every sandbox of this repo")
      .option("--repo <path>", "the repo the sandboxes belong to")
      .option("-f, --force", "end open sessions without asking (each terminal is told why)");
  },
  async run(ctx, args, opts) {
    const { endingSessions, forEachSandbox, outOf, whereOf } = await import("../../client/sandboxes");
    const repoFlag = opts.repo as string | undefined;
    return forEachSandbox(ctx, "stop", args, { all: opts.all === true, repoFlag }, async (client, name) => {
      const { changed, sessions } = await endingSessions(ctx, "stop", name, opts.force === true, (ifSessions) =>
        client.lifecycle("stop", { ...whereOf(ctx, repoFlag), name, ifSessions }, outOf(ctx)),
      );
      if (sessions > 0) ctx.render.info(`ended ${sessions} session(s) of ${name} (each was told why)`);
      ctx.render.out(changed ? `stopped ${name}` : `${name} was not running`);
    });
  },
};
