// A guest's cgroup on a v1 tree (a dir per controller) and a v2 tree (one dir): where it lives, what its limits write,
// how a process joins it before dropping to the guest, and that one install's cgroups are never another's.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GuestCgroups, JOIN_SCRIPT } from "../../../../src/drivers/linux-user/cgroup";

let root: string;
const MIB = 1024 * 1024;
const read = (p: string) => readFileSync(join(root, p), "utf8");

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "sbx-guestcg-"));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function v1(): void {
  for (const c of ["memory", "pids", "cpu"]) {
    mkdirSync(join(root, c), { recursive: true });
    writeFileSync(join(root, c, "cgroup.procs"), "");
  }
}

describe("guest cgroups", () => {
  test("v1: a dir per controller, memory with memory+swap equal, a CPU quota, a pids max", () => {
    v1();
    const cg = new GuestCgroups(root, "sbx-t");
    expect(cg.version).toBe(1);
    // The kernel makes the control files in a new dir; the fake makes the optional one it would have.
    mkdirSync(join(root, "memory/sbx-t/abc"), { recursive: true });
    writeFileSync(join(root, "memory/sbx-t/abc/memory.memsw.limit_in_bytes"), "");
    cg.ensure("abc", { memory: 256 * MIB, cpus: 1.5, pids: 64 });
    expect(cg.dirs("abc")).toEqual(["memory", "pids", "cpu"].map((c) => join(root, c, "sbx-t/abc")));
    expect(read("memory/sbx-t/abc/memory.limit_in_bytes")).toBe(String(256 * MIB));
    expect(read("memory/sbx-t/abc/memory.memsw.limit_in_bytes")).toBe(String(256 * MIB));
    expect(read("pids/sbx-t/abc/pids.max")).toBe("64");
    expect(read("cpu/sbx-t/abc/cpu.cfs_quota_us")).toBe("150000");
    cg.ensure("abc", { memory: null, cpus: null, pids: null });
    expect([read("memory/sbx-t/abc/memory.limit_in_bytes"), read("pids/sbx-t/abc/pids.max"), read("cpu/sbx-t/abc/cpu.cfs_quota_us")]).toEqual(["-1", "max", "-1"]);
    expect(cg.ids()).toEqual(["abc"]);
  });

  test("v2: one dir under a parent that hands the controllers down; no swap beyond the memory limit", () => {
    writeFileSync(join(root, "cgroup.controllers"), "cpuset cpu io memory pids\n");
    const cg = new GuestCgroups(root, "sbx-t");
    expect(cg.version).toBe(2);
    mkdirSync(join(root, "sbx-t/abc"), { recursive: true });
    for (const f of ["memory.swap.max", "cpu.max"]) writeFileSync(join(root, "sbx-t/abc", f), "");
    cg.ensure("abc", { memory: 512 * MIB, cpus: 2, pids: 100 });
    expect(read("sbx-t/cgroup.subtree_control")).toBe("+cpu"); // the fake keeps the last write; the kernel adds each
    expect(read("sbx-t/abc/memory.max")).toBe(String(512 * MIB));
    expect(read("sbx-t/abc/memory.swap.max")).toBe("0");
    expect(read("sbx-t/abc/cpu.max")).toBe("200000 100000");
    expect(read("sbx-t/abc/pids.max")).toBe("100");
    writeFileSync(join(root, "sbx-t/abc/memory.events"), "oom 2\noom_kill 2\n");
    writeFileSync(join(root, "sbx-t/abc/pids.events"), "max 9\n");
    expect(cg.counters("abc")).toEqual({ oomKills: 2, pidsRefused: 9 });
  });

  test("a process joins every dir as root before argv runs; a machine without cgroups runs argv as it is", () => {
    v1();
    const cg = new GuestCgroups(root, "sbx-t");
    expect(cg.joinArgv("abc", ["setpriv", "--", "id"])).toEqual([
      "sh", "-c", JOIN_SCRIPT, "sbx-limits",
      join(root, "memory/sbx-t/abc/cgroup.procs"), join(root, "pids/sbx-t/abc/cgroup.procs"), join(root, "cpu/sbx-t/abc/cgroup.procs"),
      "--", "setpriv", "--", "id",
    ]);
    const none = new GuestCgroups(join(root, "nothing-here"));
    expect(none.version).toBeNull();
    expect(none.joinArgv("abc", ["id"])).toEqual(["id"]);
    expect(() => none.ensure("abc", { memory: null, cpus: null, pids: null })).toThrow(/no cgroup hierarchy/);
  });

  test("the join script writes its own pid into each file that exists, and stops the command when a write is refused", () => {
    v1();
    const files = [join(root, "a.procs"), join(root, "missing/b.procs")];
    writeFileSync(files[0]!, "");
    const r = Bun.spawnSync(["sh", "-c", JOIN_SCRIPT, "sbx-limits", ...files, "--", "sh", "-c", "echo $$"]);
    expect(r.exitCode).toBe(0);
    // exec keeps the pid: what joined is what runs.
    expect(read("a.procs").trim()).toBe(r.stdout.toString().trim());
    mkdirSync(join(root, "dir.procs"));
    const refused = Bun.spawnSync(["sh", "-c", JOIN_SCRIPT, "sbx-limits", join(root, "dir.procs"), "--", "echo", "ran"]);
    expect(refused.exitCode).toBe(125);
    expect(refused.stdout.toString()).toBe("");
  });
});
