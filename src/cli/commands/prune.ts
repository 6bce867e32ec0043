// sbx prune: remove what crashed or deleted sandboxes left behind
import type { Command } from "commander";
import type { Verb } from "../verb";
import { notYet } from "./_pending";

export const prune: Verb = {
  name: "prune",
  summary: "remove what crashed or deleted sandboxes left behind",
  declare(cmd: Command) {
    cmd.option("--dry-run", "list what would be removed, remove nothing").option("--json", "print JSON");
  },
  run: notYet("prune"),
};
