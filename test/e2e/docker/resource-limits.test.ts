// A runaway inside cannot take the host down: a sandbox's memory, CPU and process limits hold on a real engine, the
// limit that was hit is reported (the command's stderr and exit status, `sbx limits`, `sbx list`, `sbx logs`), and
// the sandbox works again for the next command.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { acquireFixture, canRun, releaseFixture, skipReason, type Fixture } from "./fixture";

const MIB = 1024 * 1024;

describe.skipIf(!canRun)(`resource limits (Docker)${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  let f: Fixture;
  const container = () => f.docker(["ps", "-aq", "--filter", "label=sbx.name=limited"]).stdout.trim();
  beforeAll(() => {
    f = acquireFixture();
    const r = f.sbx(["create", "limited", "--memory", "256m", "--pids", "128", "--cpus", "1"]);
    if (r.code !== 0) throw new Error(`sbx create limited exited ${r.code}: ${r.stderr}`);
  }, 120_000);
  afterAll(() => {
    f?.sbx(["rm", "--force", "limited"]);
    releaseFixture();
  }, 60_000);

  test("the container is made with the limits asked for (memory with no swap beyond it)", () => {
    const hc = JSON.parse(f.docker(["inspect", "--format", "{{json .HostConfig}}", container()]).stdout) as Record<string, number>;
    expect({ mem: hc.Memory, swap: hc.MemorySwap, pids: hc.PidsLimit, cpus: hc.NanoCpus }).toEqual({ mem: 256 * MIB, swap: 256 * MIB, pids: 128, cpus: 1e9 });
  });

  test("the sandbox can neither raise its limits nor make itself safer from the OOM killer than the host's processes", () => {
    const tries = [
      "echo max > /sys/fs/cgroup/pids/pids.max",
      "echo max > /sys/fs/cgroup/pids.max",
      "echo -1 > /sys/fs/cgroup/memory/memory.limit_in_bytes",
      "echo -500 > /proc/self/oom_score_adj",
    ];
    for (const t of tries) {
      const r = f.sbx(["run", "limited", "--", "sh", "-c", `${t} 2>/dev/null && echo WROTE`]);
      expect({ t, out: r.stdout }).toEqual({ t, out: "" });
    }
    const hc = JSON.parse(f.docker(["inspect", "--format", "{{json .HostConfig}}", container()]).stdout) as Record<string, number>;
    expect(hc.PidsLimit).toBe(128);
  }, 60_000);

  test("a memory hog is killed at the limit: exit 137, a note naming the limit, and the sandbox works after", () => {
    // The shell holds 600 MB in a variable: the kernel kills it, not the host and not the sandbox.
    const r = f.sbx(["run", "limited", "--", "sh", "-c", 'x=$(head -c 600000000 /dev/zero | tr "\\0" a); echo survived ${#x}']);
    expect(r.code).toBe(137);
    expect(r.stdout).not.toContain("survived");
    expect(r.stderr).toContain("sandbox limited hit its memory limit (256 MiB)");
    expect(r.stderr).toContain("sbx limits limited --memory");
    const next = f.sbx(["run", "limited", "--", "echo", "still here"]);
    expect({ code: next.code, out: next.stdout }).toEqual({ code: 0, out: "still here\n" });
    const shown = f.sbx(["limits", "limited"]);
    expect(shown.stdout).toContain("memory 256 MiB, cpus 1, pids 128");
    expect(shown.stdout).toMatch(/memory limit hit: the kernel killed [1-9]\d* process/);
    const logs = f.sbx(["logs", "--kind", "limit", "--json"]);
    expect(logs.code).toBe(0);
    expect(logs.stdout).toContain('"action":"memory"');
  }, 120_000);

  test("many hogs smaller than the sandbox's own process: the kernel kills them, never the agent (the sandbox keeps running)", () => {
    // Each hog alone is smaller than the agent's Bun; together they pass the limit. Without the commands' raised OOM
    // score the kernel picks the biggest process: the agent, and the sandbox stops.
    const r = f.sbx(["run", "limited", "--", "sh", "-c", 'for i in $(seq 16); do (x=$(head -c 20000000 /dev/zero | tr "\\0" a); sleep 3) & done; wait; cat /proc/self/oom_score_adj']);
    expect(r.stderr).not.toContain("exec agent went away");
    expect(r.stdout.trim()).toBe("500");
    expect(f.docker(["inspect", "--format", "{{.State.Running}} {{.State.OOMKilled}}", container()]).stdout.trim()).toBe("true false");
    // A terminal session's processes go first too (script gives sbx a terminal: the daemon's PTY and docker exec).
    const cli = join(import.meta.dir, "../../../src/cli/main.ts");
    const tty = Bun.spawnSync(["script", "-qec", `${f.user.prefix().map((a) => `'${a}'`).join(" ")} bun ${cli} shell limited -- cat /proc/self/oom_score_adj`, "/dev/null"], { cwd: f.repo, stdout: "pipe", stderr: "pipe" });
    expect(tty.stdout.toString().replace(/[^0-9]/g, "")).toBe("500");
  }, 120_000);

  test("sandbox-main alone runs without JSC's lazily made threads (a fork bomb cannot make it abort); its commands never inherit that", () => {
    const main = f.docker(["inspect", "--format", "{{.State.Pid}}", container()]).stdout.trim();
    // --init's only child is sandbox-main (the launch line exec'd into it).
    const kid = readFileSync(`/proc/${main}/task/${main}/children`, "utf8").trim().split(/\s+/)[0]!;
    expect(readFileSync(`/proc/${kid}/cmdline`, "utf8")).toContain("/opt/sbx/main/sandbox-main.js");
    expect(readFileSync(`/proc/${kid}/environ`, "utf8").split("\0")).toContain("BUN_JSC_useConcurrentJIT=0");
    // Its warm-up made the thread JSC would otherwise make mid-bomb (Bun 1.4.5's name for it), and no JIT worker runs.
    const threads = readdirSync(`/proc/${kid}/task`).map((t) => readFileSync(`/proc/${kid}/task/${t}/comm`, "utf8").trim());
    expect(threads).toContain("JSCWarmUp");
    expect(threads).not.toContain("JITWorker");
    const viaAgent = f.sbx(["run", "limited", "--", "sh", "-c", "env | grep -c BUN_JSC_ || true"]);
    expect(viaAgent.stdout.trim()).toBe("0");
    const viaExec = f.docker(["exec", container(), "sh", "-c", "env | grep -c BUN_JSC_ || true"]);
    expect(viaExec.stdout.trim()).toBe("0");
  });

  test("a fork bomb stops at the process limit, is ended with its command, and the next command runs", () => {
    const started = Date.now();
    // A classic bomb: every copy forks two more in the background. Without the limit it takes the host's process table.
    const r = f.sbx(["run", "limited", "--", "sh", "-c", "b() { b | b & }; b; sleep 2"]);
    expect(Date.now() - started).toBeLessThan(60_000);
    if (!r.stderr.includes("hit its process limit")) {
      // Why, for whoever reads a failed run: the container's own log says how its process ended.
      console.error("container:", f.docker(["inspect", "--format", "{{json .State}}", container()]).stdout);
      console.error("its log:", f.docker(["logs", "--tail", "40", container()]).stderr.slice(-4000));
    }
    expect(r.stderr).toContain("sandbox limited hit its process limit (128)");
    const next = f.sbx(["run", "limited", "--", "sh", "-c", "echo ok; ls /proc | grep -c '^[0-9]'"]);
    expect(next.code).toBe(0);
    expect(next.stdout.split("\n")[0]).toBe("ok");
    // What is left: the forwarder, init and this command, not the bomb.
    expect(Number(next.stdout.split("\n")[1])).toBeLessThan(20);
    const list = JSON.parse(f.sbx(["list", "--json"]).stdout) as { name: string; hits?: { limit: string; count: number }[] }[];
    const hits = list.find((s) => s.name === "limited")?.hits ?? [];
    expect(hits.map((h) => h.limit).sort()).toEqual(["memory", "pids"]);
  }, 120_000);

  test("sbx limits changes a running sandbox's limits at once (docker update), and a bad value is refused before anything changes", () => {
    const bad = f.sbx(["limits", "limited", "--memory", "12q"]);
    expect(bad.code).toBe(64);
    expect(bad.stderr).toContain("--memory '12q' is not a size");
    const r = f.sbx(["limits", "limited", "--memory", "512m", "--pids", "none"]);
    // Its first line: the limits; the LLM budget and spend follow (issue 38).
    expect({ code: r.code, out: r.stdout.trim().split("\n")[0] }).toEqual({ code: 0, out: "limited: memory 512 MiB, cpus 1, pids none (in effect now)" });
    const hc = JSON.parse(f.docker(["inspect", "--format", "{{json .HostConfig}}", container()]).stdout) as Record<string, number>;
    expect({ mem: hc.Memory, swap: hc.MemorySwap, cpus: hc.NanoCpus }).toEqual({ mem: 512 * MIB, swap: 512 * MIB, cpus: 1e9 });
    expect(hc.PidsLimit === 0 || hc.PidsLimit === -1 || hc.PidsLimit === null).toBe(true);
  }, 60_000);
});
