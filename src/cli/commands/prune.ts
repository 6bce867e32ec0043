// sbx prune: remove what no live sandbox owns (orphaned containers, volumes, sandbox dirs, stale locks)
import type { Command } from "commander";
import type { Verb } from "../verb";

export const prune: Verb = {
  name: "prune",
  summary: "remove orphaned containers, volumes, sandbox dirs and stale locks",
  declare(cmd: Command) {
    cmd.option("--dry-run", "list what would be removed, remove nothing").option("--json", "print JSON");
  },
  async run(ctx, _args, opts) {
    // Loaded here, not at the top: `sbx --help` and `--version` must not pay for them.
    const { cliDeps, withManager } = await import("../../lifecycle/open");
    const dryRun = opts.dryRun === true;
    const report = await withManager(cliDeps(ctx), (m) => m.prune({ dryRun }));
    // The user-account backend of this OS too, where it can run (root on Linux; a Mac): its orphans are accounts.
    const { openUserSandboxes, userBackendKind } = await import("../../lifecycle/user-backend");
    if ((ctx.env.platform === "linux" && ctx.env.uid === 0) || ctx.env.platform === "darwin") {
      const o = await openUserSandboxes({ exec: ctx.exec, env: ctx.env, paths: ctx.paths, log: (l) => ctx.render.info(l) }, userBackendKind(ctx.env.platform, "user")).catch(
        (e: unknown) => {
          ctx.render.info(`user-account sandboxes not checked: ${(e as Error).message.split("\n")[0]}`);
          return null;
        },
      );
      if (o) {
        try {
          report.removed.push(...(await o.users.prune({ dryRun })).removed);
        } finally {
          o.close();
        }
      }
    }
    if (opts.json) {
      ctx.render.json({ dryRun, ...report });
      return 0;
    }
    for (const r of report.removed) ctx.render.out(`${dryRun ? "would remove" : "removed"} ${r}`);
    for (const k of report.kept) ctx.render.info(`kept ${k}`);
    if (report.removed.length === 0) ctx.render.out("nothing to prune");
    return 0;
  },
};
