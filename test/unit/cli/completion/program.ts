// Test-only: the commander program main() builds from a verb table, caught by a hidden verb that hands it back.
import type { Command } from "commander";
import type { Verb } from "../../../../src/cli/verb";
import { runCli } from "../../../support/cli";

export async function programOf(verbs: readonly Verb[]): Promise<Command> {
  let program: Command | undefined;
  const spy: Verb = {
    name: "zz-spy",
    summary: "hands back the program",
    hidden: true,
    declare() {},
    async run(_ctx, _args, _opts, cmd) {
      program = cmd.parent!;
      return 0;
    },
  };
  const r = await runCli(["zz-spy"], { verbs: [...verbs, spy] });
  if (r.code !== 0 || !program) throw new Error(`the spy verb did not run: ${r.stderr}`);
  return program;
}
