#!/usr/bin/env -S bun --no-env-file --config=/dev/null
// sbx's entry: argv → command table → exit code. The only place that calls process.exit.
// The #! line keeps Bun from reading the current directory's bunfig.toml and .env (sys/bun-args.ts says why).
import { Command, CommanderError } from "commander";
import { ExitCode, SbxError, exitCodesHelp, toSbxError } from "../core/errors";
import type { Exec } from "../sys/exec";
import type { Env } from "../sys/env";
import { VERSION } from "../version";
import { createRender, type Io } from "./render";
import type { CliContext, Verb } from "./verb";
import type { Attach } from "./as-person";
import { verbsFor } from "./verb-loaders";
import { isHelpTopic, topicsLine, topicsList, topicText, type HelpTopic } from "./topics";
import { isAgentName } from "../core/agent-names";

export interface MainDeps {
  io: Io;
  /** Raw variables, for decisions made before any verb runs (colour). */
  vars: Readonly<Record<string, string | undefined>>;
  /** Parses and validates the environment; called only when a verb runs (zod costs ~30 ms to load). */
  env: () => Env | Promise<Env>;
  cwd: string;
  stdinIsTTY: boolean;
  /** Injected in tests; the real executor otherwise. */
  exec?: Exec;
  verbs?: readonly Verb[];
  /** Reads the answer to a question (tests give theirs); default: a line of stdin. */
  ask?: (question: string) => Promise<string | null>;
  /** Runs a command on this terminal (`sudo sbx …` on a Mac hands itself to the person); tests give theirs. */
  attach?: Attach;
}

/** The question on stderr, then one line of stdin (null at end of input). */
async function askStdin(io: Io, question: string): Promise<string | null> {
  io.stderr(question);
  for await (const line of console) return line;
  return null;
}

const EPILOG = `
Sandboxes run an agent as its own identity, in its own shared clone of the repo, with no network but
sbx's allowlist proxy and no credentials inside. Start with \`sbx doctor\`, then \`sbx run claude\` (or codex,
gemini, opencode, aider) in a repo, or \`sbx create <name>\` for a sandbox of your own.
${topicsLine()}

${exitCodesHelp()}`;

/**
 * Pure: commander's own error text ("error: unknown option '--x'", a suggestion on the next line) as sbx says errors:
 * what was wrong, and what to do.
 */
export function usageError(text: string, verb: string | null): SbxError {
  const lines = text.trim().split("\n");
  const message = (lines[0] ?? "").replace(/^error:\s*/, "");
  const suggestion = /\(Did you mean ([\w-]+)\?\)/.exec(text)?.[1];
  const where = verb === null ? "`sbx --help` lists the commands" : `\`sbx ${verb} --help\` shows its arguments and options`;
  return new SbxError("usage", message, { hint: suggestion ? `Did you mean \`sbx ${verb === null ? "" : `${verb} `}${suggestion}\`? ${where}.` : `${where}.` });
}

