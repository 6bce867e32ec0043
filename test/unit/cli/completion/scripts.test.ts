// The completion scripts are pure renders of the model, golden-tested on a small fixture table (test/golden/completion);
// test/integration/cli/completion-*.test.ts runs the real table's scripts in the real shells.
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Option, type Command } from "commander";
import { bashScript } from "../../../../src/cli/completion/bash";
import { fishQuote, fishScript } from "../../../../src/cli/completion/fish";
import { completionModel, type CompletionModel } from "../../../../src/cli/completion/model";
import { OfferingArgument, sandboxArgument } from "../../../../src/cli/completion/offers";
import { zshScript } from "../../../../src/cli/completion/zsh";
import type { Verb } from "../../../../src/cli/verb";
import { programOf } from "./program";

const GOLDEN = join(import.meta.dir, "../../../golden/completion");

/** Compares with the golden file; `UPDATE_GOLDEN=1 bun test …` rewrites it (review the diff). */
function golden(name: string, actual: string): void {
  const file = join(GOLDEN, name);
  if (process.env.UPDATE_GOLDEN === "1") {
    mkdirSync(GOLDEN, { recursive: true });
    writeFileSync(file, actual);
    return;
  }
  if (!existsSync(file)) throw new Error(`golden file ${file} is missing; run with UPDATE_GOLDEN=1 to create it`);
  expect(actual).toBe(readFileSync(file, "utf8"));
}

const noop = async () => 0;
/** One verb of each shape: a NAME with an alias and a value of each kind, one that runs a command, a quoted description. */
const FIXTURE: Verb[] = [
  {
    name: "open",
    summary: "open a sandbox",
    aliases: ["o"],
    declare(cmd: Command) {
      cmd
        .addArgument(sandboxArgument("[names...]", "sandbox names"))
        .option("--repo <path>", "the repo")
        .option("--sandbox <name>", "a sandbox")
        .option("--key-file <file>", "a file")
        .option("-f, --force", "without asking")
        .addOption(new Option("--mode <mode>", "which way").choices(["up", "down"]));
    },
    run: noop,
  },
  {
    name: "run",
    summary: "run an agent or a command",
    runsCommand: true,
    declare(cmd: Command) {
      cmd
        .addArgument(new OfferingArgument("<agent-or-name>", "agent or sandbox", ["agent", "sandbox"]))
        .addArgument(new OfferingArgument("[args...]", "NAME, then the command", ["sandbox"], true))
        .option("--since <when>", "from when");
    },
    run: noop,
  },
  {
    name: "say",
    summary: "it's: a 'quoted' \\ description",
    declare(cmd: Command) {
      cmd.argument("<shell>", "which").argument("[more]", "more");
    },
    run: noop,
  },
];

const fixtureModel = async (): Promise<CompletionModel> => completionModel(await programOf(FIXTURE), "9.9.9", ["claude", "codex"]);

describe("completion scripts (golden)", () => {
  test("bash", async () => golden("fixture.bash", bashScript(await fixtureModel())));
  test("zsh", async () => golden("fixture.zsh", zshScript(await fixtureModel())));
  test("fish", async () => golden("fixture.fish", fishScript(await fixtureModel())));

  test("the verb table is written into each script: a verb added shows up in all three", async () => {
    const m = await fixtureModel();
    for (const script of [bashScript(m), zshScript(m), fishScript(m)]) {
      expect(script).toContain("'open'");
      expect(script).toContain("'o'");
      expect(script).toContain("'--key-file'");
    }
  });
});

describe("fishQuote", () => {
  test("escapes only backslash and single quote, the two escapes inside fish's single quotes", () => {
    expect(fishQuote(`it's a \\ $(x) "y"`)).toBe(`'it\\'s a \\\\ $(x) "y"'`);
  });
});
