// The daemon's production wiring for linux-user sandboxes, in process: productionComponents, the guard host and the one SandboxService with the daemon as its host, over a private root, nft table and state dir.
import { mkdirSync } from "node:fs";
import type { SandboxSpec } from "../../../src/core/spec";
import { defaultRuntime } from "../../../src/drivers/docker/docker";
import { LinuxUserBackend } from "../../../src/drivers/linux-user/backend";
import type { Sandbox } from "../../../src/core/schemas";
import { sandboxView } from "../../../src/daemon/views";
import { GuardHost } from "../../../src/daemon/guard-host";
import { daemonHost } from "../../../src/daemon/host";
import { SessionManager } from "../../../src/daemon/sessions";
import type { SandboxView } from "../../../src/daemon/protocol";
import { createLogger } from "../../../src/sys/log";
import { productionComponents, type Components } from "../../../src/daemon/main";
import { UserAccountDriver } from "../../../src/drivers/user-account";
import { hostUserExec } from "../../../src/sys/as-user";
import { hostUserOf, userDirectory } from "../../../src/sys/host-user";
import { SandboxService } from "../../../src/sandboxes/service";
import { Store } from "../../../src/store/store";
import { processEnv, type Env } from "../../../src/sys/env";
import { createExec } from "../../../src/sys/exec";
import type { Paths } from "../../../src/sys/paths";
import { createEventBus } from "../../../src/events/feed";
import type { World } from "./harness";

export interface DaemonWorld {
  paths: Paths;
  env: Env;
  store: Store;
  backend: LinuxUserBackend;
  comps: Components;
  /** The daemon's guards' bookkeeping. */
  guards: GuardHost;
  /** The daemon's view of a sandbox (`sbx status`). */
  view(row: Sandbox): SandboxView;
  /** The one sandbox service, with the linux-user driver as the default kind. */
  users: SandboxService;
  logs: string[];
  /** The kernel-log audit service as the daemon starts it (poll() exposed for tests). */
  kernelLog: { stop(): Promise<void>; poll(): Promise<number> };
  spec(row: Sandbox): SandboxSpec;
  /** Runs a bash script as the sandbox's guest through the backend's own shellArgv (a login shell: rc files apply). */
  asGuest(row: Sandbox, script: string, timeoutS?: number): Promise<{ code: number; out: string; err: string }>;
  /** The same, as a new session: with the variables a session gets for the secrets bound to hosts. */
  asGuestSession(row: Sandbox, script: string, timeoutS?: number): Promise<{ code: number; out: string; err: string }>;
  close(): Promise<void>;
}

/** `extraEnv`: more of the daemon's environment (a test seam such as SBX_TEST_ONLY_RESOLVE). */
export async function makeDaemonWorld(w: World, extraEnv: Record<string, string> = {}): Promise<DaemonWorld> {
  const tmp = `/tmp/sbx-e2e-${w.tag}`;
  mkdirSync(tmp, { recursive: true, mode: 0o711 });
  const paths: Paths = {
    stateDir: `${tmp}/state`,
    configDir: `${tmp}/config`,
    cacheDir: `${tmp}/cache`,
    sandboxRoot: `${tmp}/cache/sandbox`,
    agentsDir: `${tmp}/cache/sbx/agents`,
    runtimeDir: `${tmp}/rt`,
    dbFile: `${tmp}/state/sbx.db`,
    configFile: `${tmp}/config/config.json`,
    daemonLog: `${tmp}/state/daemon.log`,
    controlSocket: `${tmp}/rt/control.sock`,
  };
  for (const d of [paths.stateDir, paths.configDir, paths.runtimeDir]) mkdirSync(d, { recursive: true, mode: 0o700 });
  const base = processEnv();
  // As under `sudo sbx …`: the daemon is root, the sandbox belongs to the invoking (test) user.
  const env: Env = { ...base, raw: { ...base.raw, SUDO_UID: String(w.host.uid), SUDO_GID: String(w.host.gid), SUDO_USER: w.host.name, ...extraEnv } };
  const exec = createExec(process.env as Record<string, string>);
  const logs: string[] = [];
  const log = createLogger((l) => void logs.push(l), "debug");
  const store = new Store(paths.dbFile);
  const backend = new LinuxUserBackend({ exec, root: w.root, table: w.table, runtimeDir: paths.runtimeDir, runtime: defaultRuntime(), warn: (m) => void logs.push(m) });
  const person = await hostUserOf(env, userDirectory(exec, "linux"));
  const comps = await productionComponents({ env, paths, exec, log, store, events: createEventBus(() => {}) }, { linuxUser: backend });
  const guards = new GuardHost({ store, guards: comps.guards, exec, paths, log });
  let users!: SandboxService;
  const sessions = new SessionManager({ sandboxes: { resolve: (n, q) => users.resolve(n, q), terminalArgv: (r, q) => users.terminalArgv(r, q) }, guards, exec, store, log });
  users = new SandboxService({
    exec,
    env,
    paths,
    store,
    drivers: { "linux-user": () => new UserAccountDriver({ exec, env, paths, backend, hostUser: person }) },
    defaultKind: "linux-user",
    // As the CLI under sudo does: the repo is found by git run as its owner.
    repoExec: hostUserExec(exec, person, env.uid),
    log: (l) => void logs.push(l),
    logger: log,
    host: daemonHost(guards, sessions),
    ...(comps.bound ? { secrets: { session: (id: number) => comps.bound!.sessionSecrets(id) } } : {}),
  });
  await users.fence();
  // The kernel-log audit as the daemon starts it: the linux-user driver's one watcher.
  const [kernelLog] = (await users.watch({ log, blocked: () => {}, notify: () => {} })) as [DaemonWorld["kernelLog"]];
  const spec = (row: Sandbox) => comps.drivers["linux-user"]!.spec(store.getSandbox(row.id) ?? row);
  const runAsGuest = async (row: Sandbox, script: string, timeoutS: number, env: Record<string, string>) => {
    const argv = backend.shellArgv(spec(row), { argv: ["timeout", String(timeoutS), "bash", "-c", script], cwd: row.repo, tty: false, env });
    const p = Bun.spawn(argv, { stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    return { code, out, err };
  };
  return {
    paths,
    env,
    store,
    backend,
    comps,
    guards,
    view: (row) => sandboxView(store.getSandbox(row.id) ?? row, users, guards),
    users,
    logs,
    kernelLog,
    spec,
    asGuest: (row, script, timeoutS = 10) => runAsGuest(row, script, timeoutS, {}),
    asGuestSession: async (row, script, timeoutS = 10) => runAsGuest(row, script, timeoutS, await users.secretEnv(store.getSandbox(row.id) ?? row)),
    async close() {
      await kernelLog.stop();
      await sessions.closeAll();
      await guards.close();
      store.close();
    },
  };
}
