// Test-only: a private sbx world in a temp dir (env with its own XDG dirs, paths, an open store) and a host repo with
// one commit, for tests of the sandbox service, its routes and its drivers with real git.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { HostUser } from "../../src/core/spec";
import { Store } from "../../src/store/store";
import { readEnv, type Env } from "../../src/sys/env";
import { createExec, type Exec } from "../../src/sys/exec";
import { pathsFor, type Paths } from "../../src/sys/paths";

export interface TempWorld {
  root: string;
  /** Real path of the host repo (one commit; files as given). */
  repo: string;
  env: Env;
  paths: Paths;
  store: Store;
  exec: Exec;
  /** The process's own user, as a sandbox's host user. */
  host: HostUser;
  git(cwd: string, ...args: string[]): Promise<string>;
  close(): void;
}

export async function tempWorld(files: Record<string, string> = { "a.txt": "a\n" }): Promise<TempWorld> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-world-")));
  const exec = createExec(process.env as Record<string, string>);
  const git = async (cwd: string, ...args: string[]) => {
    const ident = { GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@t", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@t" };
    return (await exec.run(["git", "-C", cwd, ...args], { check: true, env: ident })).stdout.trim();
  };
  const repo = join(root, "repo");
  mkdirSync(repo);
  await git(repo, "init", "-q", "-b", "main");
  for (const [f, text] of Object.entries(files)) writeFileSync(join(repo, f), text);
  await git(repo, "add", "-A");
  await git(repo, "commit", "-q", "--allow-empty", "-m", "first");
  const home = join(root, "home");
  mkdirSync(home);
  const env = readEnv({
    vars: { HOME: home, USER: "t", SHELL: "/bin/bash", PATH: process.env.PATH, XDG_STATE_HOME: join(root, "state"), XDG_CACHE_HOME: join(root, "cache"), XDG_CONFIG_HOME: join(root, "config"), XDG_RUNTIME_DIR: join(root, "rt") },
    uid: process.getuid!(),
    gid: process.getgid!(),
    platform: "linux",
  });
  const paths = pathsFor(env);
  mkdirSync(paths.stateDir, { recursive: true });
  const store = new Store(paths.dbFile);
  return {
    root,
    repo,
    env,
    paths,
    store,
    exec,
    host: { name: "t", uid: env.uid, gid: env.gid, home, shell: "/bin/bash" },
    git,
    close() {
      store.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}
