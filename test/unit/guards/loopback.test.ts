// The loopback guard: a user-account sandbox's 127.0.0.1:<proxyPort> relays to its own proxy socket; Docker sandboxes get none; a taken port fences.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loopbackGuard, loopbackPort } from "../../../src/guards/loopback";
import { proxyGuard } from "../../../src/guards/proxy";
import type { GuardContext } from "../../../src/guards/guards";
import type { BackendKind } from "../../../src/core/schemas";
import { Store } from "../../../src/store/store";
import { guardContext } from "../../support/guard-context";

let root: string;
let store: Store;
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  store?.close();
  rmSync(root, { recursive: true, force: true });
});

function freePort(): number {
  const l = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const p = l.port;
  l.stop(true);
  return p;
}

function ctx(backend: BackendKind, proxyPort: number | undefined): GuardContext {
  root = mkdtempSync(join(tmpdir(), "sbxlg-"));
  const made = root;
  cleanups.push(() => rmSync(made, { recursive: true, force: true }));
  store = new Store(":memory:");
  const sandbox = store.createSandbox({ name: "demo", repo: "/r", backend });
  const dir = join(root, "sb", "0123456789ab");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return guardContext({ store, sandbox, dir, specDir: join(root, "cache"), options: proxyPort === undefined ? { driver: "fake" } : { driver: "user", proxyPort } });
}

/** One raw HTTP request over TCP to 127.0.0.1:<port>; the whole reply. */
async function ask(port: number, request: string): Promise<string> {
  let out = "";
  await new Promise<void>((resolve) => {
    void Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: {
        open: (s) => void s.write(request),
        data: (_s, d) => void (out += new TextDecoder().decode(d)),
        close: () => resolve(),
        error: () => resolve(),
        connectError: () => resolve(),
      },
    });
  });
  return out;
}

describe("loopback guard", () => {
  test("linux-user: 127.0.0.1:<proxyPort> reaches this sandbox's proxy (a 403 of its own), and stops with the guard", async () => {
    const port = freePort();
    const c = ctx("linux-user", port);
    const proxy = await proxyGuard({ resolve: async () => [] }).start(c);
    cleanups.push(() => proxy.stop());
    const h = await loopbackGuard().start(c);
    expect(h.health()).toMatchObject({ ok: true });
    const reply = await ask(port, "GET http://example.org/ HTTP/1.1\r\nHost: example.org\r\nConnection: close\r\n\r\n");
    expect(reply).toMatch(/^HTTP\/1\.1 403/);
    expect(reply.toLowerCase()).toContain("x-sbx-blocked");
    // the denial was recorded for THIS sandbox: the port is its identity
    expect(store.listApprovals({ sandboxId: c.sandbox.id }).map((a) => a.host)).toEqual(["example.org"]);
    await h.stop();
    expect(await ask(port, "GET / HTTP/1.1\r\n\r\n")).toBe("");
  });

  test("with the proxy down the port answers nothing (fail closed) and health says so", async () => {
    const port = freePort();
    const c = ctx("macos", port);
    const h = await loopbackGuard().start(c);
    cleanups.push(() => h.stop());
    expect(h.health().ok).toBe(false);
    expect(await ask(port, "GET http://example.org/ HTTP/1.1\r\nHost: example.org\r\n\r\n")).toBe("");
  });

  test("a port someone else holds: the guard throws, so the sandbox stays fenced", async () => {
    const taken = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    cleanups.push(() => taken.stop(true));
    const c = ctx("linux-user", taken.port);
    await expect(loopbackGuard().start(c)).rejects.toThrow(/cannot listen on 127\.0\.0\.1/);
  });

  test("docker sandboxes: no listener (their forwarder is inside)", async () => {
    const c = ctx("docker", undefined);
    const h = await loopbackGuard().start(c);
    expect(h.health()).toEqual({ ok: true, detail: "not used (forwarder inside the sandbox)" });
    await h.stop();
  });

  test("a user sandbox without a usable port is refused", () => {
    expect(() => loopbackPort(ctx("linux-user", undefined))).toThrow(/no usable loopback proxy port/);
    expect(() => loopbackPort(ctx("linux-user", 80))).toThrow(/no usable loopback proxy port/);
  });
});
