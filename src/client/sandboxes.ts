// The CLI's sandbox verbs over the daemon: the lifecycle manager does the host-side work, the daemon starts and stops (guards first).
import { SbxError } from "../core/errors";
import type { Sandbox } from "../core/schemas";
import { cliDeps, openManager } from "../lifecycle/open";
import type { SandboxManager, Supervisor } from "../lifecycle/manager";
import { processPipedIo, readStdin, runPiped, stdinHasData } from "../lifecycle/relay";
import type { Env } from "../sys/env";
import type { Exec } from "../sys/exec";
import type { Paths } from "../sys/paths";
import { sandboxLayout } from "../workspace/layout";
import { sessionCwd } from "../workspace/clone";
import { isUserBackend, type UserBackendKind, type UserSandboxes } from "../lifecycle/user-backend";
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

/** Connects to the daemon (starting one if needed), opens the manager with it as supervisor, runs fn, closes the store. */
export async function withDaemonManager<T>(ctx: VerbContext, fn: (m: SandboxManager, client: DaemonClient) => Promise<T>): Promise<T> {
  const client = await daemonFor(ctx);
  const o = openManager({ ...cliDeps(ctx), supervisor: daemonSupervisor(client) });
  try {
    return await fn(o.manager, client);
  } finally {
    o.close();
  }
}

/** The backend of an existing sandbox, or null when there is none: verbs route user-account sandboxes to their lifecycle. */
export async function backendOf(m: SandboxManager, name: string, w: { cwd: string; repoFlag?: string | undefined }): Promise<string | null> {
  try {
    return (await m.locate(name, w)).row.backend;
  } catch (e) {
    if (e instanceof SbxError && e.code === "not_found") return null;
    throw e;
  }
}

/** Runs fn with the user-account lifecycle of `kind`, started and stopped through the daemon like Docker's. */
export async function withUserSandboxes<T>(ctx: VerbContext, client: DaemonClient, kind: UserBackendKind, fn: (u: UserSandboxes) => Promise<T>): Promise<T> {
  const { openUserSandboxes } = await import("../lifecycle/user-backend");
  const o = await openUserSandboxes(
    { exec: ctx.exec, env: ctx.env, paths: ctx.paths, log: (l) => ctx.render.info(l), supervisor: daemonSupervisor(client) },
    kind,
  );
  try {
    return await fn(o.users);
  } finally {
    o.close();
  }
}

/** A shell or command in a user-account sandbox: a daemon PTY session with a terminal, the backend's argv without. */
async function enterUser(ctx: VerbContext, u: UserSandboxes, client: DaemonClient, req: EnterRequest, tty: Tty): Promise<number> {
  const where = { cwd: ctx.cwd, repoFlag: req.repoFlag };
  if (ctx.stdinIsTTY) {
    const { repo } = await u.locate(req.name, where);
    await client.start({ name: req.name, repo });
    // The backend maps host repo paths into the guest's clone itself.
    return openShell(client, { name: req.name, repo, argv: req.argv, cwd: ctx.cwd, env: ctx.env.raw }, tty);
  }
  const pipeIn = stdinHasData();
  const argv = await u.session({ name: req.name, argv: req.argv, ...where, tty: false });
  const input = pipeIn ? await readStdin() : undefined;
  return runPiped(ctx.exec, argv, processPipedIo(), input);
}

export interface EnterRequest {
  name: string;
  argv: string[];
  repoFlag?: string | undefined;
}

/**
 * A shell or command in the sandbox; returns its exit code. With a terminal: a daemon session under a PTY the daemon
 * owns (refused unless every guard is up), relayed here. Without one (`sbx run x -- cmd | …`): the daemon starts the
 * sandbox with its guards, then the command runs with no PTY, stdout streamed as it comes, its exit code sbx's.
 */
export async function enter(ctx: VerbContext, m: SandboxManager, client: DaemonClient, req: EnterRequest, tty: Tty = processTty()): Promise<number> {
  const kind = await backendOf(m, req.name, { cwd: ctx.cwd, repoFlag: req.repoFlag });
  if (kind !== null && isUserBackend(kind)) return withUserSandboxes(ctx, client, kind, (u) => enterUser(ctx, u, client, req, tty));
  if (ctx.stdinIsTTY) {
    const { repo, row } = await m.locate(req.name, { cwd: ctx.cwd, repoFlag: req.repoFlag });
    await m.start(req.name, { cwd: ctx.cwd, repoFlag: req.repoFlag });
    const cwd = sessionCwd(repo, ctx.cwd, sandboxLayout(m.specFor(row).dir).clone);
    return openShell(client, { name: req.name, repo, argv: req.argv, cwd, env: ctx.env.raw }, tty);
  }
  // A command with no terminal: straight through the engine API once the daemon has confirmed the guards.
  const quick = await quickEnter(ctx, { name: req.name, argv: req.argv, repoFlag: req.repoFlag, missing: "error" }, stdio());
  if (quick !== null) return quick;
  const pipeIn = stdinHasData();
  const argv = await m.session({ name: req.name, argv: req.argv, cwd: ctx.cwd, repoFlag: req.repoFlag, tty: false, stdin: pipeIn });
  const input = pipeIn ? await readStdin() : undefined;
  return runPiped(ctx.exec, argv, processPipedIo(), input);
}
