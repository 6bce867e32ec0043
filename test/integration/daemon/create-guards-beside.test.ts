// A new sandbox's guards come up beside the making of its container (its seed), never after the sandbox starts: nothing
// runs before every guard is up, and a create that fails at any of the steps running at once leaves nothing behind
// (no guard serving, no socket, no gate, no container, no row, the earlier sandbox's refs where they were) and nothing
// in the way of the next. The proxy and bridge guards are the real ones (their sockets, the bridge's gate repo); the
// driver is the fake that models Docker's provision (clone, then the host ready, then the container made and seeded).
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { SbxError } from "../../../src/core/errors";
import { GuardHost } from "../../../src/daemon/guard-host";
import { daemonHost } from "../../../src/daemon/host";
import { SessionManager } from "../../../src/daemon/sessions";
import { sandboxView } from "../../../src/daemon/views";
import { bridgeGuard } from "../../../src/guards/bridge";
import type { GuardContext, SandboxGuard } from "../../../src/guards/guards";
import { proxyGuard } from "../../../src/guards/proxy";
import { SandboxService } from "../../../src/sandboxes/service";
import { silentLogger } from "../../../src/sys/log";
import { FakeDriver } from "../../fakes/driver";
import { tempWorld, type TempWorld } from "../../support/temp-world";

let w: TempWorld;
let driver: FakeDriver;
let guards: GuardHost;
let service: SandboxService;
let sessions: SessionManager;
let events: string[];
const late = { gate: null as Promise<void> | null, fail: null as Error | null, contexts: [] as GuardContext[], stops: 0, onHostWork: null as ((ctx: GuardContext) => Promise<void>) | null };

/** The last guard, as slow or as failing as a test makes it: it says when it begins, when it is up, when it stops. */
const lateGuard: SandboxGuard = {
  name: "late",
  async start(ctx) {
    events.push(`late.begin ${ctx.sandbox.name}`);
    late.contexts.push(ctx);
    if (late.onHostWork) {
      // As ref sync's guard does: what it reads and writes of the host repo's sandbox refs is there once this settles.
      await ctx.hostWork;
      await late.onHostWork(ctx);
    }
    if (late.gate) await late.gate;
    if (late.fail) {
      const e = late.fail;
      late.fail = null;
      events.push(`late.fail ${ctx.sandbox.name}`);
      throw e;
    }
    events.push(`late.up ${ctx.sandbox.name}`);
    return {
      health: () => ({ ok: true, detail: "up" }),
      async stop() {
        late.stops++;
        events.push(`late.stop ${ctx.sandbox.name}`);
      },
    };
  },
};

beforeEach(async () => {
  w = await tempWorld();
  events = [];
  Object.assign(late, { gate: null, fail: null, contexts: [], stops: 0, onHostWork: null });
  driver = new FakeDriver("fake", w.exec, w.paths, w.host);
  driver.trace = events;
  const path = process.env.PATH ?? "/usr/bin:/bin";
  guards = new GuardHost({ store: w.store, guards: [proxyGuard({ resolve: async () => [] }), bridgeGuard({ secrets: () => ({}), path }), lateGuard], exec: w.exec, paths: w.paths, log: silentLogger });
  sessions = new SessionManager({ sandboxes: { resolve: (n, q) => service.resolve(n, q), terminalArgv: (r, q) => service.terminalArgv(r, q) }, guards, exec: w.exec, store: w.store, log: silentLogger });
  service = new SandboxService({ exec: w.exec, env: w.env, paths: w.paths, store: w.store, drivers: { fake: () => driver }, defaultKind: "fake", log: () => {}, host: daemonHost(guards, sessions) });
});

afterEach(async () => {
  await sessions.closeAll();
  await guards.close();
  w.close();
});

/** Waits (bounded) until `what` has happened; fails naming what never did and what did. */
async function until(what: string, ms = 5000): Promise<void> {
  for (const end = Date.now() + ms; Date.now() < end; ) {
    if (events.includes(what)) return;
    await Bun.sleep(5);
  }
  throw new Error(`never happened: ${what} (events: ${events.join(", ")})`);
}

/** Whether anything answers on a unix socket. */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ path });
    s.on("connect", () => (s.destroy(), resolve(true)));
    s.on("error", () => resolve(false));
  });
}

function tree(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true }).map(String).sort();
}

