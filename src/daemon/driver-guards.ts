// Ref sync as a guard for every kind: what it needs of the sandbox's driver comes in its GuardContext. No kind checks here.
import { existsSync } from "node:fs";
import type { AgentRun } from "../drivers/driver";
import type { GuardContext, GuardHandle, SandboxGuard } from "../guards/guards";
import { refSyncGuard } from "../guards/ref-sync";
import type { ExecAgents } from "./exec-agents";

/** How long after its guard starts ref sync waits for a starting sandbox's exec agent before it uses the engine. */
export const AGENT_WAIT_MS = 5000;

/**
 * One ref-sync guard for every kind: the driver's plan, with every host-side git as the person the sandbox belongs
 * to, and commands inside through the sandbox's exec agent when it has one. A clone that does not exist yet (a
 * user-account guest's is made by its first start, after the guards) is synced once the sandbox runs. A kind with
 * no plan gets no ref sync (a healthy no-op).
 */
export function driverRefSyncGuard(agents?: ExecAgents): SandboxGuard {
  const started = startRefSync(agents);
  return {
    name: "ref-sync",
    async start(ctx: GuardContext) {
      // A new sandbox's store and the set-aside of an earlier one's refs come first: its syncs write into both. The
      // sandbox need not wait for them (ref sync guards no boundary: a sync that fails fences nothing), so the guard is
      // up at once and starts once they are made; a sandbox that started meanwhile is synced then.
      const work = ctx.hostWork;
      if (work === undefined) return started(ctx);
      const inner = work.then(() => started(ctx));
      // Once settled, the health is the started guard's, or the failure (the create fails on the same work, and
      // removes the sandbox; a start that failed after it is a guard down, as it was before the wait moved here).
      let now: { handle: GuardHandle } | { failed: string } | null = null;
      inner.then(
        (handle) => void (now = { handle }),
        (e: unknown) => void (now = { failed: e instanceof Error ? e.message : String(e) }),
      );
      return {
        health: () => {
          const n = now as { handle: GuardHandle } | { failed: string } | null;
          if (n === null) return { ok: true, detail: "starts once the new sandbox's store is made" };
          return "handle" in n ? n.handle.health() : { ok: false, detail: `ref sync could not start: ${n.failed}` };
        },
        sandboxStarted: async () => (await inner.catch(() => null))?.sandboxStarted(),
        stop: async () => (await inner.catch(() => null))?.stop(),
      };
    },
  };
}

/** Ref sync's start for a sandbox whose host-side work is done. */
function startRefSync(agents?: ExecAgents): (ctx: GuardContext) => Promise<GuardHandle & { sandboxStarted(): Promise<void> }> {
  const none = { health: () => ({ ok: true, detail: "not used" }), stop: async () => {}, sandboxStarted: async () => {} };
  return async (ctx) => {
    const driver = ctx.driver;
    const hostExec = driver.hostExec(ctx.spec);
    const agent: AgentRun = (argv, env, stdin) => agents?.stream(ctx.sandbox.id, { argv, cwd: "/", env, stdin: false }, stdin, 600_000) ?? null;
    const target = driver.refSyncTarget(ctx.spec, hostExec, agent);
    if (!target) return none;
    // The first syncs start with the guards, while the container starts: for a while they wait for its exec agent
    // (git inside in ≈30 ms) rather than each start a `docker exec` (a CLI process and an engine exec, which ran
    // beside the start and the person's first command, slowing both). Past the window, or once stopped, as before.
    const stopping = new AbortController();
    const until = Date.now() + AGENT_WAIT_MS;
    const plan: typeof target =
      agents && driver.caps.execAgent
        ? {
            ...target,
            sandboxGit: async (mode) => {
              await agents.waitFor(ctx.sandbox.id, until - Date.now(), stopping.signal);
              return target.sandboxGit(mode);
            },
          }
        : target;
    const guard = refSyncGuard<GuardContext>(() => plan);
    const hctx = { ...ctx, exec: hostExec };
    const stopWaiting = <T extends { stop(): Promise<void> }>(h: T): T => ({ ...h, stop: async () => (stopping.abort(), h.stop()) });
    if (!plan.watchDir || existsSync(plan.watchDir)) return stopWaiting(await guard.start(hctx));
    let inner: Awaited<ReturnType<typeof guard.start>> | null = null;
    return {
      health: () => inner?.health() ?? { ok: true, detail: "starts once the sandbox's clone exists" },
      async sandboxStarted() {
        inner ??= await guard.start(hctx);
        await inner.sandboxStarted();
      },
      stop: async () => {
        stopping.abort();
        await inner?.stop();
      },
    };
  };
}
