// The control API over app.request(): shapes, one error shape, guards before the backend, fenced sandboxes refuse sessions, log long-poll.
import { afterEach, describe, expect, test } from "bun:test";
import { ErrorBodySchema, HealthSchema, LogsSchema, SandboxActionSchema, SandboxListSchema, StatusSchema } from "../../../src/daemon/protocol";
import { makeHarness, post, recordingGuard, type Harness } from "../../support/daemon-harness";

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

  test("start applies every guard before the backend starts the sandbox, and stop reverses it", async () => {
    h = makeHarness();
    h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    const res = await post(h, "/v1/sandboxes/start", { name: "demo" });
    expect(res.status).toBe(200);
    const { sandbox } = SandboxActionSchema.parse(await res.json());
    expect(sandbox.guarded).toBe(true);
    expect(sandbox.phase).toBe("running");
    expect(sandbox.guards.map((g) => g.name)).toEqual(["proxy", "bridge"]);
    expect(h.events).toEqual(["proxy.start demo", "bridge.start demo", "backend.apply demo"]);

    h.events.length = 0;
    const stopped = SandboxActionSchema.parse(await (await post(h, "/v1/sandboxes/stop", { name: "demo" })).json());
    expect(h.events).toEqual(["backend.stop demo", "bridge.stop demo", "proxy.stop demo"]);
    expect(stopped.sandbox.state).toBe("stopped");
    expect(stopped.sandbox.guarded).toBe(false);
  });

  test("a lifecycle bringUp replaces backend.apply, runs after the guards, and its spec is the one sessions use", async () => {
    h = makeHarness({
      bringUp: (ev) => async (sb, spec, backend) => {
        ev.push(`bringUp ${sb.name}`);
        await backend.apply(spec);
        return { ...spec, options: { driver: "docker", claudeAuth: "overlay", shell: "/usr/bin/fish" } };
      },
    });
    h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    expect((await post(h, "/v1/sandboxes/start", { name: "demo" })).status).toBe(200);
    expect(h.events).toEqual(["proxy.start demo", "bridge.start demo", "bringUp demo", "backend.apply demo"]);
    const rec = h.controller.requireGuarded(h.store.findSandbox("/r", "demo")!);
    expect(rec.spec.options).toMatchObject({ shell: "/usr/bin/fish" });
  });

  test("guards get the sandbox's own socket dir, 0700, and its spec", async () => {
    h = makeHarness();
    h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    await post(h, "/v1/sandboxes/start", { name: "demo" });
    const list = SandboxListSchema.parse(await (await h.app.request("/v1/sandboxes")).json());
    const sid = list.sandboxes[0]!.sid;
    const { statSync } = await import("node:fs");
    const dir = `${h.paths.runtimeDir}/sb/${sid}`;
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  test("a guard that fails keeps the sandbox fenced: no backend start, no session, and the error has one shape", async () => {
    let fail = true;
    h = makeHarness({ guards: (ev) => [recordingGuard("proxy", ev), recordingGuard("bridge", ev, { fail: () => fail })] });
    h.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
    const res = await post(h, "/v1/sandboxes/start", { name: "demo" });
    expect(res.status).toBe(503);
    const err = await errorOf(res);
    expect(err.error).toBe("unavailable");
    expect(err.message).toContain("bridge cannot start");
    expect(err.hint.length).toBeGreaterThan(0);
    // The proxy that did start was stopped again; the backend was never asked to start it.
    expect(h.events).toEqual(["proxy.start demo", "bridge.fail demo", "proxy.stop demo"]);
    expect(h.backend.entries.size).toBe(0);

    const s = await post(h, "/v1/sessions", { name: "demo", cwd: "/tmp" });
    expect(s.status).toBe(503);
    expect((await errorOf(s)).message).toContain("fenced");

    const status = StatusSchema.parse(await (await h.app.request("/v1/status")).json());
    expect(status.sandboxes[0]!.guarded).toBe(false);
    expect(status.sandboxes[0]!.error).toContain("bridge cannot start");

    fail = false;
    expect((await post(h, "/v1/sandboxes/start", { name: "demo" })).status).toBe(200);
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
    await post(h, "/v1/sandboxes/start", { name: "demo" });
    healthy = false;
    const res = await post(h, "/v1/sessions", { name: "demo", cwd: "/tmp" });
    expect(res.status).toBe(503);
    expect((await errorOf(res)).message).toContain("socket gone");
  });

  test("bad requests are usage errors naming the field; unknown routes and sandboxes are not_found", async () => {
    h = makeHarness();
    const bad = await post(h, "/v1/sandboxes/start", { name: "Bad Name" });
    expect(bad.status).toBe(400);
    const e = await errorOf(bad);
    expect(e.error).toBe("usage");
    expect(e.message).toContain("name");

    const env = await post(h, "/v1/sessions", { name: "demo", cwd: "/tmp", env: { GH_TOKEN: "x" } });
    expect(env.status).toBe(400);
    expect((await errorOf(env)).message).toContain("terminal variables");

    const notJson = await h.app.request("/v1/sandboxes/start", { method: "POST", body: "{" });
    expect((await errorOf(notJson)).error).toBe("usage");

    const nf = await h.app.request("/v1/nope");
    expect(nf.status).toBe(404);
    expect((await errorOf(nf)).error).toBe("not_found");

    const missing = await post(h, "/v1/sandboxes/start", { name: "ghost" });
    expect(missing.status).toBe(404);
    expect((await errorOf(missing)).hint).toContain("sbx list");
  });

  test("two sandboxes of one name in different repos need the repo", async () => {
    h = makeHarness();
    h.store.createSandbox({ name: "demo", repo: "/a", backend: "fake" });
    h.store.createSandbox({ name: "demo", repo: "/b", backend: "fake" });
    const res = await post(h, "/v1/sandboxes/start", { name: "demo" });
    expect(res.status).toBe(409);
    expect((await errorOf(res)).hint).toContain("--repo");
    expect((await post(h, "/v1/sandboxes/start", { name: "demo", repo: "/b" })).status).toBe(200);
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
    const waiting = h.app.request(`/v1/logs?after=${cursor}&waitMs=5000`);
    setTimeout(() => h.store.audit({ sandboxId: b.id, kind: "sync", action: "fetched" }), 150);
    const next = LogsSchema.parse(await (await waiting).json());
    expect(next.entries.map((e) => e.action)).toEqual(["fetched"]);
    expect(performance.now() - t0).toBeLessThan(4000);
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
