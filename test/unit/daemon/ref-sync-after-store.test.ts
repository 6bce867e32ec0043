// Ref sync's guard and a new sandbox's host work (its store, an earlier sandbox's refs set aside): the guard is up at
// once, so the sandbox's start never waits for that work, but nothing of ref sync begins before the work is done (its
// syncs write into both); work that failed leaves the guard down, said; a stop waits for a start still to come.
import { describe, expect, test } from "bun:test";
import { driverRefSyncGuard } from "../../../src/daemon/driver-guards";
import type { GuardContext } from "../../../src/guards/guards";

/** A context whose driver records when ref sync asks for its plan (it has none: the guard is then a no-op). */
function context(hostWork: Promise<unknown> | undefined, asked: string[], fail?: Error): GuardContext {
  const driver = {
    caps: { execAgent: false },
    hostExec: () => ({}),
    refSyncTarget: () => {
      asked.push("plan");
      if (fail) throw fail;
      return null;
    },
  };
  return { sandbox: { id: 1, name: "t" }, spec: {}, driver, ...(hostWork ? { hostWork } : {}) } as unknown as GuardContext;
}

function gate(): { promise: Promise<void>; open(): void; fail(e: Error): void } {
  let open!: () => void;
  let fail!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => ((open = res), (fail = rej)));
  return { promise, open, fail };
}

describe("ref-sync-after-store: the start does not wait for a new sandbox's store; ref sync does", () => {
  test("up while the store is still being made; its plan asked only once the store's work is done", async () => {
    const work = gate();
    const asked: string[] = [];
    const handle = await driverRefSyncGuard().start(context(work.promise, asked));
    expect(asked).toEqual([]);
    expect(handle.health()).toEqual({ ok: true, detail: "starts once the new sandbox's store is made" });
    // The sandbox started meanwhile: its owed sync waits for the work too.
    const started = handle.sandboxStarted!();
    await Bun.sleep(20);
    expect(asked).toEqual([]);
    work.open();
    await started;
    expect(asked).toEqual(["plan"]);
    expect(handle.health()).toEqual({ ok: true, detail: "not used" });
    await handle.stop();
  });

  test("the store's work failed: ref sync never begins, and the guard says it is down", async () => {
    const work = gate();
    const asked: string[] = [];
    const handle = await driverRefSyncGuard().start(context(work.promise, asked));
    work.fail(new Error("cannot make the store"));
    await handle.sandboxStarted!();
    expect(asked).toEqual([]);
    expect(handle.health()).toEqual({ ok: false, detail: "ref sync could not start: cannot make the store" });
    await handle.stop();
  });

  test("a start that fails after the work is a guard down, said with its reason", async () => {
    const work = gate();
    const handle = await driverRefSyncGuard().start(context(work.promise, [], new Error("no plan")));
    work.open();
    await handle.sandboxStarted!();
    expect(handle.health()).toEqual({ ok: false, detail: "ref sync could not start: no plan" });
  });

  test("a stop before the work is done waits for it, then stops what started", async () => {
    const work = gate();
    const asked: string[] = [];
    const handle = await driverRefSyncGuard().start(context(work.promise, asked));
    let stopped = false;
    const stopping = handle.stop().then(() => void (stopped = true));
    await Bun.sleep(20);
    expect(stopped).toBe(false);
    work.open();
    await stopping;
    expect(asked).toEqual(["plan"]);
  });

  test("no host work (a start after the create): ref sync begins at once, as before", async () => {
    const asked: string[] = [];
    const handle = await driverRefSyncGuard().start(context(undefined, asked));
    expect(asked).toEqual(["plan"]);
    expect(handle.health()).toEqual({ ok: true, detail: "not used" });
  });
});
