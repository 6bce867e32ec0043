// service-crash-reported: a service that exits when sbx did not stop it, or turns unhealthy, is an audit row of its
// sandbox (what `sbx logs` shows) and a notice, read from the engine's event stream (a stand-in engine on a unix
// socket that streams GET /events as the real one does and ignores its filters, so the watcher's own checks are
// exercised). A stop sbx began is not a crash; another state root's or an unknown sandbox's containers are not ours.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serviceEvent, watchServices } from "../../../../src/drivers/docker/service-watch";
import type { Sandbox } from "../../../../src/core/schemas";
import { silentLogger } from "../../../../src/sys/log";

const ROOT = "r".repeat(64);
const dir = mkdtempSync(join(tmpdir(), "sbx-events-"));
const sock = join(dir, "docker.sock");
let server: ReturnType<typeof Bun.serve> | null = null;
afterEach(() => {
  server?.stop(true);
  server = null;
});

const attrs = (o: Record<string, string>) => ({ "sbx.root": ROOT, "sbx.role": "service", "sbx.sandbox": "sid1", "sbx.service": "db", name: "sbx-sid1-svc-db", ...o });
const ev = (Action: string, a: Record<string, string> = {}, t = 1_700_000_000) => ({ Type: "container", Action, time: t, timeNano: t * 1e9 + Math.floor(Math.random() * 1e6), Actor: { Attributes: attrs(a) } });

/** A stand-in engine: each GET /events answers the queued events as a stream (one JSON object a line), then holds the stream open. */
function engine(batches: unknown[][]): { queries: string[] } {
  const queries: string[] = [];
  server = Bun.serve({
    unix: sock,
    fetch(req) {
      const url = new URL(req.url);
      queries.push(url.search);
      const batch = batches.shift() ?? [];
      const body = new ReadableStream<Uint8Array>({
        start(c) {
          for (const e of batch) c.enqueue(new TextEncoder().encode(`${JSON.stringify(e)}\n`));
          if (batches.length > 0) c.close(); // the engine restarted: the watcher connects again
        },
      });
      return new Response(body, { headers: { "content-type": "application/json" } });
    },
  });
  return { queries };
}

function world(rows: Partial<Sandbox>[]) {
  const audits: { sandboxId: number | null; kind: string; action: string; detail: Record<string, unknown> }[] = [];
  const notices: { title: string; body: string }[] = [];
  const ctx = {
    store: {
      listSandboxes: () => rows as Sandbox[],
      getSandbox: () => null,
      audit: (e: (typeof audits)[number]) => {
        audits.push(e);
        return 1;
      },
    },
    log: silentLogger,
    blocked() {},
    stopSandbox: async () => {},
    notify: (n: { title: string; body: string }) => void notices.push(n),
  };
  return { ctx: ctx as unknown as Parameters<typeof watchServices>[0], audits, notices };
}

async function until(f: () => boolean, ms = 3000): Promise<void> {
  for (let i = 0; i < ms / 10 && !f(); i++) await Bun.sleep(10);
}

describe("service-crash-reported: the engine's events of services, as audit rows", () => {
  test("a crash (exit sbx did not cause, out of memory said) and an unhealthy turn are rows of their sandbox, with a notice; nothing else is", async () => {
    const { queries } = engine([
      [
        ev("start"),
        ev("health_status: healthy"),
        ev("oom"),
        ev("die", { exitCode: "137" }),
        ev("health_status: unhealthy"),
        ev("die", { exitCode: "1", "sbx.root": "another-root" }),
        ev("die", { exitCode: "1", "sbx.sandbox": "not-a-sandbox-of-ours" }),
        ev("die", { exitCode: "1", "sbx.role": "sandbox" }),
        "not json at all",
      ],
    ]);
    const w = world([{ id: 7, name: "dev", state: "active", identity: { id: "sid1" } }]);
    const [watcher] = watchServices(w.ctx, { apiSocket: sock, root: ROOT, oracle: { exitExpected: () => false } });
    await until(() => w.audits.length >= 2);
    await Bun.sleep(50);
    await watcher!.stop();
    expect(w.audits).toEqual([
      { sandboxId: 7, kind: "service", action: "service.exited", detail: { name: "dev", service: "db", exitCode: 137, oom: true } },
      { sandboxId: 7, kind: "service", action: "service.unhealthy", detail: { name: "dev", service: "db" } },
    ]);
    expect(w.notices[0]).toEqual({ title: "sbx: service db of dev exited (code 137), out of memory", body: "sbx services dev logs db" });
    // The engine was asked only for this root's service containers.
    expect(decodeURIComponent(queries[0]!)).toContain(`"label":["sbx.root=${ROOT}","sbx.role=service"]`);
  });

  test("a stop, rm or restart sbx began is not a crash", () => {
    const expected = new Set(["sbx-sid1-svc-db"]);
    expect(serviceEvent(ev("die", { exitCode: "143" }), ROOT, { exitExpected: (c) => expected.has(c) }, new Set())).toBeNull();
    expect(serviceEvent(ev("die", { exitCode: "143", name: "sbx-sid1-svc-other", "sbx.service": "other" }), ROOT, { exitExpected: (c) => expected.has(c) }, new Set())).toMatchObject({ action: "service.exited", service: "other" });
  });

  test("the engine going away: the watcher connects again from the last event's time, and an event seen twice is one row", async () => {
    const t = 1_800_000_000;
    const crash = ev("die", { exitCode: "3" }, t);
    const { queries } = engine([[crash], [crash, ev("die", { exitCode: "4" }, t + 1)]]);
    const w = world([{ id: 7, name: "dev", state: "active", identity: { id: "sid1" } }]);
    const [watcher] = watchServices(w.ctx, { apiSocket: sock, root: ROOT, oracle: { exitExpected: () => false }, retryMs: 20 });
    await until(() => w.audits.length >= 2);
    await watcher!.stop();
    expect(w.audits.map((a) => a.detail.exitCode)).toEqual([3, 4]);
    expect(queries[1]).toContain(`since=${t}`);
  });

  test("stop ends the watch at once, also while the engine holds the stream open", async () => {
    engine([[]]);
    const w = world([]);
    const [watcher] = watchServices(w.ctx, { apiSocket: sock, root: ROOT, oracle: { exitExpected: () => false } });
    await Bun.sleep(50);
    // A stop that waited on the held stream would never end: bounded here well past any scheduling delay.
    expect(await Promise.race([watcher!.stop().then(() => "stopped"), Bun.sleep(10_000).then(() => "held")])).toBe("stopped");
  });
});

process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