describe("guards-before-run: a new sandbox's guards come up beside its container's seed", () => {
  test("the guards are raised while the container is still being seeded, and the sandbox starts only once every guard is up", async () => {
    let seeded!: () => void;
    let lateUp!: () => void;
    driver.seedGate = new Promise((r) => (seeded = r));
    late.gate = new Promise((r) => (lateUp = r));
    const made = service.create({ name: "w", cwd: w.repo });
    made.catch(() => undefined);
    // The proxy and bridge are up (the guards start in order) and the last one begins while the seed still runs.
    await until("late.begin w");
    expect(events).toContain("driver.seed w");
    expect(events).not.toContain("driver.seeded w");
    const sockets = late.contexts[0]!.sockets;
    expect(await answers(sockets.proxy)).toBe(true);
    expect(await answers(sockets.bridge)).toBe(true);
    // The seed ends before the last guard is up: the sandbox still does not start.
    seeded();
    await until("driver.seeded w");
    await Bun.sleep(50);
    expect(events).not.toContain("driver.ensureRunning w");
    lateUp();
    const { sandbox, created } = await made;
    expect(created).toBe(true);
    expect(events.indexOf("late.up w")).toBeLessThan(events.indexOf("driver.ensureRunning w"));
    expect(sandboxView(w.store.getSandbox(sandbox.id)!, service, guards).guarded).toBe(true);
    // Raised once: the start of the create's bring-up found them up and started none again.
    expect(events.filter((e) => e === "late.begin w")).toHaveLength(1);
  });
});

describe("nothing-lost: a guard that syncs refs comes up after the new sandbox's store and the set-aside", () => {
  test("once the create's host work settled, the store is there and the earlier sandbox's refs are kept aside", async () => {
    await service.create({ name: "again", cwd: w.repo });
    const clone = join(String(w.store.findSandbox(w.repo, "again")!.identity.dir), "clone");
    await w.git(clone, "commit", "-q", "--allow-empty", "-m", "earlier work");
    await service.rm("again", { cwd: w.repo, force: true });
    const seen: { handed: boolean; sandboxRefs: string; retired: string; store: boolean }[] = [];
    late.onHostWork = async (ctx) => {
      seen.push({
        // The create hands its host work to the guards (they come up while it may still run: the store takes a dozen
        // processes, the clone fewer).
        handed: ctx.hostWork instanceof Promise,
        sandboxRefs: await w.git(w.repo, "for-each-ref", "--format=%(refname)", "refs/remotes/sandbox-again/"),
        retired: await w.git(w.repo, "for-each-ref", "--format=%(refname)", "refs/sbx-retired/again/"),
        store: existsSync(join(w.repo, ".git", "sbx", "again.git", "objects", "info", "alternates")),
      });
    };
    await service.create({ name: "again", cwd: w.repo });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.handed).toBe(true);
    expect(seen[0]!.sandboxRefs).toBe("");
    expect(seen[0]!.retired).toMatch(/^refs\/sbx-retired\/again\/\d{8}T\d{6}Z\/main$/m);
    expect(seen[0]!.store).toBe(true);
  });
});

