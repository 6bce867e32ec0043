// The engine seam tells an absent container from an engine that does not answer: only "no such container" is absent.
import { describe, expect, test } from "bun:test";
import { DockerEngine } from "../../../../src/drivers/docker/engine-client";
import { SbxError } from "../../../../src/core/errors";
import { FakeExec } from "../../../fakes/exec";

describe("DockerEngine.seen through the CLI", () => {
  test("'No such container' is absent (null)", async () => {
    const exec = new FakeExec().expect((a) => a[0] === "docker" && a[1] === "inspect", { exitCode: 1, stderr: "Error: No such container: sbx-x\n" });
    expect(await new DockerEngine(exec, undefined).seen("sbx-x")).toBeNull();
  });

  test("an engine that does not answer is an error (unavailable), never an absent container", async () => {
    const exec = new FakeExec().expect((a) => a[0] === "docker" && a[1] === "inspect", {
      exitCode: 1,
      stderr: "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n",
    });
    const err = await new DockerEngine(exec, undefined).seen("sbx-x").then(() => null, (e: unknown) => e as SbxError);
    expect(err?.code).toBe("unavailable");
    expect(err?.message).toContain("Cannot connect to the Docker daemon");
  });
});
