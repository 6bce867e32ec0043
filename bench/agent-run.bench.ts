// Benchmark: `sbx run claude NAME -- --version` (setup inside, then the agent) on a sandbox that has the agent, vs
// `sbx shell NAME -- claude --version`, same run; and the first install of the agent (npm registry → host cache).
// Run as root: bun bench/agent-run.bench.ts  (needs Docker, the sbx-base:bookworm image and the npm registry)
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { userRecipe } from "../src/workspace/init";
import { report, timePair } from "./lib";
import { benchWorld, CLI } from "./sandbox-env";

const world = benchWorld("agent");
const { root, home, repo, env } = world;

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
