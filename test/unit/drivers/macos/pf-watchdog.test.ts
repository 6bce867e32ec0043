// The pf watchdog on the fake Mac: `pfctl -d` (every token dropped) or a pf.conf reload (sbx's anchors gone) stops every
// running macOS sandbox before pf is put back, says why in its audit and tells the person; a healthy pf changes nothing.
import { describe, expect, test } from "bun:test";
import { silentLogger } from "../../../../src/sys/log";
import { startPfWatchdog } from "../../../../src/drivers/macos/pf-watchdog";
import { UserAccountDriver } from "../../../../src/drivers/user-account";
import { processEnv } from "../../../../src/sys/env";
import { userSpec } from "../../../../src/drivers/user-account";
import type { Sandbox } from "../../../../src/core/schemas";
import { Store } from "../../../../src/store/store";
import { ALICE_IDENTITY, ALICE_PATHS, FakeMac } from "../../../fakes/mac";

async function world() {
  const mac = new FakeMac();
  const backend = mac.backend();
  const store = new Store(":memory:");
  const running = store.createSandbox({ name: "demo", repo: "/Users/alice/src/demo", backend: "macos", identity: ALICE_IDENTITY });
  const idle = store.createSandbox({ name: "idle", repo: "/Users/alice/src/demo", backend: "macos", identity: { ...ALICE_IDENTITY, id: "bbbbbbbbbbbb", proxyPort: 17002 } });
  store.setSandboxState(idle.id, "stopped");
  for (const row of [running, idle]) await backend.apply(userSpec(ALICE_PATHS, row));
  mac.procs.add(`sbx_alice_${ALICE_IDENTITY.id}`);
  const stops: string[] = [];
  const notes: { title: string; body: string }[] = [];
  const dog = startPfWatchdog({
    backend,
    store,
    paths: ALICE_PATHS,
    log: silentLogger,
    // As the daemon does: the sandbox service's stopBecause, which ends the sandbox's processes through its driver and
    // records it stopped.
    stopSandbox: async (row: Sandbox, why: string) => {
      stops.push(`${row.name}: ${why}`);
      await backend.stop(userSpec(ALICE_PATHS, row));
      store.setSandboxState(row.id, "stopped");
    },
    notify: (n) => notes.push(n),
    intervalMs: 3_600_000,
  });
  return { mac, backend, store, running, idle, stops, notes, dog };
}

describe("pf watchdog (macOS)", () => {
  test("pf healthy: nothing is stopped and nothing changes", async () => {
    const w = await world();
    const m = w.mac.mutations();
    expect(await w.dog.check()).toEqual([]);
    expect(w.mac.mutations()).toBe(m);
    expect(w.stops).toEqual([]);
    await w.dog.stop();
  });

  test("pfctl -d: the running sandbox is stopped (its processes ended) before pf is enabled again; audit and notice say why", async () => {
    const w = await world();
    // `pfctl -d` as root: pf off, every enable reference dropped.
    w.mac.pf.enabled = false;
    w.mac.pf.tokens.clear();
    const from = w.mac.exec.calls.length;
    expect(await w.dog.check()).toEqual(["pf is disabled"]);
    expect(w.stops).toEqual(["demo: the firewall was switched off (pf is disabled): sbx stopped this sandbox"]);
    expect(w.mac.procs.size).toBe(0);
    expect(w.store.getSandbox(w.running.id)?.state).toBe("stopped");
    // Stopped first, pf back after: the kill comes before the new enable token.
    const t = w.mac.transcript(from).split("\n");
    expect(t.findIndex((l) => l.includes("pkill -KILL -U"))).toBeLessThan(t.findIndex((l) => l.includes("pfctl -E")));
    expect(w.mac.pf.enabled).toBe(true);
    expect(w.mac.pf.anchors.size).toBe(2);
    const audit = w.store.listAudit({ sandboxId: w.running.id }).filter((a) => a.kind === "guard");
    expect(audit.map((a) => [a.action, a.detail])).toEqual([["pf-lost", { problems: ["pf is disabled"], stopped: true }]]);
    expect(w.store.listAudit({ sandboxId: w.idle.id }).filter((a) => a.kind === "guard")).toEqual([]);
    expect(w.notes).toHaveLength(1);
    expect(w.notes[0]!.body).toContain("pf is disabled. Stopped demo before putting pf back");
    // Once back, the next look finds nothing.
    expect(await w.dog.check()).toEqual([]);
    await w.dog.stop();
  });

  test("a pf.conf reload (anchors flushed, pf still on): each lost anchor is named and put back", async () => {
    const w = await world();
    w.mac.pf.anchors.clear();
    const problems = await w.dog.check();
    expect(problems).toEqual([
      "the pf anchor of sandbox demo (com.apple/sbx_7001) is gone",
      "the pf anchor of sandbox idle (com.apple/sbx_7002) is gone",
    ]);
    expect(w.stops).toHaveLength(1);
    expect(w.mac.pf.anchors.size).toBe(2);
    await w.dog.stop();
  });

  test("the macOS driver's watchers start it, and it runs on its own timer", async () => {
    const w = await world();
    await w.dog.stop();
    const stops: string[] = [];
    const spawnLines = () => {
      let done: (c: number) => void = () => {};
      return { pid: 1, exited: new Promise<number>((r) => (done = r)), kill: () => done(0) };
    };
    const backend = w.mac.backend(undefined, { spawnLines, pfWatchMs: 20 });
    const driver = new UserAccountDriver({ exec: w.mac.exec, env: { ...processEnv(), platform: "darwin" }, paths: ALICE_PATHS, backend, hostUser: ALICE_IDENTITY.hostUser });
    const watchers = driver.watch({ store: w.store, log: silentLogger, blocked: () => {}, notify: () => {}, stopSandbox: async (row) => void stops.push(row.name) });
    const svc = { stop: async () => void (await Promise.all(watchers.map((x) => x.stop()))) };
    w.mac.pf.enabled = false;
    w.mac.pf.tokens.clear();
    for (let i = 0; i < 100 && !w.mac.pf.enabled; i++) await Bun.sleep(10);
    await svc.stop();
    expect(stops).toEqual(["demo"]);
    expect(w.mac.pf.enabled).toBe(true);
  });
});
