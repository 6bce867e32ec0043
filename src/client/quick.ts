// The fast path of `sbx shell|run NAME -- cmd` without a terminal: one daemon request (guards up, sandbox running), then the command through the Docker Engine API. Loads no zod schemas, no store, no docker CLI.
import { existsSync } from "node:fs";
import { engineExec, engineSocket } from "../backend/docker/engine-exec";
import { SbxError, type ErrorCode } from "../core/errors";
import { validateSandboxName } from "../core/names";
import { readStdin, stdinHasData } from "../lifecycle/relay";
import { terminalVars } from "../lifecycle/terminal-vars";
import type { Env } from "../sys/env";
import type { Exec } from "../sys/exec";
import { sandboxDir, type Paths } from "../sys/paths";
import { sessionCwd } from "../workspace/clone";
import { sandboxLayout } from "../workspace/layout";
import { findRepoRoot, findRepoRootQuick } from "../workspace/repo";

export interface QuickContext {
  exec: Exec;
  env: Env;
  paths: Paths;
  cwd: string;
  stdinIsTTY: boolean;
}

export interface QuickRequest {
  name: string;
  argv: string[];
  repoFlag?: string | undefined;
  /** `run` creates a missing sandbox: a not_found answer means "take the slow path", not an error. */
  missing: "error" | "fallback";
}

export interface QuickIo {
  stdout(chunk: Uint8Array): void;
  stderr(chunk: Uint8Array): void;
  /** The bytes for the command's stdin, or undefined when there are none to forward (a tty, /dev/null). */
  stdin(): Promise<Uint8Array | undefined>;
  /** Resolves when everything written to stdout and stderr is out. */
  flush?(): Promise<void>;
}

/**
 * This process's stdout and stderr. Writes to a pipe can be pending when the command ends; `flush` resolves once the
 * last one is written (main exits the process right after the verb returns, which would cut the output short).
 */
export function stdio(): QuickIo {
  let out: Promise<void> = Promise.resolve();
  let err: Promise<void> = Promise.resolve();
  const write = (stream: NodeJS.WriteStream, b: Uint8Array) => new Promise<void>((res) => void stream.write(b, () => res()));
  return {
    stdout: (b) => void (out = write(process.stdout, b)),
    stderr: (b) => void (err = write(process.stderr, b)),
    stdin: async () => (stdinHasData() ? readStdin() : undefined),
    flush: async () => {
      await Promise.all([out, err]);
    },
  };
}

const ERROR_CODES = new Set<string>([
  "usage", "invalid_name", "not_found", "exists", "not_available", "unavailable", "permission", "config", "exec_failed",
  "conflict", "unsynced_commits", "policy_denied", "internal",
]);

/** What the fast path needs of the daemon's answer to POST /v1/sandboxes/start, checked by hand (no zod on this path). */
export interface StartedView {
  sid: string;
  backend: string;
  guarded: boolean;
}

/** Pure: checks the daemon's answer; an error body becomes its SbxError; anything malformed is an internal error. */
export function parseStartAnswer(status: number, json: unknown): StartedView {
  if (status < 200 || status >= 300) {
    const e = json as { error?: unknown; message?: unknown; hint?: unknown } | null;
    if (e && typeof e.error === "string" && ERROR_CODES.has(e.error) && typeof e.message === "string") {
      throw new SbxError(e.error as ErrorCode, e.message, { hint: typeof e.hint === "string" ? e.hint : "" });
    }
    throw new SbxError("internal", `the daemon answered the start request with HTTP ${status}`, { hint: "See the daemon log." });
  }
  const sb = (json as { sandbox?: { sid?: unknown; backend?: unknown; guarded?: unknown } } | null)?.sandbox;
  if (!sb || typeof sb.sid !== "string" || !/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(sb.sid) || typeof sb.backend !== "string" || typeof sb.guarded !== "boolean") {
    throw new SbxError("internal", "the daemon's answer to the start request has an unexpected shape", {
      hint: "The client and daemon may be different versions: restart the daemon.",
    });
  }
  return { sid: sb.sid, backend: sb.backend, guarded: sb.guarded };
}

