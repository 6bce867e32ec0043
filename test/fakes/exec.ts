// FakeExec: records every call, answers from a script, and fails loudly on any call it was not told to expect.
import { ExecError, type Exec, type ExecOptions, type ExecResult, type TerminalOptions, type TerminalProcess } from "../../src/sys/exec";

export type ArgvMatcher = readonly string[] | ((argv: readonly string[]) => boolean);

export interface Reply {
  exitCode?: number;
  stdout?: string;
  stderr?: string;
}

interface Expectation {
  matcher: ArgvMatcher;
  reply: Reply | ((argv: readonly string[], opts: ExecOptions) => Reply);
  /** How many more calls it answers; Infinity for `always`. */
  remaining: number;
}

export interface Call {
  argv: readonly string[];
  opts: ExecOptions;
}

function matches(m: ArgvMatcher, argv: readonly string[]): boolean {
  if (typeof m === "function") return m(argv);
  return m.length === argv.length && m.every((a, i) => a === argv[i]);
}

export class UnexpectedCallError extends Error {
  constructor(argv: readonly string[]) {
    super(`FakeExec: unexpected call: ${JSON.stringify(argv)}`);
    this.name = "UnexpectedCallError";
  }
}

export class FakeExec implements Exec {
  readonly calls: Call[] = [];
  private readonly expectations: Expectation[] = [];
  /** Set by the first unexpected call, so a test fails even if the caller swallowed the error. */
  unexpected: UnexpectedCallError | null = null;

  /** Expect one call (or `times` calls) matching argv; answered in the order they were added. */
  expect(matcher: ArgvMatcher, reply: Expectation["reply"] = {}, times = 1): this {
    this.expectations.push({ matcher, reply, remaining: times });
    return this;
  }

  /** Answer every matching call, any number of times (including none). */
  always(matcher: ArgvMatcher, reply: Expectation["reply"] = {}): this {
    return this.expect(matcher, reply, Infinity);
  }

  async run(argv: readonly string[], opts: ExecOptions = {}): Promise<ExecResult> {
    this.calls.push({ argv: [...argv], opts });
    const e = this.expectations.find((x) => x.remaining > 0 && matches(x.matcher, argv));
    if (!e) {
      const err = new UnexpectedCallError(argv);
      this.unexpected ??= err;
      throw err;
    }
    e.remaining -= 1;
    const r = typeof e.reply === "function" ? e.reply(argv, opts) : e.reply;
    const result: ExecResult = { argv: [...argv], exitCode: r.exitCode ?? 0, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
    if (result.stdout) opts.onStdout?.(result.stdout);
    if (result.stderr) opts.onStderr?.(result.stderr);
    if (result.exitCode !== 0 && opts.check !== false) throw new ExecError(result);
    return result;
  }

  terminal(argv: readonly string[], _opts: TerminalOptions): TerminalProcess {
    this.calls.push({ argv: [...argv], opts: {} });
    const err = new UnexpectedCallError(argv);
    this.unexpected ??= err;
    throw err;
  }

  /** The argv of every call, as a transcript (one line each) for golden files. */
  transcript(): string {
    return this.calls.map((c) => c.argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(" ")).join("\n") + "\n";
  }

  /** Fails if an expectation with a finite count was not used up, or an unexpected call happened. */
  assertDone(): void {
    if (this.unexpected) throw this.unexpected;
    const left = this.expectations.filter((e) => e.remaining !== Infinity && e.remaining > 0);
    if (left.length > 0) {
      const what = left.map((e) => (typeof e.matcher === "function" ? "<predicate>" : JSON.stringify(e.matcher)));
      throw new Error(`FakeExec: expected calls not made: ${what.join(", ")}`);
    }
  }
}
