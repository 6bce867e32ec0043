// sbx init: write a starter Dockerfile for sbx in this repo
import type { Command } from "commander";
import type { Verb } from "../verb";
import { notYet } from "./_pending";

export const init: Verb = {
  name: "init",
  summary: "write a starter Dockerfile for sbx in this repo",
  declare(cmd: Command) {
    cmd.option("--force", "overwrite an existing Dockerfile");
  },
  run: notYet("init"),
};
