// The terminal relay: an interactive session runs under a PTY sbx owns; the user's terminal only exchanges bytes with it.
import { fstatSync } from "node:fs";
import type { Exec } from "../sys/exec";

export interface RelayIo {
  stdin: NodeJS.ReadStream;
  stdout: NodeJS.WriteStream;
  /** Subscribes to terminal resizes; returns the unsubscribe. */
  onResize: (fn: () => void) => () => void;
}

export function processIo(): RelayIo {
  return {
    stdin: process.stdin,
    stdout: process.stdout,
    onResize(fn) {
      process.on("SIGWINCH", fn);
      return () => void process.off("SIGWINCH", fn);
    },
  };
}

/**
 * Runs argv under a new PTY (never the user's real terminal: TIOCSTI), puts the user's terminal in raw mode,
 * relays bytes both ways and resizes, and returns the inner exit code.
 */
export async function relayTerminal(exec: Exec, argv: readonly string[], io: RelayIo = processIo()): Promise<number> {
  const size = () => ({ cols: io.stdout.columns || 80, rows: io.stdout.rows || 24 });
  const { cols, rows } = size();
  const term = exec.terminal(argv, { cols, rows, onData: (d) => void io.stdout.write(d) });
  const wasRaw = io.stdin.isRaw;
  if (io.stdin.isTTY) io.stdin.setRawMode(true);
  const onInput = (d: Buffer | string) => term.write(typeof d === "string" ? d : new Uint8Array(d));
  io.stdin.on("data", onInput);
  io.stdin.resume();
  const off = io.onResize(() => {
    const s = size();
    term.resize(s.cols, s.rows);
  });
  try {
    return await term.exited;
  } finally {
    off();
    io.stdin.off("data", onInput);
    io.stdin.pause();
    if (io.stdin.isTTY) io.stdin.setRawMode(wasRaw ?? false);
  }
}

/** Whether stdin carries data worth forwarding to a non-interactive command (a pipe or a file, not a tty or /dev/null). */
export function stdinHasData(fd = 0): boolean {
  try {
    const st = fstatSync(fd);
    return st.isFIFO() || st.isFile() || st.isSocket();
  } catch {
    return false;
  }
}

/** Reads all of stdin (only call when stdinHasData()). */
export async function readStdin(): Promise<Uint8Array> {
  return new Uint8Array(await Bun.stdin.arrayBuffer());
}

export interface PipedIo {
  stdout: (s: string | Uint8Array) => void;
  stderr: (s: string | Uint8Array) => void;
  /** Resolves once everything written is out (the process exits right after). */
  flush?: () => Promise<void>;
}

/** This process's stdout and stderr, with a flush that waits for the last write of each (a full pipe delays them). */
export function processPipedIo(): PipedIo {
  let out: Promise<void> = Promise.resolve();
  let err: Promise<void> = Promise.resolve();
  const write = (stream: NodeJS.WriteStream, s: string | Uint8Array) => new Promise<void>((res) => void stream.write(s, () => res()));
  return {
    stdout: (s) => void (out = write(process.stdout, s)),
    stderr: (s) => void (err = write(process.stderr, s)),
    flush: async () => {
      await Promise.all([out, err]);
    },
  };
}

/** Runs a non-interactive command without a PTY; stdout and stderr stream as they come; returns its exit code. */
export async function runPiped(exec: Exec, argv: readonly string[], io: PipedIo, stdin?: Uint8Array): Promise<number> {
  const r = await exec.run(argv, { check: false, onStdout: io.stdout, onStderr: io.stderr, ...(stdin ? { stdin } : {}) });
  await io.flush?.();
  return r.exitCode;
}
