// `sbx __complete names` (what a TAB after `sbx shell ` runs) against `sbx --version`, both fresh processes, alternated,
// with the test daemon running (its own temp XDG dirs, stopped by pid) and 24 sandboxes, 4 of them the repo's.
import { mkdirSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { report, timePair } from "./lib";
import { CLI, makeWorld, seedSandbox, startDaemonProc } from "../test/support/daemon-proc";

const w = makeWorld();
const repo = join(w.root, "repo");
mkdirSync(repo);
Bun.spawnSync(["git", "init", "-q", repo]);
const real = realpathSync(repo);
for (const name of ["api", "demo", "dev", "web"]) seedSandbox(w, name, "stopped", real);
for (let i = 0; i < 20; i++) seedSandbox(w, `other-${i}`, "stopped", `/elsewhere/${i % 4}`);
const d = await startDaemonProc(w);
try {
  const cli = (args: string[], want?: string) => () => {
    const r = Bun.spawnSync([process.execPath, CLI, ...args], { cwd: repo, env: w.env });
    if (r.exitCode !== 0 || (want !== undefined && r.stdout.toString() !== want)) throw new Error(`sbx ${args.join(" ")}: ${r.exitCode} ${r.stdout} ${r.stderr}`);
  };
  const runs = Number(process.env.BENCH_RUNS ?? 30);
  const { a: names, b: version } = await timePair(cli(["__complete", "names"], "api\ndemo\ndev\nweb\n"), cli(["--version"]), runs, 3);
  report([{ name: "sbx __complete names, daemon running (median)", unit: "ms", value: names.median, baselineName: "sbx --version", baseline: version.median, better: "lower" }]);
  console.log(`  p90 ${names.p90.toFixed(1)} ms (the brief: well under 100 ms)`);
} finally {
  d.proc.kill("SIGTERM");
  await d.exited;
  w.cleanup();
}
