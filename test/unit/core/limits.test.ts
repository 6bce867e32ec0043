// A sandbox's limits: what a person may write, the defaults a machine gives, and what a hit reads like.
import { describe, expect, test } from "bun:test";
import { defaultLimits, describeHit, formatLimits, limitHits, parseCpus, parseMemory, parsePids, resolveLimits } from "../../../src/core/limits";
import { refusal } from "../../support/refusal";

const GIB = 1024 ** 3;
const host = { memoryBytes: 24 * GIB, cpus: 8 };

describe("limits", () => {
  test("the defaults leave the host half its memory and a CPU, and cap processes", () => {
    expect(defaultLimits(host)).toEqual({ memory: 12 * GIB, cpus: 7, pids: 4096 });
    expect(defaultLimits({ memoryBytes: 1 * GIB, cpus: 1 }).cpus).toBe(1);
  });

  test("memory sizes in the forms people write", () => {
    expect(parseMemory("4g", host)).toBe(4 * GIB);
    expect(parseMemory("4GiB", host)).toBe(4 * GIB);
    expect(parseMemory("512m", host)).toBe(512 * 1024 ** 2);
    expect(parseMemory("1.5G", host)).toBe(1.5 * GIB);
    expect(parseMemory(String(2 * GIB), host)).toBe(2 * GIB);
    expect(parseMemory("none", host)).toBeNull();
  });

  test("a size that is not one, too small to run, or more than the machine has is refused with an example", () => {
    for (const [v, why] of [["12q", "is not a size"], ["-1g", "is not a size"], ["64m", "below"], ["100g", "more than this machine has"]] as const) {
      const e = refusal(() => parseMemory(v, host));
      expect(e.code).toBe("usage");
      expect(e.message).toContain(why);
      expect(e.hint).toContain("none for no limit");
    }
  });

  test("cpus and pids are bounded numbers", () => {
    expect(parseCpus("0.5", host)).toBe(0.5);
    expect(parseCpus(2, host)).toBe(2);
    expect(refusal(() => parseCpus("9", host)).message).toContain("8 CPUs");
    expect(refusal(() => parseCpus("0", host)).message).toContain("at least 0.1");
    expect(refusal(() => parseCpus("1e3", host)).code).toBe("usage");
    expect(parsePids("512")).toBe(512);
    expect(refusal(() => parsePids("10")).message).toContain("from 64");
    expect(refusal(() => parsePids("1.5")).code).toBe("usage");
  });

  test("a flag beats the config file, which beats the default", () => {
    expect(resolveLimits(host, { memory: "2g", pids: 100 }, { memory: "1g" })).toEqual({ memory: 1 * GIB, cpus: 7, pids: 100 });
    expect(resolveLimits(host, {}, { cpus: "none" })).toEqual({ memory: 12 * GIB, cpus: null, pids: 4096 });
  });

  test("a bad value in the config file is a config error that names the key", () => {
    const e = refusal(() => resolveLimits(host, { memory: "lots" }));
    expect(e.code).toBe("config");
    expect(e.message).toContain("limits.memory 'lots' is not a size");
    expect(e.hint).toContain("--memory");
  });

  test("hits are what the counters gained; a counter that went back (a new container) counts from zero", () => {
    expect(limitHits(null, { oomKills: 0, pidsRefused: 0 })).toEqual([]);
    expect(limitHits({ oomKills: 1, pidsRefused: 5 }, { oomKills: 3, pidsRefused: 5 })).toEqual([{ limit: "memory", count: 2 }]);
    expect(limitHits({ oomKills: 4, pidsRefused: 9 }, { oomKills: 1, pidsRefused: 12 })).toEqual([
      { limit: "memory", count: 1 },
      { limit: "pids", count: 3 },
    ]);
  });

  test("a hit reads as what happened, which limit, and how to raise it", () => {
    const l = { memory: 256 * 1024 ** 2, cpus: 1, pids: 128 };
    expect(describeHit("a", { limit: "memory", count: 1 }, l)).toBe("sandbox a hit its memory limit (256 MiB): the kernel killed 1 process in it. Raise it with `sbx limits a --memory SIZE`.");
    expect(describeHit("a", { limit: "pids", count: 3 }, l)).toBe("sandbox a hit its process limit (128): 3 forks were refused. Raise it with `sbx limits a --pids N`.");
    expect(formatLimits({ memory: 1.5 * GIB, cpus: null, pids: 64 })).toBe("memory 1.5 GiB, cpus none, pids 64");
  });
});
