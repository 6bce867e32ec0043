// sbx allowlist: show a sandbox's list, the global list and the built-in default.
import type { Command } from "commander";
import { ExitCode } from "../../core/errors";
import type { Verb } from "../verb";

export const allowlist: Verb = {
  name: "allowlist",
  summary: "show the allowlist",
  declare(cmd: Command) {
    cmd
      .option("--sandbox <name>", "this sandbox's list (this repo's, else the one of that name anywhere)")
      .option("--repo <path>", "the repo the sandbox belongs to (when two repos have one of that name)")
      .option("--presets", "list the named bundles `sbx allow --preset NAME` adds")
      .option("--json", "print JSON");
  },
  async run(ctx, _args, opts) {
    if (opts.presets) {
      const { PRESETS } = await import("../../core/presets");
      if (opts.json) ctx.render.json(PRESETS);
      else ctx.render.table(["PRESET", "PATTERNS"], Object.entries(PRESETS).map(([n, ps]) => [n, ps.join(" ")]), { PATTERNS: "wrap" });
      return ExitCode.ok;
    }
    const { daemon, whereOf } = await import("../../client/sandboxes");
    const view = await (await daemon(ctx)).allowlist({ ...whereOf(ctx, typeof opts.repo === "string" ? opts.repo : undefined), ...(typeof opts.sandbox === "string" ? { sandbox: opts.sandbox } : {}) });
    // How long an entry lasts: absent for good (and from an older daemon).
    const lasts = (e: { expiresAt?: number | null | undefined; once?: boolean | undefined }) => ({ ...(e.expiresAt ? { expiresAt: e.expiresAt } : {}), ...(e.once ? { once: true } : {}) });
    if (opts.json) {
      ctx.render.json({
        sandbox: view.sandbox && { name: view.sandbox.name, patterns: view.sandbox.entries.map((e) => ({ pattern: e.pattern, addedBy: e.addedBy, addedAt: e.addedAt, ...lasts(e) })) },
        global: view.global.map((e) => ({ pattern: e.pattern, addedBy: e.addedBy, addedAt: e.addedAt, ...lasts(e) })),
        builtin: view.builtin,
        rules: [...(view.sandbox?.rules.map((r) => ({ ...r, scope: "sandbox" })) ?? []), ...view.globalRules.map((r) => ({ ...r, scope: "global" }))],
      });
      return ExitCode.ok;
    }
    const until = (e: { expiresAt?: number | null | undefined; once?: boolean | undefined }) => (e.once ? `once (lapses ${ctx.render.when(e.expiresAt ?? 0)})` : e.expiresAt ? `until ${ctx.render.when(e.expiresAt)}` : "for good");
    const rows: string[][] = [];
    if (view.sandbox) for (const e of view.sandbox.entries) rows.push([e.pattern, `sandbox ${view.sandbox.name}`, e.addedBy, ctx.render.when(e.addedAt), until(e)]);
    for (const e of view.global) rows.push([e.pattern, "global", e.addedBy, ctx.render.when(e.addedAt), until(e)]);
    for (const p of view.builtin) rows.push([p, "built-in", "sbx", "-", "for good"]);
    ctx.render.table(["PATTERN", "SCOPE", "ADDED BY", "ADDED", "LASTS"], rows, { PATTERN: "wrap", "ADDED BY": "end" });
    // Rules that judge requests (sbx allow|deny HOST --method … --path …): a deny wins over any allow.
    const rules: string[][] = [];
    if (view.sandbox) for (const r of view.sandbox.rules) rules.push([r.rule, `sandbox ${view.sandbox.name}`, r.addedBy, ctx.render.when(r.addedAt)]);
    for (const r of view.globalRules) rules.push([r.rule, "global", r.addedBy, ctx.render.when(r.addedAt)]);
    if (rules.length > 0) {
      ctx.render.out("");
      ctx.render.table(["RULE", "SCOPE", "ADDED BY", "ADDED"], rules, { RULE: "wrap", "ADDED BY": "end" });
    }
    if (!view.sandbox) ctx.render.info("showing the global and built-in lists; add --sandbox NAME for a sandbox's own");
    else ctx.render.info(`a policy level, when the sandbox has one, takes the built-in list's place: sbx policy show ${view.sandbox.name}`);
    return ExitCode.ok;
  },
};
