// The sandbox service behind the control socket (/v1/lifecycle/*): lines as the work goes, guards before the sandbox
// runs, a caller that goes away leaves nothing half-made, refusals arrive whole, and a staged clone is only ever one.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createApp } from "../../../src/daemon/app";
import { sandboxView } from "../../../src/daemon/views";
import { GuardHost } from "../../../src/daemon/guard-host";
import { daemonHost } from "../../../src/daemon/host";
import { LifecycleLineSchema, type LifecycleLine } from "../../../src/daemon/protocol";
import { SessionManager } from "../../../src/daemon/sessions";
import { SandboxService } from "../../../src/sandboxes/service";
import type { Sandbox } from "../../../src/core/schemas";
import type { Store } from "../../../src/store/store";
import { sandboxDir, type Paths } from "../../../src/sys/paths";
import { stagingRoot } from "../../../src/workspace/staged-clone";
import { FakeDriver, fakeServices } from "../../fakes/driver";
import type { ServiceView } from "../../../src/core/services";
import { tempWorld, type TempWorld } from "../../support/temp-world";
import { silentLogger } from "../../../src/sys/log";
import { recordingGuard, type Events } from "../../support/daemon-harness";

let w: TempWorld;
let repo: string;
let paths: Paths;
let store: Store;
let driver: FakeDriver;
let events: Events;
let guards: GuardHost;
let service: SandboxService;
let sessions: SessionManager;
let app: ReturnType<typeof createApp>;
const git = (cwd: string, ...args: string[]) => w.git(cwd, ...args);
const view = (row: Sandbox) => sandboxView(row, service, guards);

beforeEach(async () => {
  w = await tempWorld({});
  ({ repo, paths, store } = w);
  const { env, exec } = w;
  events = [];
  driver = new FakeDriver("fake", exec, paths, { name: "t", uid: env.uid, gid: env.gid, home: env.vars.HOME, shell: "/bin/sh" });
  driver.trace = events;
  guards = new GuardHost({ store, guards: [recordingGuard("proxy", events), recordingGuard("bridge", events)], exec, paths, log: silentLogger });
  // Sessions run under a stand-in PTY: a process that lives until it is signalled (then exits 129, as on SIGHUP).
  const terminalExec = {
    run: exec.run.bind(exec),
    terminal: () => {
      let end!: (code: number) => void;
      const exited = new Promise<number>((r) => (end = r));
      return { pid: 4242, exited, write() {}, resize() {}, kill: () => end(129) };
    },
  };
  sessions = new SessionManager({ sandboxes: { resolve: (n, q) => service.resolve(n, q), terminalArgv: (r, q) => service.terminalArgv(r, q) }, guards, exec: terminalExec, store, log: silentLogger });
  service = new SandboxService({ exec, env, paths, store, drivers: { fake: () => driver }, defaultKind: "fake", log: () => {}, host: daemonHost(guards, sessions) });
  app = createApp({
    guards,
    sessions,
    store,
    log: silentLogger,
    backends: ["fake"],
    health: () => ({ ok: true, api: 1, pid: process.pid, version: "test", startedAt: 1, socket: paths.controlSocket }),
    service,
    paths,
  });
});

afterEach(async () => {
  await sessions.closeAll();
  await guards.close();
  w.close();
});

async function call(verb: string, body: unknown): Promise<LifecycleLine[]> {
  const res = await app.request(`/v1/lifecycle/${verb}`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });
  const text = await res.text();
  return text.split("\n").filter((l) => l !== "").map((l) => LifecycleLineSchema.parse(JSON.parse(l)));
}

const last = (lines: LifecycleLine[]) => lines[lines.length - 1]!;

