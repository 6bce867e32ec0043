// sbx ui: open the daemon's approvals dashboard in the browser (starting the daemon if needed), or print a single-use link.
import type { Command } from "commander";
import { ExitCode } from "../../core/errors";
import type { Verb } from "../verb";

/** How long a link from `--print` stays usable (it also dies at first use). */
const PRINT_TTL_MS = 10 * 60_000;
/** How long `sbx ui` waits for the browser to reach the dashboard. */
const OPEN_TTL_MS = 60_000;

export const ui: Verb = {
  name: "ui",
  summary: "open the approvals dashboard in the browser",
  declare(cmd: Command) {
    cmd.option("--print", "print a single-use link (valid 10 minutes) instead of opening the browser").addHelpText(
      "after",
      `
The daemon serves the dashboard on 127.0.0.1 at a port chosen at its start (\`sbx status\` shows it).
\`sbx ui\` asks the daemon for a single-use link and opens it through a page only you can read
(mode 0600 in your runtime dir), so the link never appears on a command line; the page is removed
once the browser has used it. The first visit trades the link for a cookie.

  --print   print the link on stdout, for a browser on this machine that sbx cannot open itself`,
    );
  },
  async run(ctx, _args, opts) {
    const [{ daemonFor }, { uiLaunch, uiTicketState }] = await Promise.all([import("../../client/cli"), import("../../client/hosted")]);
    const client = await daemonFor(ctx);
    if (opts.print) {
      const l = await uiLaunch(client, PRINT_TTL_MS);
      // The link is this command's result (stdout), for the person who ran it: single use, 10 minutes.
      ctx.render.out(l.url);
      ctx.render.info(`single use, valid 10 minutes; the dashboard is ${l.origin}`);
      return ExitCode.ok;
    }
    const [{ openDashboard }, { spawnDetached }] = await Promise.all([import("../../ui/launch"), import("../../sys/exec")]);
    const l = await uiLaunch(client, OPEN_TTL_MS);
    ctx.render.info(`opening ${l.origin} in your browser…`);
    await openDashboard({
      platform: ctx.env.platform,
      runtimeDir: ctx.paths.runtimeDir,
      url: l.url,
      spawn: (argv) => spawnDetached(argv, { env: { ...ctx.env.raw } }),
      ticketState: () => uiTicketState(client, l.ticket),
      timeoutMs: OPEN_TTL_MS,
    });
    ctx.render.info(`dashboard open: ${l.origin}`);
    return ExitCode.ok;
  },
};
