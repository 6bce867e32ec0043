// sbx rebuild: build a sandbox's image again from the repo's Dockerfile and make its container anew
import type { Command } from "commander";
import { ExitCode } from "../../core/errors";
import { sandboxArgument } from "../completion/offers";
import type { Verb } from "../verb";

export const rebuild: Verb = {
  name: "rebuild",
  summary: "build a sandbox's image again (its Dockerfile as it is now) and restart it on it (clone, home, allowlist stay)",
  declare(cmd: Command) {
    cmd
      .addArgument(sandboxArgument("<name>", "sandbox name"))
      .option("--repo <path>", "the repo the sandbox belongs to")
      .option("-f, --force", "end open sessions without asking (each terminal is told why)")
      .addHelpText(
        "after",
        [
          "",
          "The image is built first, while the sandbox runs: a failed build changes nothing. Then the container is made",
          "anew from it and started. What the sandbox holds stays: its clone and commits, its home's changes (overlays),",
          "its allowlist, bridge settings and audit. Open sessions are asked about at a terminal, refused without one",
          "unless --force. `sbx shell`, `run` and `exec` say when the Dockerfile changed since the image was built.",
        ].join("\n"),
      );
  },
  async run(ctx, args, opts) {
    const [name = ""] = args;
    const { daemon, endingSessions, outOf, whereOf } = await import("../../client/sandboxes");
    const client = await daemon(ctx);
    const repoFlag = opts.repo as string | undefined;
    const r = await endingSessions(ctx, "rebuild", name, opts.force === true, (ifSessions) =>
      client.lifecycle("rebuild", { ...whereOf(ctx, repoFlag), name, ifSessions }, outOf(ctx)),
    );
    if (r.sessions > 0) ctx.render.info(`ended ${r.sessions} session(s) of ${name} (each was told why)`);
    ctx.render.out(`rebuilt ${name} on ${r.image}`);
    return ExitCode.ok;
  },
};
