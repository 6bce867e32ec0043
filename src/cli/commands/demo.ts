// sbx demo: a throwaway sandbox that proves, with real traffic, what sbx guarantees; one PASS/FAIL line per step.
import type { Command } from "commander";
import type { Verb } from "../verb";

export const demo: Verb = {
  name: "demo",
  summary: "run the guided demo: a sandbox showing allowed and blocked egress, a credential-free push and a private npm install",
  declare(cmd: Command) {
    cmd
      .option("--keep", "keep the demo dir, its daemon and sandbox afterwards")
      .option("--pull", "pull debian:bookworm-slim from a registry (otherwise only local images are used)")
      .option("--json", "print the steps as JSON")
      .addHelpText(
        "after",
        "\nEverything runs in a temporary directory with its own sbx state and daemon, on loopback only;\nyour own sandboxes are untouched. Exits 0 when every step passed, 1 otherwise, 130 when interrupted.",
      );
  },
  async run(ctx, _args, opts) {
    // Loaded here, not at the top: `sbx --help` and `--version` must not pay for it.
    const { runDemo } = await import("../../demo/demo");
    const { renderStep, summary } = await import("../../demo/steps");
    const json = opts.json === true;
    const c = ctx.render.c;
    const paint = { pass: (s: string) => c.green(s), fail: (s: string) => c.red.bold(s), dim: (s: string) => c.dim(s) };
    let interrupted = false;
    const onSignal = () => {
      if (!interrupted) ctx.render.info("interrupted: cleaning up…");
      interrupted = true;
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    try {
      const report = await runDemo({
        exec: ctx.exec,
        env: ctx.env,
        keep: opts.keep === true,
        pull: opts.pull === true,
        interrupted: () => interrupted,
        hooks: {
          step: (s) => {
            if (!json) ctx.render.out(renderStep(s, paint));
          },
          note: (l) => ctx.render.info(l),
          progress: (chunk) => ctx.render.write("stderr", chunk),
        },
      });
      if (json) ctx.render.json(report);
      else ctx.render.out(report.interrupted ? `interrupted after ${report.steps.length} step(s)` : summary(report.steps));
      return report.interrupted ? 130 : report.ok ? 0 : 1;
    } finally {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    }
  },
};
