// The container a create makes through the Engine API (createRequestFromArgs) is the one `docker create <argv>` makes: same config, hardening and mounts, on a real engine.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequestFromArgs, mountValue } from "../../../src/drivers/docker/args";
import { BASE_IMAGE } from "./fixture";

function ok(argv: string[]): boolean {
  return Bun.spawnSync(argv, { stdout: "ignore", stderr: "ignore" }).exitCode === 0;
}
const why = !ok(["docker", "info"]) ? "no Docker engine answers" : !ok(["docker", "image", "inspect", BASE_IMAGE]) ? `base image ${BASE_IMAGE} missing` : undefined;
const tag = `sbx-test-create-api-${process.pid}`;

function docker(args: string[]): string {
  const r = Bun.spawnSync(["docker", ...args], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`docker ${args.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString();
}

describe.skipIf(why !== undefined)(`create through the Engine API (Docker)${why ? ` — skipped: ${why}` : ""}`, () => {
  const root = mkdtempSync(join(tmpdir(), "sbx-create-api-"));
  afterAll(() => {
    for (const c of [`${tag}-cli`, `${tag}-api`]) Bun.spawnSync(["docker", "rm", "--force", c], { stdout: "ignore", stderr: "ignore" });
    Bun.spawnSync(["docker", "volume", "rm", "--force", `${tag}-vol`], { stdout: "ignore", stderr: "ignore" });
    rmSync(root, { recursive: true, force: true });
  });

  test("docker inspect of both containers agrees on every field sbx sets", async () => {
    const src = join(root, "we,ird \"dir\"");
    mkdirSync(src, { recursive: true });
    writeFileSync(join(root, "file"), "x");
    docker(["volume", "create", "--label", `sbx.test=${tag}`, `${tag}-vol`]);
    const argv = (name: string) => [
      "docker", "create", "--name", name, "--hostname", "h", "--init", "--user", "1234:5678", "--network", "none",
      "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--workdir", "/work",
      "--label", `sbx.test=${tag}`, "--label", "sbx.x=a=b", "--env", "HOME=/home/u", "--env", "A=1 2",
      "--mount", mountValue([["type", "bind"], ["src", src], ["dst", "/work"]]),
      "--mount", mountValue([["type", "bind"], ["src", join(root, "file")], ["dst", "/etc/x"], "readonly"]),
      "--mount", mountValue([["type", "volume"], ["src", `${tag}-vol`], ["dst", "/home/u/.v"], "volume-nocopy"]),
      BASE_IMAGE, "sleep", "1",
    ];
    Bun.spawnSync(argv(`${tag}-cli`), { stdout: "ignore" });
    const req = createRequestFromArgs(argv(`${tag}-api`));
    const res = await fetch(`http://docker/containers/create?name=${encodeURIComponent(req.name)}`, {
      method: "POST",
      unix: "/var/run/docker.sock",
      body: JSON.stringify(req.body),
      headers: { "content-type": "application/json" },
    } as RequestInit);
    expect(res.status).toBe(201);
    const pick = (name: string) => {
      const i = JSON.parse(docker(["inspect", name]))[0];
      const mounts = (i.Mounts as { Type: string; Source: string; Destination: string; RW: boolean; Name?: string }[])
        .map((m) => ({ type: m.Type, src: m.Name ?? m.Source, dst: m.Destination, rw: m.RW }))
        .sort((a, b) => a.dst.localeCompare(b.dst));
      const c = i.Config;
      const h = i.HostConfig;
      return {
        // Env as a set: the docker CLI does not keep the order of its --env flags (seen to vary between runs).
        config: { Hostname: c.Hostname, User: c.User, Env: [...(c.Env as string[])].sort(), Labels: c.Labels, WorkingDir: c.WorkingDir, Image: c.Image, Cmd: c.Cmd, Entrypoint: c.Entrypoint },
        host: { Init: h.Init, NetworkMode: h.NetworkMode, CapDrop: h.CapDrop, CapAdd: h.CapAdd, SecurityOpt: h.SecurityOpt, Privileged: h.Privileged, Mounts: h.Mounts, Binds: h.Binds },
        mounts,
      };
    };
    const viaCli = pick(`${tag}-cli`);
    const viaApi = pick(`${tag}-api`);
    expect(viaApi).toEqual(viaCli);
    // And it is the hardened container sbx means, not merely the same one twice.
    expect(viaApi.host).toMatchObject({ Init: true, NetworkMode: "none", CapDrop: ["ALL"], SecurityOpt: ["no-new-privileges"], Privileged: false });
    expect(viaApi.mounts.find((m) => m.dst === "/etc/x")?.rw).toBe(false);
  }, 60_000);
});
