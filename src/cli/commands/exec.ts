// sbx exec: create the sandbox if missing, then open a shell or run a command in it; its exit code is sbx's
import type { Command } from "commander";
import { sandboxArgument } from "../completion/offers";
import type { Verb } from "../verb";
import { declareRunOptions, runInSandbox } from "./run";

export const exec: Verb = {
  name: "exec",
  summary: "create the sandbox if missing, then a shell or the command (exit code propagated)",
  runsCommand: true,
  declare(cmd: Command) {
    declareRunOptions(cmd.addArgument(sandboxArgument("<name>", "sandbox name")).argument("[command...]", "command to run (after --); its exit code is sbx's"));
  },
  run: runInSandbox,
};
