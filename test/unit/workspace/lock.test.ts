// Per-sandbox locks: one holder at a time, a waiter gets it on release, a dead holder's lock is recovered.
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { acquireLock, lockPath, staleLocks } from "../../../src/workspace/lock";

const tmp = mkdtempSync(join(tmpdir(), "sbx-lock-test-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

test("a second taker waits until the first releases", async () => {
  const p = lockPath(tmp, "/r", "a");
  const first = await acquireLock(p);
  let got = false;
  let waited = false;
  const second = acquireLock(p, { pollMs: 10, onWait: () => (waited = true) }).then((l) => {
    got = true;
    return l;
  });
  await Bun.sleep(80);
  expect(got).toBe(false);
  expect(waited).toBe(true);
  first.release();
  const l2 = await second;
  expect(got).toBe(true);
  l2.release();
  expect(existsSync(p)).toBe(false);
});

test("a lock whose holder died is taken over", async () => {
  const p = lockPath(tmp, "/r", "dead");
  mkdirSync(join(p, ".."), { recursive: true });
  writeFileSync(p, JSON.stringify({ pid: 999_999_999, host: hostname(), token: "x", at: 0 }));
  expect(staleLocks(tmp)).toContain(p);
  const l = await acquireLock(p, { timeoutMs: 2000, isAlive: () => false });
  expect(staleLocks(tmp, () => true)).not.toContain(p);
  l.release();
});

test("a live holder past the timeout is a conflict error", async () => {
  const p = lockPath(tmp, "/r", "busy");
  const l = await acquireLock(p);
  const err = await acquireLock(p, { timeoutMs: 50, pollMs: 10 }).catch((e) => e);
  expect(err.code).toBe("conflict");
  l.release();
});

test("locks are per repo and name", () => {
  expect(lockPath(tmp, "/r", "a")).not.toBe(lockPath(tmp, "/r", "b"));
  expect(lockPath(tmp, "/r1", "a")).not.toBe(lockPath(tmp, "/r2", "a"));
});
