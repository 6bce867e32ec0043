// A throwaway sbx world for the Docker benchmarks: its own HOME, XDG dirs and daemon, stopped by pid at the end.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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
  return {
    root,
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
