// sbx service: install, remove or inspect the controller service (systemd / launchd)
import type { Command } from "commander";
import type { Verb } from "../verb";
import { notYet } from "./_pending";

export const service: Verb = {
  name: "service",
  summary: "install, remove or inspect the controller service (systemd / launchd)",
  declare(cmd: Command) {
    cmd.argument("<action>", "install | uninstall | status").option("--json", "print JSON");
  },
  run: notYet("service"),
};
