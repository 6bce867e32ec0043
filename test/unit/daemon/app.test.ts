// The control API over app.request(): shapes, one error shape, guards before the driver, fenced sandboxes refuse sessions, log long-poll.
import { afterEach, describe, expect, test } from "bun:test";
import { ErrorBodySchema, HealthSchema, LogsSchema, SandboxListSchema, StatusSchema } from "../../../src/daemon/protocol";
import { lifecycle, makeHarness, post, recordingGuard, type Harness } from "../../support/daemon-harness";

let h: Harness;
afterEach(async () => h?.close());

async function errorOf(res: Response) {
  return ErrorBodySchema.parse(await res.json());
}

describe("control API", () => {
  test("/health answers with the daemon's identity", async () => {
    h = makeHarness();
    const res = await h.app.request("/health");
    expect(res.status).toBe(200);
    expect(HealthSchema.parse(await res.json()).pid).toBe(process.pid);
  });

  test("start applies every guard before the driver starts the sandbox, and stop reverses it", async () => {
    h = makeHarness();
    h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    const started = await lifecycle(h, "start", { name: "demo", cwd: "/" });
    expect(started.error).toBeUndefined();
    const sandbox = SandboxListSchema.parse(await (await h.app.request("/v1/sandboxes")).json()).sandboxes[0]!;
    expect(sandbox.guarded).toBe(true);
    expect(sandbox.phase).toBe("running");
    expect(sandbox.guards.map((g) => g.name)).toEqual(["proxy", "bridge"]);
    expect(h.events).toEqual(["proxy.start demo", "bridge.start demo", "backend.apply demo"]);

    h.events.length = 0;
    expect((await lifecycle(h, "stop", { name: "demo", cwd: "/" })).result).toEqual({ changed: true, sessions: 0 });
    expect(h.events).toEqual(["backend.stop demo", "bridge.stop demo", "proxy.stop demo"]);
    const stopped = h.view(h.store.findSandbox("/r", "demo")!);
    expect(stopped.state).toBe("stopped");
    expect(stopped.guarded).toBe(false);
  });

  test("the driver runs the sandbox after the guards, and what it learnt is kept over the identity", async () => {
    h = makeHarness();
    h.driver.trace = h.events;
    h.driver.learns = { shell: "/usr/bin/fish" };
    const row = h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake", identity: { kept: true } });
    expect((await lifecycle(h, "start", { name: "demo", cwd: "/" })).error).toBeUndefined();
    expect(h.events).toEqual(["proxy.start demo", "bridge.start demo", "driver.ensureRunning demo", "backend.apply demo"]);
    expect(h.store.getSandbox(row.id)?.identity).toEqual({ kept: true, shell: "/usr/bin/fish" });
  });

  test("guards get the sandbox's own socket dir, 0700, and its spec", async () => {
    h = makeHarness();
    h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    await lifecycle(h, "start", { name: "demo", cwd: "/" });
    const list = SandboxListSchema.parse(await (await h.app.request("/v1/sandboxes")).json());
    const sid = list.sandboxes[0]!.sid;
    const { statSync } = await import("node:fs");
    const dir = `${h.paths.runtimeDir}/sb/${sid}`;
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  test("a guard that fails keeps the sandbox fenced: no driver start, no session, and the error has one shape", async () => {
    let fail = true;
    h = makeHarness({ guards: (ev) => [recordingGuard("proxy", ev), recordingGuard("bridge", ev, { fail: () => fail })] });
    h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    const { error: err } = await lifecycle(h, "start", { name: "demo", cwd: "/" });
    expect(err?.error).toBe("unavailable");
    expect(err?.message).toContain("bridge cannot start");
    expect(err?.hint.length).toBeGreaterThan(0);
    // The proxy that did start was stopped again; the driver was never asked to start it.
    expect(h.events).toEqual(["proxy.start demo", "bridge.fail demo", "proxy.stop demo"]);
    expect(h.backend.entries.size).toBe(0);

    const s = await post(h, "/v1/sessions", { name: "demo", cwd: "/tmp" });
    expect(s.status).toBe(503);
    expect((await errorOf(s)).message).toContain("fenced");

    const status = StatusSchema.parse(await (await h.app.request("/v1/status")).json());
    expect(status.sandboxes[0]!.guarded).toBe(false);
    expect(status.sandboxes[0]!.error).toContain("bridge cannot start");

    fail = false;
    expect((await lifecycle(h, "start", { name: "demo", cwd: "/" })).error).toBeUndefined();
  });

  test("a sandbox never started by this daemon refuses sessions", async () => {
    h = makeHarness();
    h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    const res = await post(h, "/v1/sessions", { name: "demo", cwd: "/tmp" });
    expect(res.status).toBe(503);
    expect((await errorOf(res)).hint).toContain("sbx run demo");
  });

  test("a guard that turns unhealthy fences the sandbox again", async () => {
    let healthy = true;
    h = makeHarness({ guards: (ev) => [recordingGuard("proxy", ev, { healthy: () => healthy })] });
    h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    await lifecycle(h, "start", { name: "demo", cwd: "/" });
    healthy = false;
    const res = await post(h, "/v1/sessions", { name: "demo", cwd: "/tmp" });
    expect(res.status).toBe(503);
    expect((await errorOf(res)).message).toContain("socket gone");
  });

  test("bad requests are usage errors naming the field; unknown routes and sandboxes are not_found", async () => {
    h = makeHarness();
    const bad = await post(h, "/v1/lifecycle/start", { name: "Bad Name", cwd: "/" });
    expect(bad.status).toBe(400);
    const e = await errorOf(bad);
    expect(e.error).toBe("usage");
    expect(e.message).toContain("name");

    const env = await post(h, "/v1/sessions", { name: "demo", cwd: "/tmp", env: { GH_TOKEN: "x" } });
    expect(env.status).toBe(400);
    expect((await errorOf(env)).message).toContain("terminal variables");

    const notJson = await h.app.request("/v1/lifecycle/start", { method: "POST", body: "{" });
    expect((await errorOf(notJson)).error).toBe("usage");

    const nf = await h.app.request("/v1/nope");
    expect(nf.status).toBe(404);
    expect((await errorOf(nf)).error).toBe("not_found");

    const missing = await lifecycle(h, "start", { name: "ghost", cwd: "/" });
    expect(missing.error?.error).toBe("not_found");
    expect(missing.error?.hint).toContain("sbx list");
  });

  test("the old second doors are gone: starting, stopping and releasing a sandbox go through the service's verbs only", async () => {
    h = makeHarness();
    h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    for (const path of ["/v1/sandboxes/start", "/v1/sandboxes/stop", "/v1/sandboxes/release"]) {
      expect((await post(h, path, { name: "demo" })).status).toBe(404);
    }
    expect(h.events).toEqual([]);
  });

  test("logs filter by sandbox, and a follow request waits for the next entry", async () => {
    h = makeHarness();
    const a = h.store.createSandbox({ name: "a", repo: "/r", backend: "fake" });
    const b = h.store.createSandbox({ name: "b", repo: "/r", backend: "fake" });
    h.store.audit({ sandboxId: a.id, kind: "proxy", action: "blocked", detail: { host: "example.org" } });
    h.store.audit({ sandboxId: b.id, kind: "bridge", action: "push" });
    const onlyA = LogsSchema.parse(await (await h.app.request("/v1/logs?sandbox=a")).json());
    expect(onlyA.entries.map((e) => [e.sandbox, e.kind, e.action])).toEqual([["a", "proxy", "blocked"]]);

    const cursor = LogsSchema.parse(await (await h.app.request("/v1/logs")).json()).cursor;
    const t0 = performance.now();
    const waiting = h.app.request(`/v1/logs?after=${cursor}&waitMs=60000`);
    setTimeout(() => h.store.audit({ sandboxId: b.id, kind: "sync", action: "fetched" }), 150);
    const next = LogsSchema.parse(await (await waiting).json());
    expect(next.entries.map((e) => e.action)).toEqual(["fetched"]);
    expect(performance.now() - t0).toBeLessThan(30_000); // woken by the row, not at the end of the 60 s wait
    expect(next.cursor).toBeGreaterThan(cursor);

    const empty = LogsSchema.parse(await (await h.app.request(`/v1/logs?after=${next.cursor}&waitMs=200`)).json());
    expect(empty.entries).toEqual([]);
    expect(empty.cursor).toBe(next.cursor);
  });

  test("/v1/attach without a WebSocket upgrade is a usage error", async () => {
    h = makeHarness();
    const res = await h.app.request("/v1/attach?session=abcd");
    expect(res.status).toBe(400);
    expect((await errorOf(res)).error).toBe("usage");
  });
});
