// attach-twice: two shells join one running container; two `sbx run` of a new name at once give one sandbox.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { acquireFixture, canRun, mustCreate, releaseFixture, skipReason, type Fixture } from "./fixture";

describe.skipIf(!canRun)(`attach-twice (Docker)${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  let f: Fixture;
  const containers = (name: string) =>
    f.docker(["ps", "-a", "-q", "--filter", `label=sbx.name=${name}`, "--filter", `label=sbx.repo=${f.repo}`]).stdout.trim().split("\n").filter(Boolean);
  beforeAll(() => {
    f = acquireFixture();
    mustCreate(f, "twice");
  }, 60_000);
  afterAll(() => {
    for (const n of ["twice", "racy"]) f?.sbx(["rm", "--force", n]);
    releaseFixture();
  }, 60_000);

  test("two sessions at once run in the same container", async () => {
    const a = f.spawnSbx(["shell", "twice", "--", "sh", "-c", "hostname; cat /proc/1/cmdline | tr '\\0' ' '; sleep 1"]);
    const b = f.spawnSbx(["shell", "twice", "--", "sh", "-c", "hostname; cat /proc/1/cmdline | tr '\\0' ' '; sleep 1"]);
    const [ca, cb] = await Promise.all([a.exited, b.exited]);
    const [oa, ob] = await Promise.all([new Response(a.stdout).text(), new Response(b.stdout).text()]);
    expect([ca, cb]).toEqual([0, 0]);
    expect(oa).toBe(ob);
    expect(containers("twice")).toHaveLength(1);
  }, 60_000);

  test("a stopped sandbox is started by shell, not duplicated", () => {
    expect(f.sbx(["stop", "twice"]).code).toBe(0);
    expect(f.sbx(["shell", "twice", "--", "true"]).code).toBe(0);
    expect(containers("twice")).toHaveLength(1);
  }, 60_000);

  test("the inner exit code is sbx's", () => {
    expect(f.sbx(["shell", "twice", "--", "sh", "-c", "exit 42"]).code).toBe(42);
    expect(f.sbx(["run", "twice", "--", "sh", "-c", "exit 7"]).code).toBe(7);
  }, 60_000);

  test("two `sbx run` of a new name at once: one sandbox, both commands run", async () => {
    const a = f.spawnSbx(["run", "racy", "--", "echo", "A"]);
    const b = f.spawnSbx(["run", "racy", "--", "echo", "B"]);
    const [ca, cb] = await Promise.all([a.exited, b.exited]);
    const outs = await Promise.all([new Response(a.stdout).text(), new Response(b.stdout).text()]);
    const errs = await Promise.all([new Response(a.stderr).text(), new Response(b.stderr).text()]);
    expect([ca, cb], errs.join("\n")).toEqual([0, 0]);
    expect(outs.map((o) => o.trim()).sort()).toEqual(["A", "B"]);
    expect(containers("racy")).toHaveLength(1);
  }, 60_000);
});
