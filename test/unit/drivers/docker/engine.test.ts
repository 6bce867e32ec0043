// Engine classification: rootless, userns-remap and Docker Desktop are refused because same-uid bind mounts break there.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DockerInfoSchema, EngineCheck, classifyEngine, probeEngine, requireSameUidEngine, type EngineKind } from "../../../../src/drivers/docker/engine";
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

/** An engine API on a unix socket of the test's own, counting what it was asked. */
function fakeEngine(socket: string, info: Record<string, unknown>) {
  const asked: string[] = [];
  const server = Bun.serve({
    unix: socket,
    fetch(r) {
      const path = new URL(r.url).pathname;
      asked.push(path);
      if (path === "/_ping") return new Response("OK");
      if (path === "/info") return Response.json(info);
      return new Response("not here", { status: 404 });
    },
  });
  return { asked, server };
}

describe("EngineCheck", () => {
  const ROOTFUL = { OperatingSystem: "Debian", SecurityOptions: [] };

  test("a second create does not ask the engine's /info again (a ping only)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sbx-engine-check-"));
    const socket = join(dir, "docker.sock");
    const e = fakeEngine(socket, ROOTFUL);
    try {
      const check = new EngineCheck(new FakeExec(), socket);
      await check.require();
      await check.require();
      expect(e.asked).toEqual(["/info", "/_ping"]);
    } finally {
      e.server.stop(true);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("an engine that went away is noticed with the same error as a first check", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sbx-engine-check-"));
    const socket = join(dir, "docker.sock");
    const e = fakeEngine(socket, ROOTFUL);
    const down = { exitCode: 1, stderr: "Cannot connect to the Docker daemon at unix:///var/run/docker.sock" };
    // Its socket left behind (a crash), then gone (a stop): both fall back to the full check, which says why.
    const exec = new FakeExec().expect(INFO, down).expect(INFO, down);
    try {
      const check = new EngineCheck(exec, socket);
      await check.require();
      e.server.stop(true);
      const stale = await check.require().catch((x: unknown) => x);
      expect(stale).toMatchObject({ code: "unavailable", message: expect.stringContaining("Docker is not usable") });
      expect((stale as { hint: string }).hint).toContain("Start the engine");
      rmSync(socket, { force: true });
      const gone = await check.require().catch((x: unknown) => x);
      expect(gone).toMatchObject({ code: "unavailable", message: expect.stringContaining("Docker is not usable") });
      exec.assertDone();
    } finally {
      e.server.stop(true);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("an engine restarted as another kind is asked again and refused", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sbx-engine-check-"));
    const socket = join(dir, "docker.sock");
    const first = fakeEngine(socket, ROOTFUL);
    const check = new EngineCheck(new FakeExec(), socket);
    await check.require();
    first.server.stop(true);
    rmSync(socket, { force: true });
    const second = fakeEngine(socket, { OperatingSystem: "Debian", SecurityOptions: ["name=rootless"] });
    try {
      const err = await check.require().catch((x: unknown) => x);
      expect(err).toMatchObject({ code: "unavailable", message: expect.stringContaining("rootless") });
      expect(second.asked).toEqual(["/info"]);
    } finally {
      second.server.stop(true);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
