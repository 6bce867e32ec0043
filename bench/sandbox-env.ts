// A throwaway sbx world for the Docker benchmarks: its own HOME, XDG dirs and daemon, stopped by pid at the end.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { userRecipe } from "../src/workspace/init";
import { stopProcess } from "../src/sys/proc";

export const CLI = join(import.meta.dir, "../src/cli/main.ts");

export interface BenchWorld {
  root: string;
  home: string;
  repo: string;
  env: Record<string, string> & { XDG_RUNTIME_DIR: string; XDG_CACHE_HOME: string; XDG_STATE_HOME: string; XDG_CONFIG_HOME: string };
  /** Stops the daemon this bench's CLI calls auto-started, by the pid in its own runtime dir's lock file. */
  stopDaemon(): Promise<void>;
  /** The image tag sbx built for this world's repo (read from its containers; "" when there is none). */
  imageOf(): string;
  /** Removes that one tag (each world's home differs, so each run builds a new tag). */
  removeImage(tag: string): void;
  /** Makes the home and runtime dirs and the repo (a Dockerfile FROM sbx-base with the user recipe, plus `files`), committed. */
  makeRepo(files?: Record<string, string>): void;
  /** Runs a command in the repo with this world's environment; its stdout, or an error with its stderr. */
  sh(argv: string[]): string;
}

export function benchWorld(label: string): BenchWorld {
  const root = mkdtempSync(join(tmpdir(), `sbx-bench-${label}-`));
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: join(root, "home"),
    USER: "root",
    SHELL: "/bin/bash",
    XDG_CACHE_HOME: join(root, "cache"),
    XDG_STATE_HOME: join(root, "state"),
    XDG_CONFIG_HOME: join(root, "config"),
    // Its own runtime dir: the daemon this bench starts (and its sockets) are the bench's, never /tmp/sbx-<uid>'s.
    XDG_RUNTIME_DIR: join(root, "rt"),
  };
  const repo = join(root, "repo");
  const sh = (argv: string[]): string => {
    const r = Bun.spawnSync(argv, { cwd: repo, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    if (r.exitCode !== 0) throw new Error(`${argv.join(" ")}: ${r.stderr.toString()}`);
    return r.stdout.toString().trim();
  };
  return {
    root,
    sh,
    makeRepo(files = {}) {
      mkdirSync(env.HOME, { recursive: true });
      mkdirSync(env.XDG_RUNTIME_DIR, { recursive: true, mode: 0o700 });
      mkdirSync(repo, { recursive: true });
      for (const [p, text] of Object.entries(files)) {
        mkdirSync(dirname(join(repo, p)), { recursive: true });
        writeFileSync(join(repo, p), text);
      }
      writeFileSync(join(repo, "Dockerfile"), `FROM sbx-base:bookworm\n${userRecipe()}`);
      sh(["git", "init", "-q", "-b", "main"]);
      sh(["git", "add", "-A"]);
      sh(["git", "-c", "user.email=b@example.invalid", "-c", "user.name=b", "commit", "-qm", "init"]);
    },
    home: env.HOME,
    repo,
    env,
    imageOf() {
      const r = Bun.spawnSync(["docker", "ps", "--all", "--filter", `label=sbx.repo=${repo}`, "--format", "{{.Image}}"], { stdout: "pipe", stderr: "ignore" });
      return r.stdout.toString().split("\n").find((l) => l.startsWith("sbx-")) ?? "";
    },
    removeImage(tag) {
      if (tag) Bun.spawnSync(["docker", "image", "rm", tag], { stdout: "ignore", stderr: "ignore" });
    },
    async stopDaemon() {
      let pid = NaN;
      try {
        pid = Number.parseInt(readFileSync(join(env.XDG_RUNTIME_DIR, "sbx", "daemon.pid"), "utf8"), 10);
      } catch {
        return;
      }
      if (!Number.isInteger(pid) || pid <= 0) return;
      if (!(await stopProcess(pid, { waitMs: 5_000 }))) console.error(`bench: daemon pid ${pid} did not stop within 5 s and was killed`);
    },
  };
}
