// sbx shell: open a shell (or run a command) in a running sandbox
import type { Command } from "commander";
import { SbxError } from "../../core/errors";
import { sandboxArgument } from "../completion/offers";
import type { CliContext, Verb } from "../verb";

/** `sbx shell --attach SESSION` (`sbx attach`): a second terminal on a session the daemon already runs. */
async function attach(ctx: CliContext, session: string, args: string[], opts: Record<string, unknown>): Promise<number> {
  if (args.length > 0) {
    throw new SbxError("usage", "sbx shell --attach joins an existing session: give no sandbox name or command", {
      hint: `sbx shell --attach ${session}`,
    });
  }
  // The session exists already: its shell and its sandbox's repo were chosen when it started.
  const ignored = ["shell", "repo"].filter((k) => opts[k] !== undefined);
  if (ignored.length > 0) {
    throw new SbxError("usage", `sbx shell --attach joins a running session as it is: ${ignored.map((k) => `--${k}`).join(" and ")} would change nothing`, {
      hint: `sbx shell --attach ${session} (or a new session: sbx shell${opts.shell !== undefined ? ` --shell ${String(opts.shell)}` : ""} NAME)`,
    });
  }
  const { attachTo } = await import("./attach");
  return attachTo(ctx, session, opts.detachKeys as string | undefined, "sbx shell --attach");
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
      .option("--attach <session>", "join a running session read-write instead (ids from `sbx ps`; the same as `sbx attach`)")
      .option("--shell <shell>", "the shell of this session (bash, zsh, fish, or a path inside), instead of the sandbox's login shell")
      .option("--detach-keys <keys>", "the keys that leave the session running and return here (default ctrl-p,ctrl-q; config: detachKeys)")
      .addHelpText(
        "after",
        [
          "",
          "Options go before the name or right after it; from the command's first word (or `--`) on, every word is the",
          "command's. In a session, Ctrl-P Ctrl-Q detaches (the shell goes on running); `sbx ps` lists sessions and",
          "`sbx attach <session>` (or `sbx shell --attach <session>`) joins one again.",
          "",
          "Examples:",
          "  sbx shell demo                    its login shell",
          "  sbx shell --shell bash demo       bash this time",
          "  sbx shell demo -- make test       a command (its exit code is sbx's)",
        ].join("\n"),
      );
  },
  async run(ctx, args, opts) {
    // A mistyped --detach-keys is refused before any session starts.
    if (typeof opts.detachKeys === "string") (await import("../../core/detach-keys")).parseDetachKeys(opts.detachKeys);
    if (opts.attach !== undefined) return attach(ctx, String(opts.attach), args, opts);
    const [name, ...rest] = args;
    if (name === undefined) {
      throw new SbxError("usage", "sbx shell: name the sandbox, or join a session with --attach", {
        hint: "sbx shell <name> [-- command…], or `sbx ps` then `sbx shell --attach <session>`.",
      });
    }
    let argv = rest[0] === "--" ? rest.slice(1) : rest;
    if (typeof opts.shell === "string") {
      if (argv.length > 0) {
        throw new SbxError("usage", "--shell picks the shell of an interactive session; with a command, run the command itself", { hint: `sbx shell ${name} -- ${opts.shell} -c '…'` });
      }
      // Through the start line like any command: a shell the image lacks is said as a missing command (127).
      argv = [opts.shell, "-l"];
    }
    // A command with no terminal: one daemon request and the engine API (no store, no zod schemas, no docker CLI).
    if (!ctx.stdinIsTTY && argv.length > 0) {
      const { quickEnter, stdio } = await import("../../client/quick");
      const code = await quickEnter(ctx, { name, argv, repoFlag: opts.repo as string | undefined, missing: "error" }, stdio());
      if (code !== null) return code;
    }
    // Loaded here, not at the top: `sbx --help` and `--version` must not pay for it.
    const { daemon, enter } = await import("../../client/sandboxes");
    return enter(ctx, await daemon(ctx), { name, argv, repoFlag: opts.repo as string | undefined, detachKeys: opts.detachKeys as string | undefined });
  },
};
