// service-crash-reported (the CLI's side): a service that stopped while its sandbox runs is said by `sbx status` (and
// in its --json), with what to do; `sbx services NAME logs SVC` prints the service's own output with every control
// character shown, never sent (a service is an image the sandbox may have had built: its output is untrusted).
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { dockerCliWorld, type DockerCliWorld } from "../../support/docker-cli-world";
import { fakeServices } from "../../fakes/driver";

let x: DockerCliWorld;
beforeEach(async () => {
  x = await dockerCliWorld();
});
afterEach(async () => {
  await x.close();
});

/** Bytes that act on a terminal: ESC not starting sbx's own colour, BEL, C1, bidi overrides. */
const RAW = /\x1b(?!\[(?:\d+;?)*m)|[\x07\x9b\u202e]/;

/** A service container of sandbox `name` on the engine, as sbx makes them (the sandbox's labels, role service). */
function serviceOf(name: string, service: string, o: { status: "running" | "exited"; exitCode?: number; health?: string }): void {
  const sandbox = [...x.engine.containers.values()].find((c) => c.labels["sbx.name"] === name && c.labels["sbx.role"] !== "service")!;
  const labels = { ...sandbox.labels, "sbx.role": "service", "sbx.service": service };
  x.engine.containers.set(`${sandbox.name}-svc-${service}`, { ...sandbox, name: `${sandbox.name}-svc-${service}`, labels, status: o.status, exitCode: o.exitCode ?? 0, ...(o.health ? { health: o.health } : {}) });
}

describe("service-crash-reported: sbx status and sbx services", () => {
  test("sbx status names a service that exited or turned unhealthy in a running sandbox, with its logs and restart commands; a healthy one is not flagged", async () => {
    expect((await x.cli(["create", "dev"])).code).toBe(0);
    serviceOf("dev", "db", { status: "exited", exitCode: 3 });
    serviceOf("dev", "cache", { status: "running", health: "unhealthy" });
    serviceOf("dev", "mock", { status: "running", health: "healthy" });
    const r = await x.cli(["status"]);
    expect(r.stdout).toContain("service db of dev exited (code 3): sbx services dev logs db; sbx services dev restart db");
    expect(r.stdout).toContain("service cache of dev unhealthy");
    expect(r.stdout).not.toContain("service mock of dev");
    const j = JSON.parse((await x.cli(["status", "--json"])).stdout) as { sandboxes: { name: string; services?: unknown[] }[] };
    expect(j.sandboxes.find((s) => s.name === "dev")!.services).toEqual([
      { name: "cache", state: "running", health: "unhealthy", exitCode: 0 },
      { name: "db", state: "exited", health: "none", exitCode: 3 },
      { name: "mock", state: "running", health: "healthy", exitCode: 0 },
    ]);
  });

  test("a stopped sandbox's services are stopped with it: not flagged", async () => {
    expect((await x.cli(["create", "dev"])).code).toBe(0);
    expect((await x.cli(["stop", "dev"])).code).toBe(0);
    serviceOf("dev", "db", { status: "exited", exitCode: 143 });
    expect((await x.cli(["status"])).stdout).not.toContain("service db");
  });

  test("sbx services NAME logs SVC: the service's output with each escape shown, not sent; the list as a table and as JSON", async () => {
    expect((await x.cli(["create", "dev"])).code).toBe(0);
    const id = String(x.daemon.store.findSandbox(x.w.repo, "dev")!.identity.id);
    const hostile = "ready\x1b]52;c;Y3VybCBldmlsfHNo\x07 \x1b]0;pwned\x07\x1b[2J\x9b1A \u202eexe.sh\nnext line";
    const view = { name: "db", image: "pg:1", container: "c-db", state: "exited", health: "none", exitCode: 3 };
    (x.driver as { services: unknown }).services = fakeServices(x.driver.backend, new Map([[id, [view]]]), new Map([["c-db", hostile]]));
    const logs = await x.cli(["services", "dev", "logs", "db"]);
    expect(logs.code).toBe(0);
    expect(RAW.test(logs.stdout)).toBe(false);
    expect(logs.stdout).toContain("ready\\x1b]52;c;");
    expect(logs.stdout).toContain("\nnext line");
    const table = await x.cli(["services", "dev"]);
    expect(table.stdout).toMatch(/db\s+pg:1\s+exited \(code 3\)\s+none/);
    expect(JSON.parse((await x.cli(["services", "dev", "--json"])).stdout)).toEqual([{ name: "db", image: "pg:1", state: "exited", health: "none", exitCode: 3 }]);
    expect((await x.cli(["services", "dev", "logs"])).stderr).toMatch(/which service/);
    expect((await x.cli(["services", "dev", "logs", "db", "--tail", "0"])).stderr).toMatch(/--tail 0/);
  });
});
