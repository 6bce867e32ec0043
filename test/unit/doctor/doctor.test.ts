// sbx doctor through the fake executor: each engine situation is reported with a fix, and the exit code follows.
import { describe, expect, test } from "bun:test";
import { classifyEngine, DockerInfoSchema } from "../../../src/drivers/docker/engine";
import { compareVersions, runDoctor } from "../../../src/doctor/doctor";
import { readEnv } from "../../../src/sys/env";
import { pathsFor } from "../../../src/sys/paths";
import { FakeExec } from "../../fakes/exec";
import { runCli } from "../../support/cli";

const root = process.env.SBX_TEST_ROOT!;
const env = readEnv({
  vars: { HOME: root, XDG_STATE_HOME: `${root}/doc-state`, XDG_RUNTIME_DIR: `${root}/doc-run` },
  uid: 1000,
  gid: 1000,
  platform: "linux",
});
const INFO = ["docker", "info", "--format", "{{json .}}"];
const GIT = ["git", "--version"];
const info = (o: Record<string, unknown>) => ({
  stdout: JSON.stringify({ ServerVersion: "20.10.24", OperatingSystem: "Debian GNU/Linux 12", SecurityOptions: ["name=seccomp,profile=default"], ...o }),
});

async function doctorWith(fake: FakeExec) {
  const checks = await runDoctor({ exec: fake, env, paths: pathsFor(env), bunVersion: "1.4.5" });
  fake.assertDone();
  return Object.fromEntries(checks.map((c) => [c.name, c]));
}

describe("doctor", () => {
  test("a rootful engine, git and writable dirs are all ok", async () => {
    const c = await doctorWith(new FakeExec().expect(INFO, info({})).expect(GIT, { stdout: "git version 2.39.5\n" }));
    expect(c.docker).toMatchObject({ status: "ok" });
    expect(c.docker!.detail).toContain("20.10.24");
    expect(c.git).toMatchObject({ status: "ok", detail: "git 2.39.5" });
    expect(c["state dir"]!.status).toBe("ok");
    expect(c.bun!.status).toBe("ok");
  });

  test("no engine answering is a failure that says how to start one", async () => {
    const c = await doctorWith(
      new FakeExec()
        .expect(INFO, { exitCode: 1, stderr: "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?" })
        .expect(GIT, { stdout: "git version 2.39.5\n" }),
    );
    expect(c.docker).toMatchObject({ status: "fail" });
    expect(c.docker!.detail).toContain("no Docker engine answers");
    expect(c.docker!.fix).toContain("dockerd");
  });

  test("no docker client is a failure that says what to install", async () => {
    const c = await doctorWith(new FakeExec().expect(INFO, { exitCode: 127 }).expect(GIT, { stdout: "git version 2.39.5" }));
    expect(c.docker!.fix).toContain("apt-get install docker.io");
  });

  test("permission denied on the socket says to join the docker group", async () => {
    const c = await doctorWith(
      new FakeExec()
        .expect(INFO, { exitCode: 1, stderr: "permission denied while trying to connect to the Docker daemon socket" })
        .expect(GIT, { stdout: "git version 2.39.5" }),
    );
    expect(c.docker!.fix).toContain("docker group");
  });

  for (const [kind, o] of [
    ["rootless", { SecurityOptions: ["name=seccomp,profile=default", "name=rootless"] }],
    ["userns-remap", { SecurityOptions: ["name=userns"] }],
    ["docker-desktop", { OperatingSystem: "Docker Desktop" }],
  ] as const) {
    test(`${kind} is flagged: same-uid paths break`, async () => {
      const c = await doctorWith(new FakeExec().expect(INFO, info(o)).expect(GIT, { stdout: "git version 2.39.5" }));
      expect(c.docker).toMatchObject({ status: "fail" });
      expect(c.docker!.detail).toContain(kind);
    });
  }

  test("docker info that exits 0 but reports server errors counts as no engine", async () => {
    const c = await doctorWith(
      new FakeExec().expect(INFO, { stdout: JSON.stringify({ ServerErrors: ["Cannot connect to the Docker daemon"] }) }).expect(GIT, { stdout: "git version 2.39.5" }),
    );
    expect(c.docker!.status).toBe("fail");
  });

  test("missing git and an old Bun are failures with fixes", async () => {
    const fake = new FakeExec().expect(INFO, info({})).expect(GIT, { exitCode: 127 });
    const checks = await runDoctor({ exec: fake, env, paths: pathsFor(env), bunVersion: "1.1.0" });
    const c = Object.fromEntries(checks.map((x) => [x.name, x]));
    expect(c.git).toMatchObject({ status: "fail" });
    expect(c.bun).toMatchObject({ status: "fail" });
    expect(c.bun!.fix).toContain("npm install -g bun");
  });

  test("the CLI exits 69 when a check fails and 0 when all pass; --json is data", async () => {
    const bad = new FakeExec().expect(INFO, { exitCode: 1, stderr: "Cannot connect" }).expect(GIT, { stdout: "git version 2.39.5" });
    const r1 = await runCli(["doctor"], { exec: bad });
    expect(r1.code).toBe(69);
    expect(r1.stdout).toMatch(/^FAIL\s+docker/m);
    expect(r1.stdout).toContain("fix:");
    const good = new FakeExec().expect(INFO, info({})).expect(GIT, { stdout: "git version 2.39.5" });
    const r2 = await runCli(["doctor", "--json"], { exec: good });
    const parsed = JSON.parse(r2.stdout);
    expect(parsed.checks.find((c: { name: string }) => c.name === "docker").status).toBe("ok");
    expect(typeof parsed.ok).toBe("boolean");
  });
});

