// sbx deny: remove an allowlist entry
import type { Command } from "commander";
import type { Verb } from "../verb";
import { notYet } from "./_pending";

export const deny: Verb = {
  name: "deny",
  summary: "remove an allowlist entry",
  declare(cmd: Command) {
    cmd
      .argument("<pattern...>", "pattern to remove")
      .option("--sandbox <name>", "from this sandbox's list")
      .option("--global", "from the global list");
  },
  run: notYet("deny"),
};
