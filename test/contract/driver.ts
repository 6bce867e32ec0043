// The driver contract: what the one sandbox lifecycle relies on of every kind. Each driver's test calls runDriverContract;
// a test a driver cannot run here is skipped with its reason, never passed silently.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import type { Sandbox } from "../../src/core/schemas";
import type { Driver, DriverReport, NewSandbox } from "../../src/drivers/driver";
import type { Store } from "../../src/store/store";

export interface DriverHarness {
  driver: Driver;
  store: Store;
  /** A new sandbox's request: a fresh name, its repo, its (made, empty) dir, its id. */
  newSandbox(name: string): NewSandbox;
  /** Operations that changed the system so far, when the harness can count them. */
  mutations?: () => number;
  teardown?: () => Promise<void>;
}

export interface DriverContractOptions {
  /** Tests this driver cannot run here, by title, each with why. */
  skip?: Record<string, string>;
  /** Why the whole suite cannot run here (it is listed as skipped, with this reason). */
  skipAll?: string;
}

const quiet: DriverReport = { log: () => {}, progress: () => {}, audit: () => {} };

export function runDriverContract(label: string, make: () => Promise<DriverHarness>, opts: DriverContractOptions = {}): void {
  describe.skipIf(opts.skipAll !== undefined)(`driver contract: ${label}${opts.skipAll ? ` (skipped: ${opts.skipAll})` : ""}`, () => {
    let h: DriverHarness;
    beforeAll(async () => {
      h = await make();
    });
    afterAll(async () => {
      await h?.teardown?.();
    });

    const it = (title: string, fn: () => Promise<void>) => {
      const why = opts.skip?.[title];
      if (why !== undefined) test.skip(`${title} (skipped: ${why})`, fn);
      else test(title, fn, 30_000);
    };

    /** Makes a sandbox as the service does: identity, row, provision, running. */
    const made = async (name: string): Promise<Sandbox> => {
      const n = h.newSandbox(name);
      const identity = await h.driver.newIdentity(n, h.store.listSandboxes(), quiet);
      const row = h.store.createSandbox({ name: n.name, repo: n.repo, backend: h.driver.kind, identity });
      h.store.updateIdentity(row.id, await h.driver.provision(row, n, quiet));
      const live = h.store.getSandbox(row.id)!;
      const r = await h.driver.ensureRunning(live, quiet);
      if (r.identity) h.store.updateIdentity(row.id, r.identity);
      return h.store.getSandbox(row.id)!;
    };

    it("a new sandbox runs once provisioned and started, and its spec is the same on every read", async () => {
      const row = await made("dc-new");
      const spec = h.driver.spec(row);
      expect((await h.driver.inspect(spec)).phase).toBe("running");
      expect(h.driver.spec(h.store.getSandbox(row.id)!)).toEqual(spec);
      expect(spec.name).toBe("dc-new");
      expect(spec.env.SANDBOX).toBe("dc-new");
      expect(spec.env.HTTPS_PROXY).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    });

    it("starting a running sandbox changes nothing", async () => {
      const row = await made("dc-idem");
      const before = h.mutations?.();
      const r = await h.driver.ensureRunning(row, quiet);
      expect((await h.driver.inspect(r.spec)).phase).toBe("running");
      if (before !== undefined) expect(h.mutations!()).toBe(before);
    });

    it("a stopped sandbox starts again", async () => {
      const row = await made("dc-stop");
      const spec = h.driver.spec(row);
      await h.driver.stop(spec);
      expect((await h.driver.inspect(spec)).phase).toBe("stopped");
      await h.driver.ensureRunning(h.store.getSandbox(row.id)!, quiet);
      expect((await h.driver.inspect(spec)).phase).toBe("running");
    });

    it("prune removes what a sandbox whose row and dir are gone left behind, and spares the kept", async () => {
      const kept = await made("dc-kept");
      const lost = await made("dc-lost");
      const lostSpec = h.driver.spec(lost);
      // A crash after rm dropped the row and the dir: only the system still holds it.
      h.store.setSandboxState(lost.id, "deleted");
      rmSync(lostSpec.dir, { recursive: true, force: true });
      const dry = await h.driver.prune(new Set([h.driver.spec(kept).id]), { dryRun: true });
      expect(dry.removed.join("\n")).toContain(lostSpec.id);
      expect((await h.driver.inspect(lostSpec)).phase).toBe("running");
      await h.driver.prune(new Set([h.driver.spec(kept).id]), { dryRun: false });
      expect((await h.driver.inspect(lostSpec)).phase).toBe("absent");
      expect((await h.driver.inspect(h.driver.spec(kept))).phase).toBe("running");
    });

    it("workspace and a session's cwd are absolute paths", async () => {
      const row = await made("dc-paths");
      const spec = h.driver.spec(row);
      expect(h.driver.workspace(spec)).toMatch(/^\//);
      expect(h.driver.sessionCwd(spec, row.repo)).toMatch(/^\//);
    });

    it("two sandboxes of one repo never share an id, a socket dir or a proxy port", async () => {
      const a = h.driver.spec(await made("dc-a"));
      const b = h.driver.spec(await made("dc-b"));
      expect(a.id).not.toBe(b.id);
      expect(a.sockets.dir).not.toBe(b.sockets.dir);
      const port = (s: typeof a) => (s.options.driver === "fake" ? undefined : s.options.proxyPort);
      if (port(a) !== undefined) expect(port(a)).not.toBe(port(b));
    });

    it("remove takes it off the system; removing what is gone succeeds", async () => {
      const row = await made("dc-rm");
      const spec = h.driver.spec(row);
      await h.driver.remove(spec);
      expect((await h.driver.inspect(spec)).phase).toBe("absent");
      expect((await h.driver.remove(spec)).changed).toBe(false);
    });
  });
}
