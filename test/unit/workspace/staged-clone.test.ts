// A clone started ahead of the create (stageClone) ends up exactly like one made in place, or is removed; a dead create's staging dir is found for prune.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createExec } from "../../../src/sys/exec";
import { createClone } from "../../../src/workspace/clone";
import { sandboxLayout } from "../../../src/workspace/layout";
import { adoptStagedClone, deadStagingDirs, stageClone, stagingRoot } from "../../../src/workspace/staged-clone";
import { dirname } from "node:path";

const exec = createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/root" });
const tmp = mkdtempSync(join(tmpdir(), "sbx-staged-"));
const paths = { cacheDir: join(tmp, "cache") };
const repo = join(tmp, "repo");
const other = join(tmp, "other");

function git(cwd: string, ...args: string[]): string {
  const r = Bun.spawnSync(["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", "-C", cwd, ...args], { env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1" } });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

beforeAll(() => {
  for (const r of [repo, other]) {
    mkdirSync(join(r, "sub"), { recursive: true });
    git(tmp, "init", "-q", "-b", "main", r);
    writeFileSync(join(r, "sub", "a.txt"), `${r}\n`);
    git(r, "add", "-A");
    git(r, "commit", "-qm", "first");
  }
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const stagingDirs = () => (existsSync(stagingRoot(paths)) ? readdirSync(stagingRoot(paths)) : []);

describe("a staged clone", () => {
  test("moved into place: the same clone as one made there (work tree, no remote back to the host, alternates through the link); staging gone", async () => {
    const dir = join(tmp, "sandboxes", "a");
    const staged = stageClone(exec, paths, repo);
    expect(await staged.done).toBe(true);
    writeFileSync(join(staged.path, ".git", "marker"), "the staged one\n"); // proves below that it was moved, not remade
    await createClone(exec, { repo, dir, name: "a" }, staged);
    const lay = sandboxLayout(dir);
    expect(readFileSync(join(lay.clone, ".git", "marker"), "utf8")).toBe("the staged one\n");
    expect(readFileSync(join(lay.clone, "sub", "a.txt"), "utf8")).toBe(`${repo}\n`);
    expect(Bun.spawnSync(["git", "-C", lay.clone, "config", "--get", "remote.host.url"]).exitCode).toBe(1);
    expect(git(lay.clone, "rev-parse", "refs/remotes/host/main")).toBe(git(repo, "rev-parse", "main"));
    expect(readFileSync(join(lay.clone, ".git", "objects", "info", "alternates"), "utf8")).toBe(`${join(lay.linkGit, "objects")}\n`);
    expect(git(lay.clone, "status", "--porcelain")).toBe("");
    expect(readFileSync(join(repo, ".git", "config"), "utf8")).not.toContain(lay.clone);
    expect(stagingDirs()).toEqual([]);
  });

  test("the clone's place exists (empty) from the call on, so the container can be made while git runs; the clone then takes it", async () => {
    const dir = join(tmp, "sandboxes", "early");
    const staged = stageClone(exec, paths, repo);
    const lay = sandboxLayout(dir);
    const cloning = createClone(exec, { repo, dir, name: "early" }, staged);
    expect(readdirSync(lay.clone)).toEqual([]);
    await cloning;
    expect(readFileSync(join(lay.clone, "sub", "a.txt"), "utf8")).toBe(`${repo}\n`);
    // Without a staged clone too: git clones into that dir (already running, so it may have begun to fill it).
    const dir2 = join(tmp, "sandboxes", "early2");
    const inPlace = createClone(exec, { repo, dir: dir2, name: "early2" });
    expect(statSync(sandboxLayout(dir2).clone).isDirectory()).toBe(true);
    await inPlace;
    expect(git(sandboxLayout(dir2).clone, "status", "--porcelain")).toBe("");
  });

  test("of another repo (the create resolved a different one): not used, removed; the clone is made in place", async () => {
    const dir = join(tmp, "sandboxes", "b");
    const staged = stageClone(exec, paths, other);
    await createClone(exec, { repo, dir, name: "b" }, staged);
    expect(readFileSync(join(sandboxLayout(dir).clone, "sub", "a.txt"), "utf8")).toBe(`${repo}\n`);
    expect(stagingDirs()).toEqual([]);
  });

  test("a failed one (no such repo) falls back to a clone in place", async () => {
    const dir = join(tmp, "sandboxes", "c");
    const staged = stageClone(exec, paths, join(tmp, "missing"));
    expect(await staged.done).toBe(false);
    await createClone(exec, { repo, dir, name: "c" }, { ...staged, repo });
    expect(existsSync(join(sandboxLayout(dir).clone, "sub", "a.txt"))).toBe(true);
    expect(stagingDirs()).toEqual([]);
  });

  test("discarded while it is still cloning: waits for git, then nothing is left", async () => {
    const staged = stageClone(exec, paths, repo);
    expect(stagingDirs()).toHaveLength(1);
    await staged.discard();
    await staged.discard(); // idempotent
    expect(stagingDirs()).toEqual([]);
  });

  test("prune's list: a dead process's staging dir, never a live one's", () => {
    mkdirSync(join(stagingRoot(paths), `${process.pid}-live`), { recursive: true });
    mkdirSync(join(stagingRoot(paths), "999999999-dead"), { recursive: true });
    expect(deadStagingDirs(paths, (pid) => pid === process.pid)).toEqual([join(stagingRoot(paths), "999999999-dead")]);
    rmSync(stagingRoot(paths), { recursive: true, force: true });
  });
});

describe("a staged clone handed to the daemon (adoptStagedClone)", () => {
  test("is the CLI's clone: same repo, done once git ended, moved into place like one made there", async () => {
    const staged = stageClone(exec, paths, repo);
    const adopted = adoptStagedClone(paths, dirname(staged.path));
    expect(adopted.repo).toBe(repo);
    expect(await adopted.done).toBe(true);
    const dir = join(tmp, "sandboxes", "adopted");
    await createClone(exec, { repo, dir, name: "adopted" }, adopted);
    expect(readFileSync(join(sandboxLayout(dir).clone, "sub", "a.txt"), "utf8")).toBe(`${repo}\n`);
    await staged.discard();
    expect(existsSync(dirname(staged.path))).toBe(false);
  });

  test("a CLI that died before its clone ended counts as a failed clone, not a wait without end", async () => {
    const dir = join(stagingRoot(paths), "999999-dead");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, ".repo"), repo);
    const adopted = adoptStagedClone(paths, dir, { alive: () => false });
    expect(await adopted.done).toBe(false);
    await adopted.discard();
    expect(existsSync(dir)).toBe(false);
  });
});
