// Entering a sandbox: a PTY relay when the caller has a terminal, a plain pipe otherwise; returns the inner exit code.
import type { Exec } from "../sys/exec";
import type { SandboxManager } from "./manager";
import { readStdin, relayTerminal, runPiped, stdinHasData } from "./relay";

export interface EnterRequest {
  name: string;
  argv: string[];
  cwd: string;
  repoFlag?: string | undefined;
  /** Whether the caller's stdin is a terminal. */
  tty: boolean;
}

/** Runs a shell or command in the sandbox (starting it if stopped) and returns its exit code. */
export async function enterSession(m: SandboxManager, exec: Exec, req: EnterRequest): Promise<number> {
  const pipeIn = !req.tty && stdinHasData();
  const argv = await m.session({ name: req.name, argv: req.argv, cwd: req.cwd, repoFlag: req.repoFlag, tty: req.tty, stdin: pipeIn });
  if (req.tty) return relayTerminal(exec, argv);
  const input = pipeIn ? await readStdin() : undefined;
  return runPiped(
    exec,
    argv,
    { stdout: (s) => void process.stdout.write(s), stderr: (s) => void process.stderr.write(s) },
    input,
  );
}
