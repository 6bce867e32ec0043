// sbx create: create a sandbox for this repo and start it
import type { Command } from "commander";
import type { Verb } from "../verb";
import { notYet } from "./_pending";

export const create: Verb = {
  name: "create",
  summary: "create a sandbox for this repo and start it",
  declare(cmd: Command) {
    cmd
      .argument("<name>", "sandbox name: lowercase letters, digits and -")
      .option("--repo <path>", "the git repo to sandbox (default: the repo around the current directory)")
      .option("--rebuild", "rebuild the image even if its tag exists")
      .option("--overlay <path...>", "overlay another host dir copy-on-write (repeatable)")
      .option("--json", "print the sandbox as JSON");
  },
  run: notYet("create"),
};
