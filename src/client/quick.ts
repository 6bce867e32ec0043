// The fast path of `sbx shell|run NAME -- cmd` without a terminal: one request, in which the daemon starts the sandbox (its one start: lock, guards up) and runs the command through its exec agent; or else the command goes through the Docker Engine API. Loads no zod schemas, no store, no docker CLI.
import { trace } from "../sys/trace";
import { existsSync } from "node:fs";
import { readExecStream } from "../../shims/exec-frames";
import { inSandboxArgv } from "../drivers/docker/start-line";
import { engineExec, engineSocket } from "../drivers/docker/engine-exec";
import { SbxError, isErrorCode } from "../core/errors";
import { printable } from "../core/printable";
import { EXEC_FRAMES_TYPE } from "../daemon/exec-types";
import { validateSandboxName } from "../core/names";
import { processPipedIo, readStdin, stdinHasData } from "./piped";
import { forOutput, terminalVars } from "../core/terminal-vars";
import type { Env } from "../sys/env";
import type { Exec } from "../sys/exec";
import { sandboxDir, type Paths } from "../sys/paths";
import { sandboxLayout } from "../workspace/layout";
import { findRepoRoot, findRepoRootQuick } from "../workspace/repo";

export interface QuickContext {
  exec: Exec;
  env: Env;
  paths: Paths;
  cwd: string;
  stdinIsTTY: boolean;
  /** Where the command's output goes (its colour settings follow: forOutput); a terminal when not said. */
  stdoutIsTTY?: boolean;
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

/** A daemon's error answer as its SbxError (anything else that is not JSON of the expected shape is an internal error). */
function throwAnswerError(status: number, json: unknown): never {
  const e = json as { error?: unknown; message?: unknown; hint?: unknown } | null;
  if (e && isErrorCode(e.error) && typeof e.message === "string") {
    throw new SbxError(e.error, e.message, { hint: typeof e.hint === "string" ? e.hint : "" });
  }
  throw new SbxError("internal", `the daemon answered the exec request with HTTP ${status}`, { hint: "See the daemon log." });
}

/** What the fast path needs of the daemon's answer when the command did not run through an agent, checked by hand (no zod on this path). */
export interface ExecAnswer {
  sid: string;
  guarded: boolean;
  /** Where the command runs inside (the caller's dir, as the sandbox sees it). */
  cwd: string;
  /** Lines for the person (a changed Dockerfile, …), said on stderr before the command runs. */
  notes: string[];
  /** The engine can run it (a container whose exec agent is not connected). */
  engine: boolean;
}

/** Pure: checks the daemon's answer; an error body becomes its SbxError; anything malformed is an internal error. */
export function parseExecAnswer(status: number, json: unknown): ExecAnswer {
  if (status < 200 || status >= 300) throwAnswerError(status, json);
  const a = json as { sandbox?: { sid?: unknown; guarded?: unknown }; cwd?: unknown; notes?: unknown; engine?: unknown } | null;
  const sb = a?.sandbox;
  if (!sb || typeof sb.sid !== "string" || !/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(sb.sid) || typeof sb.guarded !== "boolean" || typeof a.cwd !== "string" || !a.cwd.startsWith("/") || typeof a.engine !== "boolean") {
    throw new SbxError("internal", "the daemon's answer to the exec request has an unexpected shape", {
      hint: "The client and daemon may be different versions: restart the daemon.",
    });
  }
  const notes = Array.isArray(a.notes) ? a.notes.filter((x): x is string => typeof x === "string") : [];
  return { sid: sb.sid, guarded: sb.guarded, cwd: a.cwd, notes, engine: a.engine };
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
 * Runs argv in a sandbox whose clone the host made (a container) with no PTY and returns its exit code, or null when
 * this path does not apply (a terminal, no command, no daemon running yet, a sandbox being created, one whose commands
 * cannot run this way, a missing one for `run`): then the caller takes the full path. The daemon starts the sandbox
 * the way every start goes (its lock, guards up first; a fenced sandbox runs nothing) and runs the command through the
 * sandbox's exec agent, in one request; without a connected agent the command goes through the Engine API.
 * API: POST /v1/sandboxes/exec (daemon: the start, then the sandbox's exec agent runs it); without an agent, POST /containers/sbx-<id>/exec, POST /exec/<id>/start, GET /exec/<id>/json (engine)
 */
export async function quickEnter(ctx: QuickContext, req: QuickRequest, io: QuickIo): Promise<number | null> {
  if (ctx.stdinIsTTY || req.argv.length === 0) return null;
  const raw = ctx.env.raw;
  validateSandboxName(req.name);
  const repo = findRepoRootQuick(ctx.cwd, req.repoFlag, raw) ?? (await findRepoRoot(ctx.exec, ctx.cwd, req.repoFlag));
  const lay = sandboxLayout(sandboxDir(ctx.paths, repo, req.name));
  // Only a sandbox whose clone the host made (a container) runs commands this way: its stdin is read below, before the
  // daemon answers, and the full path must still have it for any other. A sandbox being made goes the full way too,
  // under the per-name lock.
  if (!existsSync(lay.clone) || existsSync(lay.creating)) return null;
  const input = await io.stdin();
  // Stdin this large goes to the engine, which takes it as a stream (the daemon takes a request body of at most 128 MiB).
  const viaAgent = (input?.length ?? 0) <= AGENT_STDIN_MAX;
  const head: AgentExecRequest = {
    name: req.name,
    cwd: ctx.cwd,
    ...(req.repoFlag !== undefined ? { repoFlag: req.repoFlag } : {}),
    foundRepo: repo,
    argv: req.argv,
    env: forOutput(terminalVars(raw), ctx.stdoutIsTTY ?? true),
    stdin: input !== undefined,
    agent: viaAgent,
  };
  let ran: { code: number } | ExecAnswer | null;
  try {
    ran = await daemonExec(ctx.paths, head, viaAgent ? input : undefined, io);
  } catch (e) {
    if (req.missing === "fallback" && e instanceof SbxError && e.code === "not_found") return null;
    throw e;
  }
  if (ran === null) return null;
  if ("code" in ran) {
    await io.flush?.();
    return ran.code;
  }
  for (const line of ran.notes) io.stderr(new TextEncoder().encode(`${printable(line)}\n`));
  if (!ran.guarded) {
    throw new SbxError("unavailable", `sandbox '${req.name}' started but its guards are not all up`, {
      hint: "See `sbx status` and the daemon log; nothing runs in a sandbox whose proxy and bridge are down.",
    });
  }
  // No agent connected (a container made before it, a daemon just restarted): the engine's exec, as the caller.
  const socket = engineSocket(ctx.env.vars.DOCKER_HOST);
  const otherContext = raw.DOCKER_CONTEXT !== undefined && raw.DOCKER_CONTEXT !== "" && raw.DOCKER_CONTEXT !== "default";
  if (!ran.engine || socket === undefined || otherContext) {
    throw new SbxError("unavailable", `sandbox '${req.name}' cannot run a piped command now: its exec agent is not connected and the engine is not reachable here`, {
      hint: "Run it again in a moment (the agent connects once the sandbox has started), or with a terminal: `sbx shell NAME`.",
    });
  }
  const code = await engineExec(
    socket,
    {
      container: `sbx-${ran.sid}`,
      user: `${ctx.env.uid}:${ctx.env.gid}`,
      workdir: ran.cwd,
      env: head.env,
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

/** The head of POST /v1/sandboxes/exec (daemon/protocol.ts SandboxExecSchema, written without zod). */
export interface AgentExecRequest {
  name: string;
  cwd: string;
  repoFlag?: string;
  foundRepo?: string;
  argv: string[];
  env: Record<string, string>;
  stdin: boolean;
  agent: boolean;
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
 * Starts the sandbox and runs the command through the daemon and the sandbox's exec agent, streaming its output to io:
 * its exit code; or the daemon's answer of how to run it when it did not (no agent connected, or `agent: false`); or
 * null when no daemon answers (the caller takes the auto-starting path).
 * API: POST /v1/sandboxes/exec (daemon), answered with exec frames (shims/exec-frames.ts) or JSON
 */
export async function daemonExec(paths: Paths, head: AgentExecRequest, stdin: Uint8Array | undefined, io: QuickIo): Promise<{ code: number } | ExecAnswer | null> {
  trace("cli exec sent");
  let res: Response;
  try {
    res = await fetch("http://sbx/v1/sandboxes/exec", {
      method: "POST",
      unix: paths.controlSocket,
      body: execRequestBody(head, stdin),
      headers: { "content-type": "application/octet-stream" },
      signal: AbortSignal.timeout(300_000),
    } as RequestInit);
  } catch (e) {
    if ((e as Error).name === "TimeoutError") throw new SbxError("unavailable", "the sbx daemon did not answer the exec request within 300 s", { hint: "See `sbx status` and its log." });
    return null;
  }
  if (res.headers.get("content-type") !== EXEC_FRAMES_TYPE) return parseExecAnswer(res.status, await jsonAnswer(res));
  trace("cli exec answered");
  const end = await readExecStream(res.body as ReadableStream<Uint8Array>, io);
  trace("cli exec ended");
  if ("code" in end) return { code: end.code };
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
  else if (v.t === "error") throwAnswerError(500, v.body); // throws the daemon's error as its SbxError
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
  if (!(res.headers.get("content-type") ?? "").startsWith("application/x-sbx-lines")) throwAnswerError(res.status, await jsonAnswer(res));
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
