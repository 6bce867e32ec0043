// Typed errors: every failure sbx reports carries a sysexits code and a hint for whoever reads it.

/** sysexits(3) codes used by sbx. */
export const ExitCode = {
  ok: 0,
  failure: 1,
  usage: 64,
  dataErr: 65,
  noInput: 66,
  unavailable: 69,
  software: 70,
  osErr: 71,
  cantCreate: 73,
  ioErr: 74,
  tempFail: 75,
  noPerm: 77,
  config: 78,
} as const;
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/**
 * What each code means when sbx returns it (`sbx --help` lists them); null for a code sbx itself never returns. A
 * Record over every value: a new code cannot be added without saying what it means.
 */
export const EXIT_MEANINGS: Record<ExitCodeValue, string | null> = {
  0: "ok",
  1: null,
  64: "usage: a wrong argument or option, or a sandbox name that needs --repo to say which",
  65: "unsynced commits: the sandbox holds commits no host ref has",
  66: "not found: no such sandbox, session, approval or entry",
  69: "unavailable: no daemon or engine answers, a fenced sandbox, a state that could not be read",
  70: "a bug in sbx (please report it)",
  71: "a system command or the engine failed",
  73: "exists already",
  74: null,
  75: "conflict: another daemon, a path in the way; or sessions attached",
  77: "permission or policy: sbx refused it to keep a sandbox or your files safe",
  78: "config: a bad config file or environment",
};

/** A command run in a sandbox exits with its own code; these two are a shell's, and sbx's too for a command it cannot start. */
export const COMMAND_EXITS: Readonly<Record<number, string>> = {
  126: "the command in the sandbox could not be run",
  127: "the command does not exist in the sandbox",
};

/** Pure: the exit codes as `sbx --help` lists them, one a line. */
export function exitCodesHelp(): string {
  const row = (code: number | string, meaning: string) => `  ${String(code).padEnd(4)}${meaning}`;
  const own = Object.entries(EXIT_MEANINGS).flatMap(([code, m]) => (m === null ? [] : [row(code, m)]));
  const cmd = Object.entries(COMMAND_EXITS).map(([code, m]) => row(code, m));
  return ["Exit codes:", ...own, ...cmd, row("", "otherwise a command run in a sandbox (shell, exec, run) exits with its own code")].join("\n");
}

/** Every error code, once: the type, the control socket's schema and the fast client's check all read this. */
export const ERROR_CODES = [
  "usage",
  "invalid_name",
  "not_found",
  "exists",
  "not_available",
  "unavailable",
  "permission",
  "config",
  "exec_failed",
  "conflict",
  "unsynced_commits",
  "policy_denied",
  "internal",
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export function isErrorCode(s: unknown): s is ErrorCode {
  return typeof s === "string" && (ERROR_CODES as readonly string[]).includes(s);
}

const defaultExit: Record<ErrorCode, ExitCodeValue> = {
  usage: ExitCode.usage,
  invalid_name: ExitCode.usage,
  not_found: ExitCode.noInput,
  exists: ExitCode.cantCreate,
  not_available: ExitCode.unavailable,
  unavailable: ExitCode.unavailable,
  permission: ExitCode.noPerm,
  config: ExitCode.config,
  exec_failed: ExitCode.osErr,
  conflict: ExitCode.tempFail,
  unsynced_commits: ExitCode.dataErr,
  policy_denied: ExitCode.noPerm,
  internal: ExitCode.software,
};

export interface SbxErrorOptions {
  hint?: string;
  exitCode?: ExitCodeValue;
  cause?: unknown;
  /** Structured facts of the refusal (the unsynced commits, …), for `--json` callers. */
  data?: Record<string, unknown>;
}

/** The one error type that crosses module boundaries. `hint` says what to do next. */
export class SbxError extends Error {
  readonly code: ErrorCode;
  readonly exitCode: ExitCodeValue;
  readonly hint: string | undefined;
  readonly data: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, opts: SbxErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "SbxError";
    this.code = code;
    this.exitCode = opts.exitCode ?? defaultExit[code];
    this.hint = opts.hint;
    this.data = opts.data;
  }

  /** The single wire shape of an error over any socket. */
  toWire(): WireError {
    return { error: this.code, message: this.message, hint: this.hint ?? "", ...(this.data ? { data: this.data } : {}) };
  }
}

