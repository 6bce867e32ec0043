// Port specs as docker's -p reads them, and how a sandbox's list of forwards changes.
import { describe, expect, test } from "bun:test";
import { hostEndpoint, nextPorts, parsePortSpec, portsOf, reachableBeyondLoopback } from "../../../src/core/ports";

describe("ports", () => {
  test.each([
    ["3000", { port: 3000, host: 3000 }],
    ["8080:3000", { port: 3000, host: 8080 }],
    [" 22 ", { port: 22, host: 22 }],
    // An address only when written; 127.0.0.1 is the default, kept as no address.
    ["127.0.0.1:80:3000", { port: 3000, host: 80 }],
    ["0.0.0.0:8080:3000", { port: 3000, host: 8080, bind: "0.0.0.0" }],
    ["192.168.1.5:8080:3000", { port: 3000, host: 8080, bind: "192.168.1.5" }],
    ["127.0.0.2:3000:3000", { port: 3000, host: 3000, bind: "127.0.0.2" }],
    ["[::]:8080:3000", { port: 3000, host: 8080, bind: "::" }],
    ["[0:0::1]:8080:3000", { port: 3000, host: 8080, bind: "::1" }],
  ])("%s", (s, want) => expect(parsePortSpec(s)).toEqual({ ok: true, forward: want }));

  test.each(["0", "65536", "a", "1:2:3", "0.0.0.0:3000", "localhost:80:3000", "256.0.0.1:80:3000", "[::1]:3000", "[nope]:80:3000", "0.0.0.0:80:0", "-1", ""])("refused: %s", (s) => {
    expect(parsePortSpec(s).ok).toBe(false);
  });

  test("where the host reaches it, and whether others can: only an address that is not loopback", () => {
    expect(hostEndpoint({ host: 3000 })).toBe("127.0.0.1:3000");
    expect(hostEndpoint({ host: 3000, bind: "::" })).toBe("[::]:3000");
    expect([undefined, "127.0.0.2", "::1", "0.0.0.0", "::", "192.168.1.5"].map((bind) => reachableBeyondLoopback(bind === undefined ? {} : { bind }))).toEqual([false, false, false, true, true, true]);
  });

  test("a host port taken again moves; removal by either port; malformed stored entries are left out", () => {
    const cur = [{ port: 3000, host: 3000 }, { port: 5173, host: 8080 }];
    expect(nextPorts(cur, [{ port: 4000, host: 8080 }], [])).toEqual([{ port: 3000, host: 3000 }, { port: 4000, host: 8080 }]);
    expect(nextPorts(cur, [], [8080])).toEqual([{ port: 3000, host: 3000 }]);
    expect(nextPorts(cur, [], [3000])).toEqual([{ port: 5173, host: 8080 }]);
    expect(portsOf({ ports: [{ port: 1, host: 2 }, { port: 0, host: 2 }, "x", null, { port: 1, host: 3, bind: "0.0.0.0" }, { port: 1, host: 4, bind: "nope" }] })).toEqual([
      { port: 1, host: 2 },
      { port: 1, host: 3, bind: "0.0.0.0" },
    ]);
  });
});
