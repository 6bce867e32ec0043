// sbx chat: set up chat approvals (Zulip)
import type { Command } from "commander";
import type { Verb } from "../verb";
import { notYet } from "./_pending";

export const chat: Verb = {
  name: "chat",
  summary: "set up chat approvals (Zulip)",
  declare(cmd: Command) {
    cmd.argument("<action>", "setup").argument("[provider]", "zulip");
  },
  run: notYet("chat"),
};
