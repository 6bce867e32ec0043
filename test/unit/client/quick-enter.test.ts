// The attach fast path is one request to the daemon, which starts the sandbox as every start goes: a fenced sandbox (guards not up) runs nothing — the engine is never contacted; a guarded one runs through its agent, or in sbx-<sid> as the caller, in the cwd the daemon mapped.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encodeFrame, FrameType, jsonFrame } from "../../../shims/exec-frames";
import { AGENT_STDIN_MAX, execRequestBody, parseExecAnswer, quickEnter, type QuickContext } from "../../../src/client/quick";
import { splitExecBody } from "../../../src/daemon/routes-exec";
import { EXEC_FRAMES_TYPE } from "../../../src/daemon/exec-types";
import { SbxError } from "../../../src/core/errors";
import { startLine } from "../../../src/drivers/docker/start-line";
import { readEnv } from "../../../src/sys/env";
import { pathsFor, sandboxDir } from "../../../src/sys/paths";
import { FakeExec } from "../../fakes/exec";
import { startFakeEngine, type FakeEngine } from "../../fakes/engine";

let root = "";
let engine: FakeEngine | null = null;
let daemon: ReturnType<typeof Bun.serve> | null = null;
afterEach(async () => {
  daemon?.stop(true);
  daemon = null;
  await engine?.stop();
  engine = null;
  if (root) rmSync(root, { recursive: true, force: true });
});

/**
 * A repo (a .git dir with HEAD), private XDG dirs, a fake engine, and a fake daemon answering the exec request with
 * `agent` (exec frames) or, without one, `answer` (JSON: how to run it, or an error). The sandbox's clone exists
 * unless `made` is false.
 */
async function world(answer: { status: number; body: unknown }, agent?: Uint8Array[], made = true) {
  root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-quick-")));
  const repo = join(root, "repo");
  mkdirSync(join(repo, ".git"), { recursive: true });
  mkdirSync(join(repo, "sub"));
  writeFileSync(join(repo, ".git", "HEAD"), "ref: refs/heads/main\n");
  const vars = {
    HOME: join(root, "home"),
    PATH: "/usr/bin:/bin",
    XDG_RUNTIME_DIR: join(root, "rt"),
    XDG_STATE_HOME: join(root, "state"),
    XDG_CACHE_HOME: join(root, "cache"),
    XDG_CONFIG_HOME: join(root, "config"),
    DOCKER_HOST: `unix://${join(root, "engine.sock")}`,
    TERM: "xterm",
    SECRET_TOKEN: "never-inside",
  };
  const env = readEnv({ vars, uid: 1234, gid: 5678, platform: "linux" });
  const paths = pathsFor(env);
  mkdirSync(paths.runtimeDir, { recursive: true, mode: 0o700 });
  if (made) mkdirSync(join(sandboxDir(paths, repo, "demo"), "clone"), { recursive: true });
  const requests: string[] = [];
  const execs: { head: unknown; stdin: string }[] = [];
  daemon = Bun.serve({
    unix: paths.controlSocket,
    async fetch(req) {
      requests.push(new URL(req.url).pathname);
      const { head, stdin } = splitExecBody(new Uint8Array(await req.arrayBuffer()));
      execs.push({ head, stdin: new TextDecoder().decode(stdin) });
      if (agent && (head as { agent: boolean }).agent) return new Response(new Blob(agent as unknown as ConstructorParameters<typeof Blob>[0]), { headers: { "content-type": EXEC_FRAMES_TYPE } });
      return Response.json(answer.body, { status: answer.status });
    },
  });
  engine = await startFakeEngine(join(root, "engine.sock"), () => ({ frames: [], exitCode: 3 }));
  const ctx: QuickContext = { exec: new FakeExec(), env, paths, cwd: join(repo, "sub"), stdinIsTTY: false };
  return { ctx, repo, requests, execs, engine };
}

const io = { stdout() {}, stderr() {}, stdin: async () => undefined };
/** The daemon's answer when the command did not run through an agent: the started sandbox and where it runs. */
const answer = (guarded: boolean, extra: Record<string, unknown> = {}) => ({
  sandbox: { id: 1, sid: "abcdef012345", name: "demo", repo: "/r", backend: "docker", state: "active", phase: "running", guarded, guards: [] },
  cwd: "/r/sub",
  notes: [],
  agent: false,
  engine: true,
  ...extra,
});

