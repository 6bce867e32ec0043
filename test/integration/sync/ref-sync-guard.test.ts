// The ref-sync guard adapter: starts a real sync from a daemon-shaped context, audits through ctx.audit, reports health.
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createExec } from "../../../src/sys/exec";
import { refSyncGuard } from "../../../src/guards/ref-sync";
import type { SandboxGit, SandboxGitMode } from "../../../src/sync/sandbox-git";
import { makeFixture, NAME, REMOTE, waitFor, type SyncFixture } from "./fixture";

/** The guard's target for fixture f (its repo and name; no poll), with this way of running git as the sandbox. */
function targetOf(f: SyncFixture, sandboxGit: (mode: SandboxGitMode) => Promise<SandboxGit | null> = async () => f.sandboxGit) {
  return { hostRepo: f.host, name: NAME, sandboxGit, watchDir: join(f.clone, ".git"), pollMs: 0 };
}

describe("ref-sync guard", () => {
  test("start → synced both ways with audits via ctx.audit; health ok; stop audits and stops", async () => {
    const f = makeFixture();
    try {
      const audits: [string, Record<string, unknown> | undefined][] = [];
      const ctx = { exec: createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" }), audit: (a: string, d?: Record<string, unknown>) => void audits.push([a, d]), sandboxName: "t" };
      const guard = refSyncGuard((c: typeof ctx) => ({ ...targetOf(f), name: c.sandboxName }));
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

  test("a sync that fails is in the health's detail but fences nothing (it guards no boundary)", async () => {
    const f = makeFixture();
    try {
      const ctx = { exec: createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" }), audit: () => undefined };
      const failing: SandboxGit = () => ({ stdout: new ReadableStream({ start: (c) => c.close() }), done: Promise.resolve({ exitCode: 128, stderr: "fatal: not a git repository" }) });
      const h = await refSyncGuard(() => targetOf(f, async () => failing)).start(ctx);
      await waitFor("the failure", () => h.health().detail.includes("not a git repository"), 5000);
      expect(h.health()).toMatchObject({ ok: true, detail: expect.stringContaining("not in sync:") });
      await h.stop();
      expect(h.health().ok).toBe(false);
    } finally {
      f.cleanup();
    }
  });

  test("sandboxStarted does not wait for the owed sync (a start stays fast); stop waits for it before stopping", async () => {
    const f = makeFixture();
    try {
      const audits: string[] = [];
      const ctx = { exec: createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" }), audit: (a: string) => void audits.push(a) };
      // Stopped at first (nothing can change its refs: host → clone is owed); once started, git inside is slow (a
      // `docker exec` stands behind it in production).
      let started = false;
      let insideDone = 0;
      const slowGit: SandboxGit = (args, stdin) => {
        const run = f.sandboxGit(args, stdin);
        return { stdout: run.stdout, done: Bun.sleep(400).then(() => run.done).then((d) => (insideDone++, d)) };
      };
      const guard = refSyncGuard(() => targetOf(f, async (mode) => (started ? slowGit : mode === "write" ? null : f.sandboxGit)));
      const h = await guard.start(ctx);
      await waitFor("first sync both ways", () => audits.filter((a) => a === "ref-sync.synced").length >= 1, 5000);
      await Bun.sleep(100);
      started = true;
      await h.sandboxStarted();
      // It returned before the slow git inside ended (judged by what ended, not by a time).
      expect(insideDone).toBe(0);
      await h.stop();
      // stop() waited for the owed sync's git inside before stopping.
      expect(insideDone).toBeGreaterThanOrEqual(1);
      expect(audits.at(-1)).toBe("ref-sync.stop");
    } finally {
      f.cleanup();
    }
  });
});
