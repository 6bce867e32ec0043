// sbx deny: remove allowlist entries from a sandbox's list or the global one.
import type { Command } from "commander";
import { ExitCode } from "../../core/errors";
import type { Verb } from "../verb";

export const deny: Verb = {
  name: "deny",
  summary: "remove an allowlist entry",
  declare(cmd: Command) {
    // Options may follow the patterns (`sbx allow example.org --sandbox demo`): nothing here is passed through.
    cmd
      .argument("<pattern...>", "pattern to remove")
      .option("--sandbox <name>", "from this sandbox's list")
      .option("--global", "from the global list");
  },
  async run(ctx, args, opts) {
    const { removePatterns, resolveScope, scopeLabel } = await import("../../proxy/allowlist-service");
    const { Store } = await import("../../store/store");
    const store = new Store(ctx.paths.dbFile);
    try {
      const scope = await resolveScope(store, ctx.exec, ctx.cwd, opts, "deny");
      const changes = removePatterns(store, scope, args, `cli:${ctx.env.userName}`);
      for (const c of changes) {
        if (c.changed) ctx.render.out(`removed ${c.pattern} from ${scopeLabel(scope)}`);
        else ctx.render.info(`${c.pattern} is not on the list of ${scopeLabel(scope)} (see \`sbx allowlist\`)`);
      }
      // Nothing removed at all is worth a non-zero exit: the pattern was probably mistyped.
      return changes.some((c) => c.changed) ? ExitCode.ok : ExitCode.noInput;
    } finally {
      store.close();
    }
  },
};
