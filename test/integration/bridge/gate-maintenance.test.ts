// The gate does not grow without end: after many pushes' packs, gc --auto folds them; with few, it leaves them be.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureGate, gcDue, maintainGate } from "../../../src/bridge/gate";
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

  // The count is made without git between pushes; it must say yes whenever git's own gc --auto would act.
  test("gcDue agrees with git's gc --auto: packs past 50, loose objects past 27 in objects/17", async () => {
    const host = join(root, "host2");
    git(root, "init", "-q", "-b", "main", host);
    git(host, "commit", "-q", "--allow-empty", "-m", "base");
    const g = await ensureGate(createExec(env), join(root, "gate2"), host, PATH);
    const repo = g.paths.repo;
    // Whether git's own gc --auto acts: it says "Auto packing" when it does (without --quiet).
    const gitActs = () => {
      const r = Bun.spawnSync(["git", "-c", "gc.autoDetach=false", "gc", "--auto"], { cwd: repo, env, stderr: "pipe" });
      return /Auto packing/.test(r.stderr.toString());
    };
    // Reachable loose objects whose ids start with 17 (a tag ref on each), as many as asked.
    let n = 0;
    const loose17 = (count: number) => {
      for (let made = 0; made < count; n++) {
        const text = `blob ${n}\n`;
        const sha = new Bun.CryptoHasher("sha1").update(`blob ${text.length}\0${text}`).digest("hex");
        if (!sha.startsWith("17")) continue;
        const r = Bun.spawnSync(["git", "hash-object", "-w", "--stdin"], { cwd: repo, env, stdin: Buffer.from(text) });
        expect(r.stdout.toString().trim()).toBe(sha);
        git(repo, "update-ref", `refs/tags/b${n}`, sha);
        made++;
      }
    };
    const loose = () => readdirSync(join(repo, "objects", "17")).length;
    loose17(27);
    expect(loose()).toBe(27);
    expect(gcDue(repo)).toBe(false);
    expect(gitActs()).toBe(false);
    loose17(1);
    expect(gcDue(repo)).toBe(true);
    expect(gitActs()).toBe(true);
    expect(gcDue(repo)).toBe(false);
    // Packs: 50 leave it be, 51 do not (each a commit made and repacked on its own, keeping the packs there are).
    const addPack = (i: number) => {
      git(repo, "update-ref", `refs/heads/q${i}`, git(repo, "commit-tree", git(repo, "mktree", "--missing"), "-m", `q${i}`));
      Bun.spawnSync(["git", "repack", "-q"], { cwd: repo, env });
    };
    for (let i = packs(repo); i < 50; i++) addPack(i);
    expect(packs(repo)).toBe(50);
    expect(gcDue(repo)).toBe(false);
    expect(gitActs()).toBe(false);
    addPack(50);
    expect(packs(repo)).toBe(51);
    expect(gcDue(repo)).toBe(true);
    expect(gitActs()).toBe(true);
  }, 120_000);
});