export async function main(argv: readonly string[], deps: MainDeps): Promise<number> {
  const { io } = deps;
  const render = createRender(io, deps.vars);
  let exitCode: number = ExitCode.ok;
  // Built only when a verb runs, so `--help` and `--version` load nothing heavy.
  const ctx = async (): Promise<CliContext> => {
    const env = await deps.env();
    const [{ pathsFor }, { createExec }, { checkPrivateDir }] = await Promise.all([import("../sys/paths"), import("../sys/exec"), import("../sys/private-dir")]);
    const paths = pathsFor(env);
    // The control socket is trusted for being in a dir of our own: one another account made first (a symlink, its own
    // dir at /tmp/sbx-<uid>) is refused before any verb speaks to what is in it.
    checkPrivateDir(paths.runtimeDir, env.uid);
    return {
      env,
      paths,
      exec: deps.exec ?? createExec(env.raw),
      render,
      cwd: deps.cwd,
      stdinIsTTY: deps.stdinIsTTY,
      stdoutIsTTY: io.stdoutIsTTY,
      ask: deps.ask ?? ((q) => askStdin(io, q)),
    };
  };

  const program = new Command("sbx")
    .description("Run untrusted AI coding agents in strict sandboxes on your own machine.")
    .version(VERSION, "-V, --version", "print the version")
    .helpOption("-h, --help", "show help")
    .addHelpText("after", EPILOG)
    .showSuggestionAfterError(true)
    .enablePositionalOptions()
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout(s),
      writeErr: (s) => io.stderr(s),
      outputError: (s) => render.error(usageError(s, null)),
    });

  // Only the verb the command line names is loaded (verb-loaders.ts); help and unknown words load them all.
  for (const verb of deps.verbs ?? (await verbsFor(argv))) {
    const cmd = program.command(verb.name, { hidden: verb.hidden === true }).description(verb.summary).helpOption("-h, --help", "show help");
    for (const a of verb.aliases ?? []) cmd.alias(a);
    cmd.configureOutput({ writeOut: (s) => io.stdout(s), writeErr: (s) => io.stderr(s), outputError: (s) => render.error(usageError(s, verb.name)) });
    cmd.exitOverride();
    if (verb.runsCommand) cmd.passThroughOptions();
    verb.declare(cmd);
    cmd.action(async (...params: unknown[]) => {
      // commander passes: declared arguments…, options, the command.
      const command = params[params.length - 1] as Command;
      const opts = command.opts();
      // For verbs that run a command, commander keeps the `--` that separates it from sbx's own options.
      const args = (params.slice(0, -2) as (string | string[] | undefined)[]).flatMap((a) =>
        a === undefined ? [] : Array.isArray(a) ? (a[0] === "--" && !verb.keepsDashDash ? a.slice(1) : a) : [a],
      );
      const go = async () => {
        const c = await ctx();
        // sbx never works as root on a Mac: the person sudo works for runs the same command (cli/as-person.ts).
        if (c.env.platform === "darwin" && c.env.uid === 0) return (await import("./as-person")).handOffToPerson(c, argv, { attach: deps.attach, quiet: verb.silent === true });
        return verb.run(c, args, opts, command);
      };
      // A silent verb (what shell completion calls) prints nothing and exits 0 whatever fails, its context included.
      exitCode = verb.silent ? await go().catch(() => ExitCode.ok) : await go();
    });
  }

  if (argv.length === 0) {
    program.outputHelp();
    return ExitCode.usage;
  }

  // `sbx help TOPIC` (a guide, not a verb) and `sbx help topics`; `sbx help VERB` stays commander's.
  if (argv[0] === "help" && argv.length === 2 && (argv[1] === "topics" || isHelpTopic(argv[1])) && !program.commands.some((c) => c.name() === argv[1])) {
    io.stdout(argv[1] === "topics" ? topicsList() : topicText(argv[1] as HelpTopic));
    return ExitCode.ok;
  }

  // `sbx help WORD` for no verb and no guide: said as an error, not the whole help with exit 64.
  if (argv[0] === "help" && argv.length === 2 && argv[1] !== "help" && !argv[1]!.startsWith("-") && !program.commands.some((c) => c.name() === argv[1] || c.aliases().includes(argv[1]!))) {
    render.error(new SbxError("usage", `there is no command or guide '${argv[1]}'`, { hint: "`sbx --help` lists the commands, `sbx help topics` the guides." }));
    return ExitCode.usage;
  }

  try {
    await program.parseAsync(optionsBeforeName(program, argv), { from: "user" });
    return exitCode;
  } catch (e) {
    if (e instanceof CommanderError) {
      // --help and --version end here too, with exit code 0.
      return e.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    }
    const err = toSbxError(e);
    render.error(err);
    if (!(e instanceof SbxError) && deps.vars.SBX_DEBUG) io.stderr(`${(e as Error).stack ?? e}\n`);
    return err.exitCode;
  }
}

/** The verbs whose words after NAME are a command: their own options written right after NAME are moved before it. */
const RUNS_A_COMMAND = new Set(["shell", "exec", "run"]);

/**
 * Pure but for reading the program: `sbx shell NAME --shell bash` and `sbx exec NAME --repo DIR -- cmd` as people
 * type them. For `shell`, `exec` and `run`, whose arguments after NAME are a command, the verb's own options written
 * right after NAME (before the command's first word, or before `--`) are moved before it, where commander reads them;
 * the command's own words are never touched (`sbx exec NAME ls --json` keeps `--json` for ls). `sbx run AGENT [NAME]`
 * passes what follows to the agent, so there sbx's options are taken only before a `--` that ends them
 * (`sbx run claude work --memory 8g -- --model opus`), and only when every word before it is one of sbx's.
 */
