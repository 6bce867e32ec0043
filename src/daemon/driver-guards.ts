// Ref sync as a guard for every kind: what it needs of the sandbox's driver comes in its GuardContext. No kind checks here.
import { existsSync } from "node:fs";
import type { AgentRun } from "../drivers/driver";
import type { GuardContext, SandboxGuard } from "../guards/guards";
import { refSyncGuard } from "../guards/ref-sync";
import type { ExecAgents } from "./exec-agents";

/**
 * One ref-sync guard for every kind: the driver's plan, with every host-side git as the person the sandbox belongs
 * to, and commands inside through the sandbox's exec agent when it has one. A clone that does not exist yet (a
 * user-account guest's is made by its first start, after the guards) is synced once the sandbox runs. A kind with
 * no plan gets no ref sync (a healthy no-op).
 */
export function driverRefSyncGuard(agents?: ExecAgents): SandboxGuard {
  const none = { health: () => ({ ok: true, detail: "not used" }), stop: async () => {}, sandboxStarted: async () => {} };
  return {
    name: "ref-sync",
    async start(ctx: GuardContext) {
      const driver = ctx.driver;
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
