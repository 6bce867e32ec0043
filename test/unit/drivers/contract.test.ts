// The driver contract for every kind, in unit tests: the fake driver, Docker on the in-memory engine (real git clones),
// linux-user on the fake Linux, macos on the fake Mac.
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultRuntime, DockerBackend } from "../../../src/drivers/docker/docker";
import { DockerDriver } from "../../../src/drivers/docker/driver";
import type { NewSandbox } from "../../../src/drivers/driver";
import { UserAccountDriver } from "../../../src/drivers/user-account";
import { sandboxId } from "../../../src/drivers/identity";
import { Store } from "../../../src/store/store";
import { readEnv } from "../../../src/sys/env";
import { runDriverContract, type DriverHarness } from "../../contract/driver";
import { FakeDockerEngine } from "../../fakes/docker-engine";
import { FakeDriver } from "../../fakes/driver";
import { ALICE_PATHS, FakeMac } from "../../fakes/mac";
import { FakeLinux } from "../../fakes/linux";
import { ConfigSchema } from "../../../src/core/config";
import { LinuxUserBackend } from "../../../src/drivers/linux-user/backend";
import { pathsFor } from "../../../src/sys/paths";
import { tempWorld } from "../../support/temp-world";

/** A temp world (a repo with a Dockerfile) and how a new sandbox's request looks in it. */
async function world() {
  const w = await tempWorld({ Dockerfile: "FROM sbx-base:bookworm\n" });
  const newSandbox = (name: string): NewSandbox => {
    const dir = join(w.paths.sandboxRoot, "repo", name);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return { name, repo: w.repo, dir, id: sandboxId(w.paths.sandboxRoot, w.repo, name), cwd: w.repo, config: ConfigSchema.parse({}) };
  };
  return { ...w, newSandbox, teardown: async () => w.close() };
}

runDriverContract("fake", async (): Promise<DriverHarness> => {
  const w = await world();
  const driver = new FakeDriver("fake", w.exec, w.paths, w.host);
  return { driver, store: w.store, newSandbox: w.newSandbox, mutations: () => driver.backend.mutations, teardown: w.teardown };
});

runDriverContract("docker on the fake engine", async (): Promise<DriverHarness> => {
  const w = await world();
  const engine = new FakeDockerEngine(["sbx-base:bookworm"]);
  // The image the repo's Dockerfile makes is built by the fake engine on first use, as the real one would be.
  const backend = new DockerBackend(w.exec, { sandboxRoot: w.paths.sandboxRoot, engine, runtime: defaultRuntime() });
  const driver = new DockerDriver({ exec: w.exec, env: w.env, paths: w.paths, backend, checkEngine: async () => {} });
  return { driver, store: w.store, newSandbox: w.newSandbox, mutations: () => engine.mutations.length, teardown: w.teardown };
});

runDriverContract("macos on the fake Mac", async (): Promise<DriverHarness> => {
  const mac = new FakeMac();
  const root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-dc-mac-")));
  const env = readEnv({ vars: { HOME: "/Users/alice", USER: "alice", PATH: process.env.PATH }, uid: 501, gid: 20, platform: "darwin" });
  const store = new Store(":memory:");
  const driver = new UserAccountDriver({ exec: mac.exec, env, paths: ALICE_PATHS, backend: mac.backend(), hostUser: { name: "alice", uid: 501, gid: 20, home: "/Users/alice", shell: "/bin/zsh" }, portFree: () => true });
  const repo = "/Users/alice/src/demo";
  return {
    driver,
    store,
    // The sandbox dir is a real one (the driver links the repo there); everything of the guest's is the fake Mac's.
    newSandbox: (name) => {
      const dir = join(root, name);
      mkdirSync(dir, { recursive: true });
      return { name, repo, dir, id: sandboxId(ALICE_PATHS.sandboxRoot, repo, name), cwd: repo, config: ConfigSchema.parse({}) };
    },
    mutations: () => mac.mutations(),
    teardown: async () => (store.close(), rmSync(root, { recursive: true, force: true })),
  };
});

runDriverContract("linux-user on a fake Linux", async (): Promise<DriverHarness> => {
  const host = { name: "alice", uid: 1000, gid: 1000, home: "/home/alice", repo: "/home/alice/src/proj" };
  const linux = new FakeLinux(host);
  const root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-dc-linux-")));
  // As under `sudo sbx …`: the daemon is root, the sandbox belongs to the person sudo names (the daemon looked them up).
  const env = readEnv({ vars: { HOME: "/root", USER: "root", PATH: process.env.PATH, SUDO_UID: "1000", SUDO_GID: "1000", SUDO_USER: "alice" }, uid: 0, gid: 0, platform: "linux" });
  const paths = pathsFor(readEnv({ vars: { HOME: host.home, USER: "alice", PATH: process.env.PATH, XDG_RUNTIME_DIR: join(root, "rt") }, uid: 1000, gid: 1000, platform: "linux" }));
  const backend = new LinuxUserBackend({ exec: linux.exec, root: "/var/lib/sbx", table: "sbx", cgroupRoot: join(root, "no-cgroups"), warn: () => {} });
  const store = new Store(":memory:");
  const driver = new UserAccountDriver({ exec: linux.exec, env, paths, backend, hostUser: { name: "alice", uid: 1000, gid: 1000, home: "/home/alice", shell: "/bin/bash" }, portFree: () => true, landlockAbi: () => 7 });
  return {
    driver,
    store,
    // The sandbox dir is a real one (the driver links the repo there); accounts, files, mounts and rules are the fake's.
    newSandbox: (name) => {
      const dir = join(root, "sandboxes", name);
      mkdirSync(dir, { recursive: true });
      return { name, repo: host.repo, dir, id: sandboxId(paths.sandboxRoot, host.repo, name), cwd: host.repo, config: ConfigSchema.parse({}) };
    },
    mutations: () => linux.changes.length,
    teardown: async () => (store.close(), rmSync(root, { recursive: true, force: true })),
  };
});
