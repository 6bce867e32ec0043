// What a verb is: its commander declaration and its action. main.ts builds the program from the table of verbs.
import type { Command } from "commander";
import type { Exec } from "../sys/exec";
import type { Env } from "../sys/env";
import type { Paths } from "../sys/paths";
import type { Render } from "./render";

export interface CliContext {
  env: Env;
  paths: Paths;
  exec: Exec;
  render: Render;
  cwd: string;
  /** Whether stdin is a terminal (interactive verbs need it). */
  stdinIsTTY: boolean;
  /** Whether stdout is a terminal (a session's colour settings follow it: core/terminal-vars.ts forOutput). */
  stdoutIsTTY: boolean;
  /** Asks the person at the terminal (the question on stderr) and returns the line they answered, or null at end of input. */
  ask(question: string): Promise<string | null>;
}

export interface Verb {
  name: string;
  summary: string;
  /**
   * The verb runs a command: everything after its first argument belongs to that command, so
   * `sbx run demo ls -la` passes `-la` through. Other verbs parse options anywhere (`sbx rm demo --force`).
   */
  runsCommand?: boolean;
  /** Other names it answers to (`ls` for list). */
  aliases?: readonly string[];
  /** The verb sees the `--` after its first argument (where it tells a name from what follows); others get it dropped. */
  keepsDashDash?: boolean;
  /** Left out of `sbx --help` and of shell completion (`__complete`, which the completion scripts call). */
  hidden?: boolean;
  /**
   * A failure prints nothing and exits 0, even one before the verb runs (no HOME): the verb answers shell completion,
   * where a message would land in the person's prompt.
   */
  silent?: boolean;
  /** Declares arguments, options and the long help. */
  declare(cmd: Command): void;
  /** Runs the verb; returns the exit code. Throw SbxError for failures. `cmd` is the verb's own commander command. */
  run(ctx: CliContext, args: string[], opts: Record<string, unknown>, cmd: Command): Promise<number>;
}
