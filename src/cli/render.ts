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
  /** The terminal's width when stdout is one (tables fit it); unset off a terminal, where nothing is cut. */
  stdoutColumns?: number | undefined;
  /** Aborted once stdout takes nothing more (its reader went away: EPIPE; or it failed), its reason the error. */
  stdoutGone?: AbortSignal;
  /** Resolves once everything written so far is out (a slow reader holds it back); at once where writes are sync. */
  drain?: () => Promise<void>;
}

/**
 * How a table's free-text column gives way when a row would be wider than the terminal: `start` cuts its beginning
 * (a path keeps its last part), `end` cuts its end, `wrap` goes on over more lines (a list of words).
 */
export type Fit = "start" | "end" | "wrap";

export interface Render {
  readonly c: ChalkInstance;
  /** Whether stderr is a terminal (progress then rewrites one line). */
  readonly stderrIsTTY: boolean;
  /** Aborted once stdout takes nothing more (`sbx logs -f | head`): a verb that would print for ever stops. */
  readonly stdoutGone: AbortSignal;
  /**
   * Resolves once everything printed so far is out. A verb that prints without end waits on it between batches: output
   * a slow reader has not taken is otherwise held in memory, all of it.
   */
  drained(): Promise<void>;
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
  /**
   * Columns padded to line up. On a terminal no line is wider than it: the columns named in `fit` give way first,
   * widest first; if that is not enough, lines are cut. Off a terminal nothing is cut.
   */
  table(columns: string[], rows: string[][], fit?: Readonly<Record<string, Fit>>): void;
  error(e: SbxError): void;
}

/** chalk 5/6 ignore NO_COLOR: colour is decided here, once, and passed as a level. */
export function colorLevel(isTTY: boolean, env: { NO_COLOR?: string | undefined; FORCE_COLOR?: string | undefined }): 0 | 1 {
  if (env.NO_COLOR !== undefined) return 0;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== "0") return 1;
  return isTTY ? 1 : 0;
}

