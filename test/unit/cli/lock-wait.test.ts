// A command that waits for a sandbox's lock says whom it waits for: another command this daemon is running (its
// own pid would read as a stranger's), or another sbx process by its pid. Through the CLI and the daemon's routes
// (served in this process, so the daemon's pid is this process's), Docker on the in-memory engine.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { realpathSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { acquireLock, lockPath } from "../../../src/workspace/lock";
import { dockerCliWorld, type DockerCliWorld } from "../../support/docker-cli-world";

let x: DockerCliWorld;
beforeEach(async () => {
  x = await dockerCliWorld();
});
afterEach(async () => {
  await x.close();
});

const lockOf = () => lockPath(join(x.w.root, "state", "sbx"), realpathSync(x.w.repo), "demo");

describe("waiting for a sandbox's lock", () => {
  test("held by this daemon (another command): 'waiting for another command', no pid", async () => {
    expect((await x.cli(["create", "demo"])).code).toBe(0);
    const held = await acquireLock(lockOf());
    const pending = x.cli(["publish", "demo", "5432"]);
    await Bun.sleep(300);
    held.release();
    const r = await pending;
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("waiting for another command on sandbox demo to finish…");
    expect(r.stderr).not.toContain("pid");
  });

  test("held by another sbx process: its pid", async () => {
    expect((await x.cli(["create", "demo"])).code).toBe(0);
    const other = Bun.spawn(["sleep", "30"]);
    try {
      writeFileSync(lockOf(), JSON.stringify({ pid: other.pid, host: hostname(), token: "t", at: Date.now() }));
      const pending = x.cli(["publish", "demo", "5432"]);
      await Bun.sleep(300);
      other.kill();
      await other.exited;
      const r = await pending;
      expect(r.code).toBe(0);
      expect(r.stderr).toContain(`waiting for another sbx (pid ${other.pid}) working on sandbox demo…`);
    } finally {
      other.kill();
    }
  });
});
