// A start makes the container while the guards come up (prepareRun), but nothing starts before every guard is up; a failed prepare only costs time, a failed guard still fences.
import { afterEach, describe, expect, test } from "bun:test";
import type { SandboxGuard } from "../../../src/guards/guards";
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
    h = makeHarness({
      guards: (ev) => [slowGuard(ev, 60), recordingGuard("bridge", ev)],
      prepareRun: (ev) => async (sb) => {
        ev.push(`prepare.begin ${sb.name}`);
        await Bun.sleep(20);
        ev.push(`prepare.end ${sb.name}`);
      },
    });
    h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    const view = await h.controller.start({ name: "demo", repo: "/r" });
    expect(view.guarded).toBe(true);
    const ev = h.events.filter((e) => !e.startsWith("backend.inspect"));
    // The prepare began and ended while the slow guard was coming up, and apply came after every guard.
    expect(ev.indexOf("prepare.begin demo")).toBeLessThan(ev.indexOf("slow.up demo"));
    expect(ev.indexOf("prepare.end demo")).toBeLessThan(ev.indexOf("slow.up demo"));
    expect(ev.indexOf("backend.apply demo")).toBeGreaterThan(ev.indexOf("bridge.start demo"));
    expect(ev.indexOf("backend.apply demo")).toBeGreaterThan(ev.indexOf("prepare.end demo"));
  });

  test("a failed prepare only costs time: the start goes on (bringUp does that work again)", async () => {
    h = makeHarness({
      prepareRun: (ev) => async () => {
        ev.push("prepare.fail");
        throw new Error("engine hiccup");
      },
    });
    h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    expect((await h.controller.start({ name: "demo", repo: "/r" })).guarded).toBe(true);
    expect(h.events).toContain("prepare.fail");
    expect(h.events).toContain("backend.apply demo");
  });

  test("a guard that fails still fences: nothing is started, and the start waits for the prepare to finish first", async () => {
    let prepareDone = false;
    h = makeHarness({
      guards: (ev) => [slowGuard(ev, 10, true)],
      prepareRun: () => async () => {
        await Bun.sleep(50);
        prepareDone = true;
      },
    });
    h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    const err = await h.controller.start({ name: "demo", repo: "/r" }).catch((e: unknown) => e);
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
    await h.controller.start({ name: "demo", repo: "/r" });
    expect(started()).toBe(1);
    await h.controller.start({ name: "demo", repo: "/r" });
    await h.controller.start({ name: "demo", repo: "/r" });
    expect(started()).toBe(1);
    await h.controller.stop({ name: "demo", repo: "/r" });
    await h.controller.start({ name: "demo", repo: "/r" });
    expect(started()).toBe(2);
  });
});
