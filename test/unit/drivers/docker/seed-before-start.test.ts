// A container's home is seeded when the container is made, before it first starts (so a create can do it while the clone is made), once per container: the sandbox dir's marker says so.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DockerBackend } from "../../../../src/drivers/docker/docker";
import { rootLabel } from "../../../../src/drivers/docker/args";
import type { SandboxSpec } from "../../../../src/core/spec";
import { sandboxLayout } from "../../../../src/workspace/layout";
import { FakeExec } from "../../../fakes/exec";
import { tarArchive } from "../../../../src/core/tar";

const tmp = mkdtempSync(join(tmpdir(), "sbx-seed-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const ROOT = join(tmp, "cache", "sandbox");
let n = 0;
/** A sandbox dir with its clone in place (no overlays: the sequence is the point here). */
function sandbox(): SandboxSpec {
  const dir = join(ROOT, `app-ff`, `demo${n++}`);
  mkdirSync(sandboxLayout(dir).clone, { recursive: true });
  return {
    id: "abc123def456",
    name: "demo",
    repo: "/home/ann/src/app",
    dir,
    hostUser: { name: "ann", uid: 1000, gid: 1000, home: "/home/ann", shell: "/bin/bash" },
    sockets: { dir: join(tmp, "rt", `sb${n}`), proxy: "/p", bridge: "/b" },
    env: {},
    overlays: [],
    options: { driver: "docker", claudeAuth: "overlay", image: "sbx-app:1" },
  };
}

const backend = (exec: FakeExec) => new DockerBackend(exec, { sandboxRoot: ROOT, runtime: { bun: "/usr/bin/bun", shims: "/opt/sbx/shims" }, readyTimeoutMs: 2000 });
const isInspect = (a: readonly string[]) => a[1] === "inspect" && a[2] === "--type" && a.at(-1) === "sbx-abc123def456";
const inspectAs = (status: string, spec: SandboxSpec) => ({ stdout: `${status}\t${rootLabel(ROOT)}\t${spec.dir}\n` });
const isCreate = (a: readonly string[]) => a[0] === "docker" && a[1] === "create";
const isSeed = (a: readonly string[]) => a.join(" ") === "docker cp - sbx-abc123def456:/";
/** The image's passwd and group, read before the seed (as `docker cp` prints them: a tar of the one file). */
const isRead = (a: readonly string[]) => a[1] === "cp" && /^sbx-abc123def456:\/etc\/(passwd|group)$/.test(a[2] ?? "") && a[3] === "-";
const imageTar = (a: readonly string[]) => {
  const file = a[2]!.endsWith("passwd") ? "root:x:0:0:root:/root:/bin/bash\n" : "root:x:0:\n";
  return { stdout: new TextDecoder().decode(tarArchive([{ path: a[2]!.split("/").pop()!, type: "file", mode: 0o644, uid: 0, gid: 0, content: new TextEncoder().encode(file) }])) };
};
const isStart = (a: readonly string[]) => a.join(" ") === "docker start sbx-abc123def456";
const ready = (exec: FakeExec) =>
  exec
    .expect((a) => a[1] === "logs", { stdout: "sbx forwarder listening on 127.0.0.1:3128 → /run/sbx/proxy.sock\n" })
    .expect((a) => a.join(" ").includes("{{.State.Running}}"), { stdout: "true 0\n" });
const verbs = (exec: FakeExec) => exec.calls.map((c) => (c.argv[1] === "inspect" ? "inspect" : isRead(c.argv) ? "read" : c.argv[1] === "cp" ? "seed" : c.argv[1]));

describe("the home is seeded when the container is made, before its first start", () => {
  test("a missing container: create, seed, then start; the marker names it", async () => {
    const spec = sandbox();
    const exec = ready(new FakeExec().expect(isInspect, { exitCode: 1, stderr: "Error: No such container: sbx-abc123def456\n" }).expect(isCreate).expect(isRead, imageTar, 2).expect(isSeed).expect(isStart));
    expect((await backend(exec).apply(spec)).changed).toBe(true);
    exec.assertDone();
    expect(verbs(exec)).toEqual(["inspect", "create", "read", "read", "seed", "start", "logs", "inspect"]);
    expect(Bun.file(sandboxLayout(spec.dir).seeded).size).toBeGreaterThan(0);
    // The archive went in as the seed's stdin: a tar holding the home, owned by the user, and the image's passwd and
    // group with the user added (this image had only root).
    const tar = new TextDecoder().decode(exec.calls.find((c) => isSeed(c.argv))!.opts.stdin as Uint8Array);
    expect(tar).toContain("home/ann");
    expect(tar).toContain("root:x:0:0:root:/root:/bin/bash\nann:x:1000:1000:sbx:/home/ann:/bin/sh\n");
    expect(tar).toContain("root:x:0:\nann:x:1000:\n");
  });

  test("prepare (the create's, beside the clone) seeds; the start after it does not seed again", async () => {
    const spec = sandbox();
    const made = new FakeExec().expect(isInspect, { exitCode: 1, stderr: "Error: No such container: sbx-abc123def456\n" }).expect(isCreate).expect(isRead, imageTar, 2).expect(isSeed);
    await backend(made).prepare(spec);
    made.assertDone();
    const started = ready(new FakeExec().expect(isInspect, inspectAs("created", spec)).expect(isStart));
    await backend(started).apply(spec);
    started.assertDone();
    expect(verbs(started)).not.toContain("seed");
  });

  test("a container made but never seeded (a create cut short) is seeded before it starts", async () => {
    const spec = sandbox();
    const exec = ready(new FakeExec().expect(isInspect, inspectAs("created", spec)).expect(isRead, imageTar, 2).expect(isSeed).expect(isStart));
    await backend(exec).apply(spec);
    exec.assertDone();
    expect(verbs(exec)).toEqual(["inspect", "read", "read", "seed", "start", "logs", "inspect"]);
  });

  test("a failed seed starts nothing and leaves no marker; the next apply seeds again", async () => {
    const spec = sandbox();
    const failing = new FakeExec().expect(isInspect, { exitCode: 1, stderr: "Error: No such container: sbx-abc123def456\n" }).expect(isCreate).expect(isRead, imageTar, 2).expect(isSeed, { exitCode: 1, stderr: "no space left" });
    await expect(backend(failing).apply(spec)).rejects.toThrow();
    failing.assertDone();
    expect(verbs(failing)).not.toContain("start");
    expect(existsSync(sandboxLayout(spec.dir).seeded)).toBe(false);
    const again = ready(new FakeExec().expect(isInspect, inspectAs("created", spec)).expect(isRead, imageTar, 2).expect(isSeed).expect(isStart));
    await backend(again).apply(spec);
    again.assertDone();
  });

  test("a container made anew drops the marker of the one before it (so it is seeded too)", async () => {
    const spec = sandbox();
    writeFileSync(sandboxLayout(spec.dir).seeded, "sbx-abc123def456\n");
    const exec = ready(new FakeExec().expect(isInspect, { exitCode: 1, stderr: "Error: No such container: sbx-abc123def456\n" }).expect(isCreate).expect(isRead, imageTar, 2).expect(isSeed).expect(isStart));
    await backend(exec).apply(spec);
    exec.assertDone();
  });

  test("a stopped container (it has run) is started without seeding", async () => {
    const spec = sandbox();
    const exec = ready(new FakeExec().expect(isInspect, inspectAs("exited", spec)).expect(isStart));
    await backend(exec).apply(spec);
    exec.assertDone();
    expect(verbs(exec)).toEqual(["inspect", "start", "logs", "inspect"]);
    // Its log still holds the earlier run's ready line: only what was written since this start is read.
    const logs = exec.calls.find((c) => c.argv[1] === "logs")!.argv;
    expect(logs[2]).toBe("--since");
    expect(Math.abs(Number(logs[3]) - Date.now() / 1000)).toBeLessThan(5);
  });
});
