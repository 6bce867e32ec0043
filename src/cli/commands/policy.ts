// sbx policy: a sandbox's egress policy as one thing: `show NAME` (its level and what it allows, with why), `set NAME
// --level L`. Each subcommand is one entry of SUBCOMMANDS (a `check` goes beside them).
import type { Command } from "commander";
import { ExitCode, SbxError } from "../../core/errors";
import type { CliContext, Verb } from "../verb";

interface Subcommand {
  usage: string;
  summary: string;
  run(ctx: CliContext, args: string[], opts: Record<string, unknown>): Promise<number>;
}

/** `sbx policy show NAME` / `sbx policy set NAME --level L`: the same answer, changed or not. */
async function showOrSet(ctx: CliContext, args: string[], opts: Record<string, unknown>, set: boolean): Promise<number> {
  const name = args[0];
  if (name === undefined || args.length > 1) throw new SbxError("usage", `sbx policy ${set ? "set" : "show"} takes one sandbox name`, { hint: set ? "e.g. sbx policy set demo --level balanced" : "e.g. sbx policy show demo" });
  const { levelNamed } = await import("../../core/levels");
  if (set && typeof opts.level !== "string") throw new SbxError("usage", "sbx policy set needs --level", { hint: "e.g. sbx policy set demo --level locked (or balanced, open)" });
  if (!set && opts.level !== undefined) throw new SbxError("usage", "--level changes the level: that is `sbx policy set`", { hint: `sbx policy set ${name} --level ${String(opts.level)}` });
  const level = set ? levelNamed(String(opts.level), "--level") : undefined;
  const { daemon, whereOf } = await import("../../client/sandboxes");
  const v = await (await daemon(ctx)).level({ ...whereOf(ctx, typeof opts.repo === "string" ? opts.repo : undefined), name, ...(level ? { level } : {}) });
  if (opts.json) {
    ctx.render.json(v);
    return ExitCode.ok;
  }
  if (set) ctx.render.out(v.changed ? `${v.name}: level ${v.level}; its next request is judged by it (no restart)` : `${v.name}: level ${v.level} already`);
  ctx.render.out(`${v.name}: ${v.level === null ? "no level" : `level ${v.level}`}: ${v.about}`);
  const until = (e: { expiresAt?: number | null | undefined; once?: boolean | undefined }) => (e.once ? "once" : e.expiresAt ? `until ${ctx.render.when(e.expiresAt)}` : "for good");
  const rows: string[][] = [
    ...(v.open ? [["* (any public host, any port)", v.level ?? "", "level open"]] : []),
    ...v.allows.map((p) => [p.pattern, v.level === null ? "built-in" : `level ${v.level}`, p.why]),
    ...v.sandbox.map((e) => [e.pattern, `sandbox ${v.name}`, `${until(e)}, by ${e.addedBy}`]),
    ...v.global.map((e) => [e.pattern, "global", `${until(e)}, by ${e.addedBy}`]),
    ...v.published.map((p) => [p, "published", "a service of the host (sbx publish)"]),
  ];
  if (rows.length === 0) ctx.render.out("it may reach nothing but sbx's own routes (the LLM proxy, the git/gh bridge, sbx-egress)");
  else ctx.render.table(["ALLOWS", "FROM", "WHY"], rows, { ALLOWS: "wrap", WHY: "wrap" });
  ctx.render.info("never, whatever the level: the host's loopback and own addresses, private, link-local, CGNAT and metadata addresses (unless you allow one exact address)");
  return ExitCode.ok;
}

const SUBCOMMANDS: Record<string, Subcommand> = {
  show: { usage: "show NAME", summary: "its level and everything it may reach, each with why", run: (ctx, a, o) => showOrSet(ctx, a, o, false) },
  set: { usage: "set NAME --level L", summary: "change its level (locked, balanced, open); takes effect on its next request", run: (ctx, a, o) => showOrSet(ctx, a, o, true) },
};

export const policy: Verb = {
  name: "policy",
  summary: "a sandbox's egress policy: its level and what it may reach (show, set)",
  declare(cmd: Command) {
    cmd
      .argument("[subcommand]", Object.keys(SUBCOMMANDS).join(" | "))
      .argument("[args...]", "the sandbox name")
      .option("--level <level>", "set: locked | balanced | open")
      .option("--repo <path>", "the repo the sandbox belongs to (when two repos have one of that name)")
      .option("--json", "print JSON")
      .addHelpText(
        "after",
        [
          "",
          ...Object.values(SUBCOMMANDS).map((s) => `  sbx policy ${s.usage.padEnd(20)} ${s.summary}`),
          "",
          "Levels (sbx create --policy LEVEL, or `policy` in the config for every new sandbox):",
          "  locked    sbx's own routes only (the LLM proxy, the git/gh bridge, sbx-egress), and what you allow",
          "  balanced  the agent's API and login hosts, the package registries the repo uses, the forge of its remotes",
          "  open      every public host and address, on any port",
          "No level ever reaches the host's loopback or own addresses, nor private, link-local or metadata ones.",
          "Your own entries (sbx allow, sbx publish) apply on top of any level. See `sbx help egress`.",
        ].join("\n"),
      );
  },
  async run(ctx, args, opts) {
    const [sub, ...rest] = args;
    const s = sub !== undefined && Object.hasOwn(SUBCOMMANDS, sub) ? SUBCOMMANDS[sub] : undefined;
    if (!s) {
      throw new SbxError("usage", sub === undefined ? "sbx policy needs a subcommand" : `unknown subcommand '${sub}'`, {
        hint: `Use ${Object.values(SUBCOMMANDS).map((x) => `\`sbx policy ${x.usage}\``).join(" or ")}.`,
      });
    }
    return s.run(ctx, rest, opts);
  },
};
