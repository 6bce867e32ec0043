// sbx rm: remove a sandbox (container, volumes, overlays, clone, the host's sandbox-<name> remote config; its refs stay)
import type { Command } from "commander";
import { sandboxArgument } from "../completion/offers";
import type { Verb } from "../verb";

export const rm: Verb = {
  name: "rm",
  summary: "remove sandboxes; refuses one while its clone holds commits no host ref has",
  declare(cmd: Command) {
    cmd
      .addArgument(sandboxArgument("[names...]", "sandbox names"))
      .option("--all", "every sandbox of this repo (each still refused while it holds unsynced work, unless --force)")
      .option("--repo <path>", "the repo the sandboxes belong to")
      .option("-f, --force", "remove even if a clone holds commits no host ref has, and end open sessions without asking")
      .option("-y, --yes", "end open sessions without asking (unsynced work still refuses)");
  },
  async run(ctx, args, opts) {
    // Loaded here, not at the top: `sbx --help` and `--version` must not pay for them.
    const { endingSessions, forEachSandbox, outOf, whereOf } = await import("../../client/sandboxes");
    const repoFlag = opts.repo as string | undefined;
    const force = opts.force === true;
    // The daemon stops each and removes it; the host keeps refs/remotes/sandbox-<name>/* (nothing made inside is lost).
    return forEachSandbox(ctx, "rm", args, { all: opts.all === true, repoFlag }, async (client, name) => {
      const { lost, sessions } = await endingSessions(ctx, "rm", name, force || opts.yes === true, (ifSessions) =>
        client.lifecycle("rm", { ...whereOf(ctx, repoFlag), name, force, ifSessions }, outOf(ctx)),
      );
      if (sessions > 0) ctx.render.info(`ended ${sessions} session(s) of ${name} (each was told why)`);
      if (lost.length > 0) ctx.render.info(`${lost.length} commit(s) no host branch has are kept only as sandbox-${name}/* refs in the repo (--force)`);
      ctx.render.info(`its branches stay in the repo as sandbox-${name}/*; a new sandbox named ${name} moves them to refs/sbx-retired/${name}/<time>/*`);
      ctx.render.out(`removed ${name}`);
    });
  },
};
