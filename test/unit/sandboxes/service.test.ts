// The one lifecycle's rules hold for every kind: the same refusal of unsynced work, nothing left after a failed create,
// an existing sandbox entered whatever its kind. Real git in temp dirs; the drivers are fakes over an in-memory backend.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { SbxError } from "../../../src/core/errors";
import type { BackendKind } from "../../../src/core/schemas";
import { stateOfListed } from "../../../src/core/sandbox-state";
import { acquireLock, lockPath } from "../../../src/workspace/lock";
import { SandboxService } from "../../../src/sandboxes/service";
import { sandboxLayout } from "../../../src/workspace/layout";
import type { Store } from "../../../src/store/store";
import { streamRun, type Exec } from "../../../src/sys/exec";
import { FakeDriver } from "../../fakes/driver";
import { tempWorld, type TempWorld } from "../../support/temp-world";

let w: TempWorld;
let drivers: Record<string, FakeDriver>;
let logs: string[];
// Set per test from the world (the tests below read them as plain names).
let repo: string;
let store: Store;
const git = (cwd: string, ...args: string[]) => w.git(cwd, ...args);

function service(defaultKind: BackendKind = "docker", exec: Exec = w.exec): SandboxService {
  return new SandboxService({
    exec,
    env: w.env,
    paths: w.paths,
    store,
    drivers: { docker: () => drivers.docker!, "linux-user": () => drivers["linux-user"]! },
    defaultKind,
    log: (l) => void logs.push(l),
  });
}

beforeEach(async () => {
  w = await tempWorld();
  ({ repo, store } = w);
  drivers = { docker: new FakeDriver("docker", w.exec, w.paths, w.host), "linux-user": new FakeDriver("linux-user", w.exec, w.paths, w.host) };
  logs = [];
});

afterEach(() => w.close());

async function commitInside(name: string, file: string): Promise<string> {
  const row = store.findSandbox(repo, name)!;
  const clone = join(String(row.identity.dir), "clone");
  writeFileSync(join(clone, file), `${file}\n`);
  await git(clone, "add", file);
  await git(clone, "commit", "-q", "-m", `work on ${file}`);
  return git(clone, "rev-parse", "HEAD");
}

