// The Docker backend waits for the in-sandbox forwarder after a start, and says clearly when the image cannot run the host's Bun (musl/Alpine).
import { describe, expect, test } from "bun:test";
import { DockerBackend } from "../../../../src/backend/docker/docker";
import type { SandboxSpec } from "../../../../src/backend/backend";
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
  options: { image: "sbx-app:alpine" },
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
