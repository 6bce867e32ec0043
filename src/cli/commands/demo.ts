// sbx demo: run the guided demo: a sandbox showing allowed and blocked egress and a credential-free push
import type { Command } from "commander";
import type { Verb } from "../verb";
import { notYet } from "./_pending";

export const demo: Verb = {
  name: "demo",
  summary: "run the guided demo: a sandbox showing allowed and blocked egress and a credential-free push",
  declare(cmd: Command) {
    cmd.option("--keep", "keep the demo dir and sandbox afterwards");
  },
  run: notYet("demo"),
};
