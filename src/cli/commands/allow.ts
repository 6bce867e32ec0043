// sbx allow: allow a domain (or preset) for a sandbox or globally
import type { Command } from "commander";
import type { Verb } from "../verb";
import { notYet } from "./_pending";

export const allow: Verb = {
  name: "allow",
  summary: "allow a domain (or preset) for a sandbox or globally",
  declare(cmd: Command) {
    cmd
      .argument("[pattern...]", "example.com, *.example.com, 10.0.0.0/8, host:port")
      .option("--sandbox <name>", "only for this sandbox")
      .option("--global", "for every sandbox")
      .option("--preset <name>", "a named bundle: github, npm, pypi, openai, google");
  },
  run: notYet("allow"),
};
