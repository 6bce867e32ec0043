// The one lifecycle's rules hold for every kind: the same refusal of unsynced work, nothing left after a failed create,
// an existing sandbox entered whatever its kind. Real git in temp dirs; the drivers are fakes over an in-memory backend.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SbxError } from "../../../src/core/errors";
import type { BackendKind } from "../../../src/core/schemas";
import { SandboxService } from "../../../src/sandboxes/service";
import { Store } from "../../../src/store/store";
import { readEnv, type Env } from "../../../src/sys/env";
import { createExec } from "../../../src/sys/exec";
import { pathsFor, type Paths } from "../../../src/sys/paths";
import { FakeDriver } from "../../fakes/driver";

const exec = createExec(process.env as Record<string, string>);
let root: string;
let repo: string;
let paths: Paths;
let env: Env;
let store: Store;
let drivers: Record<string, FakeDriver>;
let logs: string[];

async function git(cwd: string, ...args: string[]): Promise<string> {
  const r = await exec.run(["git", "-C", cwd, ...args], { check: true, env: { GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@t", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@t" } });
  return r.stdout.trim();
}

function service(defaultKind: BackendKind = "docker"): SandboxService {
  return new SandboxService({
    exec,
    env,
    paths,
    store,
    drivers: { docker: () => drivers.docker!, "linux-user": () => drivers["linux-user"]! },
    defaultKind,
    log: (l) => void logs.push(l),
  });
}

beforeEach(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-svc-")));
  repo = join(root, "repo");
  mkdirSync(repo);
  await git(repo, "init", "-q", "-b", "main");
  writeFileSync(join(repo, "a.txt"), "a\n");
  await git(repo, "add", "a.txt");
  await git(repo, "commit", "-q", "-m", "first");
  env = readEnv({
    vars: { HOME: join(root, "home"), USER: "t", PATH: process.env.PATH, XDG_STATE_HOME: join(root, "state"), XDG_CACHE_HOME: join(root, "cache"), XDG_CONFIG_HOME: join(root, "config"), XDG_RUNTIME_DIR: join(root, "rt") },
    uid: process.getuid!(),
    gid: process.getgid!(),
    platform: "linux",
  });
  paths = pathsFor(env);
  mkdirSync(paths.stateDir, { recursive: true });
  store = new Store(paths.dbFile);
  const host = { name: "t", uid: env.uid, gid: env.gid, home: env.vars.HOME, shell: "/bin/sh" };
  drivers = { docker: new FakeDriver("docker", exec, paths, host), "linux-user": new FakeDriver("linux-user", exec, paths, host) };
  logs = [];
});

afterEach(() => {
  store.close();
  rmSync(root, { recursive: true, force: true });
});

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
      expect(await s.rm("w", { cwd: repo })).toEqual({ lost: [] });
      expect(store.findSandbox(repo, "w")).toBeNull();
      expect(drivers[kind]!.backend.entries.size).toBe(0);
      expect(await git(repo, "rev-parse", "refs/remotes/sandbox-w/main")).toBe(sha);
    });

    test(`a create whose driver fails leaves no live row, no sandbox dir and nothing in the backend (${kind})`, async () => {
      const s = service();
      drivers[kind]!.failProvision = new SbxError("exec_failed", "image build failed");
      const err = await s.create({ name: "bad", cwd: repo, backend: kind }).then(() => null, (e: unknown) => e as SbxError);
      expect(err?.message).toBe("image build failed");
      expect(store.findSandbox(repo, "bad")).toBeNull();
      const dir = store.listSandboxes({ all: true }).find((r) => r.name === "bad")!.identity.dir as string;
      expect(existsSync(dir)).toBe(false);
      expect(drivers[kind]!.backend.entries.size).toBe(0);
      // And the name is free again.
      expect((await s.create({ name: "bad", cwd: repo, backend: kind })).created).toBe(true);
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