describe("/v1/lifecycle", () => {
  test("create answers the stored sandbox, running, with every guard up before the sandbox started", async () => {
    const lines = await call("create", { name: "w", cwd: repo });
    const end = last(lines);
    expect(end.t).toBe("done");
    expect((end as { result: { sandbox: { name: string }; created: boolean } }).result).toMatchObject({ sandbox: { name: "w" }, created: true });
    // The container's seed runs beside the guards (its steps left out here); the start comes after them all.
    expect(events.filter((e) => !e.startsWith("driver.seed")).slice(0, 3)).toEqual(["proxy.start w", "bridge.start w", "driver.ensureRunning w"]);
    expect(view(store.findSandbox(repo, "w")!).guarded).toBe(true);
  });

  test("a create whose caller goes away leaves no live row, no sandbox dir and nothing in the backend", async () => {
    let open!: () => void;
    driver.provisionGate = new Promise((r) => (open = r));
    const res = await app.request("/v1/lifecycle/create", { method: "POST", body: JSON.stringify({ name: "gone", cwd: repo }), headers: { "content-type": "application/json" } });
    // The caller reads nothing more and hangs up while the clone is under way.
    await res.body!.cancel();
    open();
    const rowOf = () => store.listSandboxes({ all: true }).find((r) => r.name === "gone");
    const dir = sandboxDir(paths, await git(repo, "rev-parse", "--show-toplevel"), "gone");
    // The daemon finishes the step under way, then removes what it made, its row too: wait (bounded) for the end of that.
    for (let i = 0; i < 300 && (rowOf() !== undefined || existsSync(dir)); i++) await Bun.sleep(10);
    expect(rowOf()).toBeUndefined();
    expect(existsSync(dir)).toBe(false);
    expect(driver.backend.entries.size).toBe(0);
  });

  test("rm's refusal of unsynced work arrives as the error line, with the commits as data", async () => {
    await call("create", { name: "w", cwd: repo });
    const clone = join(String(store.findSandbox(repo, "w")!.identity.dir), "clone");
    await git(clone, "commit", "-q", "--allow-empty", "-m", "made inside");
    const sha = await git(clone, "rev-parse", "HEAD");
    const end = last(await call("rm", { name: "w", cwd: repo }));
    expect(end).toMatchObject({ t: "error", body: { error: "unsynced_commits", data: { commits: [{ sha, subject: "made inside" }] } } });
    expect(store.findSandbox(repo, "w")).not.toBeNull();
  });

  test("stop and rm with sessions open: refused while asked to, then each terminal is told why and the caller how many ended", async () => {
    await call("create", { name: "w", cwd: repo });
    const opened = await sessions.create({ name: "w", repo: await git(repo, "rev-parse", "--show-toplevel"), argv: [], cwd: repo, cols: 80, rows: 24, env: {} });
    let screen = "";
    const frames: unknown[] = [];
    sessions.attach(opened.id, { sendData: (d) => void (screen += new TextDecoder().decode(d)), sendFrame: (f) => void frames.push(f), close() {} });
    const refused = last(await call("stop", { name: "w", cwd: repo, ifSessions: "refuse" }));
    expect(refused).toMatchObject({ t: "error", body: { error: "conflict", data: { sessions: 1 } } });
    expect(view(store.findSandbox(repo, "w")!).phase).toBe("running");
    expect(screen).toBe("");
    const stopped = last(await call("stop", { name: "w", cwd: repo }));
    expect(stopped).toMatchObject({ t: "done", result: { changed: true, sessions: 1 } });
    expect(screen).toContain("sbx: sandbox w is being stopped (sbx stop); this session ends.");
    // rm of a sandbox with none open ends none, and refuses nothing.
    expect(last(await call("rm", { name: "w", cwd: repo, ifSessions: "refuse" }))).toMatchObject({ t: "done", result: { lost: [], sessions: 0 } });
  });

  test("a staged clone is taken only from directly under the staging root: other paths, links and traversal are refused", async () => {
    mkdirSync(stagingRoot(paths), { recursive: true });
    const outside = join(w.root, "elsewhere", "123-abc");
    mkdirSync(outside, { recursive: true });
    symlinkSync(outside, join(stagingRoot(paths), "124-link"));
    writeFileSync(join(outside, ".repo"), repo);
    for (const staged of [outside, join(stagingRoot(paths), "124-link"), join(stagingRoot(paths), "..", "elsewhere", "123-abc"), join(stagingRoot(paths), "notapid")]) {
      const res = await app.request("/v1/lifecycle/create", { method: "POST", body: JSON.stringify({ name: "s", cwd: repo, staged }), headers: { "content-type": "application/json" } });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { message: string }).message).toContain("not a staged clone");
    }
    expect(existsSync(outside)).toBe(true);
    expect(store.findSandbox(repo, "s")).toBeNull();
  });

  test("list answers every sandbox with the daemon's view of its guards", async () => {
    await call("create", { name: "a", cwd: repo });
    const end = last(await call("list", {}));
    expect(end).toMatchObject({ t: "done", result: { sandboxes: [{ name: "a", backend: "fake", phase: "running", guarded: true, unsynced: [] }] } });
  });
});

