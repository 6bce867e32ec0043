// The backend contract: every backend, real or faked, must pass these. Each backend's test calls runBackendContract.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Backend } from "../../src/drivers/backend";
import type { SandboxSpec } from "../../src/core/spec";

export interface ContractHarness {
  backend: Backend;
  /** A fresh, valid spec for a sandbox named `name` (unique per call). */
  spec(name: string): SandboxSpec | Promise<SandboxSpec>;
  /** Number of mutating operations issued so far (system calls that change state), if the harness can count them. */
  mutations?: () => number;
  /** Removes whatever the harness made outside the backend (dirs, users, images). */
  teardown?: () => Promise<void>;
}

export interface ContractOptions {
  /** Reason to skip the whole suite; undefined runs it. */
  skip?: string | undefined;
}

export function runBackendContract(label: string, make: () => Promise<ContractHarness>, opts: ContractOptions = {}): void {
  const title = opts.skip ? `backend contract: ${label} (skipped: ${opts.skip})` : `backend contract: ${label}`;
  describe.skipIf(opts.skip !== undefined)(title, () => {
    let h: ContractHarness;
    const made: SandboxSpec[] = [];
    const spec = async (name: string) => {
      const s = await h.spec(name);
      made.push(s);
      return s;
    };

    beforeAll(async () => {
      h = await make();
    });

    afterAll(async () => {
      if (!h) return;
      for (const s of made) await h.backend.remove(s).catch(() => undefined);
      await h.teardown?.();
    });

    test("apply brings a sandbox to running", async () => {
      const s = await spec("contract-apply");
      expect((await h.backend.apply(s)).changed).toBe(true);
      expect((await h.backend.inspect(s)).phase).toBe("running");
    });

    test("apply twice changes nothing the second time", async () => {
      const s = await spec("contract-idem");
      await h.backend.apply(s);
      const before = h.mutations?.();
      expect((await h.backend.apply(s)).changed).toBe(false);
      if (before !== undefined) expect(h.mutations!()).toBe(before);
      expect((await h.backend.inspect(s)).phase).toBe("running");
    });

    test("stop keeps the sandbox; apply starts it again", async () => {
      const s = await spec("contract-stop");
      await h.backend.apply(s);
      expect((await h.backend.stop(s)).changed).toBe(true);
      expect((await h.backend.inspect(s)).phase).toBe("stopped");
      expect((await h.backend.stop(s)).changed).toBe(false);
      expect((await h.backend.apply(s)).changed).toBe(true);
      expect((await h.backend.inspect(s)).phase).toBe("running");
    });

    test("remove deletes; removing what is gone succeeds", async () => {
      const s = await spec("contract-rm");
      await h.backend.apply(s);
      expect((await h.backend.remove(s)).changed).toBe(true);
      expect((await h.backend.inspect(s)).phase).toBe("absent");
      expect((await h.backend.remove(s)).changed).toBe(false);
      expect((await h.backend.stop(s)).changed).toBe(false);
    });

    test("list finds what exists and not what was removed", async () => {
      const a = await spec("contract-list-a");
      const b = await spec("contract-list-b");
      await h.backend.apply(a);
      await h.backend.apply(b);
      await h.backend.remove(b);
      const ids = (await h.backend.list()).map((o) => o.id);
      expect(ids).toContain(a.id);
      expect(ids).not.toContain(b.id);
    });

    test("cleanup removes only what is not kept; dry run removes nothing", async () => {
      const keep = await spec("contract-keep");
      const orphan = await spec("contract-orphan");
      await h.backend.apply(keep);
      await h.backend.apply(orphan);
      const others = new Set((await h.backend.list()).map((o) => o.id).filter((id) => id !== orphan.id));
      const dry = await h.backend.cleanup(others, { dryRun: true });
      expect(dry.removed.join("\n")).toContain(orphan.id);
      expect((await h.backend.inspect(orphan)).phase).not.toBe("absent");
      const real = await h.backend.cleanup(others);
      expect(real.removed.join("\n")).toContain(orphan.id);
      expect((await h.backend.inspect(orphan)).phase).toBe("absent");
      expect((await h.backend.inspect(keep)).phase).toBe("running");
      expect((await h.backend.cleanup(others)).removed.filter((r) => r.includes(orphan.id))).toEqual([]);
    });

    test("shellArgv names a command to run on the host", async () => {
      const s = await spec("contract-shell");
      const argv = h.backend.shellArgv(s, { argv: ["true"], cwd: s.repo, tty: false, env: {} });
      expect(argv.length).toBeGreaterThan(0);
      expect(argv.every((a) => typeof a === "string")).toBe(true);
    });
  });
}
