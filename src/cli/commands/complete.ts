// sbx __complete names: the words the completion scripts ask for at a TAB (hidden). Fast, and silent when it cannot tell.
import type { Command } from "commander";
import { ExitCode } from "../../core/errors";
import type { Verb } from "../verb";

export const complete: Verb = {
  name: "__complete",
  summary: "words for the completion scripts (`names`: this repo's sandbox names)",
  hidden: true,
  silent: true,
  declare(cmd: Command) {
    cmd.argument("<what>", "names").option("--repo <path>", "the repo whose sandboxes to name (default: the current one)");
  },
  async run(ctx, args, opts) {
    // Anything else (a script from a newer sbx) gets nothing.
    if (args[0] !== "names") return ExitCode.ok;
    const { sandboxNamesHere } = await import("../../client/names");
    const names = await sandboxNamesHere(ctx.paths, { cwd: ctx.cwd, repoFlag: opts.repo as string | undefined, vars: ctx.env.raw });
    if (names.length > 0) ctx.render.write("stdout", `${names.join("\n")}\n`);
    return ExitCode.ok;
  },
};
