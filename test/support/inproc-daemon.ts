// Test-only: the daemon's control API served in this process on the socket the CLI's paths name, so CLI verbs run
// in-process (runCli) reach a real app over a real socket: the store, the sandbox service (repo lookup through the
// given Exec) and the policy service, over an in-memory fake backend.
import { mkdirSync } from "node:fs";
import { createApp } from "../../src/daemon/app";
import { Controller } from "../../src/daemon/controller";
import { silentLogger } from "../../src/daemon/log";
import { API_VERSION } from "../../src/daemon/protocol";
import { serveControl, type ControlServer } from "../../src/daemon/server";
import { SessionManager } from "../../src/daemon/sessions";
import { defaultSpecBuilder } from "../../src/daemon/spec";
import { controllerSupervisor } from "../../src/daemon/supervisor";
import { PolicyService } from "../../src/policy/service";
import { SandboxService } from "../../src/sandboxes/service";
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

/** `vars` as runCli gets them (XDG dirs decide the socket and the database). */
export function serveInprocDaemon(vars: Record<string, string | undefined>, exec: Exec): InprocDaemon {
  const env = readEnv({ vars: { USER: "tester", ...vars }, uid: process.getuid!(), gid: process.getgid!(), platform: "linux" });
  const paths = pathsFor(env);
  mkdirSync(paths.stateDir, { recursive: true });
  mkdirSync(paths.runtimeDir, { recursive: true, mode: 0o700 });
  const store = new Store(paths.dbFile);
  const events: FeedEvent[] = [];
  const controller = new Controller({ store, backends: { fake: new FakeBackend() }, guards: [], exec, paths, log: silentLogger, specFor: defaultSpecBuilder(env, paths) });
  const sessions = new SessionManager({ controller, exec, store, log: silentLogger });
  const service = new SandboxService({ exec, env, paths, store, drivers: {}, defaultKind: "docker", log: () => {} });
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
