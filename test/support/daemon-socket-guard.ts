// Test-only guard that serves a real unix socket per sandbox, so "the sandbox has network" is observable as "its socket answers".
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { GuardContext, GuardHandle, SandboxGuard } from "../../src/guards/guards";

/**
 * Serves `GET /` → `<guard> <sandbox>` on the sandbox's proxy (or bridge) socket. Fails to start while a
 * file `fail-<guard>` exists in `controlDir` (a test's switch for "this guard cannot come up").
 */
export function socketGuard(name: "proxy" | "bridge", controlDir: string): SandboxGuard {
  return {
    name,
    async start(ctx: GuardContext): Promise<GuardHandle> {
      if (existsSync(join(controlDir, `fail-${name}`))) throw new Error(`${name} refused to start (test switch)`);
      const path = name === "proxy" ? ctx.sockets.proxy : ctx.sockets.bridge;
      const server = Bun.serve({ unix: path, fetch: () => new Response(`${name} ${ctx.sandbox.name}\n`) });
      ctx.audit(`${name}.up`, { socket: path });
      return {
        health: () => ({ ok: true, detail: `serving ${path}` }),
        async stop() {
          await server.stop(true);
        },
      };
    },
  };
}
