// sbx ui: open the approvals dashboard in the browser
import type { Command } from "commander";
import type { Verb } from "../verb";
import { notYet } from "./_pending";

export const ui: Verb = {
  name: "ui",
  summary: "open the approvals dashboard in the browser",
  declare(cmd: Command) {
    cmd.option("--print", "print the URL instead of opening it");
  },
  run: notYet("ui"),
};
