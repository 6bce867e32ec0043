// The shared clone with real git: alternates through the link, the host's remotes and identity, and no remote in the host repo leading to it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClone, sessionCwd, staleConfigLock } from "../../../src/workspace/clone";
import { sandboxLayout } from "../../../src/workspace/layout";
import { createExec } from "../../../src/sys/exec";

const exec = createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/root" });
const tmp = mkdtempSync(join(tmpdir(), "sbx-clone-test-"));
const repo = join(tmp, "repo");
const dir = join(tmp, "sandboxes", "demo");
const ID = ["-c", "user.email=t@example.invalid", "-c", "user.name=t"];

function git(cwd: string, ...args: string[]): string {
  const r = Bun.spawnSync(["git", ...ID, "-C", cwd, ...args], { env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1" } });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

beforeAll(async () => {
  mkdirSync(join(repo, "sub"), { recursive: true });
  git(tmp, "init", "-q", "-b", "main", repo);
  writeFileSync(join(repo, "sub", "a.txt"), "a\n");
  git(repo, "add", "-A");
  git(repo, "commit", "-qm", "first");
  git(repo, "remote", "add", "origin", "https://example.invalid/org/app.git");
  git(repo, "update-ref", "refs/remotes/origin/main", "HEAD");
  git(repo, "remote", "add", "upstream", "https://example.invalid/up/app.git");
  git(repo, "update-ref", "refs/remotes/upstream/main", "HEAD");
  git(repo, "config", "user.name", "Ann Host");
  git(repo, "config", "user.email", "ann@example.invalid");
  await createClone(exec, { repo, dir, name: "demo" });
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("createClone", () => {
  const lay = sandboxLayout(dir);
  test("an agent can commit at once: the host's identity is the clone's", async () => {
    // A clone of its own: a commit here must not show in the other tests' clone.
    const own = join(tmp, "sandboxes", "ident");
    await createClone(exec, { repo, dir: own, name: "ident" });
    const clone = sandboxLayout(own).clone;
    const bare = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: "/nonexistent", GIT_CONFIG_NOSYSTEM: "1" };
    const cfg = (k: string) => Bun.spawnSync(["git", "-C", clone, "config", k], { env: bare }).stdout.toString().trim();
    expect(cfg("user.name")).toBe("Ann Host");
    expect(cfg("user.email")).toBe("ann@example.invalid");
    expect(Bun.spawnSync(["git", "-C", clone, "commit", "-q", "--allow-empty", "-m", "first inside"], { env: bare }).exitCode).toBe(0);
    expect(Bun.spawnSync(["git", "-C", clone, "log", "-1", "--format=%an <%ae>"], { env: bare }).stdout.toString().trim()).toBe("Ann Host <ann@example.invalid>");
  });

  test("every remote of the host repo is in the clone under its name, with the host's view of its branches", () => {
    expect(git(lay.clone, "remote").split("\n").sort()).toEqual(["origin", "upstream"]);
    expect(git(lay.clone, "config", "remote.upstream.url")).toBe("https://example.invalid/up/app.git");
    expect(git(lay.clone, "rev-parse", "refs/remotes/upstream/main")).toBe(git(repo, "rev-parse", "HEAD"));
  });

  test("the link points at the host repo and alternates go through it", () => {
    expect(readlinkSync(lay.link)).toBe(repo);
    expect(readFileSync(join(lay.clone, ".git", "objects", "info", "alternates"), "utf8")).toBe(`${lay.linkGit}/objects\n`);
  });

  test("the clone's origin is the host's origin URL; the host's branches are refs/remotes/host/*, with no remote leading back", () => {
    expect(git(lay.clone, "remote", "get-url", "origin")).toBe("https://example.invalid/org/app.git");
    expect(Bun.spawnSync(["git", "-C", lay.clone, "config", "--get-regexp", "^remote\\.host\\."]).stdout.toString()).toBe("");
    expect(git(lay.clone, "rev-parse", "origin/main")).toBe(git(repo, "rev-parse", "HEAD"));
    expect(git(lay.clone, "rev-parse", "host/main")).toBe(git(repo, "rev-parse", "HEAD"));
  });

  test("the-users-git-stays-safe: no remote in the host repo's config points at the clone (the user's `git fetch --all` never runs in it)", () => {
    expect(git(repo, "remote").split("\n").sort()).toEqual(["origin", "upstream"]);
    expect(readFileSync(join(repo, ".git", "config"), "utf8")).not.toContain(lay.clone);
  });

  test("the clone has a work tree and shares objects (no pack copied)", () => {
    expect(readFileSync(join(lay.clone, "sub", "a.txt"), "utf8")).toBe("a\n");
    expect(git(lay.clone, "count-objects", "-v")).toContain("count: 0");
  });
});

describe("staleConfigLock", () => {
  test("a config.lock nobody holds open is stale (what prune removes after a killed create); one a live git holds is not", async () => {
    const lock = join(repo, ".git", "config.lock");
    expect(staleConfigLock(repo)).toBeNull();
    writeFileSync(lock, "");
    try {
      expect(staleConfigLock(repo)).toBe(lock);
      // A process holding it open, as git does between creating the lock and renaming it over the config.
      const holder = Bun.spawn(["bash", "-c", 'exec 3<"$1"; echo held; sleep 10', "_", lock], { stdout: "pipe" });
      try {
        await holder.stdout.getReader().read();
        expect(staleConfigLock(repo)).toBeNull();
      } finally {
        holder.kill();
        await holder.exited;
      }
      expect(staleConfigLock(repo)).toBe(lock);
    } finally {
      rmSync(lock, { force: true });
    }
  });
});

describe("sessionCwd", () => {
  const lay = sandboxLayout(dir);
  test("same relative dir when the clone has it", () => {
    expect(sessionCwd(repo, join(repo, "sub"), lay.clone)).toBe(join(repo, "sub"));
  });
  test("repo root when the caller is outside the repo or the dir has no counterpart", () => {
    expect(sessionCwd(repo, tmp, lay.clone)).toBe(repo);
    expect(sessionCwd(repo, join(repo, "nope"), lay.clone)).toBe(repo);
    expect(sessionCwd(repo, repo + "-other", lay.clone)).toBe(repo);
  });
});
