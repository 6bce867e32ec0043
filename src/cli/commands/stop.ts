// sbx stop: stop a sandbox, keeping its clone
import type { Command } from "commander";
import type { Verb } from "../verb";
import { notYet } from "./_pending";

export const stop: Verb = {
  name: "stop",
  summary: "stop a sandbox, keeping its clone",
  declare(cmd: Command) {
    cmd.argument("<name>", "sandbox name").option("--repo <path>", "the repo the sandbox belongs to");
  },
  run: notYet("stop"),
};
