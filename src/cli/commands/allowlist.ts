// sbx allowlist: show a sandbox's list, the global list and the built-in default.
import type { Command } from "commander";
import { ExitCode } from "../../core/errors";
import type { Verb } from "../verb";

export const allowlist: Verb = {
  name: "allowlist",
  summary: "show the allowlist",
  declare(cmd: Command) {
    cmd
      .option("--sandbox <name>", "this sandbox's list").option("--json", "print JSON");
  },
  async run(ctx, _args, opts) {
    const { findSandboxByName, showAllowlist } = await import("../../proxy/allowlist-service");
    const { Store } = await import("../../store/store");
    const store = new Store(ctx.paths.dbFile);
    try {
      const sb = typeof opts.sandbox === "string" ? await findSandboxByName(store, ctx.exec, ctx.cwd, opts.sandbox) : null;
      const view = showAllowlist(store, sb);
      if (opts.json) {
        ctx.render.json({
          sandbox: view.sandbox && { name: view.sandbox.name, patterns: view.sandbox.entries.map((e) => ({ pattern: e.pattern, addedBy: e.addedBy, addedAt: e.addedAt })) },
          global: view.global.map((e) => ({ pattern: e.pattern, addedBy: e.addedBy, addedAt: e.addedAt })),
          builtin: view.builtin,
        });
        return ExitCode.ok;
      }
      const rows: string[][] = [];
      if (view.sandbox) for (const e of view.sandbox.entries) rows.push([e.pattern, `sandbox ${view.sandbox.name}`, e.addedBy, new Date(e.addedAt).toISOString()]);
      for (const e of view.global) rows.push([e.pattern, "global", e.addedBy, new Date(e.addedAt).toISOString()]);
      for (const p of view.builtin) rows.push([p, "built-in", "sbx", ""]);
      ctx.render.table(["PATTERN", "SCOPE", "ADDED BY", "ADDED"], rows);
      if (!view.sandbox) ctx.render.info("showing the global and built-in lists; add --sandbox NAME for a sandbox's own");
      return ExitCode.ok;
    } finally {
      store.close();
    }
  },
};
