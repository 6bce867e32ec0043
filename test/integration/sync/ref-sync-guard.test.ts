// The ref-sync guard adapter: starts a real sync from a daemon-shaped context, audits through ctx.audit, reports health.
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createExec } from "../../../src/sys/exec";
import { refSyncGuard } from "../../../src/guards/ref-sync";
import { makeFixture, REMOTE, waitFor, type SyncFixture } from "./fixture";

/** The guard's target for fixture f (its repos, remote and alternates; no poll), with this inside fetch. */
function targetOf(f: SyncFixture, insideFetch: SyncFixture["insideFetch"]) {
  return { hostRepo: f.host, clonePath: f.clone, remoteName: REMOTE, expectedAlternates: f.alternates, insideFetch, pollMs: 0 };
}

describe("ref-sync guard", () => {
  test("start → synced both ways with audits via ctx.audit; health ok; stop audits and stops", async () => {
    const f = makeFixture();
    try {
      const audits: [string, Record<string, unknown> | undefined][] = [];
      const ctx = { exec: createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" }), audit: (a: string, d?: Record<string, unknown>) => void audits.push([a, d]), sandboxName: "t" };
      const guard = refSyncGuard((c: typeof ctx) => ({ ...targetOf(f, f.insideFetch), remoteName: `sandbox-${c.sandboxName}` }));
      expect(guard.name).toBe("ref-sync");
      const h = await guard.start(ctx);
      expect(h.health()).toEqual({ ok: true, detail: expect.stringContaining(`${REMOTE} in sync`) });
      // The first sync each way runs in the background once the guard is up.
      await waitFor("first sync both ways", () => audits.filter(([a]) => a === "ref-sync.synced").length === 2, 5000);
      expect(audits.map(([a]) => a)).toEqual(["ref-sync.start", "ref-sync.synced", "ref-sync.synced"]);
      const sha = f.commitInside("via guard", "g");
      await waitFor("guarded sync", () => f.hostRef(`${REMOTE}/g`) === sha, 1000);
      await h.stop();
      expect(h.health().ok).toBe(false);
      expect(audits.at(-1)?.[0]).toBe("ref-sync.stop");
    } finally {
      f.cleanup();
    }
  });

  test("a rewritten alternates file is refused at start, before the background sync: health not ok, nothing fetched", async () => {
    const f = makeFixture();
    try {
      writeFileSync(join(f.clone, ".git", "objects", "info", "alternates"), "/somewhere/else/objects\n");
      const audits: string[] = [];
      const fetches: string[] = [];
      const ctx = { exec: createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" }), audit: (a: string) => void audits.push(a), sandboxName: "t" };
      const guard = refSyncGuard(() =>
        targetOf(f, async () => {
          fetches.push("inside");
          return f.insideFetch();
        }),
      );
      const h = await guard.start(ctx);
      expect(h.health().ok).toBe(false);
      expect(h.health().detail).toContain("refused");
      await Bun.sleep(300);
      expect(audits).not.toContain("ref-sync.synced");
      expect(fetches).toEqual([]);
      await h.stop();
    } finally {
      f.cleanup();
    }
  });

  test("sandboxStarted does not wait for the owed sync (a start stays fast); stop waits for it before stopping", async () => {
    const f = makeFixture();
    try {
      const audits: string[] = [];
      const ctx = { exec: createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" }), audit: (a: string) => void audits.push(a) };
      // The inside fetch is slow (a `docker exec` stands behind it in production); it only goes slow once started.
      let slow = false;
      let insideDone = 0;
      const guard = refSyncGuard(() => ({
        ...targetOf(f, async () => {
          if (slow) await Bun.sleep(400);
          const r = await f.insideFetch();
          if (slow) insideDone++;
          return r;
        }),
        syncOnStart: () => true,
      }));
      const h = await guard.start(ctx);
      slow = true;
      const t0 = performance.now();
      await h.sandboxStarted();
      expect(performance.now() - t0).toBeLessThan(200);
      expect(insideDone).toBe(0);
      await h.stop();
      // stop() waited for the owed sync's inside fetch before stopping.
      expect(insideDone).toBeGreaterThanOrEqual(1);
      expect(audits.at(-1)).toBe("ref-sync.stop");
    } finally {
      f.cleanup();
    }
  });
});
