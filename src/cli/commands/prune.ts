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
    const { daemon, outOf } = await import("../../client/sandboxes");
    const dryRun = opts.dryRun === true;
    // Every kind the daemon runs (Docker; user accounts when it can reach them), in one pass.
    const report = await (await daemon(ctx)).lifecycle("prune", { dryRun }, outOf(ctx));
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