export interface WireError {
  error: ErrorCode;
  message: string;
  hint: string;
  data?: Record<string, unknown>;
}

export function isSbxError(e: unknown): e is SbxError {
  return e instanceof SbxError;
}

/** Wraps anything thrown into an SbxError so callers have one shape to render. */
export function toSbxError(e: unknown): SbxError {
  if (e instanceof SbxError) return e;
  const message = e instanceof Error ? e.message : String(e);
  return new SbxError("internal", message, {
    cause: e,
    hint: "This is a bug in sbx; please report it with the command you ran.",
  });
}

// ── Named refusals: the same refusal reads the same wherever it is raised ──

/**
 * No sandbox of that name where the caller looked: in `repo` (null: no repo was found), and, unless the caller named
 * the repo, in no other repo either.
 */
export function sandboxNotFound(name: string, repo: string | null, elsewhereToo: boolean): SbxError {
  const where = repo === null ? "" : elsewhereToo ? ` in ${repo} or any other repo` : ` in ${repo}`;
  return new SbxError("not_found", `no sandbox '${name}'${where}`, {
    hint: `\`sbx list\` shows the sandboxes there are; \`sbx create ${name}\` (or \`sbx run ${name}\`) makes one.`,
  });
}

/** Sandboxes of that name in several repos, none of them the caller's: which one is for --repo to say. */
export function sandboxAmbiguous(name: string, repos: readonly string[]): SbxError {
  return new SbxError("usage", `there are sandboxes named '${name}' in ${repos.length} repos: ${repos.join(", ")}`, {
    hint: `Say which with --repo, e.g. --repo ${repos[0]}.`,
  });
}

/** A sandbox of that name exists already (of kind `backend`). */
export function sandboxExists(name: string, repo: string, backend: string): SbxError {
  return new SbxError("exists", `sandbox '${name}' already exists for ${repo} (${backend})`, {
    hint: `Enter it with \`sbx shell ${name}\`, or remove it with \`sbx rm ${name}\` first.`,
  });
}

/** A commit as the unsynced-work refusal shows it. */
export interface CommitLine {
  sha: string;
  subject: string;
}

/** The clone holds commits that exist nowhere else on the host (exit 65); `commits` travel as structured data too. */
export function unsyncedCommits(name: string, commits: readonly CommitLine[]): SbxError {
  const lines = commits.slice(0, 20).map((c) => `  ${c.sha.slice(0, 12)} ${c.subject}`);
  if (commits.length > 20) lines.push(`  … and ${commits.length - 20} more`);
  const n = commits.length;
  return new SbxError("unsynced_commits", `sandbox '${name}' holds ${n} commit${n === 1 ? "" : "s"} that no host ref has:\n${lines.join("\n")}`, {
    hint: `Keep them with \`git branch <branch> sandbox-${name}/<branch>\` in the repo (they are already on the host as sandbox-${name}/*), or discard them with \`sbx rm --force ${name}\`.`,
    data: { commits: commits.map((c) => ({ sha: c.sha, subject: c.subject })) },
  });
}

/** Whether the clone holds such commits could not be told (the fetch or the count failed). */
export function unsyncedUnknown(name: string, why: string): SbxError {
  return new SbxError("unsynced_commits", `cannot tell whether sandbox '${name}' holds commits the host lacks: ${why}`, {
    hint: `See the error; remove it anyway with \`sbx rm --force ${name}\`.`,
  });
}

/** Sessions are attached to a sandbox a stop or rm would end; the caller is asked first (exit 75 when it did not say). */
export function sessionsAttached(name: string, sessions: number, verb: "stop" | "rm" | "rebuild"): SbxError {
  const doing = { rm: "removing", stop: "stopping", rebuild: "rebuilding" }[verb];
  return new SbxError("conflict", `sandbox '${name}' has ${sessions} open session${sessions === 1 ? "" : "s"}; ${doing} it ends ${sessions === 1 ? "it" : "them"}`, {
    hint: `Run \`sbx ${verb} --force ${name}\` to end ${sessions === 1 ? "it" : "them"} (each terminal is told why), or close ${sessions === 1 ? "it" : "them"} first (\`sbx ps\` lists them).`,
    data: { sessions },
  });
}
