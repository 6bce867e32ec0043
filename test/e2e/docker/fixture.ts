// Shared e2e fixture: one test user, one small test repo (Dockerfile FROM sbx-base + the user recipe), sbx run as that user.
import { mkdirSync, writeFileSync, chownSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { stopProcess } from "../../../src/sys/proc";
import { userRecipe } from "../../../src/workspace/init";
import { cannotCreateUsers, createTestUser, type RunResult, type TestUser } from "../../support/test-user";

export const BASE_IMAGE = "sbx-base:bookworm";
/** The host's ~/.claude.json: settings, and what must never reach a sandbox (a key, an MCP server's token). */
export const CLAUDE_JSON = `${JSON.stringify({ numStartups: 1, primaryApiKey: "sk-ant-api03-fixture-not-inside", mcpServers: { gh: { command: "gh-mcp", env: { GITHUB_TOKEN: "ghp_fixture_not_inside" } } } })}\n`;
export const CLI = join(import.meta.dir, "../../../src/cli/main.ts");

function ok(argv: string[]): boolean {
  return Bun.spawnSync(argv, { stdout: "ignore", stderr: "ignore" }).exitCode === 0;
}

/** Why the Docker e2e tests cannot run here, or undefined. */
export function whyNot(): string | undefined {
  const u = cannotCreateUsers();
  if (u) return u;
  if (!ok(["docker", "info"])) return "no Docker engine answers";
  if (!ok(["docker", "image", "inspect", BASE_IMAGE])) return `base image ${BASE_IMAGE} missing (scripts/base-image.sh)`;
  return undefined;
}
export const skipReason = whyNot();
export const canRun = skipReason === undefined;

export interface Fixture {
  user: TestUser;
  repo: string;
  /** Runs sbx as the test user, in `cwd` (default the repo). */
  sbx(args: string[], o?: { cwd?: string; env?: Record<string, string>; stdin?: string }): RunResult;
  spawnSbx(args: string[], o?: { cwd?: string; env?: Record<string, string> }): Bun.Subprocess<"ignore", "pipe", "pipe">;
  /** Runs git as the test user in the repo. */
  git(args: string[], cwd?: string): RunResult;
  /** `docker` as root, for looking at what sbx made. */
  docker(args: string[]): RunResult;
  sandboxDir(name: string): string;
}

let fixture: Fixture | null = null;

/** The test user's runtime dir (no XDG_RUNTIME_DIR in its env): daemon.pid and control.sock live there. */
export function runtimeDirOf(user: { uid: number }): string {
  return `/tmp/sbx-${user.uid}`;
}

/** The pid of the test user's daemon (the CLI starts one on first use), or null. */
export function daemonPid(user: { uid: number }): number | null {
  try {
    const n = Number.parseInt(readFileSync(join(runtimeDirOf(user), "daemon.pid"), "utf8").trim(), 10);
    return Number.isInteger(n) && n > 0 ? n : null;
  } catch {
    return null;
  }
}

/** Stops the daemon the test user's sbx started (by its pid; it is ours) and waits for it to go. */
export async function stopDaemon(user: { uid: number }, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  const pid = daemonPid(user);
  if (pid !== null) await stopProcess(pid, { signal, waitMs: 5_000 });
}

function destroy(f: Fixture): void {
  const pid = daemonPid(f.user);
  if (pid !== null) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* already gone */
    }
  }
  rmSync(runtimeDirOf(f.user), { recursive: true, force: true });
  const ids = f.docker(["ps", "--all", "--quiet", "--filter", `label=sbx.repo=${f.repo}`]).stdout.split("\n").filter(Boolean);
  if (ids.length) f.docker(["rm", "--force", ...ids]);
  const vols = f.docker(["volume", "ls", "--quiet", "--filter", `label=sbx.repo=${f.repo}`]).stdout.split("\n").filter(Boolean);
  if (vols.length) f.docker(["volume", "rm", "--force", ...vols]);
  // The image (sbx-app:<hash>, labelled sbx.image=1) is kept: the fixed user name and uid give the next file and
  // the next run the same tag, so it is built once.
  f.user.remove();
}

let users = 0;

/** Takes the shared fixture for one test file; pair with releaseFixture() in afterAll. */
export function acquireFixture(): Fixture {
  users++;
  return getFixture();
}

/** The last file to release it removes the user, its containers and volumes. */
export function releaseFixture(): void {
  users--;
  if (users <= 0 && fixture) {
    destroy(fixture);
    fixture = null;
    users = 0;
  }
}

/**
 * The shared fixture's user. Fixed, so its image tag (which hangs on the name and uid) is built once per machine;
 * SBX_E2E_USER gives a second checkout running e2e files at the same time a user of its own (two runs on one
 * fixed user remove each other's).
 */
function e2eUserName(): string {
  const name = process.env.SBX_E2E_USER ?? "sbxt-e2e";
  if (!/^sbxt-[a-z0-9-]{1,20}$/.test(name)) throw new Error(`SBX_E2E_USER=${name}: use sbxt- and up to 20 of a-z, 0-9, -`);
  return name;
}

