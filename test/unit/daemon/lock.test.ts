// Only one daemon per user: the lock refuses a second holder by pid, and replaces a dead holder's lock.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SbxError } from "../../../src/core/errors";
import { acquireLock } from "../../../src/daemon/lock";
import { pidAlive } from "../../../src/sys/proc";

const dir = mkdtempSync(join(tmpdir(), "sbx-lock-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("daemon lock", () => {
  test("the first taker gets it; a second refuses and names the holder's pid", () => {
    const path = join(dir, "a.pid");
    const lock = acquireLock(path, 1111, () => true);
    expect(readFileSync(path, "utf8").trim()).toBe("1111");
    let err: unknown;
    try {
      acquireLock(path, 2222, () => true);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SbxError);
    expect((err as SbxError).code).toBe("conflict");
    expect((err as SbxError).message).toContain("pid 1111");
    expect((err as SbxError).hint).toContain("kill 1111");
    lock.release();
    expect(existsSync(path)).toBe(false);
  });

  test("a lock left by a dead process is stale and taken over", () => {
    const path = join(dir, "b.pid");
    writeFileSync(path, "3333\n");
    const lock = acquireLock(path, 4444, (pid) => pid !== 3333);
    expect(readFileSync(path, "utf8").trim()).toBe("4444");
    lock.release();
  });

  test("release leaves a lock that someone else holds alone", () => {
    const path = join(dir, "c.pid");
    const lock = acquireLock(path, 5555, () => false);
    writeFileSync(path, "6666\n");
    lock.release();
    expect(readFileSync(path, "utf8").trim()).toBe("6666");
  });

  test("pidAlive: this process is alive, a reaped child is not", async () => {
    expect(pidAlive(process.pid)).toBe(true);
    const p = Bun.spawn(["true"]);
    await p.exited;
    expect(pidAlive(p.pid)).toBe(false);
    expect(pidAlive(0)).toBe(false);
  });
});
