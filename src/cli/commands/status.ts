// sbx status: show daemon health, sandboxes and their guards
import type { Command } from "commander";
import type { Verb } from "../verb";
import { notYet } from "./_pending";

export const status: Verb = {
  name: "status",
  summary: "show daemon health, sandboxes and their guards",
  declare(cmd: Command) {
    cmd.option("--json", "print JSON");
  },
  run: notYet("status"),
};
