// Test-only wiring for daemon unit tests: a temp env and paths, a Store, the sandbox service over a FakeDriver (its
// backend spied), recording guards, the daemon's guard host and sessions, and the hono app without a socket.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Backend } from "../../src/drivers/backend";
import type { SandboxSpec } from "../../src/core/spec";
import type { Sandbox } from "../../src/core/schemas";
import { createApp } from "../../src/daemon/app";
import { sandboxView } from "../../src/daemon/views";
import { GuardHost } from "../../src/daemon/guard-host";
import { daemonHost } from "../../src/daemon/host";
import type { GuardContext, SandboxGuard } from "../../src/guards/guards";
import { silentLogger } from "../../src/sys/log";
import { API_VERSION, type SandboxView } from "../../src/daemon/protocol";
import { SessionManager } from "../../src/daemon/sessions";
import { SandboxService } from "../../src/sandboxes/service";
import { PolicyService } from "../../src/policy/service";
import { Store } from "../../src/store/store";
import { readEnv, type Env } from "../../src/sys/env";
import { createExec, type Exec } from "../../src/sys/exec";
import { selfUser } from "../../src/sys/host-user";
import { pathsFor, type Paths } from "../../src/sys/paths";
import { FakeBackend } from "../fakes/backend";
import { FakeDriver } from "../fakes/driver";

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

export interface Harness<B extends Backend = FakeBackend> {
  root: string;
  env: Env;
  paths: Paths;
  store: Store;
  backend: B;
  /** The fake kind's driver ("fake"), over `backend`. */
  driver: FakeDriver<B>;
  events: Events;
  guards: GuardHost;
  service: SandboxService;
  sessions: SessionManager;
  app: ReturnType<typeof createApp>;
  exec: Exec;
  /** The daemon's view of a sandbox (`sbx status`). */
  view(row: Sandbox): SandboxView;
  /** The service's start (as every route does), then the daemon's view of it. */
  start(name: string, repo?: string): Promise<SandboxView>;
  stop(name: string, repo?: string): Promise<SandboxView>;
  close(): Promise<void>;
}

export function makeHarness<B extends Backend = FakeBackend>(
  opts: {
    guards?: (events: Events) => SandboxGuard[];
    /** The system the fake kind's driver converges (default: the in-memory FakeBackend); spied either way. */
    backend?: () => B;
    exec?: Exec;
  } = {},
): Harness<B> {
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
  const backend = spyBackend((opts.backend?.() ?? new FakeBackend()) as B, events);
  const exec = opts.exec ?? createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" });
  const driver = new FakeDriver<B>("fake", exec, paths, selfUser(env), backend);
  const guards = new GuardHost({ store, guards: opts.guards?.(events) ?? [recordingGuard("proxy", events), recordingGuard("bridge", events)], exec, paths, log: silentLogger });
  let service!: SandboxService;
  const sessions = new SessionManager({
    sandboxes: { resolve: (n, q) => service.resolve(n, q), terminalArgv: (r, q) => service.terminalArgv(r, q), hangUpSessions: (r, w) => service.hangUpSessions(r, w) },
    guards,
    exec,
    store,
    log: silentLogger,
  });
  service = new SandboxService({
    exec,
    env,
    paths,
    store,
    drivers: { fake: () => driver },
    defaultKind: "fake",
    log: () => {},
    host: daemonHost(guards, sessions),
  });
  const app = createApp({
    guards,
    service,
    sessions,
    store,
    log: silentLogger,
    backends: ["fake"],
    health: () => ({ ok: true, api: API_VERSION, pid: process.pid, version: "test", startedAt: 1, socket: paths.controlSocket }),
    policy: new PolicyService({ store, publish: () => {} }),
  });
  const view = (row: Sandbox) => sandboxView(store.getSandbox(row.id) ?? row, service, guards);
  return {
    root,
    env,
    paths,
    store,
    backend,
    driver,
    events,
    guards,
    service,
    sessions,
    app,
    exec,
    view,
    start: async (name, repo) => view(await service.start(name, repo ? { repo } : {})),
    async stop(name, repo) {
      const row = await service.resolve(name, repo ? { repo } : {});
      await service.stop(name, repo ? { repo } : {});
      return view(row);
    },
    async close() {
      await sessions.closeAll();
      await guards.close();
      store.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

export function post(h: Pick<Harness, "app">, path: string, body: unknown): Promise<Response> {
  return Promise.resolve(h.app.request(path, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } }));
}

/** A /v1/lifecycle/<verb> answer read to its end: the result, or the error body, and the notes said on the way. */
export async function lifecycle(h: Pick<Harness, "app">, verb: string, body: unknown): Promise<{ result?: unknown; error?: { error: string; message: string; hint: string; data?: unknown }; notes: string[] }> {
  const res = await post(h, `/v1/lifecycle/${verb}`, body);
  const text = await res.text();
  if (!res.headers.get("content-type")?.startsWith("application/x-sbx-lines")) return { error: JSON.parse(text), notes: [] };
  const out: { result?: unknown; error?: { error: string; message: string; hint: string; data?: unknown }; notes: string[] } = { notes: [] };
  for (const line of text.split("\n").filter((l) => l !== "")) {
    const l = JSON.parse(line) as { t: string; line?: string; result?: unknown; body?: { error: string; message: string; hint: string; data?: unknown } };
    if (l.t === "log") out.notes.push(l.line!);
    else if (l.t === "done") out.result = l.result;
    else if (l.t === "error") out.error = l.body!;
  }
  return out;
}
