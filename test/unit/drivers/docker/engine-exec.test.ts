// The Engine API exec: golden request body and start request, the stream demultiplexer, and a whole exec against a fake engine on a unix socket (stdin, stdout/stderr apart, exit code, refusals).
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { engineExec, engineSocket, execCreateBody, execStartRequest, FrameReader } from "../../../../src/drivers/docker/engine-exec";
import { SbxError } from "../../../../src/core/errors";
import { startFakeEngine, type FakeEngine } from "../../../fakes/engine";

const frame = (kind: number, s: string) => {
  const p = new TextEncoder().encode(s);
  const h = new Uint8Array(8);
  h[0] = kind;
  new DataView(h.buffer).setUint32(4, p.length);
  const b = new Uint8Array(8 + p.length);
  b.set(h);
  b.set(p, 8);
  return b;
};

describe("rendered requests", () => {
  test("exec create body: no TTY, stdin only when given, env sorted, argv as given", () => {
    expect(execCreateBody({ container: "c", user: "1000:1000", workdir: "/w", env: { TERM: "xterm", LANG: "C" }, argv: ["git", "status"] })).toEqual({
      AttachStdin: false,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      User: "1000:1000",
      WorkingDir: "/w",
      Env: ["LANG=C", "TERM=xterm"],
      Cmd: ["git", "status"],
    });
    expect(execCreateBody({ container: "c", user: "0:0", workdir: "/", env: {}, argv: ["cat"], stdin: new Uint8Array(1) }).AttachStdin).toBe(true);
  });

  test("start request asks for the hijacked stream", () => {
    expect(execStartRequest("abc")).toBe(
      'POST /exec/abc/start HTTP/1.1\r\nHost: docker\r\nContent-Type: application/json\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: 28\r\n\r\n{"Detach":false,"Tty":false}',
    );
  });

  test("engine socket from DOCKER_HOST: default, unix://, none for tcp", () => {
    expect(engineSocket(undefined)).toBe("/var/run/docker.sock");
    expect(engineSocket("unix:///run/user/1/docker.sock")).toBe("/run/user/1/docker.sock");
    expect(engineSocket("tcp://127.0.0.1:2375")).toBeUndefined();
  });
});

describe("FrameReader", () => {
  test("splits stdout and stderr, across chunk boundaries and with several frames in one chunk", () => {
    const out: string[] = [];
    const err: string[] = [];
    const d = new TextDecoder();
    const r = new FrameReader({ stdout: (b) => out.push(d.decode(b)), stderr: (b) => err.push(d.decode(b)) });
    const all = new Uint8Array([...frame(1, "hello "), ...frame(2, "oops"), ...frame(1, "world"), ...frame(3, "engine")]);
    r.push(all.subarray(0, 3));
    r.push(all.subarray(3, 17));
    r.push(all.subarray(17));
    expect(out.join("")).toBe("hello world");
    expect(err).toEqual(["oops", "engine"]);
    expect(r.pending).toBe(0);
  });
});

describe("engineExec against a fake engine", () => {
  let dir = "";
  let engine: FakeEngine | null = null;
  afterEach(async () => {
    await engine?.stop();
    engine = null;
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("stdin reaches the command and ends with EOF; stdout and stderr stay apart; the exit code is the command's", async () => {
    dir = mkdtempSync(join(tmpdir(), "sbx-fe-"));
    engine = await startFakeEngine(join(dir, "engine.sock"), (body, stdin) => ({
      frames: [frame(1, `got ${new TextDecoder().decode(stdin)}`), frame(2, `user ${String(body.User)}`)],
      exitCode: 7,
    }));
    let out = "";
    let err = "";
    const d = new TextDecoder();
    const code = await engineExec(
      engine.socket,
      { container: "sbx-abc", user: "1000:1000", workdir: "/w", env: {}, argv: ["cat"], stdin: new TextEncoder().encode("x".repeat(200_000)) },
      { stdout: (b) => (out += d.decode(b)), stderr: (b) => (err += d.decode(b)) },
    );
    expect(code).toBe(7);
    expect(out).toBe(`got ${"x".repeat(200_000)}`);
    expect(err).toBe("user 1000:1000");
    expect(engine.created[0]?.container).toBe("sbx-abc");
  });

  test("a stopped container (409) is 'unavailable' and nothing is started", async () => {
    dir = mkdtempSync(join(tmpdir(), "sbx-fe-"));
    engine = await startFakeEngine(join(dir, "engine.sock"), () => ({ frames: [], exitCode: 0 }), { createStatus: 409 });
    const err = await engineExec(engine.socket, { container: "sbx-abc", user: "0:0", workdir: "/", env: {}, argv: ["true"] }, { stdout() {}, stderr() {} }).catch((e) => e);
    expect(err).toBeInstanceOf(SbxError);
    expect((err as SbxError).code).toBe("unavailable");
    expect(engine.started).toBe(0);
  });
});
