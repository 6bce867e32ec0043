// SBX_TRACE=<file>: each stage of a command, as the epoch ms it was reached and a word, appended by the CLI and the
// daemon it starts (which inherits the variable) to one file, to find where a command's time goes
// (bench/agent-ready.bench.ts TRACE=1). Unset: one env read at load, nothing else.
import { appendFileSync } from "node:fs";

const file = process.env.SBX_TRACE;
let first = true;

/** Marks a stage; `what` is a short word or two (no secrets: the file is plain). */
export function trace(what: string): void {
  if (!file) return;
  try {
    // The first mark says when this process began too (its runtime's start up to here is part of the time).
    const began = first ? `${performance.timeOrigin.toFixed(1)} ${process.pid} (process start)\n` : "";
    first = false;
    appendFileSync(file, `${began}${(performance.timeOrigin + performance.now()).toFixed(1)} ${process.pid} ${what}\n`);
  } catch {
    /* tracing never fails a command */
  }
}
