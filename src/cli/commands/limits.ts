// sbx limits: show a sandbox's memory, CPU and process limits, its LLM budget and spend, and what it ran into, or change them
import type { Command } from "commander";
import { formatLimits } from "../../core/limits";
import { sandboxArgument } from "../completion/offers";
import type { Verb } from "../verb";
import { LIMIT_OPTIONS, LLM_BUDGET_OPTION, limitsOpt } from "./create";

export const limits: Verb = {
  name: "limits",
  summary: "show or change a sandbox's memory, CPU and process limits and its LLM budget",
  declare(cmd: Command) {
    cmd
      .addArgument(sandboxArgument("<name>", "sandbox name"))
      .option("--repo <path>", "the repo the sandbox belongs to")
      .option(...LIMIT_OPTIONS[0])
      .option(...LIMIT_OPTIONS[1])
      .option(...LIMIT_OPTIONS[2])
      .option(...LLM_BUDGET_OPTION)
      .option("--json", "print JSON")
      .addHelpText(
        "after",
        [
          "",
          "Without a limit flag it shows the limits and what the sandbox ran into since it started (processes the kernel",
          "killed at the memory limit, forks refused at the process limit). With flags it changes those limits: a",
          "running sandbox has them at once, a stopped one when it starts. Other limits stay as they are. The LLM budget",
          "holds from the sandbox's next model call, and answers its pending budget approval.",
          "",
          "Examples:",
          "  sbx limits agent                  show them",
          "  sbx limits agent --memory 8g      more memory, now",
          "  sbx limits agent --pids none      no process limit",
          "  sbx limits agent --llm-budget 10usd/day   more to spend on model calls, from its next call",
        ].join("\n"),
      );
  },
  async run(ctx, args, opts) {
    const name = args[0] ?? "";
    const repoFlag = opts.repo as string | undefined;
    const { daemon, outOf, whereOf } = await import("../../client/sandboxes");
    const { limits: set } = limitsOpt(opts);
    const r = await (await daemon(ctx)).lifecycle("limits", { ...whereOf(ctx, repoFlag), name, set }, outOf(ctx));
    if (opts.json) {
      ctx.render.json(r);
      return 0;
    }
    const what = r.limits === null ? "none (made before sbx had limits; set them with --memory, --cpus, --pids)" : formatLimits(r.limits);
    const { spendLines } = await import("../../core/llm-budget");
    // Only the budget changed: what it is now and what was spent.
    if (Object.keys(limitsOpt(opts).limits).join() === "llmBudget") {
      if (r.llm) for (const l of spendLines(r.llm)) ctx.render.out(`${name}: ${l}`);
      return 0;
    }
    if (r.applied !== undefined) {
      ctx.render.out(`${name}: ${what}${r.applied === "now" ? " (in effect now)" : " (from its next start)"}`);
      if (r.llm) for (const l of spendLines(r.llm)) ctx.render.out(l);
      return 0;
    }
    ctx.render.out(`${name}: ${what}`);
    if (r.llm) for (const l of spendLines(r.llm)) ctx.render.out(l);
    if (r.hits === null) ctx.render.out("not running: nothing to count");
    else if (r.hits.length === 0) ctx.render.out("no limit hit since it started");
    for (const h of r.hits ?? []) {
      ctx.render.out(h.limit === "memory" ? `memory limit hit: the kernel killed ${h.count} process(es)` : `process limit hit: ${h.count} fork(s) refused`);
    }
    return 0;
  },
};
