// The fast path of `sbx shell|run NAME -- cmd` without a terminal: the daemon starts the sandbox (guards up) and runs the command through its exec agent, or else the command goes through the Docker Engine API. Loads no zod schemas, no store, no docker CLI.
import { existsSync } from "node:fs";
import { readExecStream } from "../../shims/exec-frames";
import { inSandboxArgv } from "../drivers/docker/start-line";
import { engineExec, engineSocket } from "../drivers/docker/engine-exec";
import { SbxError, isErrorCode } from "../core/errors";
import { printable } from "../core/printable";
import { EXEC_FRAMES_TYPE } from "../daemon/exec-types";
import { validateSandboxName } from "../core/names";
import { processPipedIo, readStdin, stdinHasData } from "./piped";
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

/** This process's stdout and stderr (with the flush main needs before it exits), and its stdin when it has data. */
export function stdio(): QuickIo {
  return { ...processPipedIo(), stdin: async () => (stdinHasData() ? readStdin() : undefined) };
}

/** What the fast path needs of the daemon's answer to POST /v1/sandboxes/start, checked by hand (no zod on this path). */
export interface StartedView {
  sid: string;
  backend: string;
  guarded: boolean;
  /** Lines for the person (a changed Dockerfile, …), said on stderr before the command runs. */
  notes: string[];
}

/** Pure: checks the daemon's answer; an error body becomes its SbxError; anything malformed is an internal error. */
export function parseStartAnswer(status: number, json: unknown): StartedView {
  if (status < 200 || status >= 300) {
    const e = json as { error?: unknown; message?: unknown; hint?: unknown } | null;
    if (e && isErrorCode(e.error) && typeof e.message === "string") {
      throw new SbxError(e.error, e.message, { hint: typeof e.hint === "string" ? e.hint : "" });
    }
    throw new SbxError("internal", `the daemon answered the start request with HTTP ${status}`, { hint: "See the daemon log." });
  }
  const sb = (json as { sandbox?: { sid?: unknown; backend?: unknown; guarded?: unknown } } | null)?.sandbox;
  if (!sb || typeof sb.sid !== "string" || !/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(sb.sid) || typeof sb.backend !== "string" || typeof sb.guarded !== "boolean") {
    throw new SbxError("internal", "the daemon's answer to the start request has an unexpected shape", {
      hint: "The client and daemon may be different versions: restart the daemon.",
    });
  }
  const n = (json as { notes?: unknown }).notes;
  const notes = Array.isArray(n) ? n.filter((x): x is string => typeof x === "string") : [];
  return { sid: sb.sid, backend: sb.backend, guarded: sb.guarded, notes };
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
  return { status: res.status, json: await jsonAnswer(res) };
}

/** A daemon answer's JSON; anything else is an internal error. */
async function jsonAnswer(res: Response): Promise<unknown> {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new SbxError("internal", `the daemon sent a non-JSON answer (HTTP ${res.status})`, { hint: "Restart the daemon." });
  }
}

/**
 * Runs argv in a Docker sandbox with no PTY and returns its exit code, or null when this path does not apply (a
 * terminal, no command, no daemon running yet, an engine not on a unix socket, a sandbox being created, a missing one
 * for `run`): then the caller takes the full path. The daemon starts the sandbox and confirms its guards are up before
 * the command is started; a fenced sandbox runs nothing.
 * API: POST /v1/sandboxes/start, then POST /v1/sandboxes/exec (daemon: the sandbox's exec agent runs it); without an agent, POST /containers/sbx-<id>/exec, POST /exec/<id>/start, GET /exec/<id>/json (engine)
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
  for (const line of view.notes) io.stderr(new TextEncoder().encode(`${printable(line)}\n`));
  if (!view.guarded) {
    throw new SbxError("unavailable", `sandbox '${req.name}' started but its guards are not all up`, {
      hint: "See `sbx status` and the daemon log; nothing runs in a sandbox whose proxy and bridge are down.",
    });
  }
  const input = await io.stdin();
  const cwd = sessionCwd(repo, ctx.cwd, lay.clone);
  const env = terminalVars(raw);
  // The sandbox's exec agent when it has one (no engine round trips); else the engine's exec, as the caller. Stdin
  // this large goes to the engine, which takes it as a stream (the daemon takes a request body of at most 128 MiB).
  const viaAgent =
    (input?.length ?? 0) > AGENT_STDIN_MAX ? null : await agentExec(ctx.paths, { name: req.name, repo, argv: req.argv, cwd, env, stdin: input !== undefined }, input, io);
  if (viaAgent !== null) {
    await io.flush?.();
    return viaAgent;
  }
  const code = await engineExec(
    socket,
    {
      container: `sbx-${view.sid}`,
      user: `${ctx.env.uid}:${ctx.env.gid}`,
      workdir: cwd,
      env,
      // Through the sandbox's start line, as a session's command: a missing command is said as sbx says it.
      argv: inSandboxArgv(req.name, req.argv),
      ...(input ? { stdin: input } : {}),
    },
    io,
  );
  await io.flush?.();
  return code;
}

/** Stdin up to this size goes through the exec agent (in the daemon request's body). */
export const AGENT_STDIN_MAX = 64 * 1024 * 1024;

export interface AgentExecRequest {
  name: string;
  repo: string;
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  stdin: boolean;
}

