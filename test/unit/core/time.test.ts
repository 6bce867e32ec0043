// One time format: relative for a person at a terminal, ISO 8601 (UTC, to the second) in --json and off a terminal;
// every time field of the wire shapes is one --json converts.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { duration, isoTime, isoTimes, relativeTime, TIME_KEYS } from "../../../src/core/time";

const NOW = Date.UTC(2026, 10, 26, 12, 0, 0);
const S = 1000;
const MIN = 60 * S;
const H = 60 * MIN;
const D = 24 * H;

describe("isoTime", () => {
  test("UTC to the second, with Z", () => {
    expect(isoTime(Date.UTC(2026, 10, 26, 2, 36, 11, 789))).toBe("2026-11-26T02:36:11Z");
  });
});

describe("duration", () => {
  test("rounded down to its largest unit", () => {
    expect([0, 59 * S, MIN, 59 * MIN + 59 * S, H, 23 * H + 59 * MIN, D, 9 * D + 5 * H, -5 * S].map(duration)).toEqual([
      "0 s", "59 s", "1 min", "59 min", "1 h", "23 h", "1 d", "9 d", "0 s",
    ]);
  });
});

describe("relativeTime", () => {
  test.each([
    [NOW, "just now"],
    [NOW - 59 * S, "just now"],
    [NOW - 3 * MIN, "3 min ago"],
    [NOW - 2 * H - 10 * MIN, "2 h ago"],
    [NOW - 23 * H, "23 h ago"],
    [NOW - 30 * H, "yesterday"],
    [NOW - 4 * D - H, "4 d ago"],
    [NOW - 6 * D - 23 * H, "6 d ago"],
    [NOW - 7 * D, "2026-11-19"],
    [NOW - 400 * D, "2025-10-22"],
    [NOW + 30 * S, "just now"],
    [NOW + 5 * MIN, "in 5 min"],
    [NOW + 10 * D, "2026-12-06"],
  ])("%p → %p", (ms, want) => {
    expect(relativeTime(ms, NOW)).toBe(want);
  });
});

describe("isoTimes (--json)", () => {
  test("numbers under a time key become ISO, at any depth; other fields, nulls and non-numbers stay", () => {
    const t = Date.UTC(2026, 10, 26, 2, 36, 11);
    const got = isoTimes([
      { name: "a", createdAt: t, lastUsedAt: null, count: 3, pid: 4, limits: { memory: 5 }, sessions: [{ startedAt: t, exitCode: null }] },
      { daemon: { startedAt: t }, lastSeen: "already text", ts: t, id: 7 },
    ]);
    expect(got).toEqual([
      { name: "a", createdAt: "2026-11-26T02:36:11Z", lastUsedAt: null, count: 3, pid: 4, limits: { memory: 5 }, sessions: [{ startedAt: "2026-11-26T02:36:11Z", exitCode: null }] },
      { daemon: { startedAt: "2026-11-26T02:36:11Z" }, lastSeen: "already text", ts: "2026-11-26T02:36:11Z", id: 7 },
    ]);
  });

  test("every time field the wire shapes declare is one it converts (a new one cannot slip out as epoch ms)", () => {
    const root = join(import.meta.dir, "../../..");
    const named = new Set<string>();
    for (const f of ["src/daemon/protocol.ts", "src/core/schemas.ts", "src/events/feed.ts"]) {
      const src = readFileSync(join(root, f), "utf8");
      for (const m of src.matchAll(/\b(\w+(?:At|Seen)|ts):\s*z\.number\(\)/g)) named.add(m[1]!);
    }
    expect(named.size).toBeGreaterThan(5);
    for (const k of named) expect({ k, known: TIME_KEYS.has(k) }).toEqual({ k, known: true });
  });
});
