// Engine classification: rootless, userns-remap and Docker Desktop are refused because same-uid bind mounts break there.
import { describe, expect, test } from "bun:test";
import { requireSameUidEngine } from "../../../../src/drivers/docker/docker";
import { DockerInfoSchema, classifyEngine, probeEngine, type EngineKind } from "../../../../src/drivers/docker/engine";
import { FakeExec } from "../../../fakes/exec";

const info = (o: Record<string, unknown>) => DockerInfoSchema.parse({ ServerVersion: "20.10.24", ...o });
const INFO = ["docker", "info", "--format", "{{json .}}"];

describe("classifyEngine", () => {
  const cases: [Record<string, unknown>, EngineKind, boolean][] = [
    [{ OperatingSystem: "Debian GNU/Linux 12", SecurityOptions: ["name=seccomp,profile=default", "name=cgroupns"] }, "rootful", true],
    [{ OperatingSystem: "Ubuntu", SecurityOptions: ["name=seccomp,profile=default", "name=rootless"] }, "rootless", false],
    [{ OperatingSystem: "Debian", SecurityOptions: ["name=userns"] }, "userns-remap", false],
    [{ OperatingSystem: "Docker Desktop", SecurityOptions: ["name=seccomp,profile=unconfined"] }, "docker-desktop", false],
    [{ OperatingSystem: "Debian", SecurityOptions: null }, "rootful", true],
  ];
  for (const [o, kind, ok] of cases) {
    test(`${JSON.stringify(o)} → ${kind}`, () => {
      const c = classifyEngine(info(o));
      expect(c.kind).toBe(kind);
      expect(c.sameUidWorks).toBe(ok);
    });
  }
});

describe("requireSameUidEngine", () => {
  test("passes a rootful engine", async () => {
    const exec = new FakeExec().expect(INFO, { stdout: JSON.stringify({ OperatingSystem: "Debian", SecurityOptions: [] }) });
    await requireSameUidEngine(exec);
    exec.assertDone();
  });

  test("refuses rootless Docker with an explanation", async () => {
    const exec = new FakeExec().expect(INFO, { stdout: JSON.stringify({ OperatingSystem: "Debian", SecurityOptions: ["name=rootless"] }) });
    const err = await requireSameUidEngine(exec).catch((e) => e);
    expect(err.code).toBe("unavailable");
    expect(err.message).toContain("rootless");
    expect(err.hint).toContain("rootful");
  });

  test("no engine answering is 'unavailable' with a hint to start it", async () => {
    const exec = new FakeExec().expect(INFO, { exitCode: 1, stderr: "Cannot connect to the Docker daemon at unix:///var/run/docker.sock" });
    const err = await requireSameUidEngine(exec).catch((e) => e);
    expect(err.code).toBe("unavailable");
    expect(err.hint).toContain("Start the engine");
  });

  test("permission denied on the socket says to join the docker group", async () => {
    const p = await probeEngine(new FakeExec().expect(INFO, { exitCode: 1, stderr: "permission denied while trying to connect" }));
    expect(p.ok).toBe(false);
    const err = await requireSameUidEngine(new FakeExec().expect(INFO, { exitCode: 1, stderr: "permission denied" })).catch((e) => e);
    expect(err.hint).toContain("docker group");
  });
});
