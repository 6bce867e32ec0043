// Benchmark: `sbx shell <name> -- true` on a running sandbox vs `docker exec <ctr> true`, same run.
// Run as root: bun bench/attach.bench.ts  (needs Docker and the sbx-base:bookworm image)
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { userRecipe } from "../src/workspace/init";
import { report, time } from "./lib";

const CLI = join(import.meta.dir, "../src/cli/main.ts");
const root = mkdtempSync(join(tmpdir(), "sbx-bench-attach-"));
const home = join(root, "home");
const repo = join(root, "repo");
const env = {
  PATH: process.env.PATH ?? "/usr/bin:/bin",
  HOME: home,
  USER: "root",
  SHELL: "/bin/bash",
  XDG_CACHE_HOME: join(root, "cache"),
  XDG_STATE_HOME: join(root, "state"),
  XDG_CONFIG_HOME: join(root, "config"),
  // Its own runtime dir: the daemon this bench starts (and its sockets) are the bench's, never /tmp/sbx-<uid>'s.
  XDG_RUNTIME_DIR: join(root, "rt"),
};

/** Stops the daemon this bench's CLI calls auto-started, by the pid in its own runtime dir's lock file. */
async function stopBenchDaemon(): Promise<void> {
  let pid = NaN;
  try {
    pid = Number.parseInt(readFileSync(join(env.XDG_RUNTIME_DIR, "sbx", "daemon.pid"), "utf8"), 10);
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 0) return;
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    return;
  }
  for (let i = 0; i < 100; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await Bun.sleep(50);
  }
  console.error(`bench: daemon pid ${pid} did not stop within 5 s`);
}

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
  const sbx = await time(() => sh(["bun", CLI, "shell", "attach", "--", "true"]), 20, 3);
  const base = await time(() => sh(["docker", "exec", ctr, "true"]), 20, 3);
  report([{ name: "sbx shell -- true", unit: "ms", value: sbx.median, baselineName: "docker exec <ctr> true", baseline: base.median, better: "lower", target: 1.2 }]);
} finally {
  Bun.spawnSync(["bun", CLI, "rm", "--force", "attach"], { cwd: repo, env, stdout: "ignore", stderr: "ignore" });
  await stopBenchDaemon();
  rmSync(root, { recursive: true, force: true });
}
