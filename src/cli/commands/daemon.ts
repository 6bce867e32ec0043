// sbx daemon: run the controller in the foreground
import type { Command } from "commander";
import type { Verb } from "../verb";
import { notYet } from "./_pending";

export const daemon: Verb = {
  name: "daemon",
  summary: "run the controller in the foreground",
  declare(cmd: Command) {
    cmd.option("--log-level <level>", "debug | info | warn", "info");
  },
  run: notYet("daemon"),
};
