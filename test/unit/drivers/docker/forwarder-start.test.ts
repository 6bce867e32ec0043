// The Docker backend waits for the in-sandbox forwarder after a start, and says clearly when the image cannot run the host's Bun (musl/Alpine).
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DockerBackend } from "../../../../src/drivers/docker/docker";
import type { SandboxSpec } from "../../../../src/core/spec";
import { SbxError } from "../../../../src/core/errors";
import { FakeExec } from "../../../fakes/exec";

const spec: SandboxSpec = {
  id: "abc123def456",
  name: "demo",
  repo: "/home/ann/src/app",
  dir: "/home/ann/.cache/sandbox/app-ff/demo",
  hostUser: { name: "ann", uid: 1000, gid: 1000, home: "/home/ann", shell: "/bin/bash" },
  sockets: { dir: "/run/user/1000/sbx/sb/abc123def456", proxy: "/p", bridge: "/b" },
  env: {},
  overlays: [],
  options: { driver: "docker", claudeAuth: "overlay", image: "sbx-app:alpine" },
};

const backend = (exec: FakeExec) =>
  new DockerBackend(exec, { sandboxRoot: "/home/ann/.cache/sandbox", runtime: { bun: "/usr/bin/bun", shims: "/opt/sbx-src/shims" }, readyTimeoutMs: 2000 });

const logs = (out: string) => ({ stdout: out, stderr: "" });
const isLogs = (a: readonly string[]) => a[0] === "docker" && a[1] === "logs";
const isState = (a: readonly string[]) => a.join(" ").includes("{{.State.Running}} {{.State.ExitCode}}");

describe("waitForwarder", () => {
  test("returns once the forwarder says it listens", async () => {
    const exec = new FakeExec()
      .expect(isLogs, logs(""))
      .expect(isState, { stdout: "true 0\n" })
      .expect(isLogs, logs("sbx forwarder listening on 127.0.0.1:3128 → /run/sbx/proxy.sock\n"))
      .expect(isState, { stdout: "true 0\n" });
    await backend(exec).waitForwarder(spec);
    exec.assertDone();
  });

  test("an image whose loader cannot run the host's Bun (exit 127) is a config error that names glibc and Alpine", async () => {
    const exec = new FakeExec()
      .expect(isLogs, { stdout: "", stderr: "[FATAL tini (7)] exec /opt/sbx/bin/bun failed: No such file or directory\n" })
      .expect(isState, { stdout: "false 127\n" });
    const err = await backend(exec).waitForwarder(spec).catch((e) => e);
    expect(err).toBeInstanceOf(SbxError);
    expect((err as SbxError).code).toBe("config");
    expect((err as SbxError).message).toContain("musl-based (Alpine)");
    expect((err as SbxError).message).toContain("glibc");
    expect((err as SbxError).hint).toContain("no network at all");
  });

  test("a forwarder that exits for another reason says so and points at docker logs", async () => {
    const exec = new FakeExec()
      .expect(isLogs, logs("sbx forwarder: bad port 'x'\n"))
      .expect(isState, { stdout: "false 64\n" });
    const err = (await backend(exec).waitForwarder(spec).catch((e) => e)) as SbxError;
    expect(err.message).toContain("its forwarder exited at start (exit 64");
    expect(err.hint).toContain("docker logs sbx-abc123def456");
  });
});

