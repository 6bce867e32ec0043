// The kernel's limit counters are read the same on cgroup v1 (a dir per controller) and v2 (one unified dir).
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { countersOfDir, countersOfPid, keyedValue, parseProcCgroup } from "../../../src/sys/cgroup";

let root: string;
const put = (p: string, text: string) => {
  mkdirSync(dirname(join(root, p)), { recursive: true });
  writeFileSync(join(root, p), text);
};

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "sbx-cg-"));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("cgroup counters", () => {
  test("/proc/<pid>/cgroup is read by controller, v1 and v2 lines alike", () => {
    const m = parseProcCgroup("12:pids:/docker/abc\n4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/system.slice/docker-abc.scope\n");
    expect(m.get("pids")).toBe("/docker/abc");
    expect(m.get("cpuacct")).toBe("/docker/abc");
    expect(m.get("")).toBe("/system.slice/docker-abc.scope");
    expect(keyedValue("oom_kill_disable 0\nunder_oom 0\noom_kill 7\n", "oom_kill")).toBe(7);
    expect(keyedValue("max 0\n", "oom_kill")).toBe(0);
  });

  test("v1: memory.oom_control's oom_kill and pids.events' max, each in its own hierarchy", () => {
    put("proc/42/cgroup", "8:pids:/docker/c1\n4:memory:/docker/c1\n0::/docker/c1\n");
    put("cg/memory/docker/c1/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
    put("cg/pids/docker/c1/pids.events", "max 31\n");
    expect(countersOfPid(42, join(root, "cg"), join(root, "proc"))).toEqual({ oomKills: 2, pidsRefused: 31 });
  });

  test("v2: the unified dir's memory.events and pids.events", () => {
    put("proc/43/cgroup", "0::/system.slice/docker-c2.scope\n");
    put("cg/system.slice/docker-c2.scope/memory.events", "low 0\nhigh 0\nmax 9\noom 1\noom_kill 1\noom_group_kill 0\n");
    put("cg/system.slice/docker-c2.scope/pids.events", "max 4\n");
    expect(countersOfPid(43, join(root, "cg"), join(root, "proc"))).toEqual({ oomKills: 1, pidsRefused: 4 });
    expect(countersOfDir(join(root, "cg/system.slice/docker-c2.scope"))).toEqual({ oomKills: 1, pidsRefused: 4 });
  });

  test("a process that is gone, or cgroups without these controllers, read as null (not as zero hits)", () => {
    expect(countersOfPid(44, join(root, "cg"), join(root, "proc"))).toBeNull();
    put("proc/45/cgroup", "0::/x\n");
    expect(countersOfPid(45, join(root, "cg"), join(root, "proc"))).toBeNull();
  });
});
