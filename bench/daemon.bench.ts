// Daemon benchmarks (each daemon in its own temp XDG dirs, stopped by pid): RSS with 1 and 20 idle sandboxes (fake backend, real per-sandbox unix-socket guards), and a control-socket round trip vs `bun -e 0`.
import { readFileSync } from "node:fs";
import { report, time } from "./lib";
import { CLI, makeWorld, seedSandbox, startDaemonProc, type World } from "../test/support/daemon-proc";

/** Resident set size of a process in MB (Linux /proc; `ps` elsewhere). */
function rssMb(pid: number): number {
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    if (kb) return Number(kb) / 1024;
  } catch {
    /* not Linux */
  }
  const r = Bun.spawnSync(["ps", "-o", "rss=", "-p", String(pid)]);
  return Number(r.stdout.toString().trim()) / 1024;
}

async function idleRss(n: number): Promise<number> {
  const w: World = makeWorld();
  try {
    for (let i = 0; i < n; i++) seedSandbox(w, `sb${i}`, "running");
    const d = await startDaemonProc(w);
    try {
      const st = await w.client.status();
      if (st.sandboxes.filter((s) => s.guarded).length !== n) throw new Error(`expected ${n} guarded sandboxes`);
      // Let start-up garbage settle, then take the median of a few samples.
      await Bun.sleep(1500);
      const samples: number[] = [];
      for (let i = 0; i < 5; i++) {
        samples.push(rssMb(d.pid));
        await Bun.sleep(200);
      }
      return samples.sort((a, b) => a - b)[2]!;
    } finally {
      // Stopped by its own pid whatever happened above: a bench never leaves a daemon behind.
      d.proc.kill("SIGTERM");
      await d.exited;
    }
  } finally {
    w.cleanup();
  }
}

const rss0 = await idleRss(0);
const rss1 = await idleRss(1);
const rss20 = await idleRss(20);
const perSandbox = (rss20 - rss1) / 19;
console.log(`daemon RSS: 0 sandboxes ${rss0.toFixed(1)} MB, 1 sandbox ${rss1.toFixed(1)} MB, 20 sandboxes ${rss20.toFixed(1)} MB`);

// Round trips against one daemon with 20 sandboxes.
const w = makeWorld();
for (let i = 0; i < 20; i++) seedSandbox(w, `sb${i}`, "running");
const d = await startDaemonProc(w);
try {
  const list = await time(() => w.client.sandboxes(), 200, 20);
  const bunStart = await time(() => Bun.spawnSync([process.execPath, "-e", "0"]), 20, 3);
  const cliPs = await time(() => {
    const r = Bun.spawnSync([process.execPath, CLI, "ps", "--json"], { env: w.env });
    if (r.exitCode !== 0) throw new Error(r.stderr.toString());
  }, 20, 3);
  const cliVersion = await time(() => Bun.spawnSync([process.execPath, CLI, "--version"], { env: w.env }), 20, 3);
  report([
    { name: "RSS per idle sandbox", unit: "MB", value: perSandbox, baselineName: "budget", baseline: 3, better: "lower", target: 1 },
    { name: "control-socket list round trip (20 sandboxes)", unit: "ms", value: list.median, baselineName: "bun -e 0", baseline: bunStart.median, better: "lower" },
    { name: "CLI process: sbx ps via the daemon", unit: "ms", value: cliPs.median, baselineName: "bun -e 0", baseline: bunStart.median, better: "lower" },
    // What the socket adds to a CLI process, separated from the CLI's own start-up (module loading).
    { name: "CLI process: sbx ps via the daemon", unit: "ms", value: cliPs.median, baselineName: "sbx --version (no daemon)", baseline: cliVersion.median, better: "lower" },
  ]);
} finally {
  d.proc.kill("SIGTERM");
  await d.exited;
  w.cleanup();
}