describe("waitForwarder through the engine API: the log is followed, not polled", () => {
  const tmp = mkdtempSync(join(tmpdir(), "sbx-fwd-"));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));
  const frame = (text: string) => {
    const body = new TextEncoder().encode(text);
    const out = new Uint8Array(8 + body.length);
    out[0] = 1; // stdout
    new DataView(out.buffer).setUint32(4, body.length);
    out.set(body, 8);
    return out;
  };

  /** An engine socket whose followed log sends `chunks` (ms apart) and then ends or stays open; records each request. */
  function engine(name: string, chunks: Uint8Array[], opts: { end: boolean; state: { Running: boolean; ExitCode: number }; logs: string }) {
    const seen: string[] = [];
    const server = Bun.serve({
      unix: join(tmp, name),
      fetch(req) {
        const u = new URL(req.url);
        seen.push(`${u.pathname}${u.searchParams.get("follow") === "1" ? " follow" : ""}`);
        if (u.pathname.endsWith("/json")) return Response.json({ State: opts.state });
        if (u.searchParams.get("follow") !== "1") return new Response(frame(opts.logs));
        return new Response(
          new ReadableStream({
            async start(c) {
              for (const chunk of chunks) {
                await Bun.sleep(30);
                c.enqueue(chunk);
              }
              if (opts.end) c.close();
            },
          }),
        );
      },
    });
    const b = new DockerBackend(new FakeExec(), { sandboxRoot: "/x", runtime: { bun: "/usr/bin/bun", shims: "/s" }, readyTimeoutMs: 3000, apiSocket: join(tmp, name) });
    return { b, seen, stop: () => server.stop(true) };
  }

  test("the ready line is seen as it is written, even split across chunks; no poll", async () => {
    const line = frame("sbx forwarder listening on 127.0.0.1:3128 → /run/sbx/proxy.sock\n");
    const e = engine("a.sock", [frame("starting\n"), line.subarray(0, 20), line.subarray(20)], { end: false, state: { Running: true, ExitCode: 0 }, logs: "" });
    try {
      // Not seen, it would fail at readyTimeoutMs; one follow request and nothing else means no poll.
      await e.b.waitForwarder(spec);
      expect(e.seen).toEqual(["/containers/sbx-abc123def456/logs follow"]);
    } finally {
      await e.stop();
    }
  });

  test("a restarted container: the earlier run's ready line does not count, only one written since the start", async () => {
    const old = frame("sbx forwarder listening on 127.0.0.1:3128 → /run/sbx/proxy.sock\n");
    const fresh = frame("sbx forwarder listening on 127.0.0.1:3128 → /run/sbx/proxy.sock\n");
    const startedAt = Date.now() / 1000;
    const asked: (string | null)[] = [];
    const server = Bun.serve({
      unix: join(tmp, "c.sock"),
      fetch(req) {
        const since = new URL(req.url).searchParams.get("since");
        asked.push(since);
        // Like the engine: the earlier run's line is older than `since`; this run's comes 120 ms later.
        return new Response(
          new ReadableStream({
            async start(c) {
              if (since === null || Number(since) < startedAt - 60) c.enqueue(old);
              await Bun.sleep(120);
              c.enqueue(fresh);
            },
          }),
        );
      },
    });
    try {
      const b = new DockerBackend(new FakeExec(), { sandboxRoot: "/x", runtime: { bun: "/usr/bin/bun", shims: "/s" }, readyTimeoutMs: 3000, apiSocket: join(tmp, "c.sock") });
      const t0 = performance.now();
      await b.waitForwarder(spec, startedAt);
      expect(performance.now() - t0).toBeGreaterThanOrEqual(100);
      expect(Number(asked[0])).toBeCloseTo(startedAt, 2);
    } finally {
      await server.stop(true);
    }
  });

  test("a container that exits instead: the followed log ends, and the poll says why", async () => {
    const e = engine("b.sock", [frame("[FATAL tini (7)] exec /opt/sbx/bin/bun failed: No such file or directory\n")], {
      end: true,
      state: { Running: false, ExitCode: 127 },
      logs: "[FATAL tini (7)] exec /opt/sbx/bin/bun failed: No such file or directory\n",
    });
    try {
      const err = (await e.b.waitForwarder(spec).catch((x) => x)) as SbxError;
      expect(err).toBeInstanceOf(SbxError);
      expect(err.message).toContain("musl-based (Alpine)");
      expect(e.seen[0]).toBe("/containers/sbx-abc123def456/logs follow");
      expect(e.seen).toContain("/containers/sbx-abc123def456/json");
    } finally {
      await e.stop();
    }
  });
});
