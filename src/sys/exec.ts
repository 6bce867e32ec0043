// The one place sbx spawns processes: argv arrays only, never a shell string; failures carry argv, code, stderr.
import { closeSync, openSync } from "node:fs";
import { SbxError } from "../core/errors";

export interface ExecOptions {
  cwd?: string;
  /** Added over the executor's base environment (or used alone with `replaceEnv`). */
  env?: Record<string, string>;
  /** Use `env` as the whole environment: for commands that must not inherit anything (the bridge's git). */
  replaceEnv?: boolean;
  /** A string or bytes, or a stream consumed as it arrives (e.g. a pack being uploaded). */
  stdin?: string | Uint8Array | ReadableStream<Uint8Array>;
  timeoutMs?: number;
  /** Throw ExecError on a non-zero exit (default true). */
  check?: boolean;
  /** Receives stderr as it arrives, e.g. to show `docker build` progress; it is still captured. */
  onStderr?: (chunk: string) => void;
  /** Receives stdout as it arrives (streamed command output); it is still captured. */
  onStdout?: (chunk: string) => void;
}

export interface ExecResult {
  argv: readonly string[];
  exitCode: number;
  stdout: string;
  stderr: string;
}

export interface TerminalOptions {
  cols: number;
  rows: number;
  cwd?: string;
  env?: Record<string, string>;
  replaceEnv?: boolean;
  onData: (data: Uint8Array) => void;
}

/** A process attached to a PTY that sbx owns (never the user's real terminal: TIOCSTI). */
export interface TerminalProcess {
  write(data: string | Uint8Array): void;
  resize(cols: number, rows: number): void;
  kill(signal?: NodeJS.Signals): void;
  readonly exited: Promise<number>;
  readonly pid: number;
}

/** A command whose stdout is read as bytes while it runs (a pack), then how it ended. */
export interface StreamedRun {
  stdout: ReadableStream<Uint8Array>;
  done: Promise<{ exitCode: number; stderr: string }>;
}

export interface Exec {
  run(argv: readonly string[], opts?: ExecOptions): Promise<ExecResult>;
  /** Like run, with stdout as a byte stream (never decoded); `onStdout`/`check` do not apply. Optional: see streamRun. */
  stream?(argv: readonly string[], opts?: ExecOptions): StreamedRun;
  /** Spawns argv under a new PTY (Bun's built-in `terminal`; node-pty breaks under Bun 1.4). */
  terminal(argv: readonly string[], opts: TerminalOptions): TerminalProcess;
}

/** A command that ran and failed (or could not start). */
export class ExecError extends SbxError {
  readonly argv: readonly string[];
  readonly commandExitCode: number;
  readonly stderr: string;
  readonly stdout: string;

  constructor(result: ExecResult, hint?: string) {
    const err = result.stderr.trim().split("\n").slice(-3).join(" | ");
    super(
      "exec_failed",
      `\`${result.argv.join(" ")}\` exited ${result.exitCode}${err ? `: ${err}` : ""}`,
      hint === undefined ? {} : { hint },
    );
    this.name = "ExecError";
    this.argv = result.argv;
    this.commandExitCode = result.exitCode;
    this.stderr = result.stderr;
    this.stdout = result.stdout;
  }
}

/** Exit code used when the program could not be started at all (as a shell would). */
export const EXIT_NOT_FOUND = 127;

function mergeEnv(base: Record<string, string>, opts: { env?: Record<string, string>; replaceEnv?: boolean }) {
  return opts.replaceEnv ? { ...opts.env } : { ...base, ...opts.env };
}

async function readAll(stream: ReadableStream<Uint8Array>, onChunk?: (s: string) => void): Promise<string> {
  const decoder = new TextDecoder();
  let out = "";
  for await (const chunk of stream) {
    const s = decoder.decode(chunk, { stream: true });
    out += s;
    onChunk?.(s);
  }
  const tail = decoder.decode();
  if (tail) {
    out += tail;
    onChunk?.(tail);
  }
  return out;
}

type Piped = Bun.Subprocess<"pipe" | "ignore", "pipe", "pipe">;

/** Spawns argv with stdout and stderr piped; the error message when it could not start (not found, not executable). */
function spawnPiped(argv: readonly string[], baseEnv: Record<string, string>, opts: ExecOptions): Piped | string {
  try {
    return Bun.spawn([...argv], {
      cwd: opts.cwd,
      env: mergeEnv(baseEnv, opts),
      stdin: opts.stdin === undefined ? "ignore" : typeof opts.stdin === "string" ? Buffer.from(opts.stdin) : opts.stdin,
      stdout: "pipe",
      stderr: "pipe",
      timeout: opts.timeoutMs,
      killSignal: "SIGKILL",
    }) as Piped;
  } catch (e) {
    return String((e as Error).message);
  }
}

