// The gate does not grow without end: after many pushes' packs, gc --auto folds them; with few, it leaves them be.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureGate, maintainGate } from "../../../src/bridge/gate";
import { createExec } from "../../../src/sys/exec";

const root = mkdtempSync(join(tmpdir(), "sbx-gate-gc-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const PATH = process.env.PATH ?? "/usr/bin:/bin";
const env = { PATH, HOME: root, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" };

function git(cwd: string, ...args: string[]): string {
  const r = Bun.spawnSync(["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", ...args], { cwd, env });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
  return r.stdout.toString().trim();
}

const packs = (repo: string) => readdirSync(join(repo, "objects", "pack")).filter((f) => f.endsWith(".pack")).length;

describe("gate maintenance", () => {
  test("60 packs (one per push) become few; 3 are left as they are", async () => {
    const host = join(root, "host");
    git(root, "init", "-q", "-b", "main", host);
    git(host, "commit", "-q", "--allow-empty", "-m", "base");
    const g = await ensureGate(createExec(env), join(root, "gate"), host, PATH);
    const repo = g.paths.repo;
    const addPack = (i: number) => {
      // One reachable commit per pack, as a push leaves it: a branch in the gate pointing at it.
      git(repo, "update-ref", `refs/heads/p${i}`, git(repo, "commit-tree", git(repo, "mktree", "--missing"), "-m", `p${i}`));
      git(repo, "repack", "-q");
    };
    for (let i = 0; i < 3; i++) addPack(i);
    expect(packs(repo)).toBe(3);
    await maintainGate(g);
    expect(packs(repo)).toBe(3);
    for (let i = 3; i < 60; i++) addPack(i);
    expect(packs(repo)).toBe(60);
    await maintainGate(g);
    expect(packs(repo)).toBeLessThan(5);
    // Nothing reachable was lost.
    expect(git(repo, "rev-list", "--all").split("\n")).toHaveLength(60);
  }, 60_000);
});
