// sbx allow: allow hosts (or a preset) for a sandbox or globally; takes effect on the sandbox's next request.
import type { Command } from "commander";
import { ExitCode, SbxError } from "../../core/errors";
import type { CliContext, Verb } from "../verb";

const many = (v: string, prev: string[] = []) => [...prev, v];

/**
 * A preset as this machine would use it: where the person's npm, pip, Go or cargo settings name a mirror, its hosts in
 * place of the public registry's, said (core/mirrors.ts presetOffer over the settings read as `sbx create` reads them).
 */
async function presetHere(ctx: CliContext, name: string, patterns: readonly string[]): Promise<readonly string[]> {
  const { MIRROR_TOOLS, presetOffer } = await import("../../core/mirrors");
  const tool = Object.entries(MIRROR_TOOLS).find(([, p]) => p === name)?.[0];
  if (tool === undefined) return patterns;
  const { readHostMirrors } = await import("../../secrets/host-mirrors");
  let plan;
  try {
    plan = readHostMirrors({ env: ctx.env.raw, home: ctx.env.vars.HOME, platform: ctx.env.platform, uid: ctx.env.uid, outside: [ctx.paths.sandboxRoot, ctx.paths.runtimeDir] });
  } catch (e) {
    ctx.render.info(`note: your ${tool} settings were not read (${(e as Error).message}): the preset as it is`);
    return patterns;
  }
  for (const n of plan.notes) if (n.tool === tool && n.why.startsWith("not read")) ctx.render.info(`note: ${n.from}: ${n.why}`);
  const offer = presetOffer(name, patterns, { settings: plan.settings });
  for (const m of offer.mirrors) ctx.render.info(`${tool} on this machine uses ${m.host} (${m.from}): allowing it`);
  if (offer.replaced.length > 0) ctx.render.info(`in place of the public registry (${offer.replaced.join(", ")}); \`sbx allow ${offer.replaced.join(" ")}\` allows that too`);
  return offer.patterns;
}

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
      .option("--remove", "remove the rule --method/--path/--read-only name, instead of adding it")
      .option("--for <time>", "for a time only (30m, 2h, 1d): it lapses by itself, and `sbx logs` says so (default: for good)")
      .option("--once", "for one connection of that sandbox only (used within 15 min, else it lapses); nothing stays on its list")
      .addHelpText("after", ["", "Examples:", "  sbx allow example.org --sandbox demo", "  sbx allow example.org --sandbox demo --for 30m", "  sbx allow --preset npm --global"].join("\n"));
  },
  async run(ctx, args, opts) {
    const { presetPatterns } = await import("../../core/presets");
    const { termOf, termText } = await import("../../core/allow-term");
    const { daemon, scopeOf } = await import("../../client/sandboxes");
    const { ruleSpecsOf, runRule } = await import("./rule");
    const specs = ruleSpecsOf("allow", args, opts);
    const term = termOf(opts);
    // A rule (--method/--path/--read-only) lasts until removed: a time box is for whole-host entries.
    if (specs !== null && term.kind !== "good") throw new SbxError("usage", "--for and --once are for a whole host, not a rule (--method/--path/--read-only)", { hint: "Allow the rule, and `sbx allow HOST --method … --remove` it when done; or allow the whole host --for a time." });
    if (specs !== null) return runRule(ctx, "allow", specs, opts, await daemon(ctx), scopeOf("allow", ctx, opts));
    const preset = typeof opts.preset === "string" ? await presetHere(ctx, opts.preset, presetPatterns(opts.preset)) : [];
    const patterns = [...args, ...preset];
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
