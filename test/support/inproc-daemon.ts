// Test-only: the daemon's control API served in this process on the socket the CLI's paths name, so CLI verbs run
// in-process (runCli) reach a real app over a real socket: the store, the sandbox service (repo lookup through the
// given Exec) and the policy service, over an in-memory fake backend.
import { mkdirSync } from "node:fs";
import { createApp } from "../../src/daemon/app";
import { Controller } from "../../src/daemon/controller";
import { silentLogger } from "../../src/sys/log";
import { API_VERSION } from "../../src/daemon/protocol";
import { serveControl, type ControlServer } from "../../src/daemon/server";
import { SessionManager } from "../../src/daemon/sessions";
import { defaultSpecBuilder } from "../../src/daemon/spec";
import { controllerSupervisor } from "../../src/daemon/supervisor";
import { PolicyService } from "../../src/policy/service";
import type { BackendKind } from "../../src/core/schemas";
import type { Driver } from "../../src/drivers/driver";
import { SandboxService, type DriverTable } from "../../src/sandboxes/service";
import { Store } from "../../src/store/store";
import { readEnv } from "../../src/sys/env";
import type { Exec } from "../../src/sys/exec";
import { pathsFor } from "../../src/sys/paths";
import type { FeedEvent } from "../../src/events/feed";
import { FakeBackend } from "../fakes/backend";

export interface InprocDaemon {
  store: Store;
  /** Every event the policy service published. */
  events: FeedEvent[];
  stop(): Promise<void>;
}

/** `vars` as runCli gets them (XDG dirs decide the socket and the database); `drivers` by kind (default: none). */
export function serveInprocDaemon(vars: Record<string, string | undefined>, exec: Exec, opts: { drivers?: Partial<Record<BackendKind, Driver>> } = {}): InprocDaemon {
  const env = readEnv({ vars: { USER: "tester", ...vars }, uid: process.getuid!(), gid: process.getgid!(), platform: "linux" });
  const paths = pathsFor(env);
  mkdirSync(paths.stateDir, { recursive: true });
  mkdirSync(paths.runtimeDir, { recursive: true, mode: 0o700 });
  const store = new Store(paths.dbFile);
  const events: FeedEvent[] = [];
  // As the daemon composes them: each driver's backend registered, its spec and its bring-up the service's.
  const drivers = opts.drivers ?? {};
  const table: DriverTable = Object.fromEntries(Object.entries(drivers).map(([k, d]) => [k, () => d]));
  const service = new SandboxService({ exec, env, paths, store, drivers: table, defaultKind: "docker", log: () => {} });
  const fallback = defaultSpecBuilder(env, paths);
  const controller = new Controller({
    store,
    backends: { fake: new FakeBackend(), ...Object.fromEntries(Object.entries(drivers).map(([k, d]) => [k, (d as unknown as { backend: import("../../src/drivers/backend").Backend }).backend])) },
    guards: [],
    exec,
    paths,
    log: silentLogger,
    specFor: (row) => drivers[row.backend]?.spec(row) ?? fallback(row),
    bringUp: async (row, spec, backend) => {
      if (drivers[row.backend]) return service.ensureRunning(row);
      await backend.apply(spec);
      return spec;
    },
  });
  const sessions = new SessionManager({ controller, exec, store, log: silentLogger });
  const app = createApp({
    controller,
    sessions,
    store,
    log: silentLogger,
    backends: ["fake"],
    health: () => ({ ok: true, api: API_VERSION, pid: process.pid, version: "test", startedAt: 1, socket: paths.controlSocket }),
    service: service.withSupervisor(controllerSupervisor(controller, sessions)),
    policy: new PolicyService({ store, publish: (e) => void events.push(e) }),
    user: env.userName,
    paths,
  });
  const server: ControlServer = serveControl({ path: paths.controlSocket, fetch: (req) => app.fetch(req), sessions, log: silentLogger });
  return {
    store,
    events,
    async stop() {
      await server.stop();
      await sessions.closeAll();
      await controller.close();
      store.close();
    },
  };
}