const ANSI = /\x1b\[[0-9;]*m/g;
/** Two spaces between columns. */
const GAP = 2;
/** A column that gives way keeps at least this much (or its heading, or all of it when narrower). */
const MIN_FIT = 10;

/** Cells on the terminal: wide characters count two, sbx's colour codes nothing. */
function cellWidth(s: string): number {
  return Bun.stringWidth(s);
}

/** Pure: the longest start of `chars` that fits in `w` cells. */
function fitting(chars: readonly string[], w: number): string[] {
  const kept: string[] = [];
  let used = 0;
  for (const ch of chars) {
    const cw = cellWidth(ch);
    if (used + cw > w) break;
    kept.push(ch);
    used += cw;
  }
  return kept;
}

/** Pure: `s` in at most `w` cells, the cut marked with `…` (at its start for `start`); colours dropped when cut. */
export function cutCell(s: string, w: number, side: "start" | "end"): string {
  if (cellWidth(s) <= w) return s;
  if (w <= 0) return "";
  const chars = Array.from(s.replace(ANSI, ""));
  if (side === "end") return `${fitting(chars, w - 1).join("")}…`;
  return `…${fitting(chars.reverse(), w - 1).reverse().join("")}`;
}

/** Pure: `s` as lines of at most `w` cells (w ≥ 1), broken at spaces; a word longer than a line is broken inside. */
export function wrapCell(s: string, w: number): string[] {
  if (cellWidth(s) <= w) return [s];
  const lines: string[] = [];
  let cur = "";
  for (const word of s.replace(ANSI, "").split(" ")) {
    if (cur !== "" && cellWidth(cur) + 1 + cellWidth(word) <= w) {
      cur = `${cur} ${word}`;
      continue;
    }
    if (cur !== "") lines.push(cur);
    let rest = Array.from(word);
    while (cellWidth(rest.join("")) > w) {
      const head = fitting(rest, w);
      if (head.length === 0) break; // a character wider than the column: it goes on its own line
      lines.push(head.join(""));
      rest = rest.slice(head.length);
    }
    cur = rest.join("");
  }
  lines.push(cur);
  return lines;
}

/**
 * Pure: a table's lines, heading first. With `max` (a terminal's width), the columns named in `fit` give way, widest
 * first, down to MIN_FIT and then to their headings' width, until every line fits; a line still too wide is cut.
 * Without `max`, nothing is cut.
 */
export function layoutTable(columns: string[], rows: string[][], fit: Readonly<Record<string, Fit>>, max?: number): string[] {
  const all = [columns, ...rows];
  const natural = columns.map((_, i) => Math.max(...all.map((r) => cellWidth(r[i] ?? ""))));
  const widths = [...natural];
  const modes = columns.map((c) => fit[c.replace(ANSI, "")]);
  const total = () => widths.reduce((a, b) => a + b, 0) + GAP * (widths.length - 1);
  if (max !== undefined) {
    // Down to MIN_FIT first; then, if that is not enough, down to their headings.
    for (const floor of [MIN_FIT, 0]) {
      const mins = columns.map((c, i) => Math.min(natural[i]!, Math.max(cellWidth(c), floor)));
      while (total() > max) {
        let widest = -1;
        for (let i = 0; i < widths.length; i++) if (modes[i] && widths[i]! > mins[i]! && (widest < 0 || widths[i]! > widths[widest]!)) widest = i;
        if (widest < 0) break;
        widths[widest]!--;
      }
    }
  }
  const line = (r: string[]) =>
    r
      .map((cell, i) => (i === r.length - 1 ? cell : cell + " ".repeat(Math.max(0, widths[i]! - cellWidth(cell)))))
      .join(" ".repeat(GAP))
      .trimEnd();
  const lines: string[] = [];
  for (const r of all) {
    // Each cell as the lines it takes at its column's width: one, unless its column wraps.
    const cells = r.map((cell, i) => {
      const mode = modes[i];
      if (cellWidth(cell) <= widths[i]! || mode === undefined) return [cell];
      return mode === "wrap" ? wrapCell(cell, widths[i]!) : [cutCell(cell, widths[i]!, mode)];
    });
    const height = Math.max(...cells.map((c) => c.length));
    for (let k = 0; k < height; k++) lines.push(line(cells.map((c) => c[k] ?? "")));
  }
  return max === undefined ? lines : lines.map((l) => cutCell(l, max, "end"));
}

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
    stdoutGone: io.stdoutGone ?? new AbortController().signal,
    drained: () => io.drain?.() ?? Promise.resolve(),
    // Every line a verb prints may carry what a sandbox chose (a commit subject, a ref, a session name): its control
    // characters are shown, not sent (only sbx's own colours pass). `write` is a command's own output, passed as is.
    out: (line) => io.stdout(terminalLine(line) + "\n"),
    info: (line) => io.stderr(terminalLine(line) + "\n"),
    write: (stream, s) => (stream === "stdout" ? io.stdout(s) : io.stderr(s)),
    when: (ms) => (ms === null ? "-" : io.stdoutIsTTY ? relativeTime(ms, now()) : isoTime(ms)),
    json: (value) => io.stdout(jsonText(isoTimes(value), 2) + "\n"),
    table(columnsIn, rowsIn, fit = {}) {
      const [head, ...body] = layoutTable(columnsIn.map(printableCell), rowsIn.map((r) => r.map(printableCell)), fit, io.stdoutIsTTY ? io.stdoutColumns : undefined);
      io.stdout(out().bold(head ?? "") + "\n");
      for (const l of body) io.stdout(l + "\n");
    },
    error(e) {
      const ce = err();
      io.stderr(`${ce.red("sbx:")} ${terminalLine(e.message)}\n`);
      if (e.hint) io.stderr(`${ce.dim("hint:")} ${terminalLine(e.hint)}\n`);
    },
  };
}
