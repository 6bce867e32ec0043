// sbx approvals: list pending approvals (newest first, with counts), or allow/deny one by id.
import type { Command } from "commander";
import { ExitCode, SbxError } from "../../core/errors";
import type { Verb } from "../verb";

export const approvals: Verb = {
  name: "approvals",
  summary: "list pending approvals, or decide one",
  declare(cmd: Command) {
    // Options may follow the patterns (`sbx allow example.org --sandbox demo`): nothing here is passed through.
    cmd
      .argument("[action]", "allow | deny")
      .argument("[id]", "approval id")
      .option("--json", "print JSON");
  },
  async run(ctx, args, opts) {
    const [action, idText] = args;
    // A mistyped call is refused before any daemon is reached (or started).
    if (action !== undefined && action !== "allow" && action !== "deny") {
      throw new SbxError("usage", `unknown action '${action}'`, { hint: "Use `sbx approvals`, `sbx approvals allow ID` or `sbx approvals deny ID`." });
    }
    if (action !== undefined && (idText === undefined || !/^[1-9][0-9]*$/.test(idText))) {
      throw new SbxError("usage", `sbx approvals ${action} needs an approval id`, { hint: "Run `sbx approvals` to see the ids." });
    }
    const { daemon } = await import("../../client/sandboxes");
    const client = await daemon(ctx);
    if (action === undefined) {
      const { pending } = await client.approvals();
      if (opts.json) {
        ctx.render.json(pending);
        return ExitCode.ok;
      }
      if (pending.length === 0) {
        ctx.render.info("no pending approvals");
        return ExitCode.ok;
      }
      ctx.render.table(
        ["ID", "SANDBOX", "HOST", "PORT", "COUNT", "LAST SEEN", "REASON"],
        pending.map((a) => [String(a.id), a.sandbox ?? `#${a.sandboxId}`, a.host, String(a.port), String(a.count), new Date(a.lastSeen).toISOString(), a.reason]),
      );
      ctx.render.info("decide with `sbx approvals allow ID` or `sbx approvals deny ID`");
      return ExitCode.ok;
    }
    const out = await client.decide(Number(idText), action === "allow" ? "allow-sandbox" : "deny");
    if (opts.json) ctx.render.json({ approval: out.approval, pattern: action === "allow" ? out.pattern : null, added: out.added });
    else if (action === "allow") ctx.render.out(`allowed ${out.pattern} for sandbox '${out.sandbox.name}' (approval ${out.approval.id}, seen ${out.approval.count}x)`);
    else ctx.render.out(`denied ${out.approval.host}:${out.approval.port} (approval ${out.approval.id}); it stays blocked`);
    return ExitCode.ok;
  },
};
