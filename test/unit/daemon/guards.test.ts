// The production guards plug in through the one registry: each serves its sandbox's own socket while up, and removes it when stopped.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bridgeGuard, gateDirOf } from "../../../src/guards/bridge";
import { proxyGuard } from "../../../src/guards/proxy";
import type { GuardContext } from "../../../src/guards/guards";
import { Store } from "../../../src/store/store";
import { createExec } from "../../../src/sys/exec";
import { guardContext } from "../../support/guard-context";

let root: string;
let store: Store;
afterEach(() => {
  store?.close();
  rmSync(root, { recursive: true, force: true });
});

function ctx(): GuardContext {
  root = mkdtempSync(join(tmpdir(), "sbxg-"));
  store = new Store(":memory:");
  const sandbox = store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
  const dir = join(root, "sb", "0123456789ab");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return guardContext({ store, sandbox, dir, specDir: join(root, "cache", "demo") });
}

describe("production guards", () => {
  test("proxy: serves the sandbox's proxy socket (0600), healthy while up, gone after stop", async () => {
    const c = ctx();
    const h = await proxyGuard({ resolve: async () => [] }).start(c);
    expect(statSync(c.sockets.proxy).mode & 0o777).toBe(0o600);
    expect(h.health().ok).toBe(true);
    // Anything not allowlisted is refused by the proxy itself (it is up and deciding for this sandbox).
    const { connect } = await import("node:net");
    const reply = await new Promise<string>((resolve) => {
      let d = "";
      const s = connect({ path: c.sockets.proxy });
      s.on("connect", () => s.write("GET http://198.51.100.7/ HTTP/1.1\r\nHost: 198.51.100.7\r\nConnection: close\r\n\r\n"));
      s.on("data", (x) => (d += x.toString()));
      s.on("close", () => resolve(d));
    });
    expect(reply).toMatch(/^HTTP\/1\.1 403/);
    await h.stop();
    expect(existsSync(c.sockets.proxy)).toBe(false);
    expect(h.health().ok).toBe(false);
    expect(store.listAudit().some((e) => e.kind === "egress" && e.action === "denied")).toBe(true);
  });

  test("bridge: serves the sandbox's bridge socket (0600) with its gate beside the clone, gone after stop", async () => {
    const c = ctx();
    // The bridge makes its gate (with the host repo's objects as alternates) before it answers: give it a real repo.
    const repo = join(root, "repo");
    mkdirSync(repo);
    expect(Bun.spawnSync(["git", "init", "--quiet", repo]).exitCode).toBe(0);
    c.spec.repo = repo;
    c.exec = createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" });
    const h = await bridgeGuard({ secrets: () => ({}), path: process.env.PATH ?? "/usr/bin:/bin" }).start(c);
    expect(statSync(c.sockets.bridge).mode & 0o777).toBe(0o600);
    expect(h.health().ok).toBe(true);
    const res = await fetch("http://bridge/health", { unix: c.sockets.bridge });
    expect(res.ok).toBe(true);
    expect(gateDirOf(c)).toBe(join(c.spec.dir, "gate"));
    expect(existsSync(join(gateDirOf(c), "gate.git", "HEAD"))).toBe(true);
    await h.stop();
    expect(existsSync(c.sockets.bridge)).toBe(false);
  });
});
