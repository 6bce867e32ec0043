// A guest's cgroup: its memory, CPU and process limits on Linux, on cgroup v1 (a dir per controller) or v2 (one dir).
//
// Each sandbox gets `sbx/<id>` at the top of the hierarchy (v2: /sys/fs/cgroup/sbx/<id>; v1: /sys/fs/cgroup/<controller>/sbx/<id>),
// as Docker's cgroupfs driver keeps its containers under /docker: the daemon's own cgroup holds the daemon (v2 lets no
// cgroup with processes have children with controllers), and the guests' limits must not depend on where the daemon
// was started from. Every guest process joins it before it drops to the guest's uid (`joinArgv`).
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { LimitCounters, Limits } from "../../core/limits";
import { CGROUP_ROOT, countersOfDir, countersOfV1 } from "../../sys/cgroup";

/** Period of the CPU quota (µs): the kernel's default. */
const CPU_PERIOD = 100_000;

/**
 * The shell that joins the guest's cgroup, then runs the rest: `sh -c JOIN sbx-limits <procs files…> -- argv…`. It runs
 * as root (before setpriv drops to the guest), so nothing the guest runs is ever outside its limits. A file that is
 * not there (the machine has no such controller) is passed over; one that refuses the write stops the command.
 */
export const JOIN_SCRIPT = 'for f; do shift; [ "$f" = -- ] && break; if [ -e "$f" ]; then echo $$ > "$f" || exit 125; fi; done; exec "$@"';

export type CgroupVersion = 1 | 2;

export class GuestCgroups {
  readonly version: CgroupVersion | null;

  constructor(
    readonly root: string = CGROUP_ROOT,
    readonly name: string = "sbx",
  ) {
    this.version = detect(root);
  }

  /** The sandbox's cgroup dirs: one (v2), or one per controller sbx uses (v1). */
  dirs(id: string): string[] {
    if (this.version === 2) return [join(this.root, this.name, id)];
    if (this.version === 1) return (["memory", "pids", "cpu"] as const).filter((c) => existsSync(join(this.root, c))).map((c) => join(this.root, c, this.name, id));
    return [];
  }

  /**
   * The sandbox's cgroup in the v2 hierarchy, which is what a socket carries (the cgroup of the process that made it)
   * and what nftables' `socket cgroupv2` matches: v2, its own dir; v1 beside a mounted v2 (`<root>/unified`), a dir
   * there with no controllers, for membership only. `path` is as nft names it (under /sys/fs/cgroup), `level` its depth
   * in the v2 hierarchy. null: no v2 hierarchy here (guests then reach no loopback service but their proxy).
   */
  socketCgroup(id: string): { dir: string; path: string; level: number } | null {
    if (this.version === 2) return { dir: join(this.root, this.name, id), path: `${this.name}/${id}`, level: 2 };
    const unified = join(this.root, "unified");
    if (this.version === 1 && existsSync(join(unified, "cgroup.procs"))) return { dir: join(unified, this.name, id), path: `unified/${this.name}/${id}`, level: 2 };
    return null;
  }

  /** Makes the v2 dir sockets are matched by (v1 hosts: beside the controllers'); its path, or null without v2. */
  ensureSocketCgroup(id: string): { path: string; level: number } | null {
    const s = this.socketCgroup(id);
    if (!s) return null;
    mkdirSync(s.dir, { recursive: true });
    return { path: s.path, level: s.level };
  }

  /** Every dir a guest process joins: its controllers' (dirs), and on a v1 host with v2 beside, its v2 dir too. */
  private joinDirs(id: string): string[] {
    const s = this.version === 1 ? this.socketCgroup(id) : null;
    return [...this.dirs(id), ...(s ? [s.dir] : [])];
  }

  /** The argv that joins the sandbox's cgroup(s), then runs `argv` (unchanged when this machine has no cgroups). */
  joinArgv(id: string, argv: string[]): string[] {
    const files = this.joinDirs(id).map((d) => join(d, "cgroup.procs"));
    return files.length === 0 ? argv : ["sh", "-c", JOIN_SCRIPT, "sbx-limits", ...files, "--", ...argv];
  }

  /** Makes the sandbox's cgroup(s) and writes its limits (again, when they changed). Throws when the kernel refuses. */
  ensure(id: string, limits: Limits): void {
    if (this.version === null) throw new Error(`no cgroup hierarchy with the memory and pids controllers under ${this.root}`);
    if (this.version === 2) {
      const parent = join(this.root, this.name);
      mkdirSync(parent, { recursive: true });
      // Children get the controllers only when the parent hands them down; each on its own, so a missing cpu is not fatal.
      for (const c of ["memory", "pids", "cpu"]) {
        try {
          writeFileSync(join(parent, "cgroup.subtree_control"), `+${c}`);
        } catch {
          /* that controller is not available here */
        }
      }
      const dir = join(parent, id);
      mkdirSync(dir, { recursive: true });
      put(dir, "memory.max", limits.memory === null ? "max" : String(limits.memory));
      if (existsSync(join(dir, "memory.swap.max"))) put(dir, "memory.swap.max", limits.memory === null ? "max" : "0");
      put(dir, "pids.max", limits.pids === null ? "max" : String(limits.pids));
      if (existsSync(join(dir, "cpu.max"))) put(dir, "cpu.max", `${limits.cpus === null ? "max" : Math.round(limits.cpus * CPU_PERIOD)} ${CPU_PERIOD}`);
      return;
    }
    for (const dir of this.dirs(id)) mkdirSync(dir, { recursive: true });
    const [mem, pids, cpu] = ["memory", "pids", "cpu"].map((c) => join(this.root, c, this.name, id));
    if (existsSync(mem!)) {
      // memory+swap may never be below memory: opened up first, then memory, then memory+swap to the same value.
      const memsw = existsSync(join(mem!, "memory.memsw.limit_in_bytes"));
      if (memsw) put(mem!, "memory.memsw.limit_in_bytes", "-1");
      put(mem!, "memory.limit_in_bytes", limits.memory === null ? "-1" : String(limits.memory));
      if (memsw && limits.memory !== null) put(mem!, "memory.memsw.limit_in_bytes", String(limits.memory));
      else if (limits.memory !== null) put(mem!, "memory.swappiness", "0");
    }
    if (existsSync(pids!)) put(pids!, "pids.max", limits.pids === null ? "max" : String(limits.pids));
    if (existsSync(cpu!)) {
      put(cpu!, "cpu.cfs_period_us", String(CPU_PERIOD));
      put(cpu!, "cpu.cfs_quota_us", limits.cpus === null ? "-1" : String(Math.round(limits.cpus * CPU_PERIOD)));
    }
  }

