// Benchmark: warm `sbx create` on a 5,000-file repo vs `git clone --shared` + `docker create` + `docker start` of the same image.
// Run as root: bun bench/create.bench.ts  (needs Docker and the sbx-base:bookworm image)
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { userRecipe } from "../src/workspace/init";
import { report, timePair } from "./lib";
import { benchWorld, CLI } from "./sandbox-env";

const world = benchWorld("create");
const { root, home, repo, env } = world;
const stopBenchDaemon = () => world.stopDaemon();

function sh(argv: string[], cwd = repo): string {
  const r = Bun.spawnSync(argv, { cwd, env, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${argv.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

mkdirSync(home, { recursive: true });
mkdirSync(env.XDG_RUNTIME_DIR, { recursive: true, mode: 0o700 });
mkdirSync(repo, { recursive: true });
for (let d = 0; d < 50; d++) {
  mkdirSync(join(repo, `dir${d}`), { recursive: true });
  for (let i = 0; i < 100; i++) writeFileSync(join(repo, `dir${d}`, `f${i}.txt`), `file ${d}/${i}\n`.repeat(20));
}
writeFileSync(join(repo, "Dockerfile"), `FROM sbx-base:bookworm\n${userRecipe()}`);
sh(["git", "init", "-q", "-b", "main"]);
sh(["git", "add", "-A"]);
sh(["git", "-c", "user.email=b@example.invalid", "-c", "user.name=b", "commit", "-qm", "5000 files"]);

let n = 0;
const made: string[] = [];
try {
  // Warm: the image is built once here, outside the timing.
  sh(["bun", CLI, "create", "warmup"]);
  made.push("warmup");
  const image = world.imageOf();

  let m = 0;
  // Alternating runs (sbx, baseline, sbx, …): a load that comes and goes weighs on both alike.
  const { a: sbx, b: base } = await timePair(
    () => {
      const name = `b${n++}`;
      sh(["bun", CLI, "create", name]);
      made.push(name);
    },
    () => {
      const d = join(root, `plain${m}`);
      const ctr = `sbx-bench-plain-${process.pid}-${m++}`;
      sh(["git", "clone", "--shared", "--quiet", repo, d], root);
      sh(["docker", "create", "--name", ctr, "--label", "sbx.bench=1", "--network", "none", "--init", "--mount", `type=bind,src=${d},dst=/w`, image, "sleep", "infinity"]);
      sh(["docker", "start", ctr]);
    },
    8,
    1,
  );

  report([{ name: "sbx create (5,000 files, warm)", unit: "ms", value: sbx.median, baselineName: "git clone --shared + docker create + start", baseline: base.median, better: "lower", target: 1.3 }]);
} finally {
  const builtImage = world.imageOf();
  for (const name of made) Bun.spawnSync(["bun", CLI, "rm", "--force", name], { cwd: repo, env, stdout: "ignore", stderr: "ignore" });
  const ids = Bun.spawnSync(["docker", "ps", "-aq", "--filter", "label=sbx.bench=1"]).stdout.toString().split("\n").filter(Boolean);
  if (ids.length) Bun.spawnSync(["docker", "rm", "-f", ...ids], { stdout: "ignore" });
  await stopBenchDaemon();
  world.removeImage(builtImage);
  rmSync(root, { recursive: true, force: true });
}
