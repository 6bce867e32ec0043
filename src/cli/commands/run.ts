// sbx run: create the sandbox if missing, then run a shell or a command in it
import type { Command } from "commander";
import type { Verb } from "../verb";
import { notYet } from "./_pending";

export const run: Verb = {
  name: "run",
  summary: "create the sandbox if missing, then run a shell or a command in it",
  declare(cmd: Command) {
    cmd
      .argument("<name>", "sandbox name")
      .argument("[command...]", "command to run (after --); its exit code is sbx's")
      .option("--repo <path>", "the git repo to sandbox")
      .option("--rebuild", "rebuild the image even if its tag exists")
      .option("--overlay <path...>", "overlay another host dir copy-on-write (repeatable)");
  },
  run: notYet("run"),
};
