// sbx code NAME: the sandbox in VS Code (Dev Containers' "attach to running container"), at the repo's path inside.
import type { Command } from "commander";
import { sandboxArgument } from "../completion/offers";
import type { Verb } from "../verb";

export const code: Verb = {
  name: "code",
  summary: "open a Docker sandbox in VS Code (attached to its container, at the repo's path)",
  declare(cmd: Command) {
    cmd
      .addArgument(sandboxArgument("<name>", "sandbox name"))
      .option("--repo <path>", "the repo the sandbox belongs to (default: the current one)")
      .option("--print", "only print the URI (vscode-remote://attached-container+…): open nothing, start nothing")
      .option("--json", "print what was opened as JSON")
      .addHelpText(
        "after",
        [
          "",
          "Needs VS Code's `code` command and its Dev Containers extension; the sandbox is started if it is stopped. VS Code",
          "attaches as the sandbox's user, so its terminal, tasks and extensions run inside, behind the sandbox's proxy.",
          "",
          "Refused until VS Code's settings keep your credentials out of the container (Dev Containers copies your",
          "~/.gitconfig in and forwards your git credential helper otherwise): the refusal names the lines to add.",
          "Docker sandboxes only: a user-account sandbox has no container to attach to (sbx help editors says what works).",
          "",
          "Examples:",
          "  sbx code demo              opens it in VS Code",
          "  sbx code --print demo      the URI, for `code --folder-uri URI`",
        ].join("\n"),
      );
  },
  async run(ctx, args, opts) {
    const [{ openInCode }, { daemon }] = await Promise.all([import("../../client/editor"), import("../../client/sandboxes")]);
    const { result, exitCode } = await openInCode(ctx, await daemon(ctx), { name: args[0]!, repoFlag: opts.repo as string | undefined, print: opts.print === true });
    if (opts.json) ctx.render.json(result);
    else if (!result.opened) ctx.render.out(result.uri);
    return exitCode;
  },
};
