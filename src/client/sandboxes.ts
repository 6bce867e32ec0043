// The CLI's sandbox verbs: each is one call to the daemon's sandbox service (/v1/lifecycle/*), its notes and build output shown as they come.
import { SbxError, toSbxError } from "../core/errors";
import { progressOut } from "./build-progress";
import { DEFAULT_DETACH_KEYS, parseDetachKeys } from "../core/detach-keys";
import { loadConfig } from "../sys/config-file";
import { listScope } from "../core/scope";
import { processPipedIo, readStdin, runPiped, stdinHasData } from "./piped";
import { forOutput, terminalVars } from "../core/terminal-vars";
import type { Env } from "../sys/env";
import type { Exec } from "../sys/exec";
import type { Paths } from "../sys/paths";
import { daemonFor } from "./cli";
import type { DaemonClient } from "./client";
import { whereOf } from "./where";

export { whereOf };
import { quickEnter, stdio } from "./quick";
import { openShell, processTty, type Tty } from "./terminal";

export interface VerbContext {
  exec: Exec;
  env: Env;
  paths: Paths;
  cwd: string;
  stdinIsTTY: boolean;
  /** Where a session's output goes (its colour settings follow: forOutput); a terminal when not said. */
  stdoutIsTTY?: boolean;
  render: { info(line: string): void; write?(stream: "stdout" | "stderr", s: string): void; readonly stderrIsTTY?: boolean };
}


/**
 * `--sandbox NAME` / `--global` as the daemon takes them (it finds NAME in the repo around the caller's cwd); neither
 * or both is refused here, before any daemon is reached.
 */
export function scopeOf(
  verb: string,
  ctx: Pick<VerbContext, "cwd" | "env">,
  opts: Record<string, unknown>,
): { cwd: string; repoFlag?: string; asUid?: number; sandbox?: string; global: boolean } {
  const name = listScope(verb, typeof opts.sandbox === "string" ? opts.sandbox : undefined, opts.global === true);
  return { ...whereOf(ctx, typeof opts.repo === "string" ? opts.repo : undefined), ...(name === null ? { global: true } : { sandbox: name, global: false }) };
}

/** Notes on stderr; a build as its steps (one line rewritten on a terminal, a line per step elsewhere and under --json). */
export function outOf(ctx: Pick<VerbContext, "render">, o: { json?: boolean } = {}): { log(line: string): void; progress(chunk: string): void } {
  return progressOut(ctx.render, { lines: o.json === true });
}

/** The slip guard (client/guard-name.ts) with this repo's names from the daemon's list. */
export async function guardNewName(
  ctx: Pick<VerbContext, "cwd" | "env" | "stdinIsTTY" | "render"> & { ask(question: string): Promise<string | null> },
  client: DaemonClient,
  req: { name: string; repoFlag: string | undefined; create: boolean; again: (name: string) => string },
): Promise<void> {
  const { guardNewName: guard } = await import("./guard-name");
  await guard(ctx, async () => (await client.lifecycle("list", { here: whereOf(ctx, req.repoFlag) }, outOf(ctx))).sandboxes.map((s) => s.name), req);
}

/** The daemon (started if needed) for a verb. */
export function daemon(ctx: VerbContext): Promise<DaemonClient> {
  return daemonFor(ctx);
}

/**
 * Runs `fn` for each named sandbox, or with `all` for every live sandbox of the repo around the caller, one after
 * another: a refusal (unsynced work, a sandbox gone) is said and the rest still run. Returns 0, or the exit code of the
 * first that failed. Neither names nor `all`, or both, is a usage error.
 */
export async function forEachSandbox(
  ctx: VerbContext & { render: { info(line: string): void; error(e: SbxError): void } },
  verb: string,
  names: readonly string[],
  opts: { all: boolean; repoFlag: string | undefined },
  fn: (client: DaemonClient, name: string) => Promise<void>,
): Promise<number> {
  if (opts.all === (names.length > 0)) {
    throw new SbxError("usage", opts.all ? `sbx ${verb} --all takes no names` : `sbx ${verb}: name the sandboxes, or give --all`, {
      hint: `sbx ${verb} NAME [NAME…], or sbx ${verb} --all for every sandbox of this repo.`,
    });
  }
  const client = await daemon(ctx);
  const targets = opts.all
    ? (await client.lifecycle("list", { here: whereOf(ctx, opts.repoFlag) }, outOf(ctx))).sandboxes.map((s) => s.name)
    : names;
  if (opts.all && targets.length === 0) ctx.render.info("no sandboxes in this repo");
  let code = 0;
  for (const name of targets) {
    try {
      await fn(client, name);
    } catch (e) {
      const err = toSbxError(e);
      ctx.render.error(err);
      if (code === 0) code = err.exitCode;
    }
  }
  return code;
}

