// Port specs as docker's -p reads them, and how a sandbox's list of forwards changes.
import { describe, expect, test } from "bun:test";
import { nextPorts, parsePortSpec, portsOf } from "../../../src/core/ports";

describe("ports", () => {
  test.each([
    ["3000", { port: 3000, host: 3000 }],
    ["8080:3000", { port: 3000, host: 8080 }],
    [" 22 ", { port: 22, host: 22 }],
  ])("%s", (s, want) => expect(parsePortSpec(s)).toEqual({ ok: true, forward: want }));

  test.each(["0", "65536", "a", "1:2:3", "0.0.0.0:3000", "127.0.0.1:80:3000", "-1", ""])("refused: %s", (s) => {
    expect(parsePortSpec(s).ok).toBe(false);
  });

  test("a host port taken again moves; removal by either port; malformed stored entries are left out", () => {
    const cur = [{ port: 3000, host: 3000 }, { port: 5173, host: 8080 }];
    expect(nextPorts(cur, [{ port: 4000, host: 8080 }], [])).toEqual([{ port: 3000, host: 3000 }, { port: 4000, host: 8080 }]);
    expect(nextPorts(cur, [], [8080])).toEqual([{ port: 3000, host: 3000 }]);
    expect(nextPorts(cur, [], [3000])).toEqual([{ port: 5173, host: 8080 }]);
    expect(portsOf({ ports: [{ port: 1, host: 2 }, { port: 0, host: 2 }, "x", null] })).toEqual([{ port: 1, host: 2 }]);
  });
});
