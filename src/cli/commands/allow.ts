// sbx allow: allow hosts (or a preset) for a sandbox or globally; takes effect on the sandbox's next request.
import type { Command } from "commander";
import { ExitCode } from "../../core/errors";
import type { Verb } from "../verb";

const many = (v: string, prev: string[] = []) => [...prev, v];

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
      .option("--method <M,...>", "only these methods (a rule: each request is judged; HTTPS to the host is ended by sbx's proxy to see it)", many)
      .option("--path <glob>", "only these paths, e.g. '/repos/acme/**' (* within a segment, a last ** for any depth; repeat)", many)
      .option("--read-only", "only GET, HEAD and OPTIONS")
      .option("--remove", "remove the rule --method/--path/--read-only name, instead of adding it");
  },
  async run(ctx, args, opts) {
    const { presetPatterns } = await import("../../core/presets");
    const { daemon, scopeOf } = await import("../../client/sandboxes");
    const { ruleSpecsOf, runRule } = await import("./rule");
    const specs = ruleSpecsOf("allow", args, opts);
    if (specs !== null) return runRule(ctx, "allow", specs, opts, await daemon(ctx), scopeOf("allow", ctx, opts));
    const patterns = [...args, ...(typeof opts.preset === "string" ? presetPatterns(opts.preset) : [])];
    const req = { ...scopeOf("allow", ctx, opts), patterns };
    const r = await (await daemon(ctx)).allow(req);
    for (const c of r.results) ctx.render.out(c.changed ? `allowed ${c.pattern} for ${r.scope}` : `${c.pattern} was already allowed for ${r.scope}`);
    const answered = r.results.reduce((n, c) => n + c.resolved, 0);
    if (answered > 0) ctx.render.info(`${answered} pending request${answered === 1 ? "" : "s"} answered`);
    ctx.render.info("takes effect on the next request; no restart needed");
    return ExitCode.ok;
  },
};
