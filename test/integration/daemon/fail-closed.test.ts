// Invariant 9 (fail-closed) across a daemon crash: kill -9 takes the sandbox's proxy and bridge with it; a restart's reconcile brings them back before it runs again.
import { afterEach, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { SbxError } from "../../../src/core/errors";
import { readState } from "../../support/daemon-file-backend";
import { makeWorld, seedSandbox, socketGet, startDaemonProc, type DaemonProc, type World } from "../../support/daemon-proc";

let w: World;
let d: DaemonProc | undefined;
afterEach(async () => {
  if (d) {
    d.proc.kill("SIGKILL");
    await d.exited;
    d = undefined;
  }
  w?.cleanup();
});

async function kill9(p: DaemonProc): Promise<void> {
  p.proc.kill("SIGKILL");
  await p.exited;
}

describe("fail-closed across a daemon crash", () => {
  test("kill -9: the sandbox's sockets stop answering; restart: reconcile serves them again and sessions work", async () => {
    w = makeWorld();
    const sid = seedSandbox(w, "demo");
    d = await startDaemonProc(w);
    await w.client.start({ name: "demo" });
    const proxy = join(w.paths.runtimeDir, "sb", sid, "proxy.sock");
    const bridge = join(w.paths.runtimeDir, "sb", sid, "bridge.sock");
    expect(await socketGet(proxy)).toBe("proxy demo\n");
    expect(await socketGet(bridge)).toBe("bridge demo\n");

    await kill9(d);
    d = undefined;
    // The sandbox keeps running (the backend still holds it) but has no way out: nothing answers.
    expect(readState(w.stateFile).entries[sid]?.phase).toBe("running");
    expect(await socketGet(proxy)).toBeNull();
    expect(await socketGet(bridge)).toBeNull();

    d = await startDaemonProc(w);
    expect(await socketGet(proxy)).toBe("proxy demo\n");
    expect(await socketGet(bridge)).toBe("bridge demo\n");
    const st = await w.client.status();
    expect(st.sandboxes.map((s) => [s.name, s.guarded, s.phase])).toEqual([["demo", true, "running"]]);
    const s = await w.client.createSession({ name: "demo", cwd: "/tmp", argv: ["true"] });
    expect(s.sandbox).toBe("demo");
  });

  test("after a reboot (sandbox stopped), guards come up before the backend starts it", async () => {
    w = makeWorld();
    const sid = seedSandbox(w, "demo", "stopped");
    d = await startDaemonProc(w);
    const log = readState(w.stateFile).log;
    expect(log).toEqual([`apply ${sid}`]);
    // Guards audit themselves when they come up: both entries precede the start.
    const audit = w.store().listAudit().map((e) => e.action);
    expect(audit.indexOf("proxy.up")).toBeLessThan(audit.indexOf("reconcile.guarded"));
    expect(audit.indexOf("bridge.up")).toBeLessThan(audit.indexOf("reconcile.guarded"));
    expect(readState(w.stateFile).entries[sid]?.phase).toBe("running");
  });

  test("if a guard cannot come back, the running sandbox is stopped and refuses sessions", async () => {
    w = makeWorld();
    const sid = seedSandbox(w, "demo", "running");
    writeFileSync(join(w.controlDir, "fail-bridge"), "");
    d = await startDaemonProc(w);
    expect(readState(w.stateFile).entries[sid]?.phase).toBe("stopped");
    expect(await socketGet(join(w.paths.runtimeDir, "sb", sid, "proxy.sock"))).toBeNull();
    let err: unknown;
    try {
      await w.client.createSession({ name: "demo", cwd: "/tmp" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SbxError);
    expect((err as SbxError).code).toBe("unavailable");
    expect((err as SbxError).message).toContain("fenced");
    expect(d.log()).toContain("guards failed: sandbox fenced");
  });
});
