// The completion model is read off the commander program main() builds: every visible verb with its aliases and options,
// what each positional word offers, and which verbs take options only before their first word.
import { describe, expect, test } from "bun:test";
import { Argument, Option, type Command } from "commander";
import { completionModel, type CompletionModel, type VerbModel, type WordModel } from "../../../../src/cli/completion/model";
import { OfferingArgument, sandboxArgument } from "../../../../src/cli/completion/offers";
import type { Verb } from "../../../../src/cli/verb";
import { verbs } from "../../../../src/cli/verbs";
import { AGENT_NAMES } from "../../../../src/core/agent-names";
import { programOf } from "./program";

const modelOf = async (table: readonly Verb[]): Promise<CompletionModel> => completionModel(await programOf(table), "1.2.3", AGENT_NAMES);
const verb = (m: CompletionModel, name: string): VerbModel => {
  const v = m.verbs.find((x) => x.names[0] === name);
  if (!v) throw new Error(`no verb ${name} in the model`);
  return v;
};
const flags = (v: VerbModel) => v.options.flatMap((o) => o.flags);
const sandbox: WordModel = { offers: ["sandbox"], choices: [] };
const nothing: WordModel = { offers: [], choices: [] };

describe("the model of sbx's own verb table", () => {
  test("every verb the help lists, aliases after the name, then commander's help; hidden verbs left out", async () => {
    const m = await modelOf(verbs);
    const shown = verbs.filter((v) => !v.hidden).map((v) => v.name);
    expect(m.verbs.map((v) => v.names[0])).toEqual([...shown, "help"]);
    expect(verb(m, "list").names).toEqual(["list", "ls"]);
    expect(m.verbs.some((v) => v.names.includes("__complete"))).toBe(false);
    expect(m.options.flatMap((o) => o.flags)).toEqual(["--version", "-V", "--help", "-h"]);
    expect(m.agents).toEqual(AGENT_NAMES);
  });

  test("the verbs that run a command take sbx's options only before their first word (commander's passThroughOptions)", async () => {
    const m = await modelOf(verbs);
    expect(m.verbs.filter((v) => v.optionsFirst).map((v) => v.names[0])).toEqual(["shell", "run", "exec"]);
  });

  test("sandbox names where a verb takes a NAME; agents too for run; none for create; verbs for help", async () => {
    const m = await modelOf(verbs);
    for (const name of ["shell", "attach", "exec", "rebuild", "limits", "bridge", "publish", "port"]) expect(verb(m, name).words[0]).toEqual(sandbox);
    for (const name of ["rm", "stop"]) expect({ words: verb(m, name).words, rest: verb(m, name).rest }).toEqual({ words: [], rest: sandbox });
    expect(verb(m, "run").words).toEqual([{ offers: ["agent", "sandbox"], choices: [] }, sandbox]);
    expect(verb(m, "run").rest).toEqual(nothing);
    expect(verb(m, "create").words).toEqual([nothing]);
    expect(verb(m, "help").words).toEqual([{ offers: ["verb"], choices: [] }]);
  });

  test("option values: --sandbox a sandbox, --repo a directory, a <path> a file, other values nothing, flags none", async () => {
    const m = await modelOf(verbs);
    const value = (v: string, flag: string) => verb(m, v).options.find((o) => o.flags.includes(flag))?.value;
    expect(value("logs", "--sandbox")).toBe("sandbox");
    expect(value("allow", "--sandbox")).toBe("sandbox");
    expect(value("shell", "--repo")).toBe("dir");
    expect(value("create", "--overlay")).toBe("file");
    expect(value("logs", "--kind")).toBe("any");
    expect(value("rm", "--force")).toBe("none");
    expect(flags(verb(m, "rm"))).toEqual(["--all", "--repo", "--force", "-f", "--yes", "-y", "--help", "-h"]);
  });
});

describe("a verb added to the table", () => {
  const added: Verb = {
    name: "frob",
    summary: "frobnicate a sandbox",
    aliases: ["fr"],
    declare(cmd: Command) {
      cmd
        .addArgument(sandboxArgument("<name>", "sandbox name"))
        .addArgument(new Argument("<how>", "how").choices(["fast", "slow"]))
        .addArgument(new OfferingArgument("[more...]", "more", ["agent"]))
        .option("--level <n>", "how much")
        .addOption(new Option("--mode <mode>", "which way").choices(["up", "down"]));
    },
    async run() {
      return 0;
    },
  };

  test("is in the model with its alias, options and words, with no edit to the completion code", async () => {
    const m = await modelOf([...verbs, added]);
    const v = verb(m, "frob");
    expect(v.names).toEqual(["frob", "fr"]);
    expect(v.description).toBe("frobnicate a sandbox");
    expect(v.options.map((o) => [o.flags[0], o.value])).toEqual([
      ["--level", "any"],
      ["--mode", { choices: ["up", "down"] }],
      ["--help", "none"],
    ]);
    expect({ words: v.words, rest: v.rest }).toEqual({ words: [sandbox, { offers: [], choices: ["fast", "slow"] }], rest: { offers: ["agent"], choices: [] } });
  });
});
