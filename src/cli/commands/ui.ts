// sbx ui: the approvals dashboard. The daemon will host it; until then `sbx ui --serve` runs one in the foreground.
import type { Command } from "commander";
import { ExitCode, SbxError } from "../../core/errors";
import type { Verb } from "../verb";

export const ui: Verb = {
  name: "ui",
  summary: "open the approvals dashboard in the browser",
  declare(cmd: Command) {
    cmd
      .option("--print", "print the URL instead of opening it")
      .option("--serve", "run a dashboard in the foreground until ^C and print its launch URL (interim, until the daemon hosts it)")
      .addHelpText(
        "after",
        `
The dashboard listens on 127.0.0.1 at a port chosen at start and needs the launch URL's token; the
first visit trades it for a cookie. Until the daemon hosts the dashboard, \`sbx ui\` alone exits 69:
use \`sbx ui --serve\` and open the URL it prints (it reads the same state and audit log as the daemon).`,
      );
  },
  async run(ctx, _args, opts) {
    if (!opts.serve) {
      throw new SbxError("not_available", "sbx ui: the daemon does not host the dashboard yet", {
        hint: "Run `sbx ui --serve` to run one in the foreground and open the URL it prints.",
      });
    }
    const [{ Store }, { createEventBus, tailAudit }, { startDashboard }] = await Promise.all([
      import("../../store/store"),
      import("../../ui/feed"),
      import("../../ui/server"),
    ]);
    const store = new Store(ctx.paths.dbFile);
    const bus = createEventBus();
    // Decisions made here reach the feed through the audit log like everyone else's: no direct publish.
    const tail = tailAudit(store, (e) => bus.publish(e), 500);
    const dash = startDashboard({
      source: { store, events: { subscribe: bus.subscribe } },
      log: {
        info: () => undefined,
        warn: (m, f) => ctx.render.info(`${m} ${f ? JSON.stringify(f) : ""}`.trim()),
      },
    });
    // The launch URL is this command's result (stdout), for the person who ran it; it is never logged.
    ctx.render.out(dash.launchUrl);
    ctx.render.info(`dashboard on ${dash.origin} — open the URL above; press ^C to stop`);
    await new Promise<void>((resolve) => {
      process.once("SIGINT", resolve);
      process.once("SIGTERM", resolve);
    });
    tail.close();
    await dash.close();
    store.close();
    return ExitCode.ok;
  },
};
