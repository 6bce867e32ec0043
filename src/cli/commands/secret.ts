// sbx secret: store an API key or token host-side for the LLM proxy and bridge
import type { Command } from "commander";
import type { Verb } from "../verb";
import { notYet } from "./_pending";

export const secret: Verb = {
  name: "secret",
  summary: "store an API key or token host-side for the LLM proxy and bridge",
  declare(cmd: Command) {
    cmd.argument("<action>", "set | rm | list").argument("[name]", "secret name, e.g. ANTHROPIC_API_KEY");
  },
  run: notYet("secret"),
};
