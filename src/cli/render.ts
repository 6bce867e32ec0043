// The only chalk user: human output (tables, check lists, errors) and --json for machines. Results → stdout, the rest → stderr.
import type { ChalkInstance } from "chalk";
import type { SbxError } from "../core/errors";
import { jsonText, terminalLine } from "../core/printable";
import { isoTime, isoTimes, relativeTime } from "../core/time";

export interface Io {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  stdoutIsTTY: boolean;
  stderrIsTTY: boolean;
}

export interface Render {
  readonly c: ChalkInstance;
  /** Whether stderr is a terminal (progress then rewrites one line). */
  readonly stderrIsTTY: boolean;
  /** A result line on stdout. */
  out(line: string): void;
  /** A log or progress line on stderr. */
  info(line: string): void;
  /** Raw bytes as they come (command output, build progress), no newline added. */
  write(stream: "stdout" | "stderr", s: string): void;
  /** A time for a person: relative on a terminal ("3 min ago"), ISO 8601 (UTC) off one; `-` for none. */
  when(ms: number | null): string;
  /** The value as JSON on stdout, every time in it (`TIME_KEYS`) as ISO 8601. */
  json(value: unknown): void;
  table(columns: string[], rows: string[][]): void;
  error(e: SbxError): void;
}

/** chalk 5/6 ignore NO_COLOR: colour is decided here, once, and passed as a level. */
export function colorLevel(isTTY: boolean, env: { NO_COLOR?: string | undefined; FORCE_COLOR?: string | undefined }): 0 | 1 {
  if (env.NO_COLOR !== undefined) return 0;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== "0") return 1;
  return isTTY ? 1 : 0;
}

const ANSI = /\x1b\[[0-9;]*m/g;

/** A table cell is one line: its breaks and tabs are shown too (sbx's colours kept). */
function printableCell(cell: string): string {
  return terminalLine(cell).replace(/[\n\t]/g, (c) => (c === "\n" ? "\\n" : "\\t"));
}

/** chalk costs ~12 ms to load: loaded on first use so `--help` and `--version` do not pay for it. */
function lazyChalk(level: 0 | 1): () => ChalkInstance {
  let inst: ChalkInstance | undefined;
  return () => (inst ??= new (require("chalk") as typeof import("chalk")).Chalk({ level }));
}

export function createRender(io: Io, env: { NO_COLOR?: string | undefined; FORCE_COLOR?: string | undefined }, now: () => number = Date.now): Render {
  const out = lazyChalk(colorLevel(io.stdoutIsTTY, env));
  const err = lazyChalk(colorLevel(io.stderrIsTTY, env));
  return {
    get c() {
      return out();
    },
    stderrIsTTY: io.stderrIsTTY,
    // Every line a verb prints may carry what a sandbox chose (a commit subject, a ref, a session name): its control
    // characters are shown, not sent (only sbx's own colours pass). `write` is a command's own output, passed as is.
    out: (line) => io.stdout(terminalLine(line) + "\n"),
    info: (line) => io.stderr(terminalLine(line) + "\n"),
    write: (stream, s) => (stream === "stdout" ? io.stdout(s) : io.stderr(s)),
    when: (ms) => (ms === null ? "-" : io.stdoutIsTTY ? relativeTime(ms, now()) : isoTime(ms)),
    json: (value) => io.stdout(jsonText(isoTimes(value), 2) + "\n"),
    table(columnsIn, rowsIn) {
      const columns = columnsIn.map(printableCell);
      const rows = rowsIn.map((r) => r.map(printableCell));
      const all = [columns, ...rows];
      const widths = columns.map((_, i) => Math.max(...all.map((r) => (r[i] ?? "").replace(ANSI, "").length)));
      const line = (r: string[]) =>
        r
          .map((cell, i) => (i === r.length - 1 ? cell : cell + " ".repeat(widths[i]! - cell.replace(ANSI, "").length)))
          .join("  ")
          .trimEnd();
      io.stdout(out().bold(line(columns)) + "\n");
      for (const r of rows) io.stdout(line(r) + "\n");
    },
    error(e) {
      const ce = err();
      io.stderr(`${ce.red("sbx:")} ${terminalLine(e.message)}\n`);
      if (e.hint) io.stderr(`${ce.dim("hint:")} ${terminalLine(e.hint)}\n`);
    },
  };
}
