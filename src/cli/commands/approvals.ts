// sbx approvals: list pending approvals (egress hosts, and what the bridge refused: newest first, with counts), or allow/deny one by id.
import type { Command } from "commander";
import { ExitCode, SbxError } from "../../core/errors";
import type { Approval } from "../../core/schemas";
import type { Verb } from "../verb";

/**
 * What an approval asks for: `host:port` for egress, the bridge operation in words for the bridge. (The modules it
 * needs are loaded when a verb runs, not when sbx starts: zod alone costs every command ~15 ms.)
 */
function approvalWhat(a: Pick<Approval, "kind" | "host" | "port">, describeSubject: (s: string) => string): string {
  if (a.kind === "bridge") return `bridge: ${describeSubject(a.host)}`;
  if (a.kind === "budget") return `more ${a.host}`;
  return `${a.host.includes(":") ? `[${a.host}]` : a.host}:${a.port}`;
}

export const approvals: Verb = {
  name: "approvals",
  summary: "list pending approvals, or decide one",
  declare(cmd: Command) {
    // Options may follow the patterns (`sbx allow example.org --sandbox demo`): nothing here is passed through.
    cmd
      .argument("[action]", "allow | deny")
      .argument("[id]", "approval id")
      .option("--once", "allow: this once only (its sandbox's next connection there; nothing stays on its list)")
      .option("--for <time>", "allow: for a time only (30m, 2h, 1d): it lapses by itself, and `sbx logs` says so")
      .option("--json", "print JSON")
      .addHelpText("after", ["", "Examples:", "  sbx approvals allow 7            for good", "  sbx approvals allow 7 --once     the next connection only", "  sbx approvals allow 7 --for 30m"].join("\n"));
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
    const { describeSubject } = await import("../../core/bridge-settings");
    const { isHostService } = await import("../../core/egress");
    const { termOf, termText } = await import("../../core/allow-term");
    const term = termOf(opts);
    if (term.kind !== "good" && action !== "allow") throw new SbxError("usage", `--once and --for say how long an allow lasts`, { hint: "e.g. sbx approvals allow 7 --for 30m" });
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
        ["ID", "SANDBOX", "WHAT", "COUNT", "LAST SEEN", "REASON"],
        pending.map((a) => [String(a.id), a.sandbox ?? `#${a.sandboxId}`, approvalWhat(a, describeSubject), String(a.count), ctx.render.when(a.lastSeen), a.reason]),
        { WHAT: "wrap", REASON: "wrap" },
      );
      ctx.render.info("decide with `sbx approvals allow ID` or `sbx approvals deny ID`");
      return ExitCode.ok;
    }
    const out = await client.decide(Number(idText), action === "allow" ? "allow-sandbox" : "deny", term);
    if (opts.json) ctx.render.json({ approval: out.approval, pattern: action === "allow" ? out.pattern : null, added: out.added });
    else if (action === "allow" && out.approval.kind === "bridge") ctx.render.out(`allowed the bridge to ${describeSubject(out.approval.host)} for sandbox '${out.sandbox.name}' (approval ${out.approval.id}); its next try goes through`);
    else if (action === "allow" && out.approval.kind === "budget") ctx.render.out(`raised sandbox '${out.sandbox.name}''s LLM budget: ${out.pattern} (approval ${out.approval.id}); its next model call goes through`);
    else if (action === "allow" && isHostService(out.pattern)) ctx.render.out(`published ${out.pattern}, a service of the host, for sandbox '${out.sandbox.name}' only (approval ${out.approval.id}); \`sbx publish ${out.sandbox.name} --remove ${out.pattern}\` takes it back`);
    else if (action === "allow") ctx.render.out(`allowed ${out.pattern} for sandbox '${out.sandbox.name}'${term.kind === "good" ? "" : ` ${termText(term)}`} (approval ${out.approval.id}, seen ${out.approval.count}x)`);
    else ctx.render.out(`denied ${approvalWhat(out.approval, describeSubject)} (approval ${out.approval.id}); it stays ${out.approval.kind === "egress" ? "blocked" : "refused"}`);
    return ExitCode.ok;
  },
};
