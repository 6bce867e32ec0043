// The engine seam tells an absent container from an engine that does not answer: only "no such container" is absent.
import { describe, expect, test } from "bun:test";
import { DockerEngine, gatewayOf } from "../../../../src/drivers/docker/engine-client";
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

describe("the default bridge's gateway (where a build's per-build relay listens)", () => {
  test("the IPv4 gateway of its IPAM config; none, an IPv6 one alone or garbage: null", () => {
    expect(gatewayOf([{ Subnet: "172.17.0.0/16", Gateway: "172.17.0.1" }])).toBe("172.17.0.1");
    expect(gatewayOf([{ Subnet: "fd00::/64", Gateway: "fd00::1" }, { Subnet: "10.9.0.0/16", Gateway: "10.9.0.1" }])).toBe("10.9.0.1");
    for (const bad of [null, [], [{ Subnet: "172.17.0.0/16" }], [{ Gateway: "fd00::1" }], [{ Gateway: "172.17.0.1; rm" }], "172.17.0.1"]) expect(gatewayOf(bad)).toBeNull();
  });
  test("asked of the CLI without an API socket: docker network inspect bridge; an engine without one: null", async () => {
    const exec = new FakeExec().expect((a) => a.join(" ") === "docker network inspect --format {{json .IPAM.Config}} bridge", { stdout: '[{"Subnet":"172.17.0.0/16","Gateway":"172.17.0.1"}]\n' });
    expect(await new DockerEngine(exec, undefined).bridgeGateway()).toBe("172.17.0.1");
    const none = new FakeExec().expect((a) => a[1] === "network", { exitCode: 1, stderr: "Error: No such network: bridge\n" });
    expect(await new DockerEngine(none, undefined).bridgeGateway()).toBeNull();
  });
});
