// Invariant 9 (fail-closed) across a daemon crash: kill -9 takes the sandbox's proxy and bridge with it; a restart's reconcile brings them back before it runs again.
import { afterEach, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { SbxError } from "../../../src/core/errors";
import { readState } from "../../support/daemon-file-backend";
import { type DaemonProc, killDaemonProc, makeWorld, seedSandbox, socketGet, startDaemonProc, type World, startSandbox } from "../../support/daemon-proc";

let w: World;
let d: DaemonProc | undefined;
afterEach(async () => {
  await killDaemonProc(d);
  d = undefined;
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
    await startSandbox(w, "demo");
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

/** An absolute-URI request through the proxy's unix socket, as the in-sandbox forwarder sends it; null when nothing answers. */
async function viaProxy(socket: string, url: string): Promise<{ status: number; body: string } | null> {
  const { connect } = await import("node:net");
  return new Promise((resolve) => {
    let data = "";
    const s = connect({ path: socket });
    const timer = setTimeout(() => (s.destroy(), resolve(null)), 3000);
    s.on("connect", () => s.write(`GET ${url} HTTP/1.1\r\nHost: ${new URL(url).host}\r\nConnection: close\r\n\r\n`));
    s.on("data", (d) => (data += d.toString()));
    s.on("error", () => (clearTimeout(timer), resolve(null)));
    s.on("close", () => {
      clearTimeout(timer);
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(data);
      resolve(m ? { status: Number(m[1]), body: data.slice(data.indexOf("\r\n\r\n") + 4) } : null);
    });
  });
}

describe("fail-closed with the real egress proxy guard", () => {
  test("an allowed request passes; after kill -9 nothing gets out; after restart the same request passes again", async () => {
    const upstream = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("upstream-ok") });
    try {
      w = makeWorld();
      const sid = seedSandbox(w, "demo");
      const store = w.store();
      const sb = store.findSandbox("/r", "demo")!;
      // The upstream is the host's own (loopback): published for this sandbox, as `sbx publish` stores it.
      store.updateIdentity(sb.id, { ...sb.identity, publish: [`127.0.0.1:${upstream.port}`] });
      d = await startDaemonProc(w, 10_000, "real-proxy");
      await startSandbox(w, "demo");
      const proxy = join(w.paths.runtimeDir, "sb", sid, "proxy.sock");
      const url = `http://127.0.0.1:${upstream.port}/`;
      expect(await viaProxy(proxy, url)).toMatchObject({ status: 200, body: "upstream-ok" });
      // Not published: refused by policy (the proxy is up and deciding).
      expect((await viaProxy(proxy, `http://127.0.0.2:${upstream.port}/`))?.status).toBe(403);

      await kill9(d);
      d = undefined;
      expect(await viaProxy(proxy, url)).toBeNull();

      d = await startDaemonProc(w, 10_000, "real-proxy");
      expect(await viaProxy(proxy, url)).toMatchObject({ status: 200, body: "upstream-ok" });
    } finally {
      upstream.stop(true);
    }
  });
});
