// The driver contract for every kind, in unit tests: the fake driver, Docker on the in-memory engine (real git clones),
// and the kinds this machine cannot fake whole, each skipped with its reason.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultRuntime, DockerBackend } from "../../../src/drivers/docker/docker";
import { DockerDriver } from "../../../src/drivers/docker/driver";
import type { NewSandbox } from "../../../src/drivers/driver";
import { sandboxId } from "../../../src/sandboxes/identity";
import { Store } from "../../../src/store/store";
import { readEnv } from "../../../src/sys/env";
import { createExec } from "../../../src/sys/exec";
import { pathsFor } from "../../../src/sys/paths";
import { runDriverContract, type DriverHarness } from "../../contract/driver";
import { FakeDockerEngine } from "../../fakes/docker-engine";
import { FakeDriver } from "../../fakes/driver";
import { ALICE_PATHS, FakeMac } from "../../fakes/mac";
import { UserAccountDriver } from "../../../src/drivers/user-account";

const exec = createExec(process.env as Record<string, string>);

/** A temp world: env and paths under one root, a store, a committed repo. */
function world() {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-dc-")));
  const home = join(root, "home");
  mkdirSync(home, { recursive: true });
  const env = readEnv({
    vars: { HOME: home, USER: "t", SHELL: "/bin/bash", PATH: process.env.PATH, XDG_STATE_HOME: join(root, "state"), XDG_CACHE_HOME: join(root, "cache"), XDG_CONFIG_HOME: join(root, "config"), XDG_RUNTIME_DIR: join(root, "rt") },
    uid: process.getuid!(),
    gid: process.getgid!(),
    platform: "linux",
  });
  const paths = pathsFor(env);
  mkdirSync(paths.stateDir, { recursive: true });
  const repo = join(root, "repo");
  mkdirSync(repo);
  const g = (...a: string[]) => Bun.spawnSync(["git", "-c", "user.email=t@t", "-c", "user.name=t", "-C", repo, ...a]);
  g("init", "-q", "-b", "main");
  writeFileSync(join(repo, "Dockerfile"), "FROM sbx-base:bookworm\n");
  g("add", "-A");
  g("commit", "-qm", "first");
  const store = new Store(paths.dbFile);
  const newSandbox = (name: string): NewSandbox => {
    const dir = join(paths.sandboxRoot, "repo", name);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return { name, repo, dir, id: sandboxId(paths.sandboxRoot, repo, name), cwd: repo };
  };
  return { root, env, paths, repo, store, newSandbox, teardown: async () => (store.close(), rmSync(root, { recursive: true, force: true })) };
}

runDriverContract("fake", async (): Promise<DriverHarness> => {
  const w = world();
  const driver = new FakeDriver("fake", exec, w.paths, { name: "t", uid: w.env.uid, gid: w.env.gid, home: w.env.vars.HOME, shell: "/bin/bash" });
  return { driver, store: w.store, newSandbox: w.newSandbox, mutations: () => driver.backend.mutations, teardown: w.teardown };
});

runDriverContract("docker on the fake engine", async (): Promise<DriverHarness> => {
  const w = world();
  const engine = new FakeDockerEngine(["sbx-base:bookworm"]);
  // The image the repo's Dockerfile makes is built by the fake engine on first use, as the real one would be.
  const backend = new DockerBackend(exec, { sandboxRoot: w.paths.sandboxRoot, engine, runtime: defaultRuntime() });
  const driver = new DockerDriver({ exec, env: w.env, paths: w.paths, backend, checkEngine: async () => {} });
  return { driver, store: w.store, newSandbox: w.newSandbox, mutations: () => engine.mutations.length, teardown: w.teardown };
});

runDriverContract("macos on the fake Mac", async (): Promise<DriverHarness> => {
  const mac = new FakeMac();
  const root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-dc-mac-")));
  const passwd = join(root, "passwd");
  writeFileSync(passwd, "root:x:0:0:root:/var/root:/bin/sh\nalice:x:501:20:Alice:/Users/alice:/bin/zsh\n");
  const env = readEnv({ vars: { HOME: "/Users/alice", USER: "alice", PATH: process.env.PATH }, uid: 501, gid: 20, platform: "darwin" });
  const store = new Store(":memory:");
  const driver = new UserAccountDriver({ exec: mac.exec, env, paths: ALICE_PATHS, backend: mac.backend(), passwdFile: passwd, portFree: () => true });
  const repo = "/Users/alice/src/demo";
  return {
    driver,
    store,
    // The sandbox dir is a real one (the driver links the repo there); everything of the guest's is the fake Mac's.
    newSandbox: (name) => {
      const dir = join(root, name);
      mkdirSync(dir, { recursive: true });
      return { name, repo, dir, id: sandboxId(ALICE_PATHS.sandboxRoot, repo, name), cwd: repo };
    },
    mutations: () => mac.mutations(),
    teardown: async () => (store.close(), rmSync(root, { recursive: true, force: true })),
  };
});

runDriverContract("linux-user on a fake Linux", async () => ({}) as DriverHarness, {
  skipAll: "no fake Linux (passwd plus nft state) yet; the real backend runs the backend contract as root in test/e2e/linux-user, and the linux-user e2e creates, stops and removes sandboxes through this driver",
});
