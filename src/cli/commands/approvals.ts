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
    const { decidePending, pendingApprovals } = await import("../../proxy/allowlist-service");
    const { Store } = await import("../../store/store");
    const [action, idText] = args;
    const store = new Store(ctx.paths.dbFile);
    try {
      if (action === undefined) {
        const pending = pendingApprovals(store);
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
          pending.map((a) => [String(a.id), a.sandbox, a.host, String(a.port), String(a.count), new Date(a.lastSeen).toISOString(), a.reason]),
        );
        ctx.render.info("decide with `sbx approvals allow ID` or `sbx approvals deny ID`");
        return ExitCode.ok;
      }
      if (action !== "allow" && action !== "deny") {
        throw new SbxError("usage", `unknown action '${action}'`, { hint: "Use `sbx approvals`, `sbx approvals allow ID` or `sbx approvals deny ID`." });
      }
      if (idText === undefined || !/^[1-9][0-9]*$/.test(idText)) {
        throw new SbxError("usage", `sbx approvals ${action} needs an approval id`, { hint: "Run `sbx approvals` to see the ids." });
      }
      const out = decidePending(store, Number(idText), action, `cli:${ctx.env.userName}`);
      if (opts.json) ctx.render.json(out);
      else if (action === "allow") {
        const name = store.getSandbox(out.approval.sandboxId)?.name ?? `#${out.approval.sandboxId}`;
        ctx.render.out(`allowed ${out.pattern} for sandbox '${name}' (approval ${out.approval.id}, seen ${out.approval.count}x)`);
      }
      else ctx.render.out(`denied ${out.approval.host}:${out.approval.port} (approval ${out.approval.id}); it stays blocked`);
      return ExitCode.ok;
    } finally {
      store.close();
    }
  },
};