describe("one lifecycle for every kind", () => {
  for (const kind of ["docker", "linux-user"] as const) {
    test(`rm refuses commits that exist nowhere else on the host, with the commits as data (${kind})`, async () => {
      const s = service();
      await s.create({ name: "w", cwd: repo, backend: kind });
      const sha = await commitInside("w", "b.txt");
      const err = await s.rm("w", { cwd: repo }).then(() => null, (e: unknown) => e as SbxError);
      expect(err?.code).toBe("unsynced_commits");
      expect(err?.exitCode).toBe(65);
      expect(err?.message).toContain(sha.slice(0, 12));
      expect(err?.data).toEqual({ commits: [{ sha, subject: "work on b.txt" }] });
      // Nothing was removed by the refusal.
      expect(store.findSandbox(repo, "w")?.state).toBe("active");
      expect(drivers[kind]!.backend.entries.size).toBe(1);
    });

    test(`rm lets go once the work is on a host branch, and the host keeps sandbox-<name>/* (${kind})`, async () => {
      const s = service();
      await s.create({ name: "w", cwd: repo, backend: kind });
      const sha = await commitInside("w", "b.txt");
      // The user keeps it: the commit is now on a host branch, so it exists elsewhere.
      await git(repo, "fetch", "-q", join(String(store.findSandbox(repo, "w")!.identity.dir), "clone"), `+refs/heads/main:refs/heads/kept`);
      expect(await s.rm("w", { cwd: repo })).toEqual({ lost: [], sessions: 0 });
      expect(store.findSandbox(repo, "w")).toBeNull();
      expect(drivers[kind]!.backend.entries.size).toBe(0);
      expect(await git(repo, "rev-parse", "refs/remotes/sandbox-w/main")).toBe(sha);
    });

    test(`rm lets go of work the bridge pushed upstream (the gate saw it there), though no host branch has it (${kind})`, async () => {
      const s = service();
      await git(repo, "remote", "add", "origin", "https://forge.invalid/me/repo.git");
      await s.create({ name: "w", cwd: repo, backend: kind });
      const pushed = await commitInside("w", "pushed.txt");
      const dir = String(store.findSandbox(repo, "w")!.identity.dir);
      // What the bridge leaves after a clean push: the gate (host-owned, in the sandbox dir) has the commit as the
      // upstream's branch. The host repo has no branch with it.
      const gate = join(dir, "gate", "gate.git");
      await git(dir, "init", "-q", "--bare", gate);
      await git(gate, "fetch", "-q", join(dir, "clone"), "+refs/heads/main:refs/remotes/origin/main");
      expect(await s.rm("w", { cwd: repo })).toEqual({ lost: [], sessions: 0 });
      // A commit made after the push is still the sandbox's alone: it refuses.
      await s.create({ name: "v", cwd: repo, backend: kind });
      const vdir = String(store.findSandbox(repo, "v")!.identity.dir);
      await commitInside("v", "one.txt");
      const vgate = join(vdir, "gate", "gate.git");
      await git(vdir, "init", "-q", "--bare", vgate);
      await git(vgate, "fetch", "-q", join(vdir, "clone"), "+refs/heads/main:refs/remotes/origin/main");
      const later = await commitInside("v", "two.txt");
      // Pushed to a URL the sandbox named (not a remote of the host repo): that is not the user's upstream.
      await git(vgate, "fetch", "-q", join(vdir, "clone"), "+refs/heads/main:refs/remotes/undefined/elsewhere");
      const err = await s.rm("v", { cwd: repo }).then(() => null, (e: unknown) => e as SbxError);
      expect(err?.data).toEqual({ commits: [{ sha: later, subject: "work on two.txt" }] });
      expect(pushed).not.toBe(later);
    });

    test(`a create that fails at any point leaves the host as it was: store, refs, repo config, dirs, backend (${kind})`, async () => {
      const s = service();
      // An earlier sandbox of the same name left its branch on the host (rm --force keeps sandbox-bad/*).
      await s.create({ name: "bad", cwd: repo, backend: kind });
      await commitInside("bad", "earlier.txt");
      await s.rm("bad", { cwd: repo, force: true });
      await git(repo, "symbolic-ref", "refs/remotes/sandbox-bad/HEAD", "refs/remotes/sandbox-bad/main");
      const snapshot = async () => ({
        rows: store.listSandboxes({ all: true }).map((r) => ({ ...r, updatedAt: 0 })),
        allow: store.listAllow(null),
        approvals: store.listApprovals(),
        refs: await git(repo, "for-each-ref", "--format=%(refname) %(objectname) %(symref)"),
        config: await git(repo, "config", "--local", "--list"),
        dirs: listTree(w.paths.sandboxRoot),
        sockets: listTree(join(w.paths.runtimeDir, "sb")),
        backend: [...drivers[kind]!.backend.entries.keys()],
      });
      const before = await snapshot();
      const points: [string, () => Promise<unknown>][] = [
        ["a bad limit (before anything is made)", () => s.create({ name: "bad", cwd: repo, backend: kind, limits: { memory: "lots" } })],
        ["the image build or clone (provision)", () => ((drivers[kind]!.failProvision = new SbxError("exec_failed", "image build failed")), s.create({ name: "bad", cwd: repo, backend: kind }))],
        ["the start (after the earlier refs were set aside)", () => ((drivers[kind]!.failStart = new SbxError("unavailable", "the container exited at once")), s.create({ name: "bad", cwd: repo, backend: kind }))],
        ["its caller gone mid-way", async () => {
          let open!: () => void;
          drivers[kind]!.provisionGate = new Promise((r) => (open = r));
          const gone = new AbortController();
          const p = s.create({ name: "bad", cwd: repo, backend: kind, signal: gone.signal });
          await Bun.sleep(20);
          gone.abort();
          open();
          try {
            return await p;
          } finally {
            drivers[kind]!.provisionGate = null;
          }
        }],
      ];
      for (const [point, fail] of points) {
        const err = await fail().then(() => null, (e: unknown) => e as SbxError);
        expect({ point, failed: err !== null }).toEqual({ point, failed: true });
        expect({ point, after: await snapshot() }).toEqual({ point, after: before });
      }
      // The audit log keeps each attempt (it is append-only); the name is free again, and a good create takes it.
      expect(store.listAudit({ kind: "lifecycle" }).filter((a) => a.action === "create.failed").length).toBe(3);
      expect((await s.create({ name: "bad", cwd: repo, backend: kind })).created).toBe(true);
      expect(await git(repo, "for-each-ref", "--format=%(refname)", "refs/sbx-retired/")).toMatch(/^refs\/sbx-retired\/bad\/\d{8}T\d{6}Z\/main$/);
    });
  }

  test("run of an existing sandbox enters it whatever its kind, even when the default kind cannot run now", async () => {
    await service().create({ name: "u", cwd: repo, backend: "linux-user" });
    drivers.docker!.failReady = new SbxError("unavailable", "no Docker engine answers");
    drivers["linux-user"]!.calls.length = 0;
    const r = await service("docker").create({ name: "u", cwd: repo, ifExists: "reuse" });
    expect(r.created).toBe(false);
    expect(r.sandbox.backend).toBe("linux-user");
    expect(drivers["linux-user"]!.calls).toEqual(["ready", "ensureRunning"]);
    // A new sandbox of the default kind is refused by that kind's check.
    await expect(service("docker").create({ name: "n", cwd: repo, ifExists: "reuse" })).rejects.toThrow("no Docker engine answers");
  });

  test("create, or run --backend of another kind, refuses an existing sandbox and names its kind", async () => {
    await service().create({ name: "u", cwd: repo, backend: "linux-user" });
    for (const req of [{ backend: "docker" as const, ifExists: "reuse" as const }, { backend: "linux-user" as const }]) {
      const err = await service().create({ name: "u", cwd: repo, ...req }).then(() => null, (e: unknown) => e as SbxError);
      expect(err?.code).toBe("exists");
      expect(err?.message).toContain("(linux-user)");
    }
  });

  test("list shows every kind with its phase, and unsynced commits counted the same way", async () => {
    const s = service();
    await s.create({ name: "d", cwd: repo, backend: "docker" });
    await s.create({ name: "u", cwd: repo, backend: "linux-user" });
    await commitInside("u", "c.txt");
    const items = await s.list();
    expect(items.map((i) => [i.name, i.backend, i.phase, i.unsynced?.length])).toEqual([
      ["d", "docker", "running", 0],
      ["u", "linux-user", "running", 1],
    ]);
  });

  test("list says a create under way (its marker, its lock held) and one that was interrupted (the marker, no lock), with what to do", async () => {
    const s = service();
    await s.create({ name: "d", cwd: repo });
    const dir = String(store.findSandbox(repo, "d")!.identity.dir);
    writeFileSync(sandboxLayout(dir).creating, "1\n");
    const lock = await acquireLock(lockPath(w.paths.stateDir, repo, "d"));
    try {
      const under = (await s.list())[0]!;
      expect({ creating: under.creating, word: stateOfListed(under) }).toEqual({ creating: "in-progress", word: "creating" });
    } finally {
      lock.release();
    }
    const left = (await s.list())[0]!;
    expect({ creating: left.creating, word: stateOfListed(left) }).toEqual({ creating: "interrupted", word: "failed" });
    expect(left.reason).toContain("`sbx create d` again starts it over");
    rmSync(sandboxLayout(dir).creating);
    expect(stateOfListed((await s.list())[0]!)).toBe("running");
  });

  test("prune asks each kind's driver to remove what no live sandbox holds", async () => {
    const s = service();
    await s.create({ name: "d", cwd: repo, backend: "docker" });
    // A leftover the store no longer knows (a crash between the row's deletion and the backend's removal).
    drivers["linux-user"]!.backend.entries.set("orphan1", { spec: { ...drivers.docker!.spec(store.findSandbox(repo, "d")!), id: "orphan1", name: "gone" }, phase: "running" });
    const report = await s.prune();
    expect(report.removed).toEqual(["sandbox gone (orphan1)"]);
    expect(drivers.docker!.backend.entries.size).toBe(1);
  });
});

