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
      .option("--sandbox <name>", "only for this sandbox (this repo's, else the one of that name anywhere)")
      .option("--repo <path>", "the repo the sandbox belongs to (when two repos have one of that name)")
      .option("--global", "for every sandbox")
      .option("--preset <name>", "a named bundle (sbx allowlist --presets lists them): claude, openai, google, github, npm, pypi, …")
      .option("--for <time>", "for a time only (30m, 2h, 1d): it lapses by itself, and `sbx logs` says so (default: for good)")
      .option("--once", "for one connection of that sandbox only (used within 15 min, else it lapses); nothing stays on its list")
      .addHelpText("after", ["", "Examples:", "  sbx allow example.org --sandbox demo", "  sbx allow example.org --sandbox demo --for 30m", "  sbx allow --preset npm --global"].join("\n"));
  },
  async run(ctx, args, opts) {
    const { presetPatterns } = await import("../../core/presets");
    const { termOf, termText } = await import("../../core/allow-term");
    const { daemon, scopeOf } = await import("../../client/sandboxes");
    const term = termOf(opts);
    const patterns = [...args, ...(typeof opts.preset === "string" ? presetPatterns(opts.preset) : [])];
    const req = { ...scopeOf("allow", ctx, opts), patterns, ...(term.kind === "good" ? {} : { term }) };
    const r = await (await daemon(ctx)).allow(req);
    const lasting = term.kind === "good" ? "" : ` ${termText(term)}`;
    for (const c of r.results) ctx.render.out(c.changed ? `allowed ${c.pattern} for ${r.scope}${lasting}` : `${c.pattern} was already allowed for ${r.scope}${term.kind === "for" ? " for good" : ""}`);
    if (term.kind === "for") ctx.render.info("it lapses by itself; `sbx logs --kind allowlist` says when");
    const answered = r.results.reduce((n, c) => n + c.resolved, 0);
    if (answered > 0) ctx.render.info(`${answered} pending request${answered === 1 ? "" : "s"} answered`);
    ctx.render.info("takes effect on the next request; no restart needed");
    return ExitCode.ok;
  },
};