/** The shared fixture (made on first use). */
function getFixture(): Fixture {
  if (fixture) return fixture;
  const user = createTestUser({ shell: "/usr/bin/fish", name: e2eUserName() });
  const repo = join(user.home, "src", "app");
  const f: Fixture = {
    user,
    repo,
    sbx: (args, o = {}) => user.run(["bun", CLI, ...args], { cwd: o.cwd ?? repo, ...(o.env ? { env: o.env } : {}), ...(o.stdin !== undefined ? { stdin: o.stdin } : {}) }),
    spawnSbx: (args, o = {}) => user.spawn(["bun", CLI, ...args], { cwd: o.cwd ?? repo, ...(o.env ? { env: o.env } : {}) }),
    git: (args, cwd) => user.run(["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", ...args], { cwd: cwd ?? repo }),
    docker: (args) => {
      const r = Bun.spawnSync(["docker", ...args], { stdout: "pipe", stderr: "pipe" });
      return { code: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
    },
    sandboxDir(name) {
      const root = join(user.home, ".cache", "sandbox");
      const d = readdirSync(root).find((n) => n.startsWith("app-") && statSync(join(root, n)).isDirectory());
      return join(root, d ?? "app-?", name);
    },
  };
  fixture = f;
  // The repo, owned by the user: a Dockerfile that needs no network, a subdir, a file per layer.
  mkdirSync(join(repo, "sub", "deeper"), { recursive: true });
  writeFileSync(join(repo, "Dockerfile"), `FROM ${BASE_IMAGE}\n${userRecipe()}`);
  writeFileSync(join(repo, "README"), "test repo\n");
  writeFileSync(join(repo, "sub", "deeper", "file.txt"), "deep\n");
  // ~/.claude exists on the host (with a settings file); ~/.config/fish does not.
  mkdirSync(join(user.home, ".claude"), { recursive: true });
  writeFileSync(join(user.home, ".claude", "settings.json"), '{"host":true}\n');
  writeFileSync(join(user.home, ".claude.json"), CLAUDE_JSON);
  for (const p of [join(user.home, "src"), repo, join(repo, "sub"), join(repo, "sub", "deeper"), join(user.home, ".claude")]) chownSync(p, user.uid, user.gid);
  for (const p of ["Dockerfile", "README", "sub/deeper/file.txt"]) chownSync(join(repo, p), user.uid, user.gid);
  chownSync(join(user.home, ".claude", "settings.json"), user.uid, user.gid);
  chownSync(join(user.home, ".claude.json"), user.uid, user.gid);
  const init = [["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "initial"]];
  for (const a of init) {
    const r = f.git(a);
    if (r.code !== 0) throw new Error(`git ${a.join(" ")}: ${r.stderr}`);
  }
  return f;
}

/** Creates a sandbox as the test user and fails loudly if that does not work. */
export function mustCreate(f: Fixture, name: string, env?: Record<string, string>): void {
  const r = f.sbx(["create", name], env ? { env } : {});
  if (r.code !== 0) throw new Error(`sbx create ${name} exited ${r.code}: ${r.stderr}`);
}

/**
 * Ends a test that made its own user and repo: `rmSandboxes` removes its sandboxes through sbx, then its daemon stops,
 * and what is left of that repo's (containers, volumes, the images they were made from), its runtime dir and the user go.
 */
export async function removeOwnWorld(user: TestUser, repo: string, rmSandboxes: () => void): Promise<void> {
  const out = (args: string[]) => Bun.spawnSync(["docker", ...args], { stdout: "pipe", stderr: "pipe" }).stdout.toString().split("\n").filter(Boolean);
  const images = out(["ps", "--all", "--filter", `label=sbx.repo=${repo}`, "--format", "{{.Image}}"]);
  rmSandboxes();
  await stopDaemon(user);
  const ids = out(["ps", "--all", "--quiet", "--filter", `label=sbx.repo=${repo}`]);
  if (ids.length) out(["rm", "--force", ...ids]);
  const vols = out(["volume", "ls", "--quiet", "--filter", `label=sbx.repo=${repo}`]);
  if (vols.length) out(["volume", "rm", "--force", ...vols]);
  if (images.length) out(["image", "rm", ...new Set(images)]);
  Bun.spawnSync(["rm", "-rf", runtimeDirOf(user)]);
  user.remove();
}

/** A repo of the user's own in its home, with one commit of `dockerfile` as its Dockerfile (made as the user). */
export function ownRepo(user: TestUser, dir: string, dockerfile = `FROM ${BASE_IMAGE}\n`): string {
  const repo = join(user.home, dir);
  mkdirSync(repo);
  writeFileSync(join(repo, "Dockerfile"), dockerfile);
  for (const p of [repo, join(repo, "Dockerfile")]) chownSync(p, user.uid, user.gid);
  for (const a of [["init", "-q", "-b", "main"], ["add", "-A"], ["-c", "user.email=t@example.invalid", "-c", "user.name=t", "commit", "-qm", "initial"]]) {
    const r = user.run(["git", ...a], { cwd: repo });
    if (r.code !== 0) throw new Error(`git ${a.join(" ")}: ${r.stderr}`);
  }
  return repo;
}
