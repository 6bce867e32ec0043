// Reconcile (sandboxes/running.ts) on daemon start: guards before the driver for every sandbox that should run; vanished ones marked; leftovers cleaned; failures fence (and stop) a sandbox.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Observed } from "../../../src/core/spec";
import { stateOfView } from "../../../src/core/sandbox-state";
import { makeHarness, recordingGuard, type Harness } from "../../support/daemon-harness";

let h: Harness;
afterEach(async () => h?.close());

/** A spec shape for a sandbox the store does not hold. */
function specOf0(h: Harness) {
  const sb = h.store.createSandbox({ name: "tmp", repo: "/tmp-repo", backend: "fake" });
  const spec = h.driver.spec(sb);
  h.store.setSandboxState(sb.id, "deleted");
  return spec;
}

function specOf(h: Harness, name: string, repo = "/r") {
  const sb = h.store.findSandbox(repo, name)!;
  return h.driver.spec(sb);
}

describe("reconcile", () => {
  test("an active sandbox the system stopped (a reboot) gets its guards, then is started", async () => {
    h = makeHarness();
    h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    const spec = specOf(h, "demo");
    await h.backend.apply(spec);
    await h.backend.stop(spec);
    h.events.length = 0;
    const report = await h.service.reconcile();
    expect(report.guarded).toEqual(["demo"]);
    expect(h.events).toEqual(["backend.list", "proxy.start demo", "bridge.start demo", "backend.apply demo", "backend.cleanup"]);
    expect(h.backend.entries.get(spec.id)?.phase).toBe("running");
    expect(h.view(h.store.findSandbox("/r", "demo")!).guarded).toBe(true);
  });

  test("a create its daemon did not finish (its marker left, no lock): the view says interrupted, which sbx calls failed", async () => {
    h = makeHarness();
    h.store.createSandbox({ name: "half", repo: "/r", backend: "fake" });
    const dir = specOf(h, "half").dir;
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, ".creating"), "1\n");
    await h.service.reconcile();
    const view = h.view(h.store.findSandbox("/r", "half")!);
    expect({ creating: view.creating, word: stateOfView(view) }).toEqual({ creating: "interrupted", word: "failed" });
  });

  test("store has it, system lost it: marked stopped when its workspace remains, deleted when that is gone too", async () => {
    h = makeHarness();
    h.store.createSandbox({ name: "kept", repo: "/r", backend: "fake" });
    h.store.createSandbox({ name: "lost", repo: "/r", backend: "fake" });
    mkdirSync(specOf(h, "kept").dir, { recursive: true });
    const report = await h.service.reconcile();
    expect(report.vanished.sort()).toEqual(["kept", "lost"]);
    expect(h.store.findSandbox("/r", "kept")?.state).toBe("stopped");
    expect(h.store.findSandbox("/r", "lost")).toBeNull();
    expect(h.store.listSandboxes({ all: true }).find((s) => s.name === "lost")?.state).toBe("deleted");
    // Nothing was started, no guard was brought up for a sandbox that is not there.
    expect(h.events.filter((e) => e.includes(".start") || e.startsWith("backend.apply"))).toEqual([]);
    const audit = h.store.listAudit().map((e) => e.action);
    expect(audit.filter((a) => a === "reconcile.vanished")).toHaveLength(2);
  });

  test("system has one the store does not know: the backend's cleanup removes it; known ones are kept", async () => {
    h = makeHarness();
    h.store.createSandbox({ name: "known", repo: "/r", backend: "fake" });
    await h.backend.apply(specOf(h, "known"));
    const stray = { ...specOf(h, "known"), id: "0123456789ab", name: "stray" };
    await h.backend.apply(stray);
    const report = await h.service.reconcile();
    expect(report.removed).toContain("sandbox stray (0123456789ab)");
    expect([...h.backend.entries.keys()]).toEqual([specOf(h, "known").id]);
    expect(h.store.listAudit().some((e) => e.action === "cleanup.removed" && JSON.stringify(e.detail).includes("stray"))).toBe(true);
  });

  test("cleanup never touches sandboxes of another sandbox root (another sbx home on this machine)", async () => {
    h = makeHarness();
    const other = { ...specOf0(h), id: "abcabcabcabc", name: "theirs" };
    await h.backend.apply(other);
    const realList = h.backend.list.bind(h.backend);
    h.backend.list = async () =>
      (await realList()).map((o) => (o.id === other.id ? { ...o, detail: { dir: "/home/someone-else/.cache/sandbox/x-1/theirs" } } : o));
    const report = await h.service.reconcile();
    expect(report.removed).toEqual([]);
    expect(h.backend.entries.has(other.id)).toBe(true);
  });

  test("running although the store says stopped: adopted, guarded, active again", async () => {
    h = makeHarness();
    const sb = h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    h.store.setSandboxState(sb.id, "stopped");
    await h.backend.apply(specOf(h, "demo"));
    const report = await h.service.reconcile();
    expect(report.adopted).toEqual(["demo"]);
    expect(h.store.getSandbox(sb.id)?.state).toBe("active");
    expect(h.view(h.store.getSandbox(sb.id)!).guarded).toBe(true);
  });

  test("a stopped sandbox stays stopped and unguarded", async () => {
    h = makeHarness();
    const sb = h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    h.store.setSandboxState(sb.id, "stopped");
    await h.backend.apply(specOf(h, "demo"));
    await h.backend.stop(specOf(h, "demo"));
    h.events.length = 0;
    await h.service.reconcile();
    expect(h.events).toEqual(["backend.list", "backend.cleanup"]);
    expect(h.view(sb).phase).toBe("stopped");
  });

  test("fail closed: a running sandbox whose guards cannot come back is stopped, and stays fenced", async () => {
    h = makeHarness({ guards: (ev) => [recordingGuard("proxy", ev, { fail: () => true })] });
    h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    const spec = specOf(h, "demo");
    await h.backend.apply(spec);
    h.events.length = 0;
    const report = await h.service.reconcile();
    expect(report.failed).toEqual(["demo"]);
    expect(h.events).toEqual(["backend.list", "proxy.fail demo", "backend.stop demo", "backend.cleanup"]);
    expect(h.backend.entries.get(spec.id)?.phase).toBe("stopped");
    const view = h.view(h.store.findSandbox("/r", "demo")!);
    expect(view.guarded).toBe(false);
    expect(view.error).toContain("proxy cannot start");
    // Every surface says it the same way: it should run, and does not.
    expect(stateOfView(view)).toBe("failed");
  });

  test("when the backend cannot list, nothing is started and nothing removed", async () => {
    h = makeHarness();
    h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    const spec = specOf(h, "demo");
    await h.backend.apply(spec);
    h.backend.list = async (): Promise<Observed[]> => {
      throw new Error("docker: cannot connect");
    };
    mkdirSync(spec.sockets.dir, { recursive: true });
    h.events.length = 0;
    const report = await h.service.reconcile();
    expect(report.failed).toEqual(["demo"]);
    expect(h.events).toEqual(["backend.list"]);
    expect(existsSync(spec.sockets.dir)).toBe(true);
  });

  test("socket dirs a crash left behind go: stale sockets in a known dir, and dirs of unknown sandboxes", async () => {
    h = makeHarness();
    h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    const spec = specOf(h, "demo");
    await h.backend.apply(spec);
    const orphan = join(h.paths.runtimeDir, "sb", "ffffffffffff");
    mkdirSync(orphan, { recursive: true });
    writeFileSync(join(orphan, "junk"), "");
    // A socket file left by a killed daemon: guards could not bind over it.
    mkdirSync(spec.sockets.dir, { recursive: true });
    const stale = Bun.serve({ unix: spec.sockets.proxy, fetch: () => new Response("stale") });
    stale.stop(true);
    const report = await h.service.reconcile();
    expect(report.removed).toContain("socket dir ffffffffffff");
    expect(existsSync(orphan)).toBe(false);
    expect(report.guarded).toEqual(["demo"]);
  });

  test("sandboxes of a backend this daemon lacks stay fenced and are not cleaned up", async () => {
    h = makeHarness();
    h.store.createSandbox({ name: "mac", repo: "/r", backend: "macos" });
    const report = await h.service.reconcile();
    expect(report.skipped).toEqual(["mac"]);
    expect(h.view(h.store.findSandbox("/r", "mac")!).guarded).toBe(false);
  });
});
