// sbx shell: open a shell (or run a command) in a running sandbox
import type { Command } from "commander";
import type { Verb } from "../verb";
import { notYet } from "./_pending";

export const shell: Verb = {
  name: "shell",
  summary: "open a shell (or run a command) in a running sandbox",
  declare(cmd: Command) {
    cmd
      .argument("<name>", "sandbox name")
      .argument("[command...]", "command to run instead of a shell (after --)")
      .option("--repo <path>", "the repo the sandbox belongs to (default: the current one)")
      .option("--attach <session>", "join an existing session (see sbx ps)");
  },
  run: notYet("shell"),
};
