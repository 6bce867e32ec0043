// sbx completion SHELL: prints the completion script for bash, zsh or fish, made from this program's own verbs and options.
import { Argument, type Command } from "commander";
import { ExitCode } from "../../core/errors";
import type { Verb } from "../verb";

export const SHELLS = ["bash", "zsh", "fish"] as const;

export const completion: Verb = {
  name: "completion",
  summary: "print the shell completion script for bash, zsh or fish (verbs, options, sandbox names)",
  declare(cmd: Command) {
    cmd.addArgument(new Argument("<shell>", SHELLS.join(" | ")).choices(SHELLS)).addHelpText(
      "after",
      [
        "",
        "Load it in every new shell with one line in the shell's startup file:",
        "  bash  ~/.bashrc                   source <(sbx completion bash)",
        "  zsh   ~/.zshrc, after compinit    source <(sbx completion zsh)",
        "  fish  ~/.config/fish/config.fish  sbx completion fish | source",
        "",
        "Sandbox names are this repo's (or --repo's), asked of the running daemon at each TAB; none is started for it.",
      ].join("\n"),
    );
  },
  async run(ctx, args, _opts, cmd) {
    const program = cmd.parent!;
    const [{ completionModel }, { AGENT_NAMES }, { VERSION }] = await Promise.all([
      import("../completion/model"),
      import("../../core/agent-names"),
      import("../../version"),
    ]);
    const model = completionModel(program, VERSION, AGENT_NAMES);
    const shell = args[0];
    const script =
      shell === "bash"
        ? (await import("../completion/bash")).bashScript(model)
        : shell === "zsh"
          ? (await import("../completion/zsh")).zshScript(model)
          : (await import("../completion/fish")).fishScript(model);
    ctx.render.write("stdout", script);
    return ExitCode.ok;
  },
};
