// The real daemon process: health on a 0600 socket in a 0700 dir, one per user (a second refuses naming the pid), clean SIGTERM that leaves sandboxes running.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { readState } from "../../support/daemon-file-backend";
import { type DaemonProc, ENTRY, killDaemonProc, lockPid, makeWorld, seedSandbox, socketGet, startDaemonProc, type World, startSandbox } from "../../support/daemon-proc";

let w: World;
let d: DaemonProc | undefined;
afterEach(async () => {
  await killDaemonProc(d);
  d = undefined;
  w?.cleanup();
});

describe("daemon process", () => {
  test("answers /health on a private socket and holds the lock", async () => {
    w = makeWorld();
    d = await startDaemonProc(w);
    const h = await w.client.health();
    expect(h?.pid).toBe(d.pid);
    expect(statSync(w.paths.controlSocket).mode & 0o777).toBe(0o600);
    expect(statSync(w.paths.runtimeDir).mode & 0o777).toBe(0o700);
    expect(lockPid(w)).toBe(d.pid);
    expect(d.log()).toMatch(/level=info msg="daemon listening" socket=\S+ pid=\d+/);
  });

  test("a second daemon refuses, naming the first one's pid, and leaves it serving", async () => {
    w = makeWorld();
    d = await startDaemonProc(w);
    const second = Bun.spawn([process.execPath, ENTRY, w.stateFile, w.controlDir], { env: w.env, stdout: "pipe", stderr: "pipe" });
    const code = await second.exited;
    const err = await new Response(second.stderr).text();
    expect(code).toBe(75);
    expect(err).toContain(`another sbx daemon is already running (pid ${d.pid})`);
    expect((await w.client.health())?.pid).toBe(d.pid);
  });

  test("a stale socket from a killed daemon is probed and replaced", async () => {
    w = makeWorld();
    d = await startDaemonProc(w);
    d.proc.kill("SIGKILL");
    await d.exited;
    expect(existsSync(w.paths.controlSocket)).toBe(true);
    d = await startDaemonProc(w);
    expect((await w.client.health())?.pid).toBe(d.pid);
  });

  test("SIGTERM: stops accepting, closes guards, removes socket and lock, and leaves the sandbox running", async () => {
    w = makeWorld();
    const store = w.store();
    seedSandbox(w, "demo");
    d = await startDaemonProc(w);
    const sandbox = await startSandbox(w, "demo");
    const proxy = join(w.paths.runtimeDir, "sb", sandbox.sid, "proxy.sock");
    expect(await socketGet(proxy)).toBe("proxy demo\n");
    d.proc.kill("SIGTERM");
    expect(await d.exited).toBe(0);
    d = undefined;
    expect(existsSync(w.paths.controlSocket)).toBe(false);
    expect(lockPid(w)).toBeNull();
    expect(await socketGet(proxy)).toBeNull();
    expect(readState(w.stateFile).entries[sandbox.sid]?.phase).toBe("running");
    expect(store.findSandbox("/r", "demo")?.state).toBe("active");
  });
});
