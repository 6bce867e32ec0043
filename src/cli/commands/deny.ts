// sbx deny: remove allowlist entries from a sandbox's list or the global one.
import type { Command } from "commander";
import { ExitCode, SbxError } from "../../core/errors";
import type { Verb } from "../verb";

const many = (v: string, prev: string[] = []) => [...prev, v];

export const deny: Verb = {
  name: "deny",
  summary: "remove an allowlist entry, or refuse some methods or paths of a host (a rule)",
  declare(cmd: Command) {
    // Options may follow the patterns (`sbx allow example.org --sandbox demo`): nothing here is passed through.
    cmd
      .argument("[pattern...]", "pattern to remove")
      .option("--preset <name>", "remove every pattern of a named bundle")
      .option("--sandbox <name>", "from this sandbox's list (this repo's, else the one of that name anywhere)")
      .option("--repo <path>", "the repo the sandbox belongs to (when two repos have one of that name)")
      .option("--global", "from the global list")
      .option("--method <M,...>", "a rule: refuse these methods to the host, within what is allowed (e.g. --method DELETE)", many)
      .option("--path <glob>", "a rule: refuse these paths, e.g. '/admin/**' (repeat)", many)
      .option("--remove", "remove the deny rule --method/--path name, instead of adding it");
  },
  async run(ctx, args, opts) {
    const { daemon, scopeOf } = await import("../../client/sandboxes");
    const { ruleSpecsOf, runRule } = await import("./rule");
    const specs = ruleSpecsOf("deny", args, opts);
    if (specs !== null) return runRule(ctx, "deny", specs, opts, await daemon(ctx), scopeOf("deny", ctx, opts));
    const { presetPatterns } = await import("../../core/presets");
    const patterns = [...args, ...(typeof opts.preset === "string" ? presetPatterns(opts.preset) : [])];
    if (patterns.length === 0) throw new SbxError("usage", "nothing to deny", { hint: "Name a pattern (sbx deny example.org --sandbox NAME) or a preset (--preset npm)." });
    const req = { ...scopeOf("deny", ctx, opts), patterns };
    const r = await (await daemon(ctx)).deny(req);
    for (const c of r.results) {
      if (c.changed) ctx.render.out(`removed ${c.pattern} from ${r.scope}`);
      else ctx.render.info(`${c.pattern} is not on the list of ${r.scope} (see \`sbx allowlist\`)`);
    }
    // Nothing removed at all is worth a non-zero exit: the pattern was probably mistyped.
    return r.results.some((c) => c.changed) ? ExitCode.ok : ExitCode.noInput;
  },
};
