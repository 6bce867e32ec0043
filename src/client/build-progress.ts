// How a build shows while it runs: on a terminal, one line rewritten in place ("building the image: step 3/7: RUN
// make"); elsewhere (a pipe, a log, and under --json), one line per step. The build's own output is not shown as
// it comes: a failure's error carries its last lines and the whole log's path.
import { parseBuildStep } from "../core/build-steps";
import { lineSplitter } from "../core/lines";
import { terminalLine } from "../core/printable";

export interface BuildProgressIo {
  info(line: string): void;
  /** Raw text on stderr (only on a terminal). */
  write(s: string): void;
  tty: boolean;
  /** The terminal's width (the step line is cut to it). */
  columns: number;
}

/** Notes (`log`) and build output (`progress`) for one command. */
export function buildProgress(io: BuildProgressIo): { log(line: string): void; progress(chunk: string): void } {
  let open = false;
  const close = () => {
    if (open) io.write("\n");
    open = false;
  };
  const progress = lineSplitter((l) => {
    const s = parseBuildStep(l);
    if (!s) return;
    const text = `building the image: step ${s.n}/${s.of}: ${terminalLine(s.text)}`;
    if (!io.tty) return io.info(`  ${text}`);
    const width = Math.max(20, io.columns - 1);
    io.write(`\r\x1b[K${text.length > width ? `${text.slice(0, width - 1)}…` : text}`);
    open = true;
  });
  return {
    log: (line) => {
      close();
      io.info(line);
    },
    progress,
  };
}

/**
 * A verb's notes and build output on its stderr (the CLI's render), as buildProgress shows them. Under `--json` (`lines`)
 * a line per step even at a terminal: whatever reads the JSON may be reading stderr too.
 */
export function progressOut(
  r: { info(line: string): void; write?(stream: "stdout" | "stderr", s: string): void; readonly stderrIsTTY?: boolean },
  o: { lines?: boolean } = {},
): {
  log(line: string): void;
  progress(chunk: string): void;
} {
  return buildProgress({
    info: (l) => r.info(l),
    write: (s) => r.write?.("stderr", s),
    tty: r.write !== undefined && r.stderrIsTTY === true && o.lines !== true,
    columns: process.stderr.columns || 80, // a terminal of unknown size (a pty no one sized) says 0
  });
}
