// Container names are scoped to the state root: two roots with the same repo and sandbox name get different ids, and a backend never stops or removes a container another root made.
import { describe, expect, test } from "bun:test";
import { DockerBackend } from "../../../../src/drivers/docker/docker";
import { rootLabel } from "../../../../src/drivers/docker/args";
import type { SandboxSpec } from "../../../../src/core/spec";
import { SbxError } from "../../../../src/core/errors";
import { sandboxId } from "../../../../src/drivers/identity";
import { FakeExec } from "../../../fakes/exec";

const ROOT = "/home/ann/.cache/sandbox";
const spec: SandboxSpec = {
  id: "abc123def456",
  name: "demo",
  repo: "/home/ann/src/app",
  dir: `${ROOT}/app-ff/demo`,
  hostUser: { name: "ann", uid: 1000, gid: 1000, home: "/home/ann", shell: "/bin/bash" },
  sockets: { dir: "/run/user/1000/sbx/sb/abc123def456", proxy: "/p", bridge: "/b" },
  env: {},
  overlays: [],
  options: { driver: "docker", claudeAuth: "overlay", image: "sbx-app:1" },
};

const backend = (exec: FakeExec) => new DockerBackend(exec, { sandboxRoot: ROOT, runtime: { bun: "/usr/bin/bun", shims: "/opt/sbx/shims" } });
const isInspect = (a: readonly string[]) => a[1] === "inspect" && a[2] === "--type" && a.at(-1) === "sbx-abc123def456";
const noVolumes = (a: readonly string[]) => a[1] === "volume" && a[2] === "ls";

describe("sandbox ids are scoped to the state root", () => {
  test("same repo and name under two state roots: two ids (so two containers and two socket dirs)", () => {
    const a = sandboxId("/tmp/a/.cache/sandbox", "/src/app", "demo");
    const b = sandboxId("/tmp/b/.cache/sandbox", "/src/app", "demo");
    expect(a).toHaveLength(12);
    expect(a).not.toBe(b);
    expect(sandboxId("/tmp/a/.cache/sandbox", "/src/app", "demo")).toBe(a);
  });
});

describe("a backend never touches another state root's container of the same name", () => {
  test("remove: another root's sbx-<id> is left alone (no docker rm)", async () => {
    const exec = new FakeExec()
      .expect(isInspect, { stdout: `running\t${rootLabel("/other/root")}\t/other/root/app-ff/demo\n` })
      .always(noVolumes, { stdout: "" });
    const r = await backend(exec).remove(spec);
    expect(r.changed).toBe(false);
    expect(exec.calls.some((c) => c.argv[1] === "rm")).toBe(false);
    expect(exec.unexpected).toBeNull();
  });

  test("remove: this root's container is removed (the control)", async () => {
    const exec = new FakeExec()
      .expect(isInspect, { stdout: `running\t${rootLabel(ROOT)}\t${spec.dir}\n` })
      .expect(["docker", "rm", "--force", "sbx-abc123def456"])
      .always(noVolumes, { stdout: "" });
    expect((await backend(exec).remove(spec)).changed).toBe(true);
    exec.assertDone();
  });

  test("stop: another root's running container is not stopped", async () => {
    const exec = new FakeExec().expect(isInspect, { stdout: `running\t${rootLabel("/other/root")}\t/x\n` });
    expect((await backend(exec).stop(spec)).changed).toBe(false);
    expect(exec.unexpected).toBeNull();
  });

  test("an unlabelled (pre-root-label) container counts as ours only when its sbx.dir is this sandbox's dir", async () => {
    const mine = new FakeExec().expect(isInspect, { stdout: `exited\t<no value>\t${spec.dir}\n` });
    expect((await backend(mine).inspect(spec)).phase).toBe("stopped");
    const theirs = new FakeExec().expect(isInspect, { stdout: "exited\t<no value>\t/elsewhere/demo\n" });
    expect((await backend(theirs).inspect(spec)).phase).toBe("absent");
  });

  test("apply refuses with a conflict instead of starting another root's container", async () => {
    const exec = new FakeExec().expect(isInspect, { stdout: `exited\t${rootLabel("/other/root")}\t/x\n` });
    const err = await backend(exec).apply(spec).catch((e) => e);
    expect(err).toBeInstanceOf(SbxError);
    expect((err as SbxError).code).toBe("conflict");
    expect(exec.calls.some((c) => c.argv[1] === "start")).toBe(false);
  });
});
