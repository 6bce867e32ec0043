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
    for (const bad of [null, [], [{ Gateway: "fd00::1" }], [{ Gateway: "172.17.0.1; rm" }], "172.17.0.1", [{ Subnet: "127.0.0.0/8" }], [{ Subnet: "10.0.0.0/31" }], [{ Subnet: "fd00::/64" }], [{ Subnet: "172.17.0.0/16; rm" }]]) expect(gatewayOf(bad)).toBeNull();
    // Only a subnet recorded (dockerd 20.10's default bridge, made at its start): the bridge holds its first address.
    expect(gatewayOf([{ Subnet: "172.17.0.0/16" }])).toBe("172.17.0.1");
    expect(gatewayOf([{ Subnet: "10.200.3.7/24" }])).toBe("10.200.3.1");
  });
  test("asked of the CLI without an API socket: docker network inspect bridge; an engine without one: null", async () => {
    const exec = new FakeExec().expect((a) => a.join(" ") === "docker network inspect --format {{json .IPAM.Config}} bridge", { stdout: '[{"Subnet":"172.17.0.0/16","Gateway":"172.17.0.1"}]\n' });
    expect(await new DockerEngine(exec, undefined).bridgeGateway()).toBe("172.17.0.1");
    const none = new FakeExec().expect((a) => a[1] === "network", { exitCode: 1, stderr: "Error: No such network: bridge\n" });
    expect(await new DockerEngine(none, undefined).bridgeGateway()).toBeNull();
  });
});
