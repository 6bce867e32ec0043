// A user-account guest is held by its limits as a container is: every process it runs is in its cgroup, a memory hog
// is killed at the limit (exit 137) and counted, a fork bomb stops at the process limit, limits change at once, and
// removing the sandbox removes its cgroup. Real root, real cgroups, real setpriv.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import type { SandboxSpec } from "../../../src/core/spec";
import { makeWorld, sh, whyNot, type World } from "./harness";

const MIB = 1024 * 1024;
const skip = whyNot();

describe.skipIf(skip !== undefined)(`limits: linux-user guests${skip ? ` (skipped: ${skip})` : ""}`, () => {
  let w: World;
  let spec: SandboxSpec;
  let cgSkip: string | undefined;
  /** Pids charged to the guest's cgroup: its processes, zombies not yet reaped included. */
  const pidsCharged = () => {
    const dir = w.backend.cgroups.dirs(spec.id).find((d) => existsSync(`${d}/pids.current`));
    return dir === undefined ? 0 : Number(readFileSync(`${dir}/pids.current`, "utf8").trim());
  };
  const run = (script: string) => sh(w.backend.shellArgv(spec, { argv: ["bash", "-c", script], cwd: w.repo, tty: false, env: {} }));

  beforeAll(async () => {
    w = await makeWorld();
    if (w.backend.cgroups.version === null) cgSkip = "this kernel offers no memory/pids cgroup";
    spec = { ...w.spec("limited"), limits: { memory: 256 * MIB, cpus: 1, pids: 64 } };
    await w.backend.apply(spec);
  }, 60_000);
  afterAll(async () => {
    await w?.teardown();
  }, 60_000);

  test("every process the guest runs is in its cgroup, with the limits set", () => {
    if (cgSkip) return console.warn(`skipped: ${cgSkip}`);
    expect(w.warnings.filter((m) => m.includes("not enforced"))).toEqual([]);
    const r = run("cat /proc/self/cgroup");
    expect(r.code).toBe(0);
    const dirs = w.backend.cgroups.dirs(spec.id);
    expect(dirs.length).toBeGreaterThan(0);
    for (const d of dirs) {
      const rel = d.slice(w.backend.cgroups.root.length).replace(/^\/(memory|pids|cpu)\//, "/");
      expect(r.out).toContain(rel);
    }
  });

  test("the guest can neither raise its limits nor leave its cgroup", () => {
    if (cgSkip) return console.warn(`skipped: ${cgSkip}`);
    const dirs = w.backend.cgroups.dirs(spec.id);
    const pidsDir = dirs.find((d) => d.includes("/pids/")) ?? dirs[0]!;
    const parent = pidsDir.slice(0, pidsDir.lastIndexOf("/"));
    const root = w.backend.cgroups.version === 2 ? w.backend.cgroups.root : `${w.backend.cgroups.root}/pids`;
    const tries = [
      `echo max > ${pidsDir}/pids.max`,
      `echo $$ > ${root}/cgroup.procs`,
      `echo $$ > ${parent}/cgroup.procs`,
      `mkdir ${pidsDir}/escape`,
    ];
    for (const t of tries) expect({ t, out: run(`${t} 2>/dev/null && echo WROTE`).out }).toEqual({ t, out: "" });
    expect(run("cat /proc/self/cgroup").out).toContain(spec.id);
    expect(Bun.spawnSync(["cat", `${pidsDir}/pids.max`]).stdout.toString().trim()).toBe("64");
  });

  test("a memory hog is killed at the limit and counted; the next command works", async () => {
    if (cgSkip) return console.warn(`skipped: ${cgSkip}`);
    const hog = run('x=$(head -c 600000000 /dev/zero | tr "\\0" a); echo survived');
    expect(hog.out).not.toContain("survived");
    expect(hog.code).not.toBe(0);
    expect((await w.backend.counters(spec))?.oomKills).toBeGreaterThan(0);
    expect(run("echo ok").out).toBe("ok\n");
  }, 60_000);

  test("a fork bomb stops at the process limit, is counted, and ends with its command: the next command runs", async () => {
    if (cgSkip) return console.warn(`skipped: ${cgSkip}`);
    // The bomb would go on in the background after its command returns; its group is killed when the command ends.
    const started = Date.now();
    run("b() { b | b & }; b; sleep 2");
    expect(Date.now() - started).toBeLessThan(30_000); // it returned, and the host kept its process table
    expect((await w.backend.counters(spec))?.pidsRefused).toBeGreaterThan(0);
    expect(sh(["pgrep", "-u", w.backend.guest(spec), "--runstates", "R,S,D,T,t,I"]).code).toBe(1); // none left running
    expect(pidsCharged()).toBe(0); // none left a zombie either: init may reap late, and each would hold the limit
    expect(run("echo ok").out).toBe("ok\n");
  }, 90_000);

  test("stop ends even a bomb that outlives its command (it left the group): forks shut off, then everything killed", async () => {
    if (cgSkip) return console.warn(`skipped: ${cgSkip}`);
    run("setsid sh -c 'b() { b | b & }; b' >/dev/null 2>&1 < /dev/null & sleep 2; echo left");
    const started = Date.now();
    await w.backend.stop(spec);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(sh(["pgrep", "-u", w.backend.guest(spec), "--runstates", "R,S,D,T,t,I"]).code).toBe(1);
    expect(pidsCharged()).toBe(0);
    await w.backend.apply(spec);
    expect(run("echo ok").out).toBe("ok\n");
  }, 90_000);

  test("new limits hold at once for the running guest", async () => {
    if (cgSkip) return console.warn(`skipped: ${cgSkip}`);
    spec = { ...spec, limits: { memory: 512 * MIB, cpus: null, pids: 100 } };
    await w.backend.applyLimits(spec);
    const v = w.backend.cgroups.version;
    const read = (file: string) => sh(["cat", `${w.backend.cgroups.dirs(spec.id).find((d) => existsSync(`${d}/${file}`))}/${file}`]).out.trim();
    expect(read(v === 2 ? "memory.max" : "memory.limit_in_bytes")).toBe(String(512 * MIB));
    expect(read("pids.max")).toBe("100");
  });

  test("removing the sandbox removes its cgroup", async () => {
    if (cgSkip) return console.warn(`skipped: ${cgSkip}`);
    await w.backend.remove(spec);
    for (const d of w.backend.cgroups.dirs(spec.id)) expect(existsSync(d)).toBe(false);
  }, 60_000);
});
