// sbx approvals: list pending approvals, or decide one
import type { Command } from "commander";
import type { Verb } from "../verb";
import { notYet } from "./_pending";

export const approvals: Verb = {
  name: "approvals",
  summary: "list pending approvals, or decide one",
  declare(cmd: Command) {
    cmd
      .argument("[action]", "allow | deny")
      .argument("[id]", "approval id")
      .option("--json", "print JSON");
  },
  run: notYet("approvals"),
};
