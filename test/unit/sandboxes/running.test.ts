// The one bring-up order (sandboxes/running.ts): a start makes the container while the guards come up (prepareRun), but nothing starts before every guard is up; a failed prepare only costs time, a failed guard still fences.
import { afterEach, describe, expect, test } from "bun:test";
import type { SandboxGuard } from "../../../src/guards/guards";
import { execRequestBody } from "../../../src/client/quick";
import { FakeBackend } from "../../fakes/backend";
import { makeHarness, recordingGuard, type Harness } from "../../support/daemon-harness";

let h: Harness;
afterEach(async () => h?.close());

/** A guard that takes `ms` to come up, recording when it began and when it was up. */
function slowGuard(events: string[], ms: number, fail = false): SandboxGuard {
  return {
    name: "slow",
    async start(ctx) {
      events.push(`slow.begin ${ctx.sandbox.name}`);
      await Bun.sleep(ms);
      if (fail) throw new Error("slow guard cannot start");
      events.push(`slow.up ${ctx.sandbox.name}`);
      return { health: () => ({ ok: true, detail: "up" }), stop: async () => void events.push(`slow.stop ${ctx.sandbox.name}`) };
    },
  };
}

describe("prepareRun beside the guards", () => {
  test("it runs while a guard comes up; the backend starts the sandbox only after both", async () => {
    h = makeHarness({ guards: (ev) => [slowGuard(ev, 60), recordingGuard("bridge", ev)] });
    h.driver.prepareRun = async (sb) => {
      h.events.push(`prepare.begin ${sb.name}`);
      await Bun.sleep(20);
      h.events.push(`prepare.end ${sb.name}`);
    };
    h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    const view = await h.start("demo", "/r");
    expect(view.guarded).toBe(true);
    const ev = h.events.filter((e) => !e.startsWith("backend.inspect"));
    // The prepare began and ended while the slow guard was coming up, and apply came after every guard.
    expect(ev.indexOf("prepare.begin demo")).toBeLessThan(ev.indexOf("slow.up demo"));
    expect(ev.indexOf("prepare.end demo")).toBeLessThan(ev.indexOf("slow.up demo"));
    expect(ev.indexOf("backend.apply demo")).toBeGreaterThan(ev.indexOf("bridge.start demo"));
    expect(ev.indexOf("backend.apply demo")).toBeGreaterThan(ev.indexOf("prepare.end demo"));
  });

  test("a failed prepare only costs time: the start goes on (bringUp does that work again)", async () => {
    h = makeHarness();
    h.driver.prepareRun = async () => {
      h.events.push("prepare.fail");
      throw new Error("engine hiccup");
    };
    h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    expect((await h.start("demo", "/r")).guarded).toBe(true);
    expect(h.events).toContain("prepare.fail");
    expect(h.events).toContain("backend.apply demo");
  });

  test("a guard that fails still fences: nothing is started, and the start waits for the prepare to finish first", async () => {
    let prepareDone = false;
    h = makeHarness({ guards: (ev) => [slowGuard(ev, 10, true)] });
    h.driver.prepareRun = async () => {
      await Bun.sleep(50);
      prepareDone = true;
    };
    h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    const err = await h.start("demo", "/r").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(prepareDone).toBe(true);
    expect(h.events).not.toContain("backend.apply demo");
  });
});

describe("the start audit", () => {
  test("sandbox.started once per real start: starts of a running sandbox (one per command in it) add none; after a stop, one again", async () => {
    h = makeHarness({});
    const sb = h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    const started = () => h.store.listAudit({ sandboxId: sb.id }).filter((e) => e.action === "sandbox.started").length;
    await h.start("demo", "/r");
    expect(started()).toBe(1);
    await h.start("demo", "/r");
    await h.start("demo", "/r");
    expect(started()).toBe(1);
    await h.stop("demo", "/r");
    await h.start("demo", "/r");
    expect(started()).toBe(2);
  });
});

