// Benchmark: `sbx shell <name> -- true` on a running sandbox vs `docker exec <ctr> true`, same run.
// Run as root: bun bench/attach.bench.ts  (needs Docker and the sbx-base:bookworm image)
import { rmSync } from "node:fs";
import { report, timePair } from "./lib";
import { benchWorld, CLI } from "./sandbox-env";

const world = benchWorld("attach");
const { root, repo, env } = world;
const stopBenchDaemon = () => world.stopDaemon();

const { sh } = world;
world.makeRepo();
try {
  sh(["bun", CLI, "create", "attach"]);
  const ctr = sh(["docker", "ps", "--filter", "label=sbx.name=attach", "--filter", `label=sbx.repo=${repo}`, "--format", "{{.Names}}"]);
  // Alternating runs: a load that comes and goes weighs on both alike.
  const { a: sbx, b: base } = await timePair(() => sh(["bun", CLI, "shell", "attach", "--", "true"]), () => sh(["docker", "exec", ctr, "true"]), 20, 3);
  report([{ name: "sbx shell -- true", unit: "ms", value: sbx.median, baselineName: "docker exec <ctr> true", baseline: base.median, better: "lower", target: 1.2 }]);
} finally {
  const builtImage = world.imageOf();
  Bun.spawnSync(["bun", CLI, "rm", "--force", "attach"], { cwd: repo, env, stdout: "ignore", stderr: "ignore" });
  await stopBenchDaemon();
  world.removeImage(builtImage);
  rmSync(root, { recursive: true, force: true });
}
