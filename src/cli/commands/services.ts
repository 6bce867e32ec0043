// sbx services: a Docker sandbox's services (`sbx create NAME --service DB=IMAGE`): their state and health, a
// service's output, a restart. Run here, against the engine, as the person (who can reach the engine: Docker
// sandboxes need that), never through the sandbox.
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
    const [{ findRepoRootQuick }, { sandboxId }, { rootLabel }, { DockerServices }] = await Promise.all([
      import("../../workspace/repo"),
      import("../../drivers/identity"),
      import("../../drivers/docker/args"),
      import("../../drivers/docker/services"),
    ]);
    const repo = findRepoRootQuick(ctx.cwd, opts.repo as string | undefined, ctx.env.raw);
    if (repo === null) throw new SbxError("usage", "not in a git repo", { hint: "Run it in the sandbox's repo, or give --repo PATH." });
    const id = sandboxId(ctx.paths.sandboxRoot, repo, name);
    const s = new DockerServices(ctx.exec, rootLabel(ctx.paths.sandboxRoot));
    const all = await s.list(id);
    if (action === undefined) {
      if (opts.json) {
        ctx.render.json(all.map(({ name: n, image, state, health, exitCode }) => ({ name: n, image, state, health, exitCode })));
        return 0;
      }
      if (all.length === 0) {
        ctx.render.out(`sandbox ${name} has no services (sbx create ${name} --service NAME=IMAGE gives it some)`);
        return 0;
      }
      for (const v of all) ctx.render.out(`${v.name}\t${v.image}\t${v.state}${v.state === "exited" ? ` (code ${v.exitCode})` : ""}\t${v.health}`);
      return 0;
    }
    if (action !== "logs" && action !== "restart") throw new SbxError("usage", `sbx services: '${action}' is not logs or restart`, { hint: `sbx services ${name} logs SERVICE` });
    const v = all.find((x) => x.name === svc);
    if (v === undefined) {
      throw new SbxError("not_found", `sandbox ${name} has no service '${svc ?? ""}'`, { hint: all.length ? `Its services: ${all.map((x) => x.name).join(", ")}.` : `\`sbx services ${name}\` lists them.` });
    }
    if (action === "logs") {
      const tail = Number.parseInt(String(opts.tail ?? "200"), 10);
      ctx.render.out(await s.logs(v.container, Number.isInteger(tail) && tail > 0 ? tail : 200));
      return 0;
    }
    await s.restart(v.container);
    ctx.render.out(`restarted ${v.name} of ${name}`);
    return 0;
  },
};
