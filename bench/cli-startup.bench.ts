// CLI start-up: `sbx --version` (the whole command table), `sbx --help` and one verb's help (that verb alone, as every
// command loads) against `bun -e 0`, all as fresh processes, in the same run.
import { join } from "node:path";
import { report, time } from "./lib";

const main = join(import.meta.dir, "../src/cli/main.ts");
const spawn = (argv: string[]) => () => {
  const p = Bun.spawnSync(argv, { stdout: "ignore", stderr: "ignore" });
  if (p.exitCode !== 0) throw new Error(`${argv.join(" ")} exited ${p.exitCode}`);
};

const runs = Number(process.env.BENCH_RUNS ?? 30);
const baseline = await time(spawn([process.execPath, "-e", "0"]), runs, 3);
const sbx = await time(spawn([process.execPath, main, "--version"]), runs, 3);
const help = await time(spawn([process.execPath, main, "--help"]), runs, 3);
// A verb's own help: what every command loads before it acts (its one verb, cli/verb-loaders.ts), and nothing else.
const verbHelp = await time(spawn([process.execPath, main, "shell", "--help"]), runs, 3);
report([
  { name: "sbx --version (median)", unit: "ms", value: sbx.median, baselineName: "bun -e 0", baseline: baseline.median, better: "lower" },
  { name: "sbx --help (median)", unit: "ms", value: help.median, baselineName: "bun -e 0", baseline: baseline.median, better: "lower" },
  { name: "sbx shell --help (median)", unit: "ms", value: verbHelp.median, baselineName: "bun -e 0", baseline: baseline.median, better: "lower" },
]);
