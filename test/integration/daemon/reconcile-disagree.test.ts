// Reconcile when the store and the system disagree, both ways, with a real daemon process: a container gone, and one the store never knew.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { sandboxDir } from "../../../src/sys/paths";
import { readState, writeState } from "../../support/daemon-file-backend";
import { type DaemonProc, killDaemonProc, makeWorld, seedSandbox, startDaemonProc, type World } from "../../support/daemon-proc";

let w: World;
let d: DaemonProc | undefined;
afterEach(async () => {
  await killDaemonProc(d);
  d = undefined;
  w?.cleanup();
});

describe("reconcile with a real daemon", () => {
  test("a sandbox the system lost is marked, one the store never knew is removed, the rest is guarded", async () => {
    w = makeWorld();
    const okSid = seedSandbox(w, "ok", "running");
    seedSandbox(w, "gone-ws", "running");
    seedSandbox(w, "gone", "running");
    // The system loses two: one keeps its workspace, one loses that too.
    const s = readState(w.stateFile);
    for (const [id, e] of Object.entries(s.entries)) if (e.name !== "ok") delete s.entries[id];
    // …and holds one the store never heard of, plus a socket dir a crash left.
    s.entries["deadbeef0000"] = { id: "deadbeef0000", name: "stray", repo: "/elsewhere", phase: "running" };
    writeState(w.stateFile, s);
    rmSync(sandboxDir(w.paths, "/r", "gone"), { recursive: true, force: true });
    const store = w.store();
    const orphanSockets = join(w.paths.runtimeDir, "sb", "deadbeef0000");
    mkdirSync(orphanSockets, { recursive: true });

    d = await startDaemonProc(w);
    const after = readState(w.stateFile);
    expect(Object.keys(after.entries)).toEqual([okSid]);
    expect(after.log).toContain("cleanup deadbeef0000");
    expect(store.findSandbox("/r", "gone-ws")?.state).toBe("stopped");
    expect(store.findSandbox("/r", "gone")).toBeNull();
    expect(store.findSandbox("/r", "ok")?.state).toBe("active");
    expect(existsSync(orphanSockets)).toBe(false);

    const st = await w.client.status();
    const byName = Object.fromEntries(st.sandboxes.map((x) => [x.name, x]));
    expect(byName.ok?.guarded).toBe(true);
    expect(byName["gone-ws"]?.guarded).toBe(false);
    expect(byName["gone-ws"]?.phase).toBe("absent");
    const actions = store.listAudit().map((e) => e.action);
    expect(actions.filter((a) => a === "reconcile.vanished")).toHaveLength(2);
    expect(actions).toContain("cleanup.removed");
    expect(d.log()).toContain("removed leftover");
  });

  test("a sandbox the store calls stopped but the system runs is adopted and gets its guards", async () => {
    w = makeWorld();
    seedSandbox(w, "demo", "running");
    const store = w.store();
    const sb = store.findSandbox("/r", "demo")!;
    store.setSandboxState(sb.id, "stopped");
    d = await startDaemonProc(w);
    expect(store.getSandbox(sb.id)?.state).toBe("active");
    const st = await w.client.status();
    expect(st.sandboxes[0]?.guarded).toBe(true);
  });
});
