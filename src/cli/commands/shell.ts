// sbx shell: open a shell (or run a command) in a running sandbox
import type { Command } from "commander";
import { SbxError } from "../../core/errors";
import { sandboxArgument } from "../completion/offers";
import type { CliContext, Verb } from "../verb";

/** `sbx shell --attach SESSION`: a second terminal on a session the daemon already runs. */
async function attach(ctx: CliContext, session: string, args: string[]): Promise<number> {
  if (args.length > 0) {
    throw new SbxError("usage", "sbx shell --attach joins an existing session: give no sandbox name or command", {
      hint: `sbx shell --attach ${session}`,
    });
  }
  if (!ctx.stdinIsTTY) {
    throw new SbxError("usage", "sbx shell --attach needs a terminal", { hint: "Run it from an interactive terminal." });
  }
  const [{ daemonFor }, { attachShell, processTty }] = await Promise.all([
    import("../../client/cli"),
    import("../../client/terminal"),
  ]);
  const client = await daemonFor(ctx);
  const { sessions } = await client.sessions();
  const found = sessions.find((s) => s.id === session);
  if (!found || found.exitCode !== null) {
    throw new SbxError("not_found", `no running session '${session}'`, { hint: "`sbx ps` lists the running sessions." });
  }
  return attachShell(client, session, processTty());
}

export const shell: Verb = {
  name: "shell",
  summary: "open a shell (or run a command) in a running sandbox",
  runsCommand: true,
  declare(cmd: Command) {
    cmd
      .addArgument(sandboxArgument("[name]", "sandbox name (not with --attach)"))
      .argument("[command...]", "command to run instead of a shell (after --)")
      .option("--repo <path>", "the repo the sandbox belongs to (default: the current one)")
      .option("--attach <session>", "join a running session read-write instead (ids from `sbx ps`)");
  },
  async run(ctx, args, opts) {
    if (opts.attach !== undefined) return attach(ctx, String(opts.attach), args);
    const [name, ...rest] = args;
    if (name === undefined) {
      throw new SbxError("usage", "sbx shell: name the sandbox, or join a session with --attach", {
        hint: "sbx shell <name> [-- command…], or `sbx ps` then `sbx shell --attach <session>`.",
      });
    }
    const argv = rest[0] === "--" ? rest.slice(1) : rest;
    // A command with no terminal: one daemon request and the engine API (no store, no zod schemas, no docker CLI).
    if (!ctx.stdinIsTTY && argv.length > 0) {
      const { quickEnter, stdio } = await import("../../client/quick");
      const code = await quickEnter(ctx, { name, argv, repoFlag: opts.repo as string | undefined, missing: "error" }, stdio());
      if (code !== null) return code;
    }
    // Loaded here, not at the top: `sbx --help` and `--version` must not pay for it.
    const { daemon, enter } = await import("../../client/sandboxes");
    return enter(ctx, await daemon(ctx), { name, argv, repoFlag: opts.repo as string | undefined });
  },
};
