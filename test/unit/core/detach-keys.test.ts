// The detach keys: parsed from what a person writes, found in typed input wherever a read splits them, and nothing
// typed is lost or held back for good.
import { describe, expect, test } from "bun:test";
import { DetachMatcher, parseDetachKeys } from "../../../src/core/detach-keys";

const b = (...n: number[]) => new Uint8Array(n);

describe("parseDetachKeys", () => {
  test("docker's spelling", () => {
    expect(parseDetachKeys("ctrl-p,ctrl-q")).toEqual(b(0x10, 0x11));
    expect(parseDetachKeys("Ctrl-\\")).toEqual(b(0x1c));
    expect(parseDetachKeys("ctrl-@,x")).toEqual(b(0, 0x78));
    expect(parseDetachKeys("none")).toBeNull();
    expect(parseDetachKeys("")).toBeNull();
  });

  test.each(["ctrl-", "ctrl-1", "alt-x", "xy", "ctrl-p,,ctrl-q"])("refused: %s", (s) => {
    expect(() => parseDetachKeys(s)).toThrow(/is not a key/);
  });
});

describe("DetachMatcher", () => {
  const keys = b(0x10, 0x11);

  test("the sequence in one read detaches; what came before it goes on", () => {
    expect(new DetachMatcher(keys).feed(b(0x61, 0x10, 0x11, 0x62))).toEqual({ forward: b(0x61), detach: true });
  });

  test("split across reads: the first key is held, then detaches", () => {
    const m = new DetachMatcher(keys);
    expect(m.feed(b(0x61, 0x10))).toEqual({ forward: b(0x61), detach: false });
    expect(m.feed(b(0x11))).toEqual({ forward: b(), detach: true });
  });

  test("the first key followed by another: both go on (Ctrl-P still reaches the shell's history)", () => {
    const m = new DetachMatcher(keys);
    expect(m.feed(b(0x10))).toEqual({ forward: b(), detach: false });
    expect(m.feed(b(0x70))).toEqual({ forward: b(0x10, 0x70), detach: false });
    expect(m.feed(b(0x10, 0x10, 0x11))).toEqual({ forward: b(0x10), detach: true });
  });
});