/** The real executor. `baseEnv` is what spawned commands inherit unless told otherwise. */
export function createExec(baseEnv: Record<string, string>): Exec {
  return {
    async run(argv, opts = {}) {
      if (argv.length === 0) throw new SbxError("internal", "exec: empty argv");
      const proc = spawnPiped(argv, baseEnv, opts);
      if (typeof proc === "string") {
        const result: ExecResult = { argv, exitCode: EXIT_NOT_FOUND, stdout: "", stderr: proc };
        if (opts.check === false) return result;
        throw new ExecError(result, `Is \`${argv[0]}\` installed and on PATH?`);
      }
      const [stdout, stderr, exitCode] = await Promise.all([
        readAll(proc.stdout, opts.onStdout),
        readAll(proc.stderr, opts.onStderr),
        proc.exited,
      ]);
      const result: ExecResult = { argv, exitCode, stdout, stderr };
      if (exitCode !== 0 && opts.check !== false) throw new ExecError(result);
      return result;
    },

    stream(argv, opts = {}) {
      const proc = spawnPiped(argv, baseEnv, opts);
      if (typeof proc === "string") return { stdout: new ReadableStream({ start: (c) => c.close() }), done: Promise.resolve({ exitCode: EXIT_NOT_FOUND, stderr: proc }) };
      const stderr = readAll(proc.stderr);
      return { stdout: proc.stdout, done: Promise.all([proc.exited, stderr]).then(([exitCode, err]) => ({ exitCode, stderr: err })) };
    },

    terminal(argv, opts) {
      const proc = Bun.spawn([...argv], {
        cwd: opts.cwd,
        env: mergeEnv(baseEnv, opts),
        terminal: {
          cols: opts.cols,
          rows: opts.rows,
          data: (_t: unknown, data: Uint8Array) => opts.onData(data),
        },
      });
      const term = proc.terminal!;
      return {
        pid: proc.pid,
        exited: proc.exited,
        write: (d) => void term.write(d),
        resize: (c, r) => term.resize(c, r),
        kill: (sig) => proc.kill(sig),
      };
    },
  };
}

export interface DetachedOptions {
  cwd?: string;
  /** The whole environment of the child (nothing is inherited implicitly). */
  env: Record<string, string>;
  /** Where stdout and stderr go (appended, created 0600); discarded when absent. */
  logFile?: string;
}

export interface DetachedProcess {
  readonly pid: number;
  /** Resolves with the exit code if it ends while this process still runs. */
  readonly exited: Promise<number>;
}

/**
 * Starts a process that outlives the caller: its own session, stdin from /dev/null, output to logFile or
 * nowhere, not waited for (the daemon's auto-start, `sbx ui`'s browser opener). A missing program throws ExecError (127).
 */
export function spawnDetached(argv: readonly string[], opts: DetachedOptions): DetachedProcess {
  if (argv.length === 0) throw new SbxError("internal", "exec: empty argv");
  const fd = opts.logFile === undefined ? undefined : openSync(opts.logFile, "a", 0o600);
  try {
    const proc = Bun.spawn([...argv], {
      cwd: opts.cwd,
      env: { ...opts.env },
      stdin: "ignore",
      stdout: fd ?? "ignore",
      stderr: fd ?? "ignore",
      detached: true,
    });
    proc.unref();
    return { pid: proc.pid, exited: proc.exited };
  } catch (e) {
    throw new ExecError({ argv, exitCode: EXIT_NOT_FOUND, stdout: "", stderr: String((e as Error).message) }, `Is \`${argv[0]}\` installed and on PATH?`);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Runs argv on this process's own stdin, stdout and stderr (the terminal, when there is one) and resolves with its exit
 * code: for handing the whole command to another sbx (`sudo sbx …` on a Mac: cli/as-person.ts). While it runs, this
 * process ignores the terminal's SIGINT and SIGQUIT (the child gets them too, and ends as it chooses) and passes SIGTERM
 * and SIGHUP on. A missing program throws ExecError (127).
 */
export async function runAttached(argv: readonly string[], opts: { env: Record<string, string>; cwd?: string }): Promise<number> {
  if (argv.length === 0) throw new SbxError("internal", "exec: empty argv");
  let proc: ReturnType<typeof Bun.spawn>;
  try {
    proc = Bun.spawn([...argv], { cwd: opts.cwd, env: { ...opts.env }, stdin: "inherit", stdout: "inherit", stderr: "inherit" });
  } catch (e) {
    throw new ExecError({ argv, exitCode: EXIT_NOT_FOUND, stdout: "", stderr: String((e as Error).message) }, `Is \`${argv[0]}\` installed?`);
  }
  const ignore = () => {};
  const pass = (sig: NodeJS.Signals) => () => proc.kill(sig);
  const handlers: [NodeJS.Signals, () => void][] = [["SIGINT", ignore], ["SIGQUIT", ignore], ["SIGTERM", pass("SIGTERM")], ["SIGHUP", pass("SIGHUP")]];
  for (const [sig, h] of handlers) process.on(sig, h);
  try {
    // Bun's exit code of a process a signal ended is the shell's: 128 + its number.
    return await proc.exited;
  } finally {
    for (const [sig, h] of handlers) process.off(sig, h);
  }
}

/**
 * Runs argv with its stdout as bytes: the executor's own `stream` when it has one, else (a test double) its `run`, whose
 * text stdout is handed on encoded.
 */
export function streamRun(exec: Exec, argv: readonly string[], opts: ExecOptions = {}): StreamedRun {
  if (exec.stream) return exec.stream(argv, opts);
  const r = exec.run(argv, { ...opts, check: false });
  let bytes: Uint8Array | null = null;
  return {
    stdout: new ReadableStream({
      async pull(c) {
        if (bytes === null) {
          bytes = new TextEncoder().encode((await r).stdout);
          if (bytes.length > 0) c.enqueue(bytes);
        }
        c.close();
      },
    }),
    done: r.then((x) => ({ exitCode: x.exitCode, stderr: x.stderr })),
  };
}
