// The shared backend contract, run for real against the Docker backend (root user, sbx-base image, real clones).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DockerBackend } from "../../../src/drivers/docker/docker";
import type { SandboxSpec } from "../../../src/core/spec";
import { createExec, type Exec } from "../../../src/sys/exec";
import { sha256Hex } from "../../../src/sys/paths";
import { createClone } from "../../../src/workspace/clone";
import { runBackendContract } from "../../contract/backend";
import { BASE_IMAGE, skipReason } from "./fixture";

const MUTATING = /^docker (create|start|stop|rm|cp|volume (create|rm)|run)\b/;

runBackendContract(
  "docker",
  async () => {
    const base = createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/root" });
    let mutations = 0;
    const exec: Exec = {
      run: (argv, o) => {
        if (MUTATING.test(argv.join(" "))) mutations++;
        return base.run(argv, o);
      },
      terminal: (argv, o) => base.terminal(argv, o),
    };
    const root = mkdtempSync(join(tmpdir(), "sbx-contract-"));
    const home = join(root, "home");
    const repo = join(root, "repo");
    mkdirSync(home, { recursive: true });
    mkdirSync(repo, { recursive: true });
    const g = (...a: string[]) => Bun.spawnSync(["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", "-C", repo, ...a]);
    g("init", "-q", "-b", "main");
    writeFileSync(join(repo, "f"), "x\n");
    g("add", "-A");
    g("commit", "-qm", "c");
    const backend = new DockerBackend(exec, { sandboxRoot: join(root, "sandboxes") });
    const run = sha256Hex(`${process.pid}${Date.now()}`).slice(0, 4);
    return {
      backend,
      mutations: () => mutations,
      async spec(name: string): Promise<SandboxSpec> {
        const id = sha256Hex(`${root}\0${name}`).slice(0, 12);
        const dir = join(root, "sandboxes", name);
        await createClone(base, { repo, dir, name });
        return {
          id,
          name: `${name}-${run}`,
          repo,
          dir,
          hostUser: { name: "root", uid: 0, gid: 0, home, shell: "/bin/bash" },
          sockets: { dir: join(root, "sock", id), proxy: join(root, "sock", id, "proxy.sock"), bridge: join(root, "sock", id, "bridge.sock") },
          env: { SANDBOX: name },
          overlays: [join(home, ".claude")],
          options: { driver: "docker", claudeAuth: "overlay", image: BASE_IMAGE },
        };
      },
      async teardown() {
        rmSync(root, { recursive: true, force: true });
      },
    };
  },
  { skip: skipReason },
);
