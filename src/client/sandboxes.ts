// The CLI's sandbox verbs over the daemon: the sandbox service does the host-side work, the daemon starts and stops (guards first).
import { SbxError } from "../core/errors";
import type { Sandbox } from "../core/schemas";
import { cliDeps, openService } from "../sandboxes/open";
import type { SandboxService, Supervisor } from "../sandboxes/service";
import { processPipedIo, readStdin, runPiped, stdinHasData } from "../lifecycle/relay";
import type { Env } from "../sys/env";
import type { Exec } from "../sys/exec";
import type { Paths } from "../sys/paths";
import { daemonFor } from "./cli";
import type { DaemonClient } from "./client";
import { quickEnter, stdio } from "./quick";
import { openShell, processTty, type Tty } from "./terminal";
/** The daemon as the lifecycle's supervisor: every start and stop of a container goes through it. */
export function daemonSupervisor(client: DaemonClient): Supervisor {
  const ref = (row: Sandbox) => ({ name: row.name, repo: row.repo });
  return {
    async start(row) {
      const { sandbox } = await client.start(ref(row));
      if (!sandbox.guarded) {
        throw new SbxError("unavailable", `sandbox '${row.name}' started but its guards are not all up`, {
          hint: "See `sbx status` and the daemon log; nothing runs in a sandbox whose proxy and bridge are down.",
        });
      }
    },
    async stop(row) {
      const before = (await client.sandboxes()).sandboxes.find((s) => s.name === row.name && s.repo === row.repo);
      await client.stop(ref(row));
      return before?.phase === "running";
    },
    async release(row) {
      await client.release(ref(row));
    },
  };
}

export interface VerbContext {
  exec: Exec;
  env: Env;
  paths: Paths;
  cwd: string;
  stdinIsTTY: boolean;
  render: { info(line: string): void };
}

/** Connects to the daemon (starting one if needed), opens the service with it as supervisor, runs fn, closes the store. */
export async function withDaemonService<T>(ctx: VerbContext, fn: (s: SandboxService, client: DaemonClient) => Promise<T>): Promise<T> {
  const client = await daemonFor(ctx);
  const o = await openService({ ...cliDeps(ctx), supervisor: daemonSupervisor(client) });
  try {
    return await fn(o.service, client);
  } finally {
    o.close();
  }
}

export interface EnterRequest {
  name: string;
  argv: string[];
  repoFlag?: string | undefined;
}

/**
 * A shell or command in the sandbox; returns its exit code. With a terminal: a daemon session under a PTY the daemon
 * owns (refused unless every guard is up), relayed here. Without one (`sbx run x -- cmd | …`): the daemon starts the
 * sandbox with its guards and runs the command through the sandbox's exec agent when it has one (quickEnter); else
 * the command runs here with no PTY, stdout streamed as it comes, its exit code sbx's.
 */
export async function enter(ctx: VerbContext, s: SandboxService, client: DaemonClient, req: EnterRequest, tty: Tty = processTty()): Promise<number> {
  const where = { cwd: ctx.cwd, repoFlag: req.repoFlag };
  if (ctx.stdinIsTTY) {
    const row = await s.start(req.name, where);
    const cwd = await s.sessionCwd(row, ctx.cwd);
    return openShell(client, { name: req.name, repo: row.repo, argv: req.argv, cwd, env: ctx.env.raw }, tty);
  }
  const quick = await quickEnter(ctx, { name: req.name, argv: req.argv, repoFlag: req.repoFlag, missing: "error" }, stdio());
  if (quick !== null) return quick;
  const pipeIn = stdinHasData();
  const argv = await s.session({ name: req.name, argv: req.argv, ...where, tty: false, stdin: pipeIn });
  const input = pipeIn ? await readStdin() : undefined;
  return runPiped(ctx.exec, argv, processPipedIo(), input);
}