describe("quickEnter (sbx shell|run NAME -- cmd without a terminal)", () => {
  test("one request: the daemon starts it (its own start) and is told where the caller stands; nothing else is asked", async () => {
    const w = await world({ status: 200, body: answer(false) });
    await quickEnter(w.ctx, { name: "demo", argv: ["true"], missing: "error" }, io).catch(() => null);
    expect(w.requests).toEqual(["/v1/sandboxes/exec"]);
    expect(w.execs).toEqual([{ head: { name: "demo", cwd: w.ctx.cwd, foundRepo: w.repo, argv: ["true"], env: { TERM: "xterm" }, stdin: false, agent: true }, stdin: "" }]);
  });

  test("fenced: the daemon says its guards are not up → unavailable, and the engine is never contacted", async () => {
    const w = await world({ status: 200, body: answer(false) });
    const err = await quickEnter(w.ctx, { name: "demo", argv: ["true"], missing: "error" }, io).catch((e) => e);
    expect(err).toBeInstanceOf(SbxError);
    expect((err as SbxError).code).toBe("unavailable");
    expect(w.engine.created).toHaveLength(0);
    expect(w.engine.started).toBe(0);
  });

  test("a daemon error (fenced by a failed guard) is passed on as that error; nothing runs", async () => {
    const w = await world({ status: 503, body: { error: "unavailable", message: "sandbox 'demo' cannot run: proxy failed", hint: "see the log" } });
    const err = (await quickEnter(w.ctx, { name: "demo", argv: ["true"], missing: "error" }, io).catch((e) => e)) as SbxError;
    expect(err.message).toContain("proxy failed");
    expect(w.engine.created).toHaveLength(0);
  });

  test("no agent connected: runs in sbx-<sid> as the caller's uid:gid, in the dir the daemon answered, with terminal variables only; exit code passed on", async () => {
    const w = await world({ status: 200, body: answer(true, { notes: ["note: the Dockerfile changed\u001b[2J"] }) });
    const said: string[] = [];
    const code = await quickEnter(w.ctx, { name: "demo", argv: ["git", "status"], missing: "error" }, { ...io, stderr: (b: Uint8Array) => void said.push(new TextDecoder().decode(b)) });
    expect(code).toBe(3);
    // The start's notes come first, never raw.
    expect(said).toEqual(["note: the Dockerfile changed\\x1b[2J\n"]);
    const c = w.engine.created[0]!;
    expect(c.container).toBe("sbx-abcdef012345");
    expect(c.body.User).toBe("1234:5678");
    expect(c.body.WorkingDir).toBe("/r/sub");
    expect(c.body.Env).toEqual(["TERM=xterm"]);
    // Through the sandbox's start line, as a session's command is (a missing one is said as sbx says it).
    expect(c.body.Cmd).toEqual(["/bin/sh", "-c", startLine("demo"), "sbx", "git", "status"]);
  });

  test("with an exec agent: output and exit code come from the daemon's frames; the engine is never contacted", async () => {
    const enc = new TextEncoder();
    const w = await world({ status: 200, body: answer(true) }, [
      encodeFrame(FrameType.stdout, 0, enc.encode("out\n")),
      encodeFrame(FrameType.stderr, 0, enc.encode("err\n")),
      jsonFrame(FrameType.exit, 0, { code: 7 }),
    ]);
    const got: string[] = [];
    const agentIo = { stdout: (b: Uint8Array) => got.push(`1:${new TextDecoder().decode(b)}`), stderr: (b: Uint8Array) => got.push(`2:${new TextDecoder().decode(b)}`), stdin: async () => enc.encode("input") };
    expect(await quickEnter(w.ctx, { name: "demo", argv: ["sh", "-c", "x"], missing: "error" }, agentIo)).toBe(7);
    expect(got).toEqual(["1:out\n", "2:err\n"]);
    expect(w.execs).toEqual([{ head: { name: "demo", cwd: w.ctx.cwd, foundRepo: w.repo, argv: ["sh", "-c", "x"], env: { TERM: "xterm" }, stdin: true, agent: true }, stdin: "input" }]);
    expect(w.engine.created).toHaveLength(0);
  });

  test("with an exec agent that goes away mid-command: an exec_failed error, never a made-up exit code", async () => {
    const w = await world({ status: 200, body: answer(true) }, [jsonFrame(FrameType.failed, 0, { message: "the sandbox's exec agent went away" })]);
    const err = (await quickEnter(w.ctx, { name: "demo", argv: ["true"], missing: "error" }, io).catch((e) => e)) as SbxError;
    expect(err.code).toBe("exec_failed");
    expect(err.message).toContain("went away");
  });

  test("stdin too large for the daemon's request body goes to the engine, which streams it; the agent is not asked", async () => {
    const w = await world({ status: 200, body: answer(true) }, [jsonFrame(FrameType.exit, 0, { code: 0 })]);
    const big = new Uint8Array(AGENT_STDIN_MAX + 1);
    const code = await quickEnter(w.ctx, { name: "demo", argv: ["wc", "-c"], missing: "error" }, { ...io, stdin: async () => big });
    expect(code).toBe(3); // the fake engine's answer
    // The daemon still starts it (the one start), told not to use the agent and sent no stdin.
    expect(w.execs).toEqual([{ head: expect.objectContaining({ agent: false, stdin: true }), stdin: "" }]);
    expect(w.engine.created).toHaveLength(1);
  });

  test("a stream that ends without an exit frame is an error", async () => {
    const w = await world({ status: 200, body: answer(true) }, [encodeFrame(FrameType.stdout, 0, new TextEncoder().encode("partial"))]);
    const err = (await quickEnter(w.ctx, { name: "demo", argv: ["true"], missing: "error" }, io).catch((e) => e)) as SbxError;
    expect(err.code).toBe("exec_failed");
  });

  test("a sandbox whose clone the host did not make here (not made yet, or another kind) takes the full path (null) without asking anyone, its stdin unread", async () => {
    const w = await world({ status: 200, body: answer(true) }, undefined, false);
    let read = false;
    const watchIo = { ...io, stdin: async () => ((read = true), undefined) };
    expect(await quickEnter(w.ctx, { name: "demo", argv: ["true"], missing: "fallback" }, watchIo)).toBeNull();
    expect(await quickEnter(w.ctx, { name: "demo", argv: ["true"], missing: "error" }, watchIo)).toBeNull();
    expect(w.requests).toHaveLength(0);
    expect(read).toBe(false);
  });

  test("run: a sandbox the daemon does not know takes the full path (null)", async () => {
    const w = await world({ status: 404, body: { error: "not_found", message: "no sandbox 'demo'", hint: "sbx list" } });
    expect(await quickEnter(w.ctx, { name: "demo", argv: ["true"], missing: "fallback" }, io)).toBeNull();
    const err = (await quickEnter(w.ctx, { name: "demo", argv: ["true"], missing: "error" }, io).catch((e) => e)) as SbxError;
    expect(err.code).toBe("not_found");
  });

  test("a terminal or no command: not this path", async () => {
    const w = await world({ status: 200, body: answer(true) });
    expect(await quickEnter({ ...w.ctx, stdinIsTTY: true }, { name: "demo", argv: ["true"], missing: "error" }, io)).toBeNull();
    expect(await quickEnter(w.ctx, { name: "demo", argv: [], missing: "error" }, io)).toBeNull();
    expect(w.requests).toHaveLength(0);
  });
});