export function optionsBeforeName(program: Command, argv: readonly string[]): string[] {
  const verb = argv[0];
  const cmd = program.commands.find((c) => c.name() === verb);
  if (!cmd || verb === undefined || !RUNS_A_COMMAND.has(verb)) return [...argv];
  // Options before NAME take a value when their flag says so: skip them to find NAME.
  let i = 1;
  const option = (word: string) => {
    const flag = word.split("=")[0]!;
    return cmd.options.find((o) => o.long === flag || o.short === flag);
  };
  const takesValue = (word: string) => option(word)?.required === true && !word.includes("=");
  while (i < argv.length && argv[i]!.startsWith("-") && argv[i] !== "--") i += takesValue(argv[i]!) ? 2 : 1;
  if (i >= argv.length || argv[i] === "--") return [...argv];
  const name = i;
  // sbx's options from `from` on, up to the first word that is not one (or `--`): [moved words, where they stop].
  const optionsFrom = (from: number): [string[], number] => {
    const moved: string[] = [];
    let j = from;
    while (j < argv.length && argv[j] !== "--" && option(argv[j]!)) {
      const n = takesValue(argv[j]!) ? 2 : 1;
      moved.push(...argv.slice(j, j + n));
      j += n;
    }
    return [moved, j];
  };
  if (verb === "run" && isAgentName(argv[name]!)) {
    const dashDash = argv.indexOf("--", name + 1);
    if (dashDash < 0) return [...argv];
    const first = name + 1 < dashDash && !argv[name + 1]!.startsWith("-") ? name + 2 : name + 1; // after the sandbox's name
    const [moved, stop] = optionsFrom(first);
    if (stop !== dashDash) return [...argv];
    return [...argv.slice(0, name), ...moved, ...argv.slice(name, first), ...argv.slice(dashDash)];
  }
  const [moved, j] = optionsFrom(name + 1);
  return [...argv.slice(0, name), ...moved, argv[name]!, ...argv.slice(j)];
}

/**
 * This process's stdout and stderr for main(), and a drain that resolves once everything written is out. A write to a
 * pipe the reader has not emptied completes later; exiting before it does cut piped output at the pipe's size
 * (measured: a 1.2 MB `--json` arrived as its first 64 KiB).
 */
export function processIo(): Io & { drain(): Promise<void>; stdoutGone: AbortSignal } {
  let out: Promise<void> = Promise.resolve();
  let err: Promise<void> = Promise.resolve();
  // stdout's reader went away (`sbx logs -f | head -1`: EPIPE) or stdout failed: nothing more is written to it, and a
  // verb that would go on for ever stops. Bun kills no process on SIGPIPE: unheard, the error was a stack on stderr and
  // the verb went on writing into nothing.
  const gone = new AbortController();
  const fail = (e: unknown) => {
    if (!gone.signal.aborted) gone.abort(e);
  };
  process.stdout.on("error", fail);
  // Writes to one stream complete in order: waiting for the last one's callback waits for all of them.
  const write = (stream: NodeJS.WriteStream, s: string) =>
    new Promise<void>((res) => {
      stream.write(s, (e) => {
        if (e && stream === process.stdout) fail(e);
        res();
      });
    });
  return {
    stdout: (s) => {
      if (!gone.signal.aborted) out = write(process.stdout, s);
    },
    stderr: (s) => void (err = write(process.stderr, s)),
    stdoutGone: gone.signal,
    stdoutIsTTY: Boolean(process.stdout.isTTY),
    stderrIsTTY: Boolean(process.stderr.isTTY),
    stdoutColumns: process.stdout.isTTY ? process.stdout.columns || undefined : undefined,
    drain: async () => {
      await Promise.all([out, err]);
    },
  };
}

/** Runs sbx as this process: main(), every byte of its output written, then exit with its code. */
export async function runAsProcess(argv: readonly string[], verbs?: readonly Verb[]): Promise<never> {
  const io = processIo();
  const code = await main(argv, {
    io,
    vars: process.env,
    env: async () => {
      const { processEnv } = await import("../sys/env");
      try {
        return processEnv();
      } catch (e) {
        throw new SbxError("config", (e as Error).message, { hint: "Run sbx from a normal login session (HOME set)." });
      }
    },
    cwd: process.cwd(),
    stdinIsTTY: Boolean(process.stdin.isTTY),
    ...(verbs ? { verbs } : {}),
  });
  await io.drain();
  // A reader that went away wanted no more (the verb's code stands); any other failure to write lost output: said, unless
  // the verb failed already (and said why).
  const why = io.stdoutGone.reason as NodeJS.ErrnoException | undefined;
  if (io.stdoutGone.aborted && why?.code !== "EPIPE" && code === ExitCode.ok) {
    process.stderr.write(`sbx: could not write the output: ${why?.message ?? String(why)}\n`);
    process.exit(ExitCode.ioErr);
  }
  process.exit(code);
}

if (import.meta.main) await runAsProcess(process.argv.slice(2));
