// sbx rm: remove a sandbox, its container, volumes, remote and dir
import type { Command } from "commander";
import type { Verb } from "../verb";
import { notYet } from "./_pending";

export const rm: Verb = {
  name: "rm",
  summary: "remove a sandbox, its container, volumes, remote and dir",
  declare(cmd: Command) {
    cmd
      .argument("<name>", "sandbox name")
      .option("--repo <path>", "the repo the sandbox belongs to")
      .option("--force", "remove even if the clone holds commits no host ref has");
  },
  run: notYet("rm"),
};