describe("the-host-never-reads-a-clone: list, prune", () => {
  test("an orphaned sandbox dir whose clone was turned into a redirection is kept by prune, and nothing on the host reads it", async () => {
    // Every command the service runs on the host, with its working dir.
    const seen: string[] = [];
    const note = (a: readonly string[], o?: { cwd?: string }) => void seen.push([...a, o?.cwd ?? ""].join(" "));
    const recording: Exec = {
      run: (a, o) => (note(a, o), w.exec.run(a, o)),
      stream: (a, o) => (note(a, o), streamRun(w.exec, a, o)),
      terminal: (a, o) => w.exec.terminal(a, o),
    };
    // The drivers run their git (the clone's making, git as the sandbox) through it too.
    drivers.docker = new FakeDriver("docker", recording, w.paths, w.host);
    const s = service("docker", recording);
    await s.create({ name: "o", cwd: repo, backend: "docker" });
    const row = store.findSandbox(repo, "o")!;
    const dir = String(row.identity.dir);
    // The sandbox wrote its clone's .git as a pointer elsewhere; then its row went (a crash between rm's steps).
    const canary = join(w.root, "canary");
    mkdirSync(canary);
    await git(canary, "init", "-q", "-b", "main");
    await git(canary, "commit", "-q", "--allow-empty", "-m", "canary secret");
    rmSync(join(dir, "clone", ".git"), { recursive: true, force: true });
    writeFileSync(join(dir, "clone", ".git"), `gitdir: ${join(canary, ".git")}\n`);
    rmSync(join(dir, ".synced"), { force: true });
    store.purgeSandbox(row.id);
    // Control: the recorder sees commands that name the clone when there are some (create makes the clone, before the
    // sandbox ever ran).
    expect(seen.some((c) => c.includes(join(dir, "clone")))).toBe(true);
    seen.length = 0;
    const report = await s.prune();
    expect(report.kept.join("\n")).toContain(`${dir}: its clone may hold commits the host does not have`);
    expect(existsSync(join(dir, "clone"))).toBe(true);
    for (const c of seen) expect(c).not.toContain(join(dir, "clone"));
    // And list reads a stopped sandbox's clone not at all: nothing runs as it, nothing of it is read on the host.
    await s.create({ name: "l", cwd: repo, backend: "docker" });
    await s.stop("l", { cwd: repo });
    drivers.docker!.calls.length = 0;
    await s.list();
    expect(drivers.docker!.calls.filter((c) => c.startsWith("sandboxGit l"))).toEqual([]);
  });
});

