// Test-only: the daemon's control API served in this process on the socket the CLI's paths name, so CLI verbs run
// in-process (runCli) reach a real app over a real socket: the store, the sandbox service (repo lookup through the
// given Exec) and the policy service, over an in-memory fake backend.
import { mkdirSync } from "node:fs";
import { createApp } from "../../src/daemon/app";
import { GuardHost } from "../../src/daemon/guard-host";
import { daemonHost } from "../../src/daemon/host";
import { silentLogger } from "../../src/sys/log";
import { API_VERSION } from "../../src/daemon/protocol";
import { serveControl, type ControlServer } from "../../src/daemon/server";
import { SessionManager } from "../../src/daemon/sessions";
import { PolicyService } from "../../src/policy/service";
import type { BackendKind } from "../../src/core/schemas";
import type { Driver } from "../../src/drivers/driver";
import { SandboxService, type DriverTable } from "../../src/sandboxes/service";
import { Store } from "../../src/store/store";
import { readEnv } from "../../src/sys/env";
import type { Exec } from "../../src/sys/exec";
import { selfUser } from "../../src/sys/host-user";
import { pathsFor } from "../../src/sys/paths";
import type { FeedEvent } from "../../src/events/feed";
import { FakeDriver } from "../fakes/driver";

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
  // As the daemon composes them (daemon.ts): the one service over the drivers, the daemon's guards (none here) and
  // sessions as its host. A row a test puts in the store by hand is of the fake kind, which runs on an in-memory backend.
  const drivers: Partial<Record<BackendKind, Driver>> = { fake: new FakeDriver("fake", exec, paths, selfUser(env)), ...(opts.drivers ?? {}) };
  const table: DriverTable = Object.fromEntries(Object.entries(drivers).map(([k, d]) => [k, () => d]));
  const guards = new GuardHost({ store, guards: [], exec, paths, log: silentLogger });
  let service!: SandboxService;
  const sessions = new SessionManager({ sandboxes: { resolve: (n, q) => service.resolve(n, q), terminalArgv: (r, q) => service.terminalArgv(r, q), hangUpSessions: (r, w) => service.hangUpSessions(r, w) }, guards, exec, store, log: silentLogger });
  service = new SandboxService({ exec, env, paths, store, drivers: table, defaultKind: "docker", log: () => {}, host: daemonHost(guards, sessions) });
  const app = createApp({
    guards,
    sessions,
    store,
    log: silentLogger,
    backends: Object.keys(drivers),
    health: () => ({ ok: true, api: API_VERSION, pid: process.pid, version: "test", startedAt: 1, socket: paths.controlSocket }),
    service,
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
      await guards.close();
      store.close();
    },
  };
}
