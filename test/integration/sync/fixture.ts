// Test fixture for ref sync: a real host repo and a shared clone in the Docker backend's layout, in a temp dir.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createExec, streamRun, type ExecResult } from "../../../src/sys/exec";
import { SANDBOX_GIT_SAFE, type SandboxGit } from "../../../src/sync/sandbox-git";
import type { RefSyncEvent, RefSyncOptions } from "../../../src/sync/refsync";

export const NAME = "t";
export const REMOTE = `sandbox-${NAME}`;

const IDENT = {
  GIT_AUTHOR_NAME: "Test",
  GIT_AUTHOR_EMAIL: "t@example.invalid",
  GIT_COMMITTER_NAME: "Test",
  GIT_COMMITTER_EMAIL: "t@example.invalid",
};

/** Runs git directly (tests may spawn); `side` is what planted commands write to the marker file. */
export function git(cwd: string, args: string[], side: "inside" | "host" | "test", extraEnv: Record<string, string> = {}): ExecResult {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: join(cwd, "..", ".home-does-not-exist"),
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    ...IDENT,
    ...extraEnv,
  };
  // "host" means: run the way a naive host would, with no marker variable at all.
  if (side !== "host") env.SBX_SIDE = side;
  const p = Bun.spawnSync(["git", "-C", cwd, ...args], { env, stdout: "pipe", stderr: "pipe" });
  return { argv: ["git", "-C", cwd, ...args], exitCode: p.exitCode ?? -1, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
}

export function gitOk(cwd: string, args: string[], side: "inside" | "host" | "test" = "test"): string {
  const r = git(cwd, args, side);
  if (r.exitCode !== 0) throw new Error(`${r.argv.join(" ")} exited ${r.exitCode}: ${r.stderr}`);
  return r.stdout.trim();
}

export interface SyncFixture {
  root: string;
  host: string;
  sandboxDir: string;
  link: string;
  clone: string;
  alternates: string;
  marker: string;
  events: RefSyncEvent[];
  /** Stands in for a driver's sandboxGit: the sandbox's own git in its clone, marked as the inside (hooks off, as the drivers run it). */
  sandboxGit: SandboxGit;
  /** A commit made inside the sandbox (a separate process marked as the inside). */
  commitInside(msg: string, branch?: string): string;
  commitHost(msg: string, branch?: string): string;
  hostRef(ref: string): string | null;
  cloneRef(ref: string): string | null;
  options(extra?: Partial<RefSyncOptions>): RefSyncOptions;
  /** Marker lines written by planted commands: `<side> <setting>`. */
  markerLines(): string[];
  cleanup(): void;
}

export function makeFixture(): SyncFixture {
  const root = mkdtempSync(join(tmpdir(), "sbx-sync-"));
  const host = join(root, "host");
  const sandboxDir = join(root, "sandbox");
  const link = join(sandboxDir, "repo");
  const clone = join(sandboxDir, "clone");
  const marker = join(root, "marker");
  mkdirSync(host);
  gitOk(host, ["init", "-q", "-b", "main"]);
  writeFileSync(join(host, "README"), "hello\n");
  gitOk(host, ["add", "README"]);
  gitOk(host, ["commit", "-q", "-m", "init"]);
  mkdirSync(sandboxDir, { mode: 0o700 });
  symlinkSync(host, link);
  gitOk(root, ["clone", "-q", "--shared", link, clone]);
  const alternates = `${join(link, ".git", "objects")}\n`;
  writeFileSync(join(clone, ".git", "objects", "info", "alternates"), alternates);
  gitOk(clone, ["remote", "rename", "origin", "host"]);
  const events: RefSyncEvent[] = [];
  const exec = createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" });

  const f: SyncFixture = {
    root,
    host,
    sandboxDir,
    link,
    clone,
    alternates,
    marker,
    events,
    sandboxGit: (args, stdin) =>
      streamRun(exec, ["git", ...SANDBOX_GIT_SAFE, "-C", clone, ...args], {
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(root, ".home-does-not-exist"), GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null", SBX_SIDE: "inside" },
        replaceEnv: true,
        ...(stdin === undefined ? {} : { stdin }),
      }),
    commitInside(msg, branch) {
      if (branch !== undefined) gitOk(clone, ["checkout", "-q", "-B", branch], "inside");
      gitOk(clone, ["commit", "-q", "--allow-empty", "-m", msg], "inside");
      return gitOk(clone, ["rev-parse", "HEAD"], "inside");
    },
    commitHost(msg, branch = "main") {
      const parent = f.hostRef(`refs/heads/${branch}`) ?? gitOk(host, ["rev-parse", "HEAD"]);
      const tree = gitOk(host, ["rev-parse", `${parent}^{tree}`]);
      const c = gitOk(host, ["commit-tree", tree, "-p", parent, "-m", msg]);
      gitOk(host, ["update-ref", `refs/heads/${branch}`, c]);
      return c;
    },
    hostRef(ref) {
      const r = git(host, ["rev-parse", "--verify", "-q", ref], "test");
      return r.exitCode === 0 ? r.stdout.trim() : null;
    },
    cloneRef(ref) {
      // Reading the clone with git here is the TEST checking results, marked so planted commands can tell.
      const r = git(clone, ["rev-parse", "--verify", "-q", ref], "test");
      return r.exitCode === 0 ? r.stdout.trim() : null;
    },
    options(extra = {}) {
      return {
        hostRepo: host,
        name: NAME,
        sandboxGit: async () => f.sandboxGit,
        watchDir: join(clone, ".git"),
        exec,
        audit: (e) => void events.push(e),
        pollMs: 0,
        ...extra,
      };
    },
    markerLines() {
      try {
        return readFileSync(marker, "utf8").split("\n").filter((l) => l !== "");
      } catch {
        return [];
      }
    },
    cleanup() {
      rmSync(root, { recursive: true, force: true });
    },
  };
  return f;
}

/** Writes an executable script that records `${SBX_SIDE:-host} <label>` in the marker, then runs `tail`. */
export function plantScript(f: SyncFixture, label: string, tail = ""): string {
  const path = join(f.root, `planted-${label.replace(/[^a-z0-9]+/gi, "-")}.sh`);
  writeFileSync(path, `#!/bin/sh\necho "\${SBX_SIDE:-host} ${label}" >> '${f.marker}'\n${tail}\n`);
  chmodSync(path, 0o755);
  return path;
}

/**
 * Polls until `fn` returns a non-null value, or throws after `ms`, and never before 15 s: a wait bounds a hang, it
 * judges no speed (a loaded machine, as CI's two lanes make it, took 1 s for a sync that takes 50 ms alone).
 */
export async function waitFor<T>(what: string, fn: () => T | null | undefined | false, ms = 3000): Promise<T> {
  const bound = Math.max(ms, 15_000);
  const end = Date.now() + bound;
  for (;;) {
    const v = fn();
    if (v !== null && v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out after ${bound} ms waiting for ${what}`);
    await Bun.sleep(10);
  }
}