describe("doctor and git gc", () => {
  test("a sandboxed repo whose gc prunes at once gets a warning with a fix", async () => {
    const fake = new FakeExec()
      .expect(INFO, info({}))
      .expect(GIT, { stdout: "git version 2.39.5" })
      .expect((a) => a.includes("/work/app") && a.includes("^gc\\.(auto|pruneexpire)$"), { stdout: "gc.pruneexpire now\n" })
      .expect((a) => a.includes("/work/app") && a.includes("^remote\\.sandbox-.*\\.url$"), { exitCode: 1 })
      .expect((a) => a.includes("/work/app") && a.includes("^remote\\..*\\.url$"), { exitCode: 1 })
      // Nothing committed: no CI to read.
      .expect((a) => a.includes("/work/app") && a.includes("rev-parse"), { exitCode: 1 }, 2);
    const checks = await runDoctor({ exec: fake, env, paths: pathsFor(env), bunVersion: "1.4.5", repos: ["/work/app"] });
    fake.assertDone();
    const gc = checks.find((c) => c.name === "git gc")!;
    expect(gc.status).toBe("warn");
    expect(gc.detail).toContain("/work/app");
    expect(gc.fix).toBeDefined();
  });
});

describe("engine classification and versions", () => {
  test("classifyEngine", () => {
    const i = (o: object) => DockerInfoSchema.parse(o);
    expect(classifyEngine(i({ SecurityOptions: ["name=seccomp,profile=default"] })).kind).toBe("rootful");
    expect(classifyEngine(i({ SecurityOptions: null })).sameUidWorks).toBe(true);
    expect(classifyEngine(i({ SecurityOptions: ["name=rootless"] })).sameUidWorks).toBe(false);
  });

  test("compareVersions is numeric", () => {
    expect(compareVersions("1.10.0", "1.4.0")).toBeGreaterThan(0);
    expect(compareVersions("1.4.5", "1.4.5")).toBe(0);
    expect(compareVersions("2.39.5", "2.30.0")).toBeGreaterThan(0);
    expect(compareVersions("1.3.9", "1.4.0")).toBeLessThan(0);
  });
});

describe("doctor on the host's home and the macOS kit", () => {
  test("macOS wants 700 (every account is in staff); Linux warns only when everyone can read", async () => {
    const { checkHome } = await import("../../../src/doctor/doctor");
    const mode = (m: number) => () => ({ mode: 0o40000 | m });
    expect(checkHome("/Users/ann", "darwin", mode(0o750))).toMatchObject({ status: "warn", fix: "chmod 700 /Users/ann" });
    expect(checkHome("/Users/ann", "darwin", mode(0o700)).status).toBe("ok");
    expect(checkHome("/home/ann", "linux", mode(0o750)).status).toBe("ok");
    expect(checkHome("/home/ann", "linux", mode(0o755))).toMatchObject({ status: "warn" });
  });

  test("a missing root kit is named with the command that installs it", async () => {
    const { checkMacosKit } = await import("../../../src/doctor/doctor");
    expect(checkMacosKit("ann", () => true).status).toBe("ok");
    const c = checkMacosKit("ann", (p) => !p.endsWith("privileged.js"));
    expect(c.status).toBe("warn");
    expect(c.detail).toContain("/usr/local/libexec/sbx/privileged.js");
    expect(c.fix).toContain("sbx service install");
  });
});

describe("doctor on macOS", () => {
  test("Docker Desktop (or none) is a warning there, not a failure: sandboxes are user accounts by default", async () => {
    const mac = readEnv({ vars: { HOME: root, XDG_STATE_HOME: `${root}/doc-state`, XDG_RUNTIME_DIR: `${root}/doc-run` }, uid: 501, gid: 20, platform: "darwin" });
    const fake = new FakeExec().expect(INFO, info({ OperatingSystem: "Docker Desktop" })).expect(GIT, { stdout: "git version 2.39.5" });
    const checks = Object.fromEntries((await runDoctor({ exec: fake, env: mac, paths: pathsFor(mac), bunVersion: "1.4.5" })).map((c) => [c.name, c]));
    expect(checks.docker).toMatchObject({ status: "warn" });
    expect(checks.docker!.detail).toContain("only `--backend docker` needs Docker here");
    expect(checks["macos kit"]).toBeDefined();
  });
});