/** Pure: the body of POST /v1/sandboxes/exec: a u32 BE length, the JSON head, the stdin bytes. */
export function execRequestBody(head: AgentExecRequest, stdin: Uint8Array | undefined): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(head));
  const body = new Uint8Array(4 + json.length + (stdin?.length ?? 0));
  new DataView(body.buffer).setUint32(0, json.length);
  body.set(json, 4);
  if (stdin) body.set(stdin, 4 + json.length);
  return body;
}

/**
 * Runs the command through the daemon and the sandbox's exec agent, streaming its output to io; returns its exit code,
 * or null when the daemon answers that the sandbox has no agent (the caller then uses the engine).
 * API: POST /v1/sandboxes/exec (daemon), answered with exec frames (shims/exec-frames.ts)
 */
export async function agentExec(paths: Paths, head: AgentExecRequest, stdin: Uint8Array | undefined, io: QuickIo): Promise<number | null> {
  const res = await fetch("http://sbx/v1/sandboxes/exec", {
    method: "POST",
    unix: paths.controlSocket,
    body: execRequestBody(head, stdin),
    headers: { "content-type": "application/octet-stream" },
  } as RequestInit).catch((e: Error) => {
    throw new SbxError("unavailable", `lost the sbx daemon while starting the command: ${e.message}`, { hint: "See `sbx status` and its log." });
  });
  if (res.headers.get("content-type") !== EXEC_FRAMES_TYPE) {
    const json = await jsonAnswer(res);
    parseStartAnswer(res.status, json); // an error answer throws as its SbxError
    if ((json as { agent?: unknown }).agent === false) return null;
    throw new SbxError("internal", "the daemon's answer to the exec request has an unexpected shape", { hint: "Restart the daemon." });
  }
  const end = await readExecStream(res.body as ReadableStream<Uint8Array>, io);
  if ("code" in end) return end.code;
  throw new SbxError("exec_failed", `the command did not finish: ${end.failed}`, {
    hint: "Its output so far is above. See `sbx status` and the daemon log; run it again once the sandbox runs.",
  });
}

/** What `sbx run AGENT` needs of the daemon's answer to POST /v1/lifecycle/agent, checked by hand (no zod here). */
export interface AgentAnswer {
  name: string;
  created: boolean;
  argv: string[];
}

/** Pure: one line of a lifecycle answer: a note or output for the person, the result, or the error as its SbxError. */
export function agentAnswerLine(line: string, out: { log(line: string): void; progress(chunk: string): void }): AgentAnswer | null {
  let v: { t?: unknown; line?: unknown; chunk?: unknown; result?: unknown; body?: unknown };
  try {
    v = JSON.parse(line) as typeof v;
  } catch {
    throw new SbxError("internal", "the daemon sent a line that is not JSON", { hint: "Restart the daemon." });
  }
  if (v.t === "log" && typeof v.line === "string") out.log(v.line);
  else if (v.t === "progress" && typeof v.chunk === "string") out.progress(v.chunk);
  else if (v.t === "error") parseStartAnswer(500, v.body); // throws the daemon's error as its SbxError
  else if (v.t === "done") {
    const r = v.result as { sandbox?: { name?: unknown }; created?: unknown; argv?: unknown } | null;
    const argv = r?.argv;
    if (typeof r?.sandbox?.name !== "string" || typeof r.created !== "boolean" || !Array.isArray(argv) || !argv.every((a) => typeof a === "string")) {
      throw new SbxError("internal", "the daemon's answer to `sbx run AGENT` has an unexpected shape", { hint: "The client and daemon may be different versions: restart the daemon." });
    }
    return { name: r.sandbox.name, created: r.created, argv: argv as string[] };
  }
  return null;
}

/**
 * `sbx run AGENT` without zod: POST /v1/lifecycle/agent (the sandbox made or started, the agent cached, its preset)
 * with notes to stderr as they come; null when no daemon answers (the caller takes the path that starts one).
 */
export async function quickAgent(paths: Paths, body: Record<string, unknown>, out: { log(line: string): void; progress(chunk: string): void }): Promise<AgentAnswer | null> {
  let res: Response;
  try {
    res = await fetch("http://sbx/v1/lifecycle/agent", { method: "POST", unix: paths.controlSocket, body: JSON.stringify(body), headers: { "content-type": "application/json" } } as RequestInit);
  } catch {
    return null;
  }
  if (!res.body) throw new SbxError("internal", "the daemon sent no answer to `sbx run AGENT`", { hint: "Restart the daemon." });
  if (!(res.headers.get("content-type") ?? "").startsWith("application/x-sbx-lines")) parseStartAnswer(res.status, await jsonAnswer(res));
  let buf = "";
  const dec = new TextDecoder();
  for await (const chunk of res.body) {
    buf += dec.decode(chunk as Uint8Array, { stream: true });
    let nl = buf.indexOf("\n");
    while (nl !== -1) {
      const got = agentAnswerLine(buf.slice(0, nl), out);
      if (got) return got;
      buf = buf.slice(nl + 1);
      nl = buf.indexOf("\n");
    }
  }
  if (buf.trim() !== "") {
    const got = agentAnswerLine(buf, out);
    if (got) return got;
  }
  throw new SbxError("unavailable", "the sbx daemon ended its answer to `sbx run AGENT` early", { hint: "See `sbx status` and its log." });
}
