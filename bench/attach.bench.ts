// Benchmark: `sbx shell <name> -- true` on a running sandbox vs `docker exec <ctr> true`, same run.
// Run as root: bun bench/attach.bench.ts  (needs Docker and the sbx-base:bookworm image)
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { userRecipe } from "../src/workspace/init";
import { report, timePair } from "./lib";
import { benchWorld, CLI } from "./sandbox-env";

const world = benchWorld("attach");
const { root, home, repo, env } = world;
const stopBenchDaemon = () => world.stopDaemon();

function sh(argv: string[]): string {
  const r = Bun.spawnSync(argv, { cwd: repo, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${argv.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

mkdirSync(home, { recursive: true });
mkdirSync(env.XDG_RUNTIME_DIR, { recursive: true, mode: 0o700 });
mkdirSync(repo, { recursive: true });
writeFileSync(join(repo, "Dockerfile"), `FROM sbx-base:bookworm\n${userRecipe()}`);
sh(["git", "init", "-q", "-b", "main"]);
sh(["git", "add", "-A"]);
sh(["git", "-c", "user.email=b@example.invalid", "-c", "user.name=b", "commit", "-qm", "init"]);
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
