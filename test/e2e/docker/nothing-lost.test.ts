// nothing-lost: rm refuses while the clone holds commits no host ref has; a create whose caller is killed is undone;
// one whose daemon is killed leaves only what prune removes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { acquireFixture, canRun, daemonPid, mustCreate, releaseFixture, skipReason, type Fixture } from "./fixture";

/** Pids of a process's children, grandchildren, … (from /proc). */
function descendants(pid: number): number[] {
  let kids: number[] = [];
  try {
    kids = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
  return kids.flatMap((k) => [k, ...descendants(k)]);
}

describe.skipIf(!canRun)(`nothing-lost (Docker)${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  let f: Fixture;
  beforeAll(() => {
    f = acquireFixture();
  }, 60_000);
  afterAll(() => {
    for (const n of ["keep", "killed", "cancelled", "bystander"]) f?.sbx(["rm", "--force", n]);
    releaseFixture();
  }, 60_000);

  test("rm refuses with exit 65 and names the unsynced commit; list shows it; --force removes everything", () => {
    mustCreate(f, "keep");
    // The clone create started ahead was moved into place: no staging dir is left behind.
    const staging = join(f.user.home, ".cache", "sandbox-staging");
    expect(existsSync(staging)).toBe(true); // it was used
    expect(readdirSync(staging)).toEqual([]);
    expect(existsSync(join(f.sandboxDir("keep"), "clone", ".git"))).toBe(true);
    const c = f.sbx(["shell", "keep", "--", "sh", "-c", "echo w > work.txt && git add work.txt && git -c user.email=a@example.invalid -c user.name=a commit -qm 'precious work'"]);
    expect(c.code).toBe(0);
    const listed = JSON.parse(f.sbx(["list", "--json"]).stdout) as { name: string; unsyncedCommits: number }[];
    expect(listed.find((s) => s.name === "keep")?.unsyncedCommits).toBe(1);
    const r = f.sbx(["rm", "keep"]);
    expect(r.code).toBe(65);
    expect(r.stderr).toContain("precious work");
    expect(existsSync(f.sandboxDir("keep"))).toBe(true);
    // once a host branch holds it, rm goes through
    expect(f.git(["branch", "saved", "sandbox-keep/main"]).code).toBe(0);
    const ok = f.sbx(["rm", "keep"]);
    expect(ok.code).toBe(0);
    expect(existsSync(f.sandboxDir("keep"))).toBe(false);
    expect(f.git(["remote"]).stdout).not.toContain("sandbox-keep");
    expect(f.docker(["ps", "-a", "-q", "--filter", "label=sbx.name=keep", "--filter", `label=sbx.repo=${f.repo}`]).stdout.trim()).toBe("");
    expect(f.docker(["volume", "ls", "-q", "--filter", "label=sbx.name=keep", "--filter", `label=sbx.repo=${f.repo}`]).stdout.trim()).toBe("");
    expect(f.git(["log", "--format=%s", "-1", "saved"]).stdout.trim()).toBe("precious work");
  }, 60_000);

  /** Starts `sbx create name` and resolves once its clone is being made (the create is then midway). */
  async function createUntilCloning(name: string): Promise<ReturnType<Fixture["spawnSbx"]>> {
    const p = f.spawnSbx(["create", name]);
    const dir = f.sandboxDir(name);
    for (let i = 0; i < 400 && p.exitCode === null; i++) {
      if (existsSync(join(dir, "clone", ".git"))) break;
      await Bun.sleep(5);
    }
    return p;
  }

  /** Kills a process and everything under it (runuser runs sbx as its child), by pid: all ours. */
  async function killTree(p: ReturnType<Fixture["spawnSbx"]>): Promise<void> {
    for (const pid of descendants(p.pid)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        /* already gone */
      }
    }
    p.kill("SIGKILL");
    await p.exited;
  }

  test("a create whose image build fails leaves the host as it was: no container (the build's included), volume, row, dir, remote or ref", () => {
    const dockerfile = join(f.repo, "Dockerfile");
    const good = readFileSync(dockerfile, "utf8");
    const snapshot = () => ({
      containers: f.docker(["ps", "-a", "-q", "--no-trunc"]).stdout.split("\n").filter(Boolean).sort(),
      volumes: f.docker(["volume", "ls", "-q"]).stdout.split("\n").filter(Boolean).sort(),
      list: f.sbx(["list", "--json", "--all"]).stdout,
      refs: f.git(["for-each-ref", "--format=%(refname) %(objectname)"]).stdout,
      config: f.git(["config", "--local", "--list"]).stdout,
      dirExists: (() => {
        try {
          return existsSync(f.sandboxDir("badbuild"));
        } catch {
          return false; // no sandbox dir of this repo at all yet
        }
      })(),
    });
    const before = snapshot();
    // A step that fails after one that made a container: the classic builder would keep the failed step's container.
    writeFileSync(dockerfile, `${good}\nRUN echo building > /tmp/step\nRUN false\n`);
    try {
      const r = f.sbx(["create", "badbuild"]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain("creating badbuild failed; removing what was made");
      expect(snapshot()).toEqual(before);
    } finally {
      writeFileSync(dockerfile, good);
    }
  }, 180_000);

  test("a create whose sbx is killed midway is undone by the daemon: no row, dir, container, volume or remote is left", async () => {
    mustCreate(f, "bystander");
    const dir = f.sandboxDir("cancelled");
    await killTree(await createUntilCloning("cancelled"));
    // The daemon ends the step under way, sees its caller gone, and removes what it made (bounded wait).
    for (let i = 0; i < 300 && existsSync(dir); i++) await Bun.sleep(100);
    expect(existsSync(dir)).toBe(false);
    const names = (JSON.parse(f.sbx(["list", "--json"]).stdout) as { name: string }[]).map((s) => s.name);
    expect(names).not.toContain("cancelled");
    expect(f.docker(["ps", "-a", "-q", "--filter", "label=sbx.name=cancelled", "--filter", `label=sbx.repo=${f.repo}`]).stdout.trim()).toBe("");
    expect(f.docker(["volume", "ls", "-q", "--filter", "label=sbx.name=cancelled", "--filter", `label=sbx.repo=${f.repo}`]).stdout.trim()).toBe("");
    expect(f.git(["remote"]).stdout).not.toContain("sandbox-cancelled");
    expect(f.sbx(["shell", "bystander", "--", "true"]).code).toBe(0);
    mustCreate(f, "cancelled");
    expect(f.sbx(["rm", "--force", "cancelled"]).code).toBe(0);
  }, 60_000);

  test("a create whose daemon is killed midway leaves only what prune removes, and prune spares live sandboxes", async () => {
    if (f.sbx(["shell", "bystander", "--", "true"]).code !== 0) mustCreate(f, "bystander");
    const dir = f.sandboxDir("killed");
    let killedMidway = false;
    for (let attempt = 0; attempt < 5 && !killedMidway; attempt++) {
      const p = await createUntilCloning("killed");
      // The daemon makes the sandbox: killing it (ours: the test user's sbx started it) stops the create midway.
      const pid = daemonPid(f.user);
      if (pid !== null) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          /* already gone */
        }
      }
      await p.exited;
      killedMidway = existsSync(join(dir, ".creating"));
      if (!killedMidway) f.sbx(["rm", "--force", "killed"]);
    }
    expect(killedMidway).toBe(true);
    // The kill may land while the create's git adds its remote: that leaves the repo's config locked. Made so here
    // when the kill landed elsewhere, so prune's handling of it runs every time.
    const configLock = join(f.repo, ".git", "config.lock");
    if (!existsSync(configLock)) writeFileSync(configLock, "");

    const dry = f.sbx(["prune", "--dry-run"]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain(dir);
    expect(existsSync(dir)).toBe(true);

    const pr = f.sbx(["prune"]);
    expect(pr.code).toBe(0);
    expect(existsSync(dir)).toBe(false);
    expect(f.docker(["ps", "-a", "-q", "--filter", "label=sbx.name=killed", "--filter", `label=sbx.repo=${f.repo}`]).stdout.trim()).toBe("");
    expect(f.docker(["volume", "ls", "-q", "--filter", "label=sbx.name=killed", "--filter", `label=sbx.repo=${f.repo}`]).stdout.trim()).toBe("");
    expect(f.git(["remote"]).stdout).not.toContain("sandbox-killed");
    // Killed while adding its remote, the create's git leaves the repo's config locked: prune removes that lock.
    expect(dry.stdout).toContain(configLock);
    expect(existsSync(configLock)).toBe(false);
    const names = (JSON.parse(f.sbx(["list", "--json"]).stdout) as { name: string }[]).map((s) => s.name);
    expect(names).not.toContain("killed");
    expect(names).toContain("bystander");
    expect(f.sbx(["shell", "bystander", "--", "true"]).code).toBe(0);
    // and the name can be used again
    mustCreate(f, "killed");
  }, 60_000);
});
