// sbx allowlist: show the allowlist
import type { Command } from "commander";
import type { Verb } from "../verb";
import { notYet } from "./_pending";

export const allowlist: Verb = {
  name: "allowlist",
  summary: "show the allowlist",
  declare(cmd: Command) {
    cmd.option("--sandbox <name>", "this sandbox's list").option("--json", "print JSON");
  },
  run: notYet("allowlist"),
};
