// `sbx run claude NAME --resume ID`: the agent's own flags after the sandbox's name reach the agent untouched (sbx
// takes none of them), with the real verb table's options, so the resume Claude Code prints works through sbx.
import { describe, expect, test } from "bun:test";
import { splitAgentArgs } from "../../../src/cli/commands/run";
import { optionsBeforeName } from "../../../src/cli/main";
import { verbs } from "../../../src/cli/verbs";
import { programOf } from "./completion/program";

describe("run AGENT NAME --resume ID", () => {
  test.each([
    [["run", "claude", "work", "--resume", "0b1f-77"], { name: "work", args: ["--resume", "0b1f-77"] }],
    [["run", "claude", "work", "--", "--resume", "0b1f-77"], { name: "work", args: ["--resume", "0b1f-77"] }],
    [["run", "claude", "--resume", "0b1f-77"], { args: ["--resume", "0b1f-77"] }],
    [["run", "claude", "work", "--continue"], { name: "work", args: ["--continue"] }],
    // An sbx option before a `--` is sbx's; the agent's flags after it are the agent's.
    [["run", "claude", "work", "--memory", "8g", "--", "--resume", "0b1f-77"], { name: "work", args: ["--resume", "0b1f-77"] }],
  ])("%j", async (argv, want) => {
    const program = await programOf(verbs);
    const parsed = optionsBeforeName(program, argv);
    // What the run verb's action gets after commander: the words after `run` with sbx's options taken out.
    const sub = program.commands.find((c) => c.name() === "run")!;
    const words = sub.parseOptions(parsed.slice(1)).operands;
    expect(splitAgentArgs(words.slice(1))).toEqual(want);
  });
});
