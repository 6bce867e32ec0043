// `sbx shell NAME --shell bash` and `sbx exec NAME --repo DIR -- cmd`: sbx's options after the name (and before the
// command) are sbx's; the command's own words never are.
import { describe, expect, test } from "bun:test";
import { Command } from "commander";
import { optionsBeforeName } from "../../../src/cli/main";

const program = new Command("sbx").enablePositionalOptions();
program.command("shell").option("--repo <path>").option("--shell <shell>").option("--attach <session>").argument("[name]").argument("[command...]").passThroughOptions();
program.command("exec").option("--repo <path>").option("--rebuild").option("--port <port>").argument("<name>").argument("[command...]").passThroughOptions();
program.command("run").option("--repo <path>").option("--memory <size>").option("--ask").option("--no-transparent").argument("<agent-or-name>").argument("[args...]").passThroughOptions();
program.command("create").option("--repo <path>").argument("<name>");

describe("optionsBeforeName", () => {
  test.each([
    [["shell", "demo", "--shell", "bash"], ["shell", "--shell", "bash", "demo"]],
    [["shell", "demo", "--shell=bash"], ["shell", "--shell=bash", "demo"]],
    [["exec", "demo", "--repo", "/r", "--rebuild", "--", "make", "test"], ["exec", "--repo", "/r", "--rebuild", "demo", "--", "make", "test"]],
    [["exec", "--repo", "/r", "demo", "--port", "3000", "ls"], ["exec", "--repo", "/r", "--port", "3000", "demo", "ls"]],
    // run NAME is exec's.
    [["run", "demo", "--repo", "/r", "--", "echo", "hi"], ["run", "--repo", "/r", "demo", "--", "echo", "hi"]],
    [["run", "demo", "--memory=4g", "--no-transparent"], ["run", "--memory=4g", "--no-transparent", "demo"]],
    // run AGENT [NAME]: sbx's options before a `--` that ends them.
    [["run", "claude", "work", "--memory", "8g", "--ask", "--", "--model", "opus"], ["run", "--memory", "8g", "--ask", "claude", "work", "--", "--model", "opus"]],
    [["run", "claude", "--ask", "--"], ["run", "--ask", "claude", "--"]],
  ])("%j", (argv, want) => expect(optionsBeforeName(program, argv)).toEqual(want));

  test.each([
    // The command's words stay the command's, even when one is spelled like an sbx option.
    [["exec", "demo", "ls", "--repo", "x"]],
    [["exec", "demo", "--", "--repo"]],
    [["shell", "demo", "--nosuch"]],
    // An agent's words without a `--`, or with one of the agent's own among sbx's, are the agent's.
    [["run", "claude", "--ask"]],
    [["run", "claude", "work", "--memory", "8g"]],
    [["run", "codex", "--memory", "8g", "--model", "o3", "--", "hi"]],
    [["run", "claude", "work", "--", "--memory", "8g"]],
    // Other verbs are commander's as they are.
    [["create", "demo", "--repo", "/r"]],
    [["shell", "--attach", "s-1"]],
  ])("left alone: %j", (argv) => expect(optionsBeforeName(program, argv)).toEqual(argv));
});
