// Benchmark: `sbx run claude NAME -- --version` (setup inside, then the agent) on a sandbox that has the agent, vs
// `sbx shell NAME -- claude --version`, same run; and the first install of the agent (npm registry → host cache).
// Run as root: bun bench/agent-run.bench.ts  (needs Docker, the sbx-base:bookworm image and the npm registry)
import { rmSync } from "node:fs";
import { report, timePair } from "./lib";
import { benchWorld, CLI } from "./sandbox-env";

const world = benchWorld("agent");
const { root, repo, env } = world;

const { sh } = world;
world.makeRepo();
try {
  // An agent with no login sbx can add is refused up front: a key (never sent anywhere: --version asks no model).
  const key = Bun.spawnSync(["bun", CLI, "secret", "set", "ANTHROPIC_API_KEY"], { cwd: repo, env, stdin: Buffer.from(`sk-ant-api03-bench${"0".repeat(40)}`), stdout: "ignore", stderr: "pipe" });
  if (key.exitCode !== 0) throw new Error(`sbx secret set: ${key.stderr}`);
  sh(["bun", CLI, "create", "agent"]);
  // The first agent layer: Claude Code's package fetched from the registry, checked and unpacked (cache empty).
  const t0 = performance.now();
  const v = sh(["bun", CLI, "run", "--ask", "claude", "agent", "--", "--version"]);
  const first = performance.now() - t0;
  console.log(`first \`sbx run claude\` on an existing sandbox, cache empty (fetch + check + unpack, then the agent): ${first.toFixed(0)} ms (${v})`);
  const { a: run, b: shell } = await timePair(
    () => sh(["bun", CLI, "run", "--ask", "claude", "agent", "--", "--version"]),
    () => sh(["bun", CLI, "shell", "agent", "--", "claude", "--version"]),
    15,
    2,
  );
  report([{ name: "sbx run --ask claude NAME -- --version", unit: "ms", value: run.median, baselineName: "sbx shell NAME -- claude --version", baseline: shell.median, better: "lower", target: 1.2 }]);
} finally {
  const builtImage = world.imageOf();
  Bun.spawnSync(["bun", CLI, "rm", "--force", "agent"], { cwd: repo, env, stdout: "ignore", stderr: "ignore" });
  await world.stopDaemon();
  world.removeImage(builtImage);
  rmSync(root, { recursive: true, force: true });
}
