// Test-only: sbx run as its own process (runAsProcess) with one extra verb that prints a large result, for the
// "every byte of output is out before exit" tests. `big N` prints N sandbox-like rows as --json does; `big-fail N`
// prints them the same way, then fails.
import { runAsProcess } from "../../src/cli/main";
import type { Verb } from "../../src/cli/verb";
import { verbs } from "../../src/cli/verbs";
import { SbxError } from "../../src/core/errors";

const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `sandbox-${i}`, repo: `/home/u/src/project-${i}`, state: "active", phase: "running", unsynced: [] }));

const big: Verb = {
  name: "big",
  summary: "print N rows as JSON",
  declare: (cmd) => void cmd.argument("<n>"),
  async run(ctx, args) {
    ctx.render.json(rows(Number(args[0])));
    return 0;
  },
};

const bigFail: Verb = {
  name: "big-fail",
  summary: "print N rows as JSON, then fail",
  declare: (cmd) => void cmd.argument("<n>"),
  async run(ctx, args) {
    ctx.render.json(rows(Number(args[0])));
    throw new SbxError("unavailable", "failed after a lot of output", { hint: "none" });
  },
};

await runAsProcess(process.argv.slice(2), [...verbs, big, bigFail]);
