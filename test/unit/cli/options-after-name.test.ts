// `sbx shell NAME --shell bash` and `sbx exec NAME --repo DIR -- cmd`: sbx's options after the name (and before the
// command) are sbx's; the command's own words never are.
import { describe, expect, test } from "bun:test";
import { Command } from "commander";
import { optionsBeforeName } from "../../../src/cli/main";

const program = new Command("sbx").enablePositionalOptions();
program.command("shell").option("--repo <path>").option("--shell <shell>").option("--attach <session>").argument("[name]").argument("[command...]").passThroughOptions();
program.command("exec").option("--repo <path>").option("--rebuild").option("--port <port>").argument("<name>").argument("[command...]").passThroughOptions();
program.command("create").option("--repo <path>").argument("<name>");

describe("optionsBeforeName", () => {
  test.each([
    [["shell", "demo", "--shell", "bash"], ["shell", "--shell", "bash", "demo"]],
    [["shell", "demo", "--shell=bash"], ["shell", "--shell=bash", "demo"]],
    [["exec", "demo", "--repo", "/r", "--rebuild", "--", "make", "test"], ["exec", "--repo", "/r", "--rebuild", "demo", "--", "make", "test"]],
    [["exec", "--repo", "/r", "demo", "--port", "3000", "ls"], ["exec", "--repo", "/r", "--port", "3000", "demo", "ls"]],
  ])("%j", (argv, want) => expect(optionsBeforeName(program, argv)).toEqual(want));

  test.each([
    // The command's words stay the command's, even when one is spelled like an sbx option.
    [["exec", "demo", "ls", "--repo", "x"]],
    [["exec", "demo", "--", "--repo"]],
    [["shell", "demo", "--nosuch"]],
    // Other verbs are commander's as they are.
    [["create", "demo", "--repo", "/r"]],
    [["shell", "--attach", "s-1"]],
  ])("left alone: %j", (argv) => expect(optionsBeforeName(program, argv)).toEqual(argv));
});
