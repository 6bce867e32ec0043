// services end to end with a real database (Docker): Debian's PostgreSQL 15 as a sandbox's service, built from sbx's
// base image (scripts/test-postgres.sh), and a sandbox whose psql creates a table at 127.0.0.1:5432 and reads it back,
// after a stop and start too. The database cannot reach the network or read the repo, and is gone after `sbx rm`.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { acquireFixture, canRun, ownRepo, releaseFixture, skipReason, type Fixture } from "./fixture";

const SERVER = "sbxt-postgres:15";
const CLIENT_BASE = "sbxt-pgbase:15";
const present = (tag: string) => Bun.spawnSync(["docker", "image", "inspect", tag], { stdout: "ignore", stderr: "ignore" }).exitCode === 0;
const why = skipReason ?? (canRun && !(present(SERVER) && present(CLIENT_BASE)) ? `images ${SERVER} and ${CLIENT_BASE} missing: build them with scripts/test-postgres.sh` : undefined);
const PSQL = ["/usr/lib/postgresql/15/bin/psql", "-X", "-h", "127.0.0.1", "-p", "5432", "-U", "postgres", "-v", "ON_ERROR_STOP=1", "-At"];

describe.skipIf(why !== undefined)(`service-confinement with a real database (Docker)${why ? ` — skipped: ${why}` : ""}`, () => {
  let f: Fixture;
  let repo = "";
  let db = "";
  let id = "";
  beforeAll(() => {
    f = acquireFixture();
    repo = ownRepo(f.user, `pgapp-${process.pid}`, `FROM ${CLIENT_BASE}\n`);
    const t0 = performance.now();
    const r = f.sbx(["create", "pg", "--service", `db=${SERVER}`], { cwd: repo });
    if (r.code !== 0) throw new Error(`sbx create pg: ${r.stderr}`);
    console.log(`create with a postgres service: ${Math.round(performance.now() - t0)} ms (image built once)`);
    db = f.docker(["ps", "--filter", `label=sbx.repo=${repo}`, "--filter", "label=sbx.service=db", "--format", "{{.Names}}"]).stdout.trim();
    id = f.docker(["inspect", "--format", '{{index .Config.Labels "sbx.sandbox"}}', db]).stdout.trim();
  }, 600_000);
  afterAll(() => {
    f?.sbx(["rm", "--force", "pg"], { cwd: repo });
    if (repo) rmSync(repo, { recursive: true, force: true });
    releaseFixture();
  }, 120_000);

  const psql = (sql: string) => f.sbx(["exec", "pg", "--", ...PSQL, "-c", sql], { cwd: repo });

  test("the sandbox's psql creates a table at 127.0.0.1:5432 and reads it back", () => {
    expect(db).toMatch(/-svc-db$/);
    const made = psql("CREATE TABLE t (x int); INSERT INTO t VALUES (42), (7);");
    expect({ code: made.code, err: made.stderr }).toEqual({ code: 0, err: "" });
    expect(psql("SELECT sum(x) FROM t").stdout.trim()).toBe("49");
    const list = JSON.parse(f.sbx(["services", "pg", "--json"], { cwd: repo }).stdout);
    expect(list).toEqual([{ name: "db", image: SERVER, state: "running", health: "healthy", exitCode: 0 }]);
  }, 120_000);

  test("the database cannot reach the network or read the repo, has no capability, and runs as postgres", () => {
    const probe = f.docker(["exec", db, "python3", "-c", "import socket\ntry:\n socket.create_connection(('169.254.169.254', 80), 3); print('open')\nexcept OSError as e: print(e)"]);
    expect(probe.stdout).toMatch(/unreachable/i);
    expect(f.docker(["exec", db, "ls", "/sys/class/net"]).stdout.trim()).toBe("lo");
    expect(f.docker(["exec", db, "test", "-e", repo]).code).not.toBe(0);
    expect(f.docker(["exec", db, "test", "-e", "/run/sbx"]).code).not.toBe(0);
    expect(f.docker(["exec", db, "id", "-un"]).stdout.trim()).toBe("postgres");
    expect(f.docker(["exec", db, "grep", "CapEff", "/proc/1/status"]).stdout).toMatch(/CapEff:\s+0{16}/);
  }, 60_000);

  test("stopped and started with the sandbox, its data kept in its volume", () => {
    expect(f.sbx(["stop", "pg"], { cwd: repo }).code).toBe(0);
    expect(f.docker(["inspect", "--format", "{{.State.Running}}", db]).stdout.trim()).toBe("false");
    expect(psql("SELECT sum(x) FROM t").stdout.trim()).toBe("49");
  }, 120_000);

  test("sbx rm removes the database's container and volume", () => {
    expect(f.sbx(["rm", "--force", "pg"], { cwd: repo }).code).toBe(0);
    expect(f.docker(["ps", "--all", "--quiet", "--filter", `label=sbx.sandbox=${id}`]).stdout.trim()).toBe("");
    expect(f.docker(["volume", "ls", "--quiet", "--filter", `label=sbx.sandbox=${id}`]).stdout.trim()).toBe("");
  }, 60_000);
});
