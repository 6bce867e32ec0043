// Test-only: a temp world where CLI verbs run in-process (runCli) against the daemon's real routes served in this
// process, with Docker on the in-memory engine and real git: for tests of the sandbox verbs end to end without an engine.
import { join } from "node:path";
import { defaultRuntime, DockerBackend } from "../../src/drivers/docker/docker";
import { DockerDriver } from "../../src/drivers/docker/driver";
import type { BackendKind } from "../../src/core/schemas";
import type { Driver } from "../../src/drivers/driver";
import { readEnv } from "../../src/sys/env";
import { pathsFor } from "../../src/sys/paths";
import { FakeDockerEngine } from "../fakes/docker-engine";
import { runCli, type CliOptions, type CliRun } from "./cli";
import { serveInprocDaemon, type InprocDaemon } from "./inproc-daemon";
import { tempWorld, type TempWorld } from "./temp-world";

export interface DockerCliWorld {
  w: TempWorld;
  engine: FakeDockerEngine;
  driver: DockerDriver;
  daemon: InprocDaemon;
  /** The environment sbx runs with here (the daemon's too). */
  vars: Record<string, string>;
  /** Runs sbx in the world's repo (or `cwd`); `tty`: as if at a terminal (`columns` wide); `vars` over the world's. */
  cli(argv: string[], cwd?: string, o?: Pick<CliOptions, "tty" | "columns" | "answers" | "vars">): Promise<CliRun>;
  close(): Promise<void>;
}

export async function dockerCliWorld(opts: { drivers?: (x: { exec: TempWorld["exec"]; paths: ReturnType<typeof pathsFor>; env: ReturnType<typeof readEnv> }) => Partial<Record<BackendKind, Driver>> } = {}): Promise<DockerCliWorld> {
  const w = await tempWorld({ Dockerfile: "FROM sbx-base:bookworm\n" });
  w.store.close(); // the daemon opens its own
  const vars = { HOME: w.env.vars.HOME, USER: "t", SHELL: "/bin/bash", XDG_STATE_HOME: join(w.root, "state"), XDG_CONFIG_HOME: join(w.root, "config"), XDG_CACHE_HOME: join(w.root, "cache"), XDG_RUNTIME_DIR: join(w.root, "rt"), PATH: process.env.PATH ?? "/usr/bin:/bin" };
  const engine = new FakeDockerEngine(["sbx-base:bookworm"]);
  const env = readEnv({ vars, uid: w.env.uid, gid: w.env.gid, platform: "linux" });
  const paths = pathsFor(env);
  const backend = new DockerBackend(w.exec, { sandboxRoot: paths.sandboxRoot, engine, runtime: defaultRuntime() });
  const driver = new DockerDriver({ exec: w.exec, env, paths, backend, checkEngine: async () => {} });
  const daemon = serveInprocDaemon(vars, w.exec, { drivers: { docker: driver, ...opts.drivers?.({ exec: w.exec, paths, env }) } });
  return {
    w,
    engine,
    driver,
    daemon,
    vars,
    cli: (argv, cwd, o) => runCli(argv, { exec: w.exec, cwd: cwd ?? w.repo, ...o, vars: { ...vars, ...o?.vars } }),
    async close() {
      await daemon.stop();
      w.close();
    },
  };
}
