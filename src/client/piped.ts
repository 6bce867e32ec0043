// A command with no terminal: stdin forwarded when it carries data, stdout and stderr streamed as they come, and flushed before sbx exits.
import { fstatSync } from "node:fs";
import type { Exec } from "../sys/exec";

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
