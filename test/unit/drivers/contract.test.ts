// The driver contract for every kind, in unit tests: the fake driver, Docker on the in-memory engine (real git clones),
// and the kinds this machine cannot fake whole, each skipped with its reason.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultRuntime, DockerBackend } from "../../../src/drivers/docker/docker";
import { DockerDriver } from "../../../src/drivers/docker/driver";
import type { NewSandbox } from "../../../src/drivers/driver";
import { UserAccountDriver } from "../../../src/drivers/user-account";
import { sandboxId } from "../../../src/sandboxes/identity";
import { Store } from "../../../src/store/store";
import { readEnv } from "../../../src/sys/env";
import { runDriverContract, type DriverHarness } from "../../contract/driver";
import { FakeDockerEngine } from "../../fakes/docker-engine";
import { FakeDriver } from "../../fakes/driver";
import { ALICE_PATHS, FakeMac } from "../../fakes/mac";
import { tempWorld } from "../../support/temp-world";

/** A temp world (a repo with a Dockerfile) and how a new sandbox's request looks in it. */
async function world() {
  const w = await tempWorld({ Dockerfile: "FROM sbx-base:bookworm\n" });
  const newSandbox = (name: string): NewSandbox => {
    const dir = join(w.paths.sandboxRoot, "repo", name);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return { name, repo: w.repo, dir, id: sandboxId(w.paths.sandboxRoot, w.repo, name), cwd: w.repo };
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
