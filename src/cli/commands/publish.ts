// sbx publish: show or change which services of the host (a loopback address and port each) a sandbox may reach
import type { Command } from "commander";
import { SbxError } from "../../core/errors";
import { sandboxArgument } from "../completion/offers";
import type { Verb } from "../verb";

const collect = (v: string, prev: string[] = []) => [...prev, v];

export const publish: Verb = {
  name: "publish",
  summary: "let a sandbox reach one service of the host (a port on its loopback)",
  declare(cmd: Command) {
    cmd
      .addArgument(sandboxArgument("<name>", "sandbox name"))
      .argument("[service...]", "PORT (the host's 127.0.0.1:PORT) or a loopback ADDRESS:PORT (127.0.0.2:8443, [::1]:6379)")
      .option("--remove <service>", "stop publishing one; repeatable", collect)
      .option("--repo <path>", "the repo the sandbox belongs to")
      .option("--json", "print JSON")
      .addHelpText(
        "after",
        [
          "",
          "The host's loopback (127.0.0.0/8, ::1, and 0.0.0.0, which reaches it too) is never on an allowlist: a",
          "sandbox reaches a service there only once it is published for that one sandbox, at exactly that address",
          "and port, through the proxy (HTTP, HTTPS, anything that speaks CONNECT). Inside, the host's 127.0.0.1 is",
          "host.sbx.internal (127.0.0.1 there is the sandbox's own): curl http://host.sbx.internal:5432; another",
          "loopback address by that address: curl https://127.0.0.2:8443.",
          "A request the sandbox was refused for such a service waits in `sbx approvals`; allowing it there publishes it.",
          "",
          "Examples:",
          "  sbx publish agent                       what it may reach of the host",
          "  sbx publish agent 127.0.0.2:8443        one test server of yours",
          "  sbx publish agent --remove 127.0.0.2:8443",
        ].join("\n"),
      );
  },
  async run(ctx, args, opts) {
    const name = args[0] ?? "";
    const add = (args.slice(1) as string[]) ?? [];
    const remove = (opts.remove as string[] | undefined) ?? [];
    // A mistyped service is refused before any daemon is reached (or started).
    const { parsePublished } = await import("../../core/egress");
    for (const raw of [...add, ...remove]) {
      const r = parsePublished(raw);
      if (!r.ok) throw new SbxError("usage", `sbx publish: ${r.reason}`, { hint: "e.g. sbx publish NAME 5432, or 127.0.0.2:8443, [::1]:6379" });
    }
    const { daemon, outOf, whereOf } = await import("../../client/sandboxes");
    const r = await (await daemon(ctx)).lifecycle("publish", { ...whereOf(ctx, opts.repo as string | undefined), name, add, remove }, outOf(ctx));
    if (opts.json) {
      ctx.render.json(r);
      return 0;
    }
    ctx.render.out(
      r.published.length === 0
        ? `${name}: reaches no service of the host`
        : `${name}: reaches these services of the host: ${r.published.join(", ")}${r.changed ? " (changed; the next request goes through)" : ""}`,
    );
    if (r.answered > 0) ctx.render.out(`${name}: answered ${r.answered} pending approval${r.answered === 1 ? "" : "s"} for them`);
    return 0;
  },
};