describe("one door: every start goes through the service's start, under the sandbox's lock", () => {
  test("the quick path's start (/v1/sandboxes/exec) waits for a stop under way, then starts it again: the two never interleave", async () => {
    h = makeHarness();
    h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    await h.start("demo", "/r");
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const stopNow = FakeBackend.prototype.stop.bind(h.backend); // the backend's own, not the spy's (which logs the call)
    h.backend.stop = async (spec) => {
      h.events.push("stop.held");
      await gate;
      return stopNow(spec);
    };
    h.events.length = 0;
    const stopping = h.service.stop("demo", { repo: "/r" });
    await Bun.sleep(20);
    const head = { name: "demo", cwd: "/", foundRepo: "/r", argv: ["true"], env: {}, stdin: false, agent: true };
    const exec = Promise.resolve(h.app.request("/v1/sandboxes/exec", { method: "POST", body: execRequestBody(head, undefined) }));
    await Bun.sleep(100);
    // While the stop holds the lock the exec's start does nothing: no guard, no driver call.
    expect(h.events).toEqual(["backend.stop demo", "stop.held"]);
    release();
    await stopping;
    const res = await exec;
    expect(res.status).toBe(200);
    expect(h.events).toEqual(["backend.stop demo", "stop.held", "bridge.stop demo", "proxy.stop demo", "proxy.start demo", "bridge.start demo", "backend.apply demo"]);
    expect(h.view(h.store.findSandbox("/r", "demo")!)).toMatchObject({ state: "active", phase: "running", guarded: true });
  });

  test("the quick path's start behind an rm (waiting out its last sync, after its stop) finds the sandbox gone: it never brings back what is being removed", async () => {
    h = makeHarness();
    h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    await h.start("demo", "/r");
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let reads = 0;
    // rm reads the clone twice: the unsynced check, then the last sync once the sandbox has stopped. The second waits.
    h.driver.sandboxGit = async () => {
      if (++reads === 2) {
        h.events.push("rm.last-sync");
        await gate;
      }
      return null;
    };
    h.events.length = 0;
    const removing = h.service.rm("demo", { repo: "/r", force: true });
    while (!h.events.includes("rm.last-sync")) await Bun.sleep(5);
    const head = { name: "demo", cwd: "/", foundRepo: "/r", argv: ["true"], env: {}, stdin: false, agent: true };
    const exec = Promise.resolve(h.app.request("/v1/sandboxes/exec", { method: "POST", body: execRequestBody(head, undefined) }));
    await Bun.sleep(100);
    release();
    await removing;
    const res = await exec;
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: string }).error).toBe("not_found");
    // Stopped once, removed, and nothing started in between or after.
    expect(h.events.filter((e) => !e.startsWith("backend.cleanup"))).toEqual(["backend.stop demo", "bridge.stop demo", "proxy.stop demo", "rm.last-sync", "backend.remove demo"]);
    expect(h.backend.entries.size).toBe(0);
  });

  test("starts at once in one daemon are one start: one guard start, one driver start, and no caller told to wait", async () => {
    h = makeHarness({ guards: (ev) => [slowGuard(ev, 50)] });
    h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    const said: string[][] = [[], [], []];
    // Two commands run into one sandbox at once (an agent's and a person's): each asks for a start.
    await Promise.all(said.map((lines) => h.service.start("demo", { repo: "/r", out: { log: (l) => void lines.push(l) } })));
    expect(h.events.filter((e) => e.endsWith(".start demo") || e.startsWith("backend.apply") || e.startsWith("slow.begin"))).toEqual(["slow.begin demo", "backend.apply demo"]);
    // Nobody waited for "another command": a start in flight is joined, not queued behind (a piped command's stderr is its own).
    expect(said.flat().filter((l) => l.includes("waiting"))).toEqual([]);
    // (Queued behind the other, in this process's queue or on the lock file, a caller is told it waits: none was.)
    // A start after them is a start again (a check that it still runs), not a join of one that ended.
    await h.start("demo", "/r");
    expect(h.events.filter((e) => e.startsWith("backend.apply"))).toEqual(["backend.apply demo", "backend.apply demo"]);
  });

  test("a start that waits behind a stop says so, and starts after it", async () => {
    h = makeHarness();
    h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    await h.start("demo", "/r");
    const said: string[] = [];
    const stopping = h.service.stop("demo", { repo: "/r" });
    const starting = h.service.start("demo", { repo: "/r", out: { log: (l) => void said.push(l) } });
    await Promise.all([stopping, starting]);
    expect(said).toContain("waiting for another command on sandbox demo to finish…");
    expect(h.events.filter((e) => e.startsWith("backend."))).toContain("backend.stop demo");
    expect(h.events.filter((e) => e.startsWith("backend.apply")).length).toBe(2);
  });
});
