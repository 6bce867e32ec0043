// Shared pieces of the end-to-end Docker tests: a repo of the e2e test user, the container of a sandbox, docker exec as that user.
import { chownSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { imageRepoName } from "../../../src/drivers/docker/image";
import { userRecipe } from "../../../src/workspace/init";
import { BASE_IMAGE, type Fixture } from "../docker/fixture";
import type { RunResult } from "../../support/test-user";

export { acquireFixture, releaseFixture, canRun, skipReason, daemonPid, stopDaemon, BASE_IMAGE } from "../docker/fixture";

/** A fresh repo of the test user under ~/src/<dir> (same Dockerfile as the shared fixture, so the same image). */
export function makeRepo(f: Fixture, dir: string): string {
  const repo = join(f.user.home, "src", dir);
  mkdirSync(repo, { recursive: true });
  writeFileSync(join(repo, "Dockerfile"), `FROM ${BASE_IMAGE}\n${userRecipe()}`);
  writeFileSync(join(repo, "README"), `${dir}\n`);
  for (const p of [join(f.user.home, "src"), repo, join(repo, "Dockerfile"), join(repo, "README")]) chownSync(p, f.user.uid, f.user.gid);
  for (const a of [["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "initial"]]) must(f.git(a, repo), `git ${a.join(" ")}`);
  return repo;
}

/** Writes a file into the test user's repo (its dirs made), owned by the test user, as a person's editor would. */
export function putFile(f: Fixture, repo: string, rel: string, data: string | Uint8Array): void {
  mkdirSync(join(repo, rel, ".."), { recursive: true });
  writeFileSync(join(repo, rel), data);
  for (let p = join(repo, rel); p.startsWith(repo); p = join(p, "..")) chownSync(p, f.user.uid, f.user.gid);
}

export function must(r: RunResult, what: string): RunResult {
  if (r.code !== 0) throw new Error(`${what} exited ${r.code}: ${r.stderr}${r.stdout}`);
  return r;
}

export function docker(args: string[], stdin?: string): RunResult {
  const r = Bun.spawnSync(["docker", ...args], { stdout: "pipe", stderr: "pipe", stdin: stdin === undefined ? "ignore" : Buffer.from(stdin) });
  return { code: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

/**
 * Removes the image tags sbx built for `repo` (`sbx-<dir>:<hash>`; each run's repo has a fresh name, so without this
 * every run would leave a tag behind). Layers shared with other tags stay.
 */
export function removeRepoImages(repo: string): void {
  const tags = docker(["images", "--format", "{{.Repository}}:{{.Tag}}", imageRepoName(repo)]).stdout.split("\n").filter(Boolean);
  if (tags.length) docker(["image", "rm", ...tags]);
}

/** The container sbx made for sandbox `name` of `repo` (found by its labels). */
export function containerOf(repo: string, name: string): string {
  const r = docker(["ps", "--all", "--filter", `label=sbx.repo=${repo}`, "--filter", `label=sbx.name=${name}`, "--format", "{{.Names}}"]);
  const n = r.stdout.trim().split("\n").filter(Boolean);
  if (n.length !== 1) throw new Error(`expected one container for ${name} of ${repo}, found ${JSON.stringify(n)}`);
  return n[0]!;
}

/** `docker exec` as the test user, with the container's own environment (what the sandbox's processes get). */
export function dexec(f: Fixture, ctr: string, argv: string[], o: { workdir?: string; timeoutMs?: number } = {}): RunResult {
  const r = Bun.spawnSync(
    ["docker", "exec", "--user", `${f.user.uid}:${f.user.gid}`, ...(o.workdir ? ["--workdir", o.workdir] : []), ctr, ...argv],
    { stdout: "pipe", stderr: "pipe", timeout: o.timeoutMs ?? 30_000 },
  );
  return { code: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

/** Waits for a spawned process (async: the test's own servers keep answering meanwhile, unlike spawnSync). */
export async function done(p: Bun.Subprocess<"ignore", "pipe", "pipe">): Promise<RunResult> {
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

/** Polls fn every 50 ms until it returns a value other than undefined, or the time is up (then undefined). */
export async function waitFor<T>(fn: () => T | undefined, ms: number): Promise<T | undefined> {
  const until = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > until) return undefined;
    await Bun.sleep(50);
  }
}