describe("gone-when-removed: a create that fails at any step running beside the others leaves nothing behind", () => {
  test("clone, seed (guards still coming up, or up), a guard, the caller gone: each leaves the host as it was, and the name free", async () => {
    const git = (cwd: string, ...args: string[]) => w.git(cwd, ...args);
    // An earlier sandbox of the same name left its branch on the host (rm --force keeps sandbox-bad/*).
    await service.create({ name: "bad", cwd: w.repo });
    const clone = join(String(w.store.findSandbox(w.repo, "bad")!.identity.dir), "clone");
    await git(clone, "commit", "-q", "--allow-empty", "-m", "earlier work");
    await service.rm("bad", { cwd: w.repo, force: true });
    expect(await git(w.repo, "for-each-ref", "--format=%(refname)", "refs/remotes/sandbox-bad/")).toContain("refs/remotes/sandbox-bad/main");
    const snapshot = async () => ({
      rows: w.store.listSandboxes({ all: true }).map((r) => ({ ...r, updatedAt: 0 })),
      refs: await git(w.repo, "for-each-ref", "--format=%(refname) %(objectname)"),
      config: await git(w.repo, "config", "--local", "--list"),
      dirs: tree(w.paths.sandboxRoot),
      sockets: tree(join(w.paths.runtimeDir, "sb")),
      engine: [...driver.backend.entries.keys()],
    });
    const before = await snapshot();
    const create = () => service.create({ name: "bad", cwd: w.repo });
    const points: [string, () => Promise<unknown>][] = [
      ["the clone (before the host is ready: no guard raised)", () => ((driver.failProvision = new SbxError("exec_failed", "git clone failed")), create())],
      ["the seed, while the last guard is still coming up", async () => {
        let open!: () => void;
        late.gate = new Promise((r) => (open = r));
        driver.failSeed = new SbxError("unavailable", "the engine's archive write failed");
        const p = create();
        p.catch(() => undefined);
        await until("late.begin bad");
        // The seed has failed by now; the create must wait for the guard under way, then lower them all.
        await Bun.sleep(30);
        open();
        try {
          return await p;
        } finally {
          late.gate = null;
        }
      }],
      ["the seed, once every guard is up", async () => {
        let open!: () => void;
        driver.seedGate = new Promise((r) => (open = r));
        driver.failSeed = new SbxError("unavailable", "the engine's archive write failed");
        const p = create();
        p.catch(() => undefined);
        await until("late.up bad");
        open();
        try {
          return await p;
        } finally {
          driver.seedGate = null;
        }
      }],
      ["a guard, while the seed is still under way", async () => {
        let open!: () => void;
        driver.seedGate = new Promise((r) => (open = r));
        late.fail = new Error("the late guard cannot start");
        const p = create();
        p.catch(() => undefined);
        await until("late.fail bad");
        open();
        try {
          return await p;
        } finally {
          driver.seedGate = null;
        }
      }],
      ["its caller gone while the guards come up", async () => {
        let open!: () => void;
        late.gate = new Promise((r) => (open = r));
        const gone = new AbortController();
        const p = service.create({ name: "bad", cwd: w.repo, signal: gone.signal });
        p.catch(() => undefined);
        await until("late.begin bad");
        gone.abort();
        open();
        try {
          return await p;
        } finally {
          late.gate = null;
        }
      }],
    ];
    for (const [point, fail] of points) {
      events.length = 0;
      late.contexts = [];
      late.stops = 0;
      const err = await fail().then(() => null, (e: unknown) => e as Error);
      expect({ point, failed: err?.message ?? null }).toEqual({ point, failed: expect.any(String) });
      // Every guard that came up is down again, and nothing answers where they served.
      expect({ point, stopped: late.stops }).toEqual({ point, stopped: events.filter((e) => e === "late.up bad").length });
      for (const c of late.contexts) {
        expect({ point, proxy: await answers(c.sockets.proxy), bridge: await answers(c.sockets.bridge) }).toEqual({ point, proxy: false, bridge: false });
      }
      expect({ point, after: await snapshot() }).toEqual({ point, after: before });
    }
    // The name is free again: a good create takes it, guarded, and the earlier sandbox's branch is kept aside.
    const { sandbox } = await create();
    expect(sandboxView(w.store.getSandbox(sandbox.id)!, service, guards).guarded).toBe(true);
    expect(await git(w.repo, "for-each-ref", "--format=%(refname)", "refs/sbx-retired/")).toMatch(/^refs\/sbx-retired\/bad\/\d{8}T\d{6}Z\/main$/m);
    // Seven creates in a row, each with its git work: 3 s on a machine at load 4, past bun's 5 s default under load.
  }, 30_000);

  test("each failure says what failed: the step's own error, or the guard's, with what to do", async () => {
    driver.failSeed = new SbxError("unavailable", "the engine's archive write failed", { hint: "Is the engine running?" });
    const seed = await service.create({ name: "x", cwd: w.repo }).then(() => null, (e: unknown) => e as SbxError);
    expect(seed?.message).toBe("the engine's archive write failed");
    expect(seed?.hint).toBe("Is the engine running?");
    late.fail = new Error("port 4000 is taken");
    const guard = await service.create({ name: "x", cwd: w.repo }).then(() => null, (e: unknown) => e as SbxError);
    expect(guard?.message).toContain("guard 'late' failed to start: port 4000 is taken");
    expect(guard?.hint).toMatch(/sbx run/);
  });
});

describe("gone-when-removed: the guard host lets go of a sandbox only once its guards settled", () => {
  test("a release while its guards are coming up waits for them, then stops every one (none left serving)", async () => {
    const row = w.store.createSandbox({ name: "r", repo: w.repo, backend: "fake", identity: { id: "abcdef012345", dir: join(w.root, "sbdir") } });
    const spec = driver.spec(row);
    let open!: () => void;
    late.gate = new Promise((r) => (open = r));
    const up = guards.up(row, spec, driver);
    up.catch(() => undefined);
    await until("late.begin r");
    // A second raise joins the one under way (never a second proxy on the same socket).
    const again = guards.up(row, spec, driver);
    const released = guards.release(row);
    open();
    await Promise.allSettled([up, again, released]);
    expect(events.filter((e) => e === "late.begin r")).toHaveLength(1);
    expect(late.stops).toBe(1);
    expect(await answers(spec.sockets.proxy)).toBe(false);
    expect(await answers(spec.sockets.bridge)).toBe(false);
    expect(existsSync(spec.sockets.dir)).toBe(false);
    expect(guards.isUp(row)).toBe(false);
  });
});
