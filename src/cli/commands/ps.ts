// sbx ps: list interactive sessions
import type { Command } from "commander";
import type { Verb } from "../verb";
import { notYet } from "./_pending";

export const ps: Verb = {
  name: "ps",
  summary: "list interactive sessions",
  declare(cmd: Command) {
    cmd.option("--json", "print JSON");
  },
  run: notYet("ps"),
};
