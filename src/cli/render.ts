// The only chalk user: human output (tables, check lists, errors) and --json for machines. Results → stdout, the rest → stderr.
import { Chalk, type ChalkInstance } from "chalk";
import type { SbxError } from "../core/errors";

export interface Io {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  stdoutIsTTY: boolean;
  stderrIsTTY: boolean;
}

export interface Render {
  readonly c: ChalkInstance;
  /** A result line on stdout. */
  out(line: string): void;
  /** A log or progress line on stderr. */
  info(line: string): void;
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

export function createRender(io: Io, env: { NO_COLOR?: string | undefined; FORCE_COLOR?: string | undefined }): Render {
  const c = new Chalk({ level: colorLevel(io.stdoutIsTTY, env) });
  const ce = new Chalk({ level: colorLevel(io.stderrIsTTY, env) });
  return {
    c,
    out: (line) => io.stdout(line + "\n"),
    info: (line) => io.stderr(line + "\n"),
    json: (value) => io.stdout(JSON.stringify(value, null, 2) + "\n"),
    table(columns, rows) {
      const all = [columns, ...rows];
      const widths = columns.map((_, i) => Math.max(...all.map((r) => (r[i] ?? "").replace(ANSI, "").length)));
      const line = (r: string[]) =>
        r
          .map((cell, i) => (i === r.length - 1 ? cell : cell + " ".repeat(widths[i]! - cell.replace(ANSI, "").length)))
          .join("  ")
          .trimEnd();
      io.stdout(c.bold(line(columns)) + "\n");
      for (const r of rows) io.stdout(line(r) + "\n");
    },
    error(e) {
      io.stderr(`${ce.red("sbx:")} ${e.message}\n`);
      if (e.hint) io.stderr(`${ce.dim("hint:")} ${e.hint}\n`);
    },
  };
}