describe("execRequestBody / splitExecBody", () => {
  test("round trip: the JSON head and the stdin bytes come apart exactly", () => {
    const head = { name: "demo", cwd: "/r", foundRepo: "/r", argv: ["cat"], env: {}, stdin: true, agent: true };
    const { head: h, stdin } = splitExecBody(execRequestBody(head, new Uint8Array([0, 1, 2, 255])));
    expect(h).toEqual(head);
    expect([...stdin]).toEqual([0, 1, 2, 255]);
  });

  test("a truncated or non-JSON body is a usage error", () => {
    expect(() => splitExecBody(new Uint8Array([0, 0]))).toThrow(/too short/);
    expect(() => splitExecBody(new Uint8Array([0, 0, 0, 9, 123]))).toThrow(/longer than the body/);
    expect(() => splitExecBody(new Uint8Array([0, 0, 0, 1, 120]))).toThrow(/not JSON/);
  });
});

describe("parseExecAnswer", () => {
  test("a malformed answer is an internal error, never a go-ahead", () => {
    expect(() => parseExecAnswer(200, answer(true, { sandbox: { sid: "../../x", guarded: true } }))).toThrow(/unexpected shape/);
    expect(() => parseExecAnswer(200, answer(true, { sandbox: { sid: "abc", guarded: "yes" } }))).toThrow(/unexpected shape/);
    expect(() => parseExecAnswer(200, answer(true, { cwd: "relative" }))).toThrow(/unexpected shape/);
    expect(() => parseExecAnswer(500, "boom")).toThrow(/HTTP 500/);
    expect(parseExecAnswer(200, answer(true))).toEqual({ sid: "abcdef012345", guarded: true, cwd: "/r/sub", notes: [], engine: true });
    expect(parseExecAnswer(200, answer(true, { notes: ["note: x", 3] })).notes).toEqual(["note: x"]);
  });
});
