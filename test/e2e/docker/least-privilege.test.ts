// least-privilege: no capabilities, no-new-privileges, no docker.sock, no SSH agent, no sudo or admin groups.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { acquireFixture, canRun, mustCreate, releaseFixture, skipReason, type Fixture } from "./fixture";

describe.skipIf(!canRun)(`least-privilege (Docker)${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  let f: Fixture;
  // The host user has an SSH agent and a docker socket; neither may reach the sandbox.
  const env = { SSH_AUTH_SOCK: "/tmp/ssh-agent.sock", DOCKER_HOST: "unix:///var/run/docker.sock" };
  beforeAll(() => {
    f = acquireFixture();
    mustCreate(f, "leastpriv", env);
  }, 60_000);
  afterAll(() => {
    f?.sbx(["rm", "--force", "leastpriv"]);
    releaseFixture();
  }, 60_000);

  test("CapEff, CapPrm and CapBnd are 0; NoNewPrivs is 1", () => {
    const r = f.sbx(["shell", "leastpriv", "--", "grep", "-E", "^(CapEff|CapPrm|CapBnd|NoNewPrivs):", "/proc/self/status"], { env });
    expect(r.code).toBe(0);
    const m = Object.fromEntries(r.stdout.trim().split("\n").map((l) => l.split(/:\s+/)));
    expect(m).toEqual({ CapEff: "0000000000000000", CapPrm: "0000000000000000", CapBnd: "0000000000000000", NoNewPrivs: "1" });
  }, 60_000);

  test("no docker socket, no SSH_AUTH_SOCK, no sudo, no supplementary groups", () => {
    const script = [
      "for s in /var/run/docker.sock /run/docker.sock; do [ -e $s ] && echo has-$s; done",
      'env | grep -E "^(SSH_AUTH_SOCK|DOCKER_HOST)=" || true',
      "command -v sudo || true",
      "id -G",
    ].join("\n");
    const r = f.sbx(["shell", "leastpriv", "--", "sh", "-c", script], { env });
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(String(f.user.gid));
  }, 60_000);

  test("the container is configured as rendered: caps dropped, no-new-privileges, init, not privileged", () => {
    const r = f.docker(["ps", "--quiet", "--filter", "label=sbx.name=leastpriv", "--filter", `label=sbx.repo=${f.repo}`]);
    const id = r.stdout.trim();
    expect(id).not.toBe("");
    const hc = JSON.parse(f.docker(["inspect", "--format", "{{json .HostConfig}}", id]).stdout);
    expect(hc.CapDrop).toEqual(["ALL"]);
    expect(hc.CapAdd ?? []).toEqual([]);
    expect(hc.SecurityOpt).toContain("no-new-privileges");
    expect(hc.Privileged).toBe(false);
    expect(hc.Init).toBe(true);
    expect(hc.NetworkMode).toBe("none");
    const mounts = JSON.parse(f.docker(["inspect", "--format", "{{json .Mounts}}", id]).stdout) as { Source: string }[];
    expect(mounts.some((m) => m.Source.includes("docker.sock"))).toBe(false);
  }, 60_000);

  test("the forwarder it runs (sbx's built sandbox-main, the shims, Bun) cannot be written from inside", () => {
    const script = [
      "cat /proc/1/cmdline /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -o '/opt/sbx/main/sandbox-main.js' | head -1",
      "for f in /opt/sbx/main/sandbox-main.js /opt/sbx/main/new /opt/sbx/shims/sandbox-main.ts /opt/sbx/bin/bun; do (echo x >> $f) 2>/dev/null && echo wrote-$f; done",
      "rm -f /opt/sbx/main/sandbox-main.js 2>/dev/null && echo removed",
      "true",
    ].join("\n");
    const r = f.sbx(["shell", "leastpriv", "--", "sh", "-c", script], { env });
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe("/opt/sbx/main/sandbox-main.js");
  }, 60_000);
});
