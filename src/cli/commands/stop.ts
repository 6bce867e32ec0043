// sbx stop: stop a sandbox's container, keeping its clone and overlays
import type { Command } from "commander";
import type { Verb } from "../verb";

export const stop: Verb = {
  name: "stop",
  summary: "stop a sandbox (its clone and overlays stay)",
  declare(cmd: Command) {
    cmd.argument("<name>", "sandbox name").option("--repo <path>", "the repo the sandbox belongs to");
  },
  async run(ctx, args, opts) {
    // Loaded here, not at the top: `sbx --help` and `--version` must not pay for it.
    const { backendOf, withDaemonManager, withUserSandboxes } = await import("../../client/sandboxes");
    const { isUserBackend } = await import("../../lifecycle/user-backend");
    const name = args[0] ?? "";
    const where = { cwd: ctx.cwd, repoFlag: opts.repo as string | undefined };
    // The daemon stops the sandbox, then its guards; then one last fetch of its commits into the host repo.
    const changed = await withDaemonManager(ctx, async (m, client) => {
      const kind = await backendOf(m, name, where);
      if (kind !== null && isUserBackend(kind)) return withUserSandboxes(ctx, client, kind, (u) => u.stop(name, where));
      return m.stop(name, where);
    });
    ctx.render.out(changed ? `stopped ${name}` : `${name} was not running`);
    return 0;
  },
};
