// Test-only wiring for daemon unit tests: a temp env and paths, a Store, FakeBackend, recording guards, and the hono app without a socket.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Backend } from "../../src/drivers/backend";
import type { SandboxSpec } from "../../src/core/spec";
import { createApp } from "../../src/daemon/app";
import { Controller, type Backends, type ControllerDeps } from "../../src/daemon/controller";
import type { GuardContext, SandboxGuard } from "../../src/guards/guards";
import { silentLogger } from "../../src/sys/log";
import { API_VERSION } from "../../src/daemon/protocol";
import { SessionManager } from "../../src/daemon/sessions";
import { defaultSpecBuilder } from "../../src/daemon/spec";
import { Store } from "../../src/store/store";
import { readEnv, type Env } from "../../src/sys/env";
import { createExec, type Exec } from "../../src/sys/exec";
import { pathsFor, type Paths } from "../../src/sys/paths";
import { FakeBackend } from "../fakes/backend";

/** One ordered record of what happened, shared by guards and the backend spy: proves "guards before apply". */
export type Events = string[];

export function recordingGuard(name: string, events: Events, opts: { fail?: () => boolean; healthy?: () => boolean } = {}): SandboxGuard & { contexts: GuardContext[] } {
  const contexts: GuardContext[] = [];
  return {
    name,
    contexts,
    async start(ctx) {
      if (opts.fail?.()) {
        events.push(`${name}.fail ${ctx.sandbox.name}`);
        throw new Error(`${name} cannot start`);
      }
      contexts.push(ctx);
      events.push(`${name}.start ${ctx.sandbox.name}`);
      return {
        health: () => (opts.healthy?.() ?? true ? { ok: true, detail: "up" } : { ok: false, detail: "socket gone" }),
        async stop() {
          events.push(`${name}.stop ${ctx.sandbox.name}`);
        },
      };
    },
  };
}

/** Wraps a backend so its calls land in the same event list as the guards'. */
export function spyBackend<B extends Backend>(b: B, events: Events): B {
  return new Proxy(b, {
    get(target, prop, recv) {
      const v = Reflect.get(target, prop, recv);
      if (typeof v !== "function" || !["apply", "stop", "remove", "cleanup", "list"].includes(String(prop))) return v;
      return (...args: unknown[]) => {
        const spec = args[0] as SandboxSpec | undefined;
        events.push(`backend.${String(prop)}${spec && typeof spec === "object" && "name" in spec ? ` ${spec.name}` : ""}`);
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

export interface Harness {
  root: string;
  env: Env;
  paths: Paths;
  store: Store;
  backend: FakeBackend;
  events: Events;
  controller: Controller;
  sessions: SessionManager;
  app: ReturnType<typeof createApp>;
  exec: Exec;
  close(): Promise<void>;
}

export function makeHarness(
  opts: {
    guards?: (events: Events) => SandboxGuard[];
    backends?: (b: FakeBackend) => Backends;
    exec?: Exec;
    bringUp?: (events: Events) => ControllerDeps["bringUp"];
    prepareRun?: (events: Events) => ControllerDeps["prepareRun"];
  } = {},
): Harness {
  const root = mkdtempSync(join(tmpdir(), "sbxd-"));
  const env = readEnv({
    vars: { HOME: join(root, "home"), XDG_RUNTIME_DIR: join(root, "rt"), XDG_STATE_HOME: join(root, "state"), XDG_CACHE_HOME: join(root, "cache"), PATH: process.env.PATH },
    uid: process.getuid!(),
    gid: process.getgid!(),
    platform: "linux",
  });
  const paths = pathsFor(env);
  const store = new Store(":memory:");
  const events: Events = [];
  const backend = spyBackend(new FakeBackend(), events);
  const exec = opts.exec ?? createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" });
  const controller = new Controller({
    store,
    backends: opts.backends?.(backend) ?? { fake: backend },
    guards: opts.guards?.(events) ?? [recordingGuard("proxy", events), recordingGuard("bridge", events)],
    exec,
    paths,
    log: silentLogger,
    specFor: defaultSpecBuilder(env, paths),
    ...(opts.bringUp ? { bringUp: opts.bringUp(events) } : {}),
    ...(opts.prepareRun ? { prepareRun: opts.prepareRun(events) } : {}),
  });
  const sessions = new SessionManager({ controller, exec, store, log: silentLogger });
  const app = createApp({
    controller,
    sessions,
    store,
    log: silentLogger,
    backends: ["fake"],
    health: () => ({ ok: true, api: API_VERSION, pid: process.pid, version: "test", startedAt: 1, socket: paths.controlSocket }),
  });
  return {
    root,
    env,
    paths,
    store,
    backend,
    events,
    controller,
    sessions,
    app,
    exec,
    async close() {
      await sessions.closeAll();
      await controller.close();
      store.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

export function post(h: Harness, path: string, body: unknown): Promise<Response> {
  return Promise.resolve(h.app.request(path, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } }));
}