/** POST /v1/sandboxes/start on the control socket; null when no daemon answers (the caller takes the auto-starting path). */
async function daemonStart(paths: Paths, name: string, repo: string): Promise<{ status: number; json: unknown } | null> {
  let res: Response;
  try {
    res = await fetch("http://sbx/v1/sandboxes/start", {
      method: "POST",
      unix: paths.controlSocket,
      body: JSON.stringify({ name, repo }),
      headers: { "content-type": "application/json" },
      signal: AbortSignal.timeout(300_000),
    } as RequestInit);
  } catch (e) {
    if ((e as Error).name === "TimeoutError") throw new SbxError("unavailable", "the sbx daemon did not answer the start request within 300 s", { hint: "See `sbx status` and its log." });
    return null;
  }
  const text = await res.text();
  try {
    return { status: res.status, json: JSON.parse(text) };
  } catch {
    throw new SbxError("internal", `the daemon sent a non-JSON answer (HTTP ${res.status})`, { hint: "Restart the daemon." });
  }
}

/**
 * Runs argv in a Docker sandbox with no PTY and returns its exit code, or null when this path does not apply (a
 * terminal, no command, no daemon running yet, an engine not on a unix socket, a sandbox being created, a missing one
 * for `run`): then the caller takes the full path. The daemon starts the sandbox and confirms its guards are up before
 * the command is started; a fenced sandbox runs nothing.
 * API: POST /v1/sandboxes/start (daemon); POST /containers/sbx-<id>/exec, POST /exec/<id>/start, GET /exec/<id>/json (engine)
 */
export async function quickEnter(ctx: QuickContext, req: QuickRequest, io: QuickIo): Promise<number | null> {
  if (ctx.stdinIsTTY || req.argv.length === 0) return null;
  const raw = ctx.env.raw;
  const socket = engineSocket(ctx.env.vars.DOCKER_HOST);
  if (socket === undefined || (raw.DOCKER_CONTEXT !== undefined && raw.DOCKER_CONTEXT !== "" && raw.DOCKER_CONTEXT !== "default")) return null;
  validateSandboxName(req.name);
  const repo = findRepoRootQuick(ctx.cwd, req.repoFlag, raw) ?? (await findRepoRoot(ctx.exec, ctx.cwd, req.repoFlag));
  const lay = sandboxLayout(sandboxDir(ctx.paths, repo, req.name));
  // A sandbox being made (or never made here) goes the full way, under the per-name lock.
  if (!existsSync(lay.clone) || existsSync(lay.creating)) {
    if (req.missing === "fallback") return null;
  }
  const answer = await daemonStart(ctx.paths, req.name, repo);
  if (answer === null) return null;
  let view: StartedView;
  try {
    view = parseStartAnswer(answer.status, answer.json);
  } catch (e) {
    if (req.missing === "fallback" && e instanceof SbxError && e.code === "not_found") return null;
    throw e;
  }
  if (view.backend !== "docker") return null;
  if (!view.guarded) {
    throw new SbxError("unavailable", `sandbox '${req.name}' started but its guards are not all up`, {
      hint: "See `sbx status` and the daemon log; nothing runs in a sandbox whose proxy and bridge are down.",
    });
  }
  const input = await io.stdin();
  const code = await engineExec(
    socket,
    {
      container: `sbx-${view.sid}`,
      user: `${ctx.env.uid}:${ctx.env.gid}`,
      workdir: sessionCwd(repo, ctx.cwd, lay.clone),
      env: terminalVars(raw),
      argv: req.argv,
      ...(input ? { stdin: input } : {}),
    },
    io,
  );
  await io.flush?.();
  return code;
}

