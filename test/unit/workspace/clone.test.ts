// The shared clone with real git: alternates through the link, remotes both ways, unsynced commits, and no guest config run on the host.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SbxError } from "../../../src/core/errors";
import { addSandboxRemote, createClone, fetchSandboxRefs, removeSandboxRemote, sessionCwd, staleConfigLock, unsyncedCommits } from "../../../src/workspace/clone";
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
    git(repo, "remote", "remove", "sandbox-ident");
  });

  test("every remote of the host repo is in the clone under its name, with the host's view of its branches", () => {
    expect(git(lay.clone, "remote").split("\n").sort()).toEqual(["host", "origin", "upstream"]);
    expect(git(lay.clone, "config", "remote.upstream.url")).toBe("https://example.invalid/up/app.git");
    expect(git(lay.clone, "rev-parse", "refs/remotes/upstream/main")).toBe(git(repo, "rev-parse", "HEAD"));
  });

  test("the link points at the host repo and alternates go through it", () => {
    expect(readlinkSync(lay.link)).toBe(repo);
    expect(readFileSync(join(lay.clone, ".git", "objects", "info", "alternates"), "utf8")).toBe(`${lay.linkGit}/objects\n`);
  });

  test("the clone's origin is the host's origin URL; the host repo is remote 'host'", () => {
    expect(git(lay.clone, "remote", "get-url", "origin")).toBe("https://example.invalid/org/app.git");
    expect(git(lay.clone, "remote", "get-url", "host")).toBe(lay.link);
    expect(git(lay.clone, "rev-parse", "origin/main")).toBe(git(repo, "rev-parse", "HEAD"));
    expect(git(lay.clone, "rev-parse", "host/main")).toBe(git(repo, "rev-parse", "HEAD"));
  });

  test("the host repo has the clone as remote sandbox-demo", () => {
    expect(git(repo, "remote", "get-url", "sandbox-demo")).toBe(lay.clone);
  });

  test("the clone has a work tree and shares objects (no pack copied)", () => {
    expect(readFileSync(join(lay.clone, "sub", "a.txt"), "utf8")).toBe("a\n");
    expect(git(lay.clone, "count-objects", "-v")).toContain("count: 0");
  });
});

describe("unsyncedCommits", () => {
  const lay = sandboxLayout(dir);
  test("none right after the clone", async () => {
    expect(await unsyncedCommits(exec, repo, "demo")).toEqual([]);
  });

  test("a commit made in the clone is reported until a host ref has it", async () => {
    writeFileSync(join(lay.clone, "b.txt"), "b\n");
    git(lay.clone, "add", "b.txt");
    git(lay.clone, "commit", "-qm", "sandbox work");
    const sha = git(lay.clone, "rev-parse", "HEAD");
    expect(await unsyncedCommits(exec, repo, "demo")).toEqual([{ sha, subject: "sandbox work" }]);
    git(repo, "branch", "kept", "sandbox-demo/main");
    expect(await unsyncedCommits(exec, repo, "demo")).toEqual([]);
  });

  test("a ref lock held for a moment (the daemon's ref sync fetching at the same time) is waited out, not reported as a failure", async () => {
    writeFileSync(join(lay.clone, "c.txt"), "c\n");
    git(lay.clone, "add", "c.txt");
    git(lay.clone, "commit", "-qm", "while locked");
    const sha = git(lay.clone, "rev-parse", "HEAD");
    const lock = join(repo, ".git", "refs", "remotes", "sandbox-demo", "main.lock");
    writeFileSync(lock, "");
    setTimeout(() => rmSync(lock, { force: true }), 60);
    expect(await unsyncedCommits(exec, repo, "demo")).toEqual([{ sha, subject: "while locked" }]);
    git(repo, "branch", "kept-too", "sandbox-demo/main");
  });

  test("a detached-HEAD commit counts too", async () => {
    git(lay.clone, "checkout", "-q", "--detach");
    git(lay.clone, "commit", "-q", "--allow-empty", "-m", "detached");
    const list = await unsyncedCommits(exec, repo, "demo");
    expect(list.map((c) => c.subject)).toEqual(["detached"]);
    git(lay.clone, "checkout", "-q", "main");
  });

  test("host-runs-no-guest-config: hooks and fsmonitor planted in the clone never run on the host", async () => {
    const marker = join(tmp, "pwned");
    const script = join(tmp, "evil.sh");
    writeFileSync(script, `#!/bin/sh\ntouch ${marker}\n`);
    chmodSync(script, 0o755);
    for (const h of ["pre-upload-pack", "post-checkout", "reference-transaction", "post-merge", "fsmonitor-watchman"]) {
      writeFileSync(join(lay.clone, ".git", "hooks", h), `#!/bin/sh\ntouch ${marker}\n`);
      chmodSync(join(lay.clone, ".git", "hooks", h), 0o755);
    }
    git(lay.clone, "config", "core.fsmonitor", script);
    git(lay.clone, "config", "core.hooksPath", join(lay.clone, ".git", "hooks"));
    git(lay.clone, "config", "uploadpack.packObjectsHook", script);
    git(lay.clone, "config", "core.sshCommand", script);
    git(lay.clone, "commit", "-q", "--allow-empty", "-m", "bait");
    rmSync(marker, { force: true });
    await fetchSandboxRefs(exec, repo, "demo");
    await unsyncedCommits(exec, repo, "demo");
    expect(existsSync(marker)).toBe(false);
  });

  test("removing the remote drops it and its refs", async () => {
    expect(await removeSandboxRemote(exec, repo, "demo")).toBe(true);
    expect(git(repo, "for-each-ref", "refs/remotes/sandbox-demo")).toBe("");
    expect(await removeSandboxRemote(exec, repo, "demo")).toBe(false);
  });

  test("adding the remote: again is a set-url; a locked config (a git killed midway) is that error, naming the lock", async () => {
    const clone = sandboxLayout(dir).clone;
    await addSandboxRemote(exec, repo, "again", clone);
    await addSandboxRemote(exec, repo, "again", clone);
    expect(git(repo, "config", "--get", "remote.sandbox-again.url")).toBe(clone);
    const lock = join(repo, ".git", "config.lock");
    writeFileSync(lock, "");
    try {
      const err = await addSandboxRemote(exec, repo, "locked", clone).then(() => null, (e: unknown) => e as SbxError);
      expect(err).toBeInstanceOf(SbxError);
      expect(err!.message).toContain("cannot add the remote sandbox-locked");
      expect(err!.message).toContain("could not lock config file");
      expect(err!.hint).toContain(lock);
    } finally {
      rmSync(lock, { force: true });
    }
    await removeSandboxRemote(exec, repo, "again");
  });

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
