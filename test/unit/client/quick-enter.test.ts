// The attach fast path asks the daemon first: a fenced sandbox (guards not up) runs nothing — the engine is never contacted; a guarded one runs in sbx-<sid> as the caller, in the mapped cwd.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encodeFrame, FrameType, jsonFrame } from "../../../shims/exec-frames";
import { AGENT_STDIN_MAX, execRequestBody, parseStartAnswer, quickEnter, type QuickContext } from "../../../src/client/quick";
import { splitExecBody } from "../../../src/daemon/app";
import { EXEC_FRAMES_TYPE } from "../../../src/daemon/exec-types";
import { SbxError } from "../../../src/core/errors";
import { startLine } from "../../../src/drivers/docker/start-line";
import { readEnv } from "../../../src/sys/env";
import { pathsFor } from "../../../src/sys/paths";
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
 * A repo (a .git dir with HEAD), private XDG dirs, a fake engine, and a fake daemon answering the start request with
 * `answer` and the exec request with `agent` (exec frames) or, without one, "no agent" (the engine runs it).
 */
async function world(answer: { status: number; body: unknown }, agent?: Uint8Array[]) {
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
  const requests: unknown[] = [];
  const execs: { head: unknown; stdin: string }[] = [];
  daemon = Bun.serve({
    unix: paths.controlSocket,
    async fetch(req) {
      if (new URL(req.url).pathname === "/v1/sandboxes/exec") {
        const { head, stdin } = splitExecBody(new Uint8Array(await req.arrayBuffer()));
        execs.push({ head, stdin: new TextDecoder().decode(stdin) });
        if (agent) return new Response(new Blob(agent as unknown as ConstructorParameters<typeof Blob>[0]), { headers: { "content-type": EXEC_FRAMES_TYPE } });
        return Response.json({ ...(answer.body as object), agent: false }, { status: answer.status });
      }
      requests.push(await req.json());
      return Response.json(answer.body, { status: answer.status });
    },
  });
  engine = await startFakeEngine(join(root, "engine.sock"), () => ({ frames: [], exitCode: 3 }));
  const ctx: QuickContext = { exec: new FakeExec(), env, paths, cwd: join(repo, "sub"), stdinIsTTY: false };
  return { ctx, repo, requests, execs, engine };
}

const io = { stdout() {}, stderr() {}, stdin: async () => undefined };
const view = (guarded: boolean) => ({ sandbox: { id: 1, sid: "abcdef012345", name: "demo", repo: "/r", backend: "docker", state: "active", phase: "running", guarded, guards: [] } });

