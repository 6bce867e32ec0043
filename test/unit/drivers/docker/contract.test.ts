// The shared backend contract, run for the Docker backend on the in-memory engine (the real engine's run is e2e).
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SandboxSpec } from "../../../../src/core/spec";
import { defaultRuntime, DockerBackend } from "../../../../src/drivers/docker/docker";
import { sandboxId } from "../../../../src/drivers/identity";
import { sandboxSockets, type Paths } from "../../../../src/sys/paths";
import { FakeExec } from "../../../fakes/exec";
import { FakeDockerEngine } from "../../../fakes/docker-engine";
import { runBackendContract } from "../../../contract/backend";

const IMAGE = "sbx-base:bookworm";

runBackendContract("docker on a fake engine", async () => {
  const root = mkdtempSync(join(tmpdir(), "sbx-fake-docker-"));
  const home = join(root, "home");
  mkdirSync(home, { recursive: true });
  const engine = new FakeDockerEngine([IMAGE]);
  // Nothing may reach a real docker: every engine call goes through the seam.
  const backend = new DockerBackend(new FakeExec(), { sandboxRoot: join(root, "sandboxes"), engine, runtime: defaultRuntime() });
  const paths = { runtimeDir: join(root, "rt") } as Paths;
  return {
    backend,
    mutations: () => engine.mutations.length,
    spec(name: string): SandboxSpec {
      const id = sandboxId(join(root, "sandboxes"), "/repo", name);
      const dir = join(root, "sandboxes", name);
      mkdirSync(join(dir, "clone"), { recursive: true });
      return {
        id,
        name,
        repo: join(root, "repo"),
        dir,
        hostUser: { name: "u", uid: 1000, gid: 1000, home, shell: "/bin/bash" },
        sockets: sandboxSockets(paths, id),
        env: { SANDBOX: name },
        overlays: [join(home, ".claude")],
        options: { driver: "docker", claudeAuth: "overlay", image: IMAGE },
      };
    },
    async teardown() {
      rmSync(root, { recursive: true, force: true });
    },
  };
});
