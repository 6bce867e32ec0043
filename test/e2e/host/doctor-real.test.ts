// sbx doctor against this machine's real Docker engine, and against an address where no engine answers.
import { describe, expect, test } from "bun:test";
import { join } from "node:path";

const main = join(import.meta.dir, "../../../src/cli/main.ts");
const engineUp = Bun.spawnSync(["docker", "info"], { stdout: "ignore", stderr: "ignore" }).exitCode === 0;

function sbx(args: string[], env: Record<string, string> = {}) {
  const p = Bun.spawnSync([process.execPath, main, ...args], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
}

describe("doctor on this host", () => {
  test("with no engine at DOCKER_HOST, doctor fails and says how to start one", () => {
    const r = sbx(["doctor", "--json"], { DOCKER_HOST: `unix://${process.env.SBX_TEST_ROOT}/no-engine.sock` });
    expect(r.code).toBe(69);
    const docker = JSON.parse(r.stdout).checks.find((c: { name: string }) => c.name === "docker");
    expect(docker.status).toBe("fail");
    expect(docker.detail).toContain("no Docker engine answers");
  });

  describe.skipIf(!engineUp)(`with the real engine${engineUp ? "" : " (skipped: no Docker engine answers on this machine)"}`, () => {
    test("doctor reports the engine's version and kind", () => {
      const r = sbx(["doctor", "--json"]);
      const docker = JSON.parse(r.stdout).checks.find((c: { name: string }) => c.name === "docker");
      const version = Bun.spawnSync(["docker", "info", "--format", "{{.ServerVersion}}"]).stdout.toString().trim();
      expect(docker.detail).toContain(version);
      expect(["ok", "fail"]).toContain(docker.status);
      expect(docker.detail).toMatch(/rootful|rootless|userns-remap|docker-desktop/);
    });
  });
});