/**
 * A stop or rm that would end sessions attached to the sandbox: with `--force`, or with no terminal to ask at, it
 * ends them (each terminal is told why); otherwise the daemon refuses while there are any, and the person is asked.
 */
export async function endingSessions<T>(
  ctx: Pick<VerbContext, "stdinIsTTY"> & { ask(question: string): Promise<string | null> },
  verb: "stop" | "rm" | "rebuild",
  name: string,
  force: boolean,
  call: (ifSessions: "end" | "refuse") => Promise<T>,
): Promise<T> {
  if (force) return call("end");
  // With no one to ask: stop and rm end them (a script asked for it); a rebuild refuses (it is never urgent).
  if (!ctx.stdinIsTTY) return call(verb === "rebuild" ? "refuse" : "end");
  try {
    return await call("refuse");
  } catch (e) {
    const n = e instanceof SbxError && e.code === "conflict" ? (e.data as { sessions?: unknown } | undefined)?.sessions : undefined;
    if (typeof n !== "number") throw e;
    const [doIt, done] = { rm: ["remove", "removed"], stop: ["stop", "stopped"], rebuild: ["rebuild", "rebuilt"] }[verb];
    const answer = await ctx.ask(`sandbox ${name} has ${n} open session${n === 1 ? "" : "s"}. End ${n === 1 ? "it" : "them"} and ${doIt} ${name}? [y/N] `);
    if (!/^y(es)?$/i.test((answer ?? "").trim())) {
      throw new SbxError("conflict", `sandbox ${name} was not ${done}: its sessions stay open`, {
        hint: `\`sbx ${verb} --force ${name}\` ends them without asking.`,
      });
    }
    return call("end");
  }
}

export interface EnterRequest {
  name: string;
  argv: string[];
  /** The command as the person started it, for `sbx ps` (`claude -p …` where argv starts with sbx's launcher). */
  command?: string[];
  repoFlag?: string | undefined;
  /** `--detach-keys` as typed (else the config file's, else Ctrl-P Ctrl-Q). */
  detachKeys?: string | undefined;
}

/** The detach keys of a terminal session: the flag, else the config file's `detachKeys`, else Ctrl-P Ctrl-Q. */
export function detachKeysOf(ctx: Pick<VerbContext, "paths" | "env">, flag: string | undefined): Uint8Array | null {
  return parseDetachKeys(flag ?? loadConfig(ctx.paths, ctx.env).detachKeys ?? DEFAULT_DETACH_KEYS);
}

/**
 * A shell or command in the sandbox; returns its exit code. With a terminal: a daemon session under a PTY the daemon
 * owns (refused unless every guard is up), relayed here. Without one (`sbx run x -- cmd | …`): the daemon starts the
 * sandbox with its guards and runs the command through the sandbox's exec agent when it has one (quickEnter); else
 * the daemon hands back the argv, which runs here with no PTY, stdout streamed as it comes, its exit code sbx's.
 */
export async function enter(ctx: VerbContext, client: DaemonClient, req: EnterRequest, tty: Tty = processTty()): Promise<number> {
  const where = whereOf(ctx, req.repoFlag);
  if (ctx.stdinIsTTY) {
    const { sandbox, cwd } = await client.lifecycle("start", { name: req.name, ...where }, outOf(ctx));
    const detachKeys = detachKeysOf(ctx, req.detachKeys);
    return openShell(client, { name: req.name, repo: sandbox.repo, argv: req.argv, ...(req.command ? { command: req.command } : {}), cwd, env: ctx.env.raw, detachKeys, outputIsTTY: ctx.stdoutIsTTY ?? true }, tty);
  }
  const quick = await quickEnter(ctx, { name: req.name, argv: req.argv, repoFlag: req.repoFlag, missing: "error" }, stdio());
  if (quick !== null) return quick;
  const pipeIn = stdinHasData();
  const { argv } = await client.lifecycle("session", { name: req.name, argv: req.argv, ...where, stdin: pipeIn, env: forOutput(terminalVars(ctx.env.raw), ctx.stdoutIsTTY ?? true) }, outOf(ctx));
  const input = pipeIn ? await readStdin() : undefined;
  return runPiped(ctx.exec, argv, processPipedIo(), input);
}
