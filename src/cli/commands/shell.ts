// sbx shell: open a shell (or run a command) in a running sandbox
import type { Command } from "commander";
import type { Verb } from "../verb";

export const shell: Verb = {
  name: "shell",
  summary: "open a shell (or run a command) in a running sandbox",
  runsCommand: true,
  declare(cmd: Command) {
    cmd
      .argument("<name>", "sandbox name")
      .argument("[command...]", "command to run instead of a shell (after --)")
      .option("--repo <path>", "the repo the sandbox belongs to (default: the current one)");
  },
  async run(ctx, args, opts) {
    const [name = "", ...rest] = args;
    const argv = rest[0] === "--" ? rest.slice(1) : rest;
    // A command with no terminal: one daemon request and the engine API (no store, no zod schemas, no docker CLI).
    if (!ctx.stdinIsTTY && argv.length > 0) {
      const { quickEnter, stdio } = await import("../../client/quick");
      const code = await quickEnter(ctx, { name, argv, repoFlag: opts.repo as string | undefined, missing: "error" }, stdio());
      if (code !== null) return code;
    }
    // Loaded here, not at the top: `sbx --help` and `--version` must not pay for it.
    const { enter, withDaemonManager } = await import("../../client/sandboxes");
    return withDaemonManager(ctx, (m, client) => enter(ctx, m, client, { name, argv, repoFlag: opts.repo as string | undefined }));
  },
};
