// sbx services: a Docker sandbox's services (`sbx create NAME --service DB=IMAGE`, devcontainer compose): their state
// and health, a service's output, a restart; one daemon call (/v1/lifecycle/services), as every verb.
import type { Command } from "commander";
import { SbxError } from "../../core/errors";
import { sandboxArgument } from "../completion/offers";
import type { Verb } from "../verb";

export const services: Verb = {
  name: "services",
  summary: "a Docker sandbox's services (--service at create): state and health, a service's logs, restart one",
  declare(cmd: Command) {
    cmd
      .addArgument(sandboxArgument("<name>", "sandbox name"))
      .argument("[action]", "logs or restart (default: list them)")
      .argument("[service]", "the service logs and restart name")
      .option("--repo <path>", "the repo the sandbox belongs to")
      .option("--tail <n>", "logs: the last N lines (default 200)")
      .option("--json", "print JSON")
      .addHelpText(
        "after",
        [
          "",
          "A service is a container in the sandbox's own network namespace: the sandbox reaches it on 127.0.0.1, and it has",
          "the sandbox's network and nothing more (no route out, sbx's DNS stub). It sees nothing of your machine: no repo,",
          "no sbx socket, no variable but its image's. Its data lives in a volume of the sandbox, removed by `sbx rm`.",
          "`sbx stop` stops the services too; the sandbox's next start starts them again (sbx help databases).",
          "",
          "Examples:",
          "  sbx services dev                 each service: image, state, health",
          "  sbx services dev logs db         its output",
          "  sbx services dev restart db      restart it",
        ].join("\n"),
      );
  },
  async run(ctx, args, opts) {
    const [name = "", action, svc] = args;
    if (action !== undefined && action !== "logs" && action !== "restart") throw new SbxError("usage", `sbx services: '${action}' is not logs or restart`, { hint: `sbx services ${name} logs SERVICE` });
    if (action !== undefined && svc === undefined) throw new SbxError("usage", `sbx services ${name} ${action}: which service?`, { hint: `\`sbx services ${name}\` lists them.` });
    const tail = Number.parseInt(String(opts.tail ?? "200"), 10);
    if (!Number.isInteger(tail) || tail < 1 || tail > 10_000) throw new SbxError("usage", `--tail ${String(opts.tail)}: a number of lines from 1 to 10000`, { hint: "e.g. --tail 50" });
    const { daemon, outOf, whereOf } = await import("../../client/sandboxes");
    const r = await (await daemon(ctx)).lifecycle(
      "services",
      { ...whereOf(ctx, opts.repo as string | undefined), name, action: action ?? "list", ...(svc !== undefined ? { service: svc } : {}), tail },
      outOf(ctx),
    );
    if (action === "logs") {
      // The service's own output: written as it is, every control character shown (render.out), never sent raw.
      if (r.logs) ctx.render.out(r.logs);
      return 0;
    }
    if (action === "restart") {
      ctx.render.out(`restarted ${r.restarted ?? svc} of ${name}`);
      return 0;
    }
    if (opts.json) {
      ctx.render.json(r.services.map(({ name: n, image, state, health, exitCode }) => ({ name: n, image, state, health, exitCode })));
      return 0;
    }
    if (r.services.length === 0) {
      ctx.render.out(`sandbox ${name} has no services (sbx create ${name} --service NAME=IMAGE gives it some)`);
      return 0;
    }
    const { c } = ctx.render;
    ctx.render.table(
      ["SERVICE", "IMAGE", "STATE", "HEALTH"],
      r.services.map((v) => [
        v.name,
        v.image,
        v.state === "running" ? v.state : c.red(v.state === "exited" ? `exited (code ${v.exitCode})` : v.state),
        v.health === "unhealthy" ? c.red(v.health) : v.health,
      ]),
    );
    return 0;
  },
};
