// The logger: one `key=value` line per event on stderr (the daemon's log), with secrets and auth headers redacted.
import { Budget, LOG_LINES_BURST, LOG_LINES_PER_SECOND } from "../core/bounds";

export type LogLevel = "debug" | "info" | "warn" | "error";
const order: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line. */
  with(fields: LogFields): Logger;
}

export const REDACTED = "[redacted]";

/** Field names whose values are never logged. */
const SECRET_KEY = /(^|[_.-])(token|secret|password|passwd|authorization|auth|cookie|set-cookie|api[_-]?key|key|credentials?|bearer)$/i;

/** Values that look like credentials wherever they appear (tokens in argv, headers, URLs). */
const SECRET_VALUE: readonly { re: RegExp; to: string }[] = [
  { re: /\b(Bearer|Basic|token)\s+[A-Za-z0-9._~+/=-]{8,}/gi, to: `$1 ${REDACTED}` },
  { re: /((?:authorization|x-api-key|cookie|proxy-authorization)\s*[:=]\s*)[^\s,;]+/gi, to: `$1${REDACTED}` },
  { re: /\b(?:gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{20,})/g, to: REDACTED },
  { re: /\bsk-(?:ant-)?[A-Za-z0-9_-]{16,}/g, to: REDACTED },
  { re: /\bxox[abprs]-[A-Za-z0-9-]{10,}/g, to: REDACTED },
  { re: /\bAKIA[0-9A-Z]{16}\b/g, to: REDACTED },
  { re: /(\/\/[^/\s:@]+:)[^/\s@]+@/g, to: `$1${REDACTED}@` },
];

/** Pure: replaces anything that looks like a credential in a string. */
export function redactString(s: string): string {
  let out = s;
  for (const { re, to } of SECRET_VALUE) out = out.replace(re, to);
  return out;
}

/** Pure: a copy of `v` with secret-named keys and secret-looking strings redacted, at any depth. */
export function redact(v: unknown, key = ""): unknown {
  if (key && SECRET_KEY.test(key)) return REDACTED;
  if (typeof v === "string") return redactString(v);
  if (Array.isArray(v)) return v.map((x) => redact(x));
  if (v !== null && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = redact(x, k);
    return out;
  }
  return v;
}

function quote(v: unknown): string {
  const s = typeof v === "string" ? v : v instanceof Error ? v.message : JSON.stringify(v) ?? String(v);
  return /^[A-Za-z0-9_./:@%+,[\]-]+$/.test(s) ? s : JSON.stringify(s);
}

/** Pure: one log line, `ts=… level=… msg=… k=v …`, redacted. */
export function formatLine(ts: Date, level: LogLevel, msg: string, fields: LogFields): string {
  const parts = [`ts=${ts.toISOString()}`, `level=${level}`, `msg=${quote(redactString(msg))}`];
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined) continue;
    parts.push(`${k.replace(/[^A-Za-z0-9_.-]/g, "_")}=${quote(redact(v, k))}`);
  }
  return parts.join(" ");
}

export function createLogger(write: (line: string) => void, level: LogLevel = "info", base: LogFields = {}, now = () => new Date()): Logger {
  const emit = (l: LogLevel, msg: string, fields: LogFields = {}) => {
    if (order[l] < order[level]) return;
    write(formatLine(now(), l, msg, { ...base, ...fields }) + "\n");
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    with: (fields) => createLogger(write, level, { ...base, ...fields }, now),
  };
}

/** A logger that drops everything (tests that do not look at logs). */
export const silentLogger: Logger = createLogger(() => {}, "error");

/**
 * The lines a sandbox's guards may write (invariant 14: a sandbox that makes them log on every try cannot fill the
 * daemon's log): per sandbox, LOG_LINES_BURST at once, then LOG_LINES_PER_SECOND. What is held back is counted and said
 * in one line before that sandbox's next line that goes, or when its guards go down (`flush`).
 */
export class SandboxLogBudget {
  private readonly budget = new Budget(LOG_LINES_BURST, LOG_LINES_PER_SECOND);
  private readonly held = new Map<number, number>();
  constructor(private readonly now: () => number = Date.now) {}

  /** `base`, for sandbox `key`, within its budget. */
  logger(base: Logger, key: number): Logger {
    const line = (level: LogLevel) => (msg: string, fields?: LogFields) => {
      if (!this.budget.take(key, this.now())) {
        this.held.set(key, (this.held.get(key) ?? 0) + 1);
        return;
      }
      this.flush(base, key);
      base[level](msg, fields);
    };
    return {
      debug: line("debug"),
      info: line("info"),
      warn: line("warn"),
      error: line("error"),
      with: (fields) => this.logger(base.with(fields), key),
    };
  }

  /** Says how many lines of sandbox `key` were held back, if any. */
  flush(base: Logger, key: number): void {
    const n = this.held.get(key);
    if (n === undefined) return;
    this.held.delete(key);
    base.warn("log lines of this sandbox held back", { lines: n, budget: `${LOG_LINES_BURST} at once, then ${LOG_LINES_PER_SECOND} a second` });
  }
}