describe("quickEnter (sbx shell|run NAME -- cmd without a terminal)", () => {
  test("fenced: the daemon says its guards are not up → unavailable, and the engine is never contacted", async () => {
    const w = await world({ status: 200, body: view(false) });
    const err = await quickEnter(w.ctx, { name: "demo", argv: ["true"], missing: "error" }, io).catch((e) => e);
    expect(err).toBeInstanceOf(SbxError);
    expect((err as SbxError).code).toBe("unavailable");
    expect(w.requests).toEqual([{ name: "demo", repo: w.repo }]);
    expect(w.engine.created).toHaveLength(0);
    expect(w.engine.started).toBe(0);
  });

  test("a daemon error (fenced by a failed guard) is passed on as that error; nothing runs", async () => {
    const w = await world({ status: 503, body: { error: "unavailable", message: "sandbox 'demo' cannot run: proxy failed", hint: "see the log" } });
    const err = (await quickEnter(w.ctx, { name: "demo", argv: ["true"], missing: "error" }, io).catch((e) => e)) as SbxError;
    expect(err.message).toContain("proxy failed");
    expect(w.engine.created).toHaveLength(0);
  });

  test("guarded: runs in sbx-<sid> as the caller's uid:gid, in the caller's dir, with terminal variables only; exit code passed on", async () => {
    const w = await world({ status: 200, body: view(true) });
    // The clone has the caller's subdir, so the session starts there.
    const clone = join(w.ctx.paths.sandboxRoot, `repo-${new Bun.CryptoHasher("sha256").update(w.repo).digest("hex")}`, "demo", "clone");
    mkdirSync(join(clone, "sub"), { recursive: true });
    const code = await quickEnter(w.ctx, { name: "demo", argv: ["git", "status"], missing: "error" }, io);
    expect(code).toBe(3);
    const c = w.engine.created[0]!;
    expect(c.container).toBe("sbx-abcdef012345");
    expect(c.body.User).toBe("1234:5678");
    expect(c.body.WorkingDir).toBe(join(w.repo, "sub"));
    expect(c.body.Env).toEqual(["TERM=xterm"]);
    // Through the sandbox's start line, as a session's command is (a missing one is said as sbx says it).
    expect(c.body.Cmd).toEqual(["/bin/sh", "-c", startLine("demo"), "sbx", "git", "status"]);
  });

  test("with an exec agent: output and exit code come from the daemon's frames; the engine is never contacted", async () => {
    const enc = new TextEncoder();
    const w = await world({ status: 200, body: view(true) }, [
      encodeFrame(FrameType.stdout, 0, enc.encode("out\n")),
      encodeFrame(FrameType.stderr, 0, enc.encode("err\n")),
      jsonFrame(FrameType.exit, 0, { code: 7 }),
    ]);
    const got: string[] = [];
    const agentIo = { stdout: (b: Uint8Array) => got.push(`1:${new TextDecoder().decode(b)}`), stderr: (b: Uint8Array) => got.push(`2:${new TextDecoder().decode(b)}`), stdin: async () => enc.encode("input") };
    expect(await quickEnter(w.ctx, { name: "demo", argv: ["sh", "-c", "x"], missing: "error" }, agentIo)).toBe(7);
    expect(got).toEqual(["1:out\n", "2:err\n"]);
    expect(w.execs).toEqual([{ head: { name: "demo", repo: w.repo, argv: ["sh", "-c", "x"], cwd: w.repo, env: { TERM: "xterm" }, stdin: true }, stdin: "input" }]);
    expect(w.engine.created).toHaveLength(0);
  });

  test("with an exec agent that goes away mid-command: an exec_failed error, never a made-up exit code", async () => {
    const w = await world({ status: 200, body: view(true) }, [jsonFrame(FrameType.failed, 0, { message: "the sandbox's exec agent went away" })]);
    const err = (await quickEnter(w.ctx, { name: "demo", argv: ["true"], missing: "error" }, io).catch((e) => e)) as SbxError;
    expect(err.code).toBe("exec_failed");
    expect(err.message).toContain("went away");
  });

  test("stdin too large for the daemon's request body goes to the engine, which streams it; the agent is not asked", async () => {
    const w = await world({ status: 200, body: view(true) }, [jsonFrame(FrameType.exit, 0, { code: 0 })]);
    const big = new Uint8Array(AGENT_STDIN_MAX + 1);
    const code = await quickEnter(w.ctx, { name: "demo", argv: ["wc", "-c"], missing: "error" }, { ...io, stdin: async () => big });
    expect(code).toBe(3); // the fake engine's answer
    expect(w.execs).toHaveLength(0);
    expect(w.engine.created).toHaveLength(1);
  });

  test("a stream that ends without an exit frame is an error", async () => {
    const w = await world({ status: 200, body: view(true) }, [encodeFrame(FrameType.stdout, 0, new TextEncoder().encode("partial"))]);
    const err = (await quickEnter(w.ctx, { name: "demo", argv: ["true"], missing: "error" }, io).catch((e) => e)) as SbxError;
    expect(err.code).toBe("exec_failed");
  });

  test("run: a sandbox not made here yet takes the full path (null) without asking anyone", async () => {
    const w = await world({ status: 200, body: view(true) });
    expect(await quickEnter(w.ctx, { name: "demo", argv: ["true"], missing: "fallback" }, io)).toBeNull();
    expect(w.requests).toHaveLength(0);
  });

  test("a terminal or no command: not this path", async () => {
    const w = await world({ status: 200, body: view(true) });
    expect(await quickEnter({ ...w.ctx, stdinIsTTY: true }, { name: "demo", argv: ["true"], missing: "error" }, io)).toBeNull();
    expect(await quickEnter(w.ctx, { name: "demo", argv: [], missing: "error" }, io)).toBeNull();
    expect(w.requests).toHaveLength(0);
  });
});

describe("execRequestBody / splitExecBody", () => {
  test("round trip: the JSON head and the stdin bytes come apart exactly", () => {
    const head = { name: "demo", repo: "/r", argv: ["cat"], cwd: "/r", env: {}, stdin: true };
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

describe("parseStartAnswer", () => {
  test("a malformed answer is an internal error, never a go-ahead", () => {
    expect(() => parseStartAnswer(200, { sandbox: { sid: "../../x", backend: "docker", guarded: true } })).toThrow(/unexpected shape/);
    expect(() => parseStartAnswer(200, { sandbox: { sid: "abc", backend: "docker", guarded: "yes" } })).toThrow(/unexpected shape/);
    expect(() => parseStartAnswer(500, "boom")).toThrow(/HTTP 500/);
    expect(parseStartAnswer(200, view(true))).toEqual({ sid: "abcdef012345", backend: "docker", guarded: true, notes: [] });
    expect(parseStartAnswer(200, { ...view(true), notes: ["note: x", 3] }).notes).toEqual(["note: x"]);
  });
});