  /** Whether the sandbox's cgroup exists (its limits hold for what joins it). */
  exists(id: string): boolean {
    const d = this.dirs(id);
    return d.length > 0 && d.every((x) => existsSync(x));
  }

  /** The kernel's counters of the sandbox's cgroup, or null when it has none. */
  counters(id: string): LimitCounters | null {
    if (this.version === 2) return countersOfDir(join(this.root, this.name, id));
    if (this.version !== 1) return null;
    return countersOfV1(join(this.root, "memory", this.name, id), join(this.root, "pids", this.name, id));
  }

  /**
   * Kills every process in the sandbox's cgroup, a fork bomb included: forks are shut off first (pids.max 0: the
   * kernel refuses every new process there), so the kill converges; then the process limit is put back. Whether any
   * process was killed. (Root kills the guest's processes: they are the account sbx made.) It returns once the killed
   * are reaped: until then their pids stay charged to the limit, and the next command would find no room.
   */
  async killAll(id: string, limits: Limits | undefined): Promise<boolean> {
    const pidsDir = this.version === 2 ? join(this.root, this.name, id) : join(this.root, "pids", this.name, id);
    const procsDirs = this.joinDirs(id).filter((d) => existsSync(d));
    if (procsDirs.length === 0) return false;
    const clamp = existsSync(join(pidsDir, "pids.max"));
    if (clamp) put(pidsDir, "pids.max", "0");
    let killed = false;
    try {
      for (let i = 0; i < 200; i++) {
        const pids = new Set<number>();
        for (const d of procsDirs) {
          try {
            for (const l of readFileSync(join(d, "cgroup.procs"), "utf8").split("\n")) if (/^\d+$/.test(l)) pids.add(Number(l));
          } catch {
            /* gone */
          }
        }
        if (pids.size === 0) {
          if (clamp) await reaped(pidsDir);
          return killed;
        }
        for (const p of pids) {
          try {
            process.kill(p, "SIGKILL");
            killed = true;
          } catch {
            /* already gone */
          }
        }
        await Bun.sleep(10);
      }
      throw new Error(`processes in cgroup ${procsDirs[0]} kept running after SIGKILL`);
    } finally {
      if (clamp) put(pidsDir, "pids.max", limits === undefined || limits.pids === null ? "max" : String(limits.pids));
    }
  }

  /** Removes the sandbox's cgroup(s) once no process is left in them (the guest's were killed first). */
  async remove(id: string): Promise<void> {
    for (const d of this.joinDirs(id)) {
      for (let i = 0; existsSync(d); i++) {
        try {
          rmdirSync(d);
        } catch (e) {
          // EBUSY: the last killed processes are still leaving (init reaps them, not always at once).
          if (i >= 250) throw new Error(`cannot remove cgroup ${d}: ${(e as Error).message}`);
          await Bun.sleep(20);
        }
      }
    }
  }

  /** Ids of every sandbox cgroup there is (crash leftovers are among them). */
  ids(): string[] {
    const parents = this.version === 2 ? [join(this.root, this.name)] : this.version === 1 ? ["memory", "pids", "cpu"].map((c) => join(this.root, c, this.name)) : [];
    const out = new Set<string>();
    for (const p of parents) {
      try {
        for (const e of readdirSync(p, { withFileTypes: true })) if (e.isDirectory() && /^[a-z0-9]{1,20}$/.test(e.name)) out.add(e.name);
      } catch {
        /* none made yet */
      }
    }
    return [...out];
  }
}

/**
 * Waits (up to 5 s) until no pid is charged to the cgroup: a killed process leaves cgroup.procs when it exits, but
 * its pid is uncharged only when it is reaped, and orphans are reaped by init, which may poll (measured: every 2 s).
 */
async function reaped(pidsDir: string): Promise<void> {
  for (let i = 0; i < 250; i++) {
    let current: string;
    try {
      current = readFileSync(join(pidsDir, "pids.current"), "utf8").trim();
    } catch {
      return;
    }
    if (current === "0") return;
    await Bun.sleep(20);
  }
}

function put(dir: string, file: string, value: string): void {
  try {
    writeFileSync(join(dir, file), value);
  } catch (e) {
    throw new Error(`cannot set ${join(dir, file)} to ${value}: ${(e as Error).message}`);
  }
}

/** v2 when the root is a cgroup2 hierarchy offering memory and pids; v1 when it holds a memory or pids controller dir; else null. */
function detect(root: string): CgroupVersion | null {
  try {
    const ctl = readFileSync(join(root, "cgroup.controllers"), "utf8").split(/\s+/);
    if (ctl.includes("memory") && ctl.includes("pids")) return 2;
  } catch {
    /* not a v2 root */
  }
  return existsSync(join(root, "memory", "cgroup.procs")) || existsSync(join(root, "pids", "cgroup.procs")) ? 1 : null;
}