describe("/v1/lifecycle/services: sbx services is one daemon call, as every verb", () => {
  const svc = (name: string, o: Partial<ServiceView> = {}): ServiceView => ({ name, image: `${name}-img:1`, container: `c-${name}`, state: "running", health: "healthy", exitCode: 0, ...o });

  test("list, a service's logs (its last lines), restart while it runs (audited); an unknown service names the ones there are", async () => {
    await call("create", { name: "w", cwd: repo });
    const id = driver.spec(store.findSandbox(repo, "w")!).id;
    const output = new Map([["c-db", Array.from({ length: 300 }, (_, i) => `line ${i}`).join("\n")]]);
    const ops = fakeServices(driver.backend, new Map([[id, [svc("cache", { health: "none" }), svc("db")]]]), output);
    driver.services = ops;
    expect(last(await call("services", { name: "w", cwd: repo }))).toMatchObject({ t: "done", result: { name: "w", services: [{ name: "cache" }, { name: "db", state: "running", health: "healthy" }] } });
    const logs = last(await call("services", { name: "w", cwd: repo, action: "logs", service: "db", tail: 2 })) as { result: { logs: string } };
    expect(logs.result.logs).toBe("line 298\nline 299");
    expect(last(await call("services", { name: "w", cwd: repo, action: "restart", service: "db" }))).toMatchObject({ t: "done", result: { restarted: "db" } });
    expect(ops.restarts).toEqual(["c-db"]);
    expect(store.listAudit({ kind: "lifecycle" }).map((a) => a.action)).toContain("service.restart");
    expect(last(await call("services", { name: "w", cwd: repo, action: "logs", service: "nope" }))).toMatchObject({ t: "error", body: { error: "not_found", hint: "Its services: cache, db." } });
  });

  test("restart of a stopped sandbox's service is refused with what to do (its namespace is the sandbox's), and nothing is restarted", async () => {
    await call("create", { name: "w", cwd: repo });
    const id = driver.spec(store.findSandbox(repo, "w")!).id;
    const ops = fakeServices(driver.backend, new Map([[id, [svc("db")]]]));
    driver.services = ops;
    await call("stop", { name: "w", cwd: repo });
    expect(last(await call("services", { name: "w", cwd: repo }))).toMatchObject({ t: "done", result: { services: [{ name: "db", state: "exited", exitCode: 137 }] } });
    expect(last(await call("services", { name: "w", cwd: repo, action: "restart", service: "db" }))).toMatchObject({ t: "error", body: { error: "usage", message: expect.stringMatching(/is not running/) } });
    expect(ops.restarts).toEqual([]);
  });

  test("a kind without services: the list is empty, logs and restart say which kind has them; a bad request is refused by the schema", async () => {
    await call("create", { name: "w", cwd: repo });
    expect(last(await call("services", { name: "w", cwd: repo }))).toMatchObject({ t: "done", result: { services: [] } });
    expect(last(await call("services", { name: "w", cwd: repo, action: "logs", service: "db" }))).toMatchObject({ t: "error", body: { message: expect.stringMatching(/has no services/) } });
    for (const bad of [{ action: "rm", service: "db" }, { action: "logs", service: "../db" }, { action: "logs", service: "db", tail: 1e9 }]) {
      const res = await app.request("/v1/lifecycle/services", { method: "POST", body: JSON.stringify({ name: "w", cwd: repo, ...bad }), headers: { "content-type": "application/json" } });
      expect({ bad, status: res.status }).toEqual({ bad, status: 400 });
    }
  });
});
