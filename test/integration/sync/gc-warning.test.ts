// The `sbx doctor` check for host gc settings that could prune objects a clone borrows through alternates.
import { afterEach, describe, expect, test } from "bun:test";
import { createExec } from "../../../src/sys/exec";
import { checkHostGc, judgeGc, parseGcConfig, pruneGraceSeconds } from "../../../src/sync/gc-check";
import { gitOk, makeFixture, type SyncFixture } from "./fixture";

describe("gc settings, judged (table)", () => {
  const cases: [string, { auto?: string; pruneExpire?: string }, "ok" | "warn", RegExp][] = [
    ["git's defaults", {}, "ok", /after 2\.weeks\.ago/],
    ["never prunes", { pruneExpire: "never" }, "ok", /never prunes/],
    ["prune now, auto gc on", { pruneExpire: "now" }, "warn", /including the automatic one/],
    ["prune now, auto gc off", { auto: "0", pruneExpire: "now" }, "warn", /a manual `git gc`/],
    ["one hour", { pruneExpire: "1.hour.ago" }, "warn", /prunes unreachable objects at once/],
    ["three days, spaces", { pruneExpire: "3 days ago" }, "ok", /after 3 days ago/],
    ["auto off, default prune", { auto: "0" }, "ok", /only by a manual git gc/],
    ["an absolute date", { pruneExpire: "2020-01-01" }, "warn", /not a relative age/],
  ];
  for (const [label, s, status, detail] of cases) {
    test(label, () => {
      const c = judgeGc("/r", s);
      expect(c.status).toBe(status);
      expect(c.detail).toMatch(detail);
      expect(c.name).toBe("git gc");
      if (status !== "ok") expect(c.fix).toContain("git -C /r config gc.pruneExpire");
    });
  }

  test("grace periods", () => {
    expect(pruneGraceSeconds("now")).toBe(0);
    expect(pruneGraceSeconds("never")).toBe(Infinity);
    expect(pruneGraceSeconds("2.weeks.ago")).toBe(14 * 86400);
    expect(pruneGraceSeconds("1.day.ago")).toBe(86400);
    expect(pruneGraceSeconds("yesterday")).toBeNull();
  });

  test("parses git config --get-regexp output (keys lowercased by git)", () => {
    expect(parseGcConfig("gc.auto 0\ngc.pruneexpire now\n")).toEqual({ auto: "0", pruneExpire: "now" });
    expect(parseGcConfig("")).toEqual({});
  });
});

describe("checkHostGc on a real repo", () => {
  let f: SyncFixture | null = null;
  afterEach(() => {
    f?.cleanup();
    f = null;
  });
  const exec = createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: "/nonexistent", GIT_CONFIG_NOSYSTEM: "1" });

  test("unset keys → ok; gc.pruneExpire=now → warn with a fix", async () => {
    f = makeFixture();
    expect((await checkHostGc(exec, f.host)).status).toBe("ok");
    gitOk(f.host, ["config", "gc.pruneExpire", "now"]);
    const c = await checkHostGc(exec, f.host);
    expect(c.status).toBe("warn");
    expect(c.fix).toBe(`git -C ${f.host} config gc.pruneExpire 2.weeks.ago   (or: never)`);
  });
});
