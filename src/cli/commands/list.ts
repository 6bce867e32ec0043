// sbx list: list sandboxes
import type { Command } from "commander";
import type { Verb } from "../verb";
import { notYet } from "./_pending";

export const list: Verb = {
  name: "list",
  summary: "list sandboxes",
  declare(cmd: Command) {
    cmd
      .option("--all", "include deleted sandboxes")
      .option("--json", "print JSON");
  },
  run: notYet("list"),
};
