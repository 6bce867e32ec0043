// What the daemon asks of each sandbox's driver around its guards: ref sync's plan, the bridge's place, and the fence at start. No kind checks here.
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Sandbox } from "../core/schemas";
import type { SandboxSpec } from "../core/spec";
import type { AgentRun, Driver } from "../drivers/driver";
import type { GuardContext, SandboxGuard } from "../guards/guards";
import { refSyncGuard } from "../guards/ref-sync";
import type { Store } from "../store/store";
import type { ExecAgents } from "./exec-agents";
import type { Logger } from "../sys/log";

export type DriverOf = (kind: string) => Driver | undefined;

/**
 * One ref-sync guard for every kind: the driver's plan, with every host-side git as the person the sandbox belongs
 * to, and commands inside through the sandbox's exec agent when it has one. A clone that does not exist yet (a
 * user-account guest's is made by its first start, after the guards) is synced once the sandbox runs. A kind with
 * no driver, or no plan, gets no ref sync (a healthy no-op).
 */
export function driverRefSyncGuard(driverOf: DriverOf, agents?: ExecAgents): SandboxGuard {
  const none = { health: () => ({ ok: true, detail: "not used" }), stop: async () => {}, sandboxStarted: async () => {} };
  return {
    name: "ref-sync",
    async start(ctx: GuardContext) {
      const driver = driverOf(ctx.sandbox.backend);
      if (!driver) return none;
      const hostExec = driver.hostExec(ctx.spec);
      const agent: AgentRun = (argv, env, stdin) => agents?.stream(ctx.sandbox.id, { argv, cwd: "/", env, stdin: false }, stdin, 600_000) ?? null;
      const plan = driver.refSyncTarget(ctx.spec, hostExec, agent);
      if (!plan) return none;
      const guard = refSyncGuard<GuardContext>(() => plan);
      const hctx = { ...ctx, exec: hostExec };
      if (!plan.watchDir || existsSync(plan.watchDir)) return guard.start(hctx);
      let inner: Awaited<ReturnType<typeof guard.start>> | null = null;
      return {
        health: () => inner?.health() ?? { ok: true, detail: "starts once the sandbox's clone exists" },
        async sandboxStarted() {
          inner ??= await guard.start(hctx);
          await inner.sandboxStarted();
        },
        stop: async () => inner?.stop(),
      };
    },
  };
}

/**
 * Fail closed at daemon start, before reconcile starts any guard: every stored sandbox gets its fence back from its
 * driver (user accounts: block-all rules; Docker: nothing to do). Reconcile then brings active ones to run mode AFTER
 * their guards are up. A failure is logged and audited; that sandbox's start fails the same way later, so it stays fenced.
 */
export async function restoreFences(drivers: Partial<Record<string, Driver>>, store: Store, specOf: (row: Sandbox) => SandboxSpec, log: Logger): Promise<void> {
  const rows = store.listSandboxes();
  for (const [kind, driver] of Object.entries(drivers)) {
    if (!driver) continue;
    const list = rows.filter((r) => r.backend === kind).flatMap((r) => {
      try {
        return [{ row: r, spec: specOf(r) }];
      } catch (e) {
        log.error("unreadable sandbox record: left fenced", { sandbox: r.name, err: e });
        return [];
      }
    });
    if (list.length === 0) continue;
    try {
      const n = await driver.restoreBlockAll(list.map((l) => l.spec));
      log.info("fences restored (block-all until guards are up)", { backend: kind, sandboxes: list.length, changed: n });
    } catch (e) {
      log.error("could not restore the fences of sandboxes", { backend: kind, err: e });
      for (const { row } of list) store.audit({ sandboxId: row.id, kind: "daemon", action: "firewall.restore-failed", detail: { error: (e as Error).message } });
    }
  }
}
