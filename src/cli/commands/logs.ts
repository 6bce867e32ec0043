// sbx logs: show the audit log
import type { Command } from "commander";
import type { Verb } from "../verb";
import { notYet } from "./_pending";

export const logs: Verb = {
  name: "logs",
  summary: "show the audit log",
  declare(cmd: Command) {
    cmd
      .option("--sandbox <name>", "only this sandbox")
      .option("--follow", "keep printing new entries")
      .option("--json", "print JSON lines");
  },
  run: notYet("logs"),
};
