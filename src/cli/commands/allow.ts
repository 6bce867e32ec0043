// sbx allow: allow hosts (or a preset) for a sandbox or globally; takes effect on the sandbox's next request.
import type { Command } from "commander";
import { ExitCode } from "../../core/errors";
import type { Verb } from "../verb";

export const allow: Verb = {
  name: "allow",
  summary: "allow a domain (or preset) for a sandbox or globally",
  declare(cmd: Command) {
    // Options may follow the patterns (`sbx allow example.org --sandbox demo`): nothing here is passed through.
    cmd
      .argument("[pattern...]", "example.com, *.example.com, 10.0.0.0/8, host:port")
      .option("--sandbox <name>", "only for this sandbox")
      .option("--global", "for every sandbox")
      .option("--preset <name>", "a named bundle: github, npm, pypi, openai, google");
  },
  async run(ctx, args, opts) {
    const { presetPatterns } = await import("../../core/presets");
    const { addPatterns, resolveScope, scopeLabel } = await import("../../proxy/allowlist-service");
    const { Store } = await import("../../store/store");
    const patterns = [...args, ...(typeof opts.preset === "string" ? presetPatterns(opts.preset) : [])];
    const store = new Store(ctx.paths.dbFile);
    try {
      const scope = await resolveScope(store, ctx.exec, ctx.cwd, opts, "allow");
      const changes = addPatterns(store, scope, patterns, `cli:${ctx.env.userName}`);
      for (const c of changes) ctx.render.out(c.changed ? `allowed ${c.pattern} for ${scopeLabel(scope)}` : `${c.pattern} was already allowed for ${scopeLabel(scope)}`);
      ctx.render.info("takes effect on the next request; no restart needed");
      return ExitCode.ok;
    } finally {
      store.close();
    }
  },
};