describe("limits", () => {
  const GIB = 1024 ** 3;
  const capped = () =>
    new SandboxService({
      exec: w.exec,
      env: w.env,
      paths: w.paths,
      store,
      drivers: { docker: () => drivers.docker!, "linux-user": () => drivers["linux-user"]! },
      defaultKind: "docker",
      log: (l) => void logs.push(l),
      capacity: { memoryBytes: 16 * GIB, cpus: 4 },
    });

  for (const kind of ["docker", "linux-user"] as const) {
    test(`a new sandbox keeps its limits in its identity and its spec: flags over the config file over the defaults (${kind})`, async () => {
      mkdirSync(dirname(w.paths.configFile), { recursive: true });
      writeFileSync(w.paths.configFile, JSON.stringify({ limits: { memory: "2g", pids: 500 } }));
      const s = capped();
      await s.create({ name: "l", cwd: repo, backend: kind, limits: { pids: "300" } });
      const row = store.findSandbox(repo, "l")!;
      expect(row.identity.limits).toEqual({ memory: 2 * GIB, cpus: 3, pids: 300 });
      expect(drivers[kind]!.spec(row).limits).toEqual({ memory: 2 * GIB, cpus: 3, pids: 300 });
    });
  }

  test("a bad limit refuses the create before anything is made", async () => {
    const s = capped();
    const err = await s.create({ name: "l", cwd: repo, limits: { memory: "64g" } }).then(() => null, (e: unknown) => e as SbxError);
    expect(err?.code).toBe("usage");
    expect(err?.message).toContain("more than this machine has (16 GiB)");
    expect(store.findSandbox(repo, "l")).toBeNull();
    expect(drivers.docker!.calls).not.toContain("provision");
  });

  test("run of an existing sandbox with a limit flag is refused, naming `sbx limits` (a flag is never ignored)", async () => {
    const s = capped();
    await s.create({ name: "l", cwd: repo });
    const err = await s.create({ name: "l", cwd: repo, ifExists: "reuse", limits: { memory: "1g" } }).then(() => null, (e: unknown) => e as SbxError);
    expect(err?.code).toBe("usage");
    expect(err?.hint).toContain("sbx limits l --memory");
  });

  test("sbx limits changes only what is given, applies it to what exists, and keeps it", async () => {
    const s = capped();
    await s.create({ name: "l", cwd: repo, limits: { memory: "1g" } });
    const r = await s.limits("l", { cwd: repo, set: { pids: "none", cpus: "0.5" } });
    expect(r).toMatchObject({ name: "l", limits: { memory: 1 * GIB, cpus: 0.5, pids: null }, hits: null, applied: "now" });
    const id = String(store.findSandbox(repo, "l")!.identity.id);
    expect(drivers.docker!.applied.get(id)).toEqual({ memory: 1 * GIB, cpus: 0.5, pids: null });
    expect(store.findSandbox(repo, "l")!.identity.limits).toEqual({ memory: 1 * GIB, cpus: 0.5, pids: null });
    expect(store.listAudit({ kind: "lifecycle" }).some((a) => a.action === "limits")).toBe(true);
  });

  test("a value the driver refuses (the kernel: less than the sandbox uses now) is not stored", async () => {
    const s = capped();
    await s.create({ name: "l", cwd: repo, limits: { memory: "1g" } });
    drivers.docker!.applyLimits = async () => {
      throw new SbxError("exec_failed", "Minimum memory limit can not be less than memory reservation limit");
    };
    await expect(s.limits("l", { cwd: repo, set: { memory: "200m" } })).rejects.toThrow("Minimum memory");
    expect(store.findSandbox(repo, "l")!.identity.limits).toEqual({ memory: 1 * GIB, cpus: 3, pids: 4096 });
  });

  test("a sandbox made before limits existed shows none, and takes the defaults for what is not given", async () => {
    const s = capped();
    await s.create({ name: "old", cwd: repo });
    const row = store.findSandbox(repo, "old")!;
    const { limits: _gone, ...rest } = row.identity;
    store.updateIdentity(row.id, rest);
    expect((await s.limits("old", { cwd: repo })).limits).toBeNull();
    expect((await s.limits("old", { cwd: repo, set: { memory: "1g" } })).limits).toEqual({ memory: 1 * GIB, cpus: 3, pids: 4096 });
  });

  test("list and limits show what a running sandbox ran into; list says why a sandbox stopped when sbx did not stop it", async () => {
    const s = capped();
    await s.create({ name: "l", cwd: repo });
    const id = String(store.findSandbox(repo, "l")!.identity.id);
    drivers.docker!.kernelCounters.set(id, { oomKills: 2, pidsRefused: 0 });
    expect((await s.list()).find((i) => i.name === "l")?.hits).toEqual([{ limit: "memory", count: 2 }]);
    expect((await s.limits("l", { cwd: repo })).hits).toEqual([{ limit: "memory", count: 2 }]);
    await s.stop("l", { cwd: repo });
    drivers.docker!.stoppedBecause = "out of memory: the kernel killed its first process at the memory limit";
    const info = (await s.list()).find((i) => i.name === "l")!;
    expect({ phase: info.phase, reason: info.reason, hits: info.hits }).toEqual({ phase: "stopped", reason: "out of memory: the kernel killed its first process at the memory limit", hits: undefined });
  });
});

/** Every path under a dir, relative, sorted (empty when it does not exist). */
function listTree(dir: string): string[] {
  try {
    return (readdirSync(dir, { recursive: true }) as string[]).sort();
  } catch {
    return [];
  }
}
