// Adapter from ref sync to the daemon's per-sandbox guard shape (`start(ctx) → { stop(), health() }`), typed structurally.
import type { Exec } from "../sys/exec";
import { startRefSync, type RefSyncOptions } from "../sync/refsync";

/** The part of the daemon's GuardContext the ref-sync guard uses. */
export interface RefSyncGuardContext {
  exec: Exec;
  audit(action: string, detail?: Record<string, unknown>): void;
}

/** What the daemon must work out per sandbox (the repo, the name, how git runs as the sandbox). */
export type RefSyncTarget = Omit<RefSyncOptions, "exec" | "audit">;

export interface RefSyncGuardHandle {
  stop(): Promise<void>;
  health(): { ok: boolean; detail: string };
  /** The sandbox now runs: sync both ways (host → clone could not run while it was stopped), in the background. */
  sandboxStarted(): Promise<void>;
}

/**
 * The "ref-sync" guard: on start, resolves the sandbox's target, starts watching and syncs once each way (in the
 * background). A failing sync is in its health's detail, never a fence: only a stopped sync is not ok.
 */
export function refSyncGuard<C extends RefSyncGuardContext>(resolve: (ctx: C) => RefSyncTarget | Promise<RefSyncTarget>) {
  return {
    name: "ref-sync" as const,
    async start(ctx: C): Promise<RefSyncGuardHandle> {
      const target = await resolve(ctx);
      // The first sync runs in the background: a start does not wait on it.
      const sync = await startRefSync({ ...target, initialSync: "background", exec: ctx.exec, audit: (e) => ctx.audit(e.action, e.detail) });
      // The owed sync runs in the background: a start (and so `sbx create`, `sbx run`) does not wait the ≈100 ms of a
      // `docker exec … git fetch` for refs the watcher would bring a moment later anyway. Its outcome is audited by
      // ref sync itself; stop() waits for it, so nothing runs against a container being stopped or removed.
      let owed: Promise<void> | null = null;
      return {
        stop: async () => {
          await owed;
          await sync.stop();
        },
        sandboxStarted: async () => {
          if (!sync.takeOwed()) return;
          const run: Promise<void> = sync
            .syncNow()
            .then(
              () => undefined,
              (e: unknown) => ctx.audit("ref-sync.error", { direction: "both", error: e instanceof Error ? e.message : String(e), onStart: true }),
            )
            .finally(() => {
              if (owed === run) owed = null;
            });
          owed = run;
        },
        // Failing sync fences nothing: it guards no boundary (the host never reads the clone), and a clone that cannot
        // be synced keeps only its own work from the host. It shows in the detail (`sbx status`) and the audit log.
        health: () => {
          const h = sync.health();
          return { ok: h.state !== "stopped", detail: h.ok ? h.detail : `not in sync: ${h.detail}` };
        },
      };
    },
  };
}
