// Runs the CLI's main() in-process with captured output: for tests of parsing, exit codes and rendering.
import { main, type MainDeps } from "../../src/cli/main";
import type { Verb } from "../../src/cli/verb";
import type { Exec } from "../../src/sys/exec";
import { readEnv } from "../../src/sys/env";

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  exec?: Exec;
  vars?: Record<string, string | undefined>;
  cwd?: string;
  tty?: boolean;
  /** The terminal's width (with `tty`). */
  columns?: number;
  verbs?: readonly Verb[];
  /** What the person answers to each question asked, in order (none left: end of input). */
  answers?: string[];
  /** The platform and uid sbx believes it runs on and as (default: Linux, this process's uid). */
  platform?: NodeJS.Platform;
  uid?: number;
  /** Runs a command on the terminal (`sudo sbx …` on a Mac hands itself over through it). */
  attach?: MainDeps["attach"];
}

export async function runCli(argv: string[], o: CliOptions = {}): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  const root = process.env.SBX_TEST_ROOT ?? "/tmp";
  const vars = {
      HOME: `${root}/home`,
      USER: "tester",
      PATH: process.env.PATH,
      XDG_STATE_HOME: `${root}/state`,
      XDG_CONFIG_HOME: `${root}/config`,
      XDG_CACHE_HOME: `${root}/cache`,
      XDG_RUNTIME_DIR: `${root}/run`,
      NO_COLOR: "1",
      ...o.vars,
  };
  const env = () => readEnv({
    vars,
    uid: o.uid ?? process.getuid?.() ?? 0,
    gid: o.uid ?? process.getgid?.() ?? 0,
    platform: o.platform ?? "linux",
  });
  const code = await main(argv, {
    io: {
      stdout: (s) => void (stdout += s),
      stderr: (s) => void (stderr += s),
      stdoutIsTTY: o.tty ?? false,
      stderrIsTTY: o.tty ?? false,
      ...(o.tty && o.columns !== undefined ? { stdoutColumns: o.columns } : {}),
    },
    vars,
    env,
    cwd: o.cwd ?? process.cwd(),
    stdinIsTTY: o.tty ?? false,
    ask: async (q) => {
      stderr += q;
      return o.answers?.shift() ?? null;
    },
    ...(o.exec ? { exec: o.exec } : {}),
    ...(o.verbs ? { verbs: o.verbs } : {}),
    ...(o.attach ? { attach: o.attach } : {}),
  });
  return { code, stdout, stderr };
}
