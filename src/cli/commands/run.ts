// sbx run: create the sandbox if missing, then open a shell or run a command in it; its exit code is sbx's
import type { Command } from "commander";
import type { Verb } from "../verb";
import { BACKEND_OPTION, claudeAuthOpt, userBackendFlag } from "./create";

const collect = (v: string, prev: string[] = []) => [...prev, v];

export const run: Verb = {
  name: "run",
  summary: "create the sandbox if missing, then a shell or the command (exit code propagated)",
  runsCommand: true,
  declare(cmd: Command) {
    cmd
      .argument("<name>", "sandbox name")
      .argument("[command...]", "command to run (after --); its exit code is sbx's")
      .option("--repo <path>", "the git repo to sandbox")
      .option("--rebuild", "rebuild the image even if its tag exists")
      .option("--overlay <path>", "overlay another host dir copy-on-write (repeatable)", collect, [])
      .option(
        "--claude-auth <mode>",
        "inject: the host's Claude key/login is added on the way out and ~/.claude/.credentials.json is hidden inside (default when the host has one); overlay: the agent can read the host's credentials file",
      )
      .option(...BACKEND_OPTION);
  },
  async run(ctx, args, opts) {
    const [name = "", ...rest] = args;
    const argv = rest[0] === "--" ? rest.slice(1) : rest;
    const repoFlag = opts.repo as string | undefined;
    // An existing sandbox and a command with no terminal: the fast path (see shell); a missing one is created below.
    if (!ctx.stdinIsTTY && argv.length > 0) {
      const { quickEnter, stdio } = await import("../../client/quick");
      const code = await quickEnter(ctx, { name, argv, repoFlag, missing: "fallback" }, stdio());
      if (code !== null) return code;
    }
    // Loaded here, not at the top: `sbx --help` and `--version` must not pay for them.
    const userBackend = userBackendFlag(opts, ctx.env.platform);
    const { backendOf, enter, withDaemonManager, withUserSandboxes } = await import("../../client/sandboxes");
    return withDaemonManager(ctx, async (m, client) => {
      const existing = await backendOf(m, name, { cwd: ctx.cwd, repoFlag });
      if (userBackend !== null || (existing !== null && existing !== "docker")) {
        // A user-account sandbox: created by its own lifecycle if missing; enter() routes by the stored backend.
        if (existing === null) {
          const { userBackendKind } = await import("../../lifecycle/user-backend");
          await withUserSandboxes(ctx, client, userBackendKind(ctx.env.platform, userBackend!), (u) =>
            u.create({ name, cwd: ctx.cwd, repoFlag, ifExists: "reuse" }),
          );
          ctx.render.info(`created sandbox ${name}`);
        }
        return enter(ctx, m, client, { name, argv, repoFlag });
      }
      const { created } = await m.create({
        name,
        cwd: ctx.cwd,
        repoFlag,
        rebuild: opts.rebuild === true,
        overlays: (opts.overlay as string[] | undefined) ?? [],
        ifExists: "reuse",
        ...claudeAuthOpt(opts),
      });
      if (created) ctx.render.info(`created sandbox ${name}`);
      return enter(ctx, m, client, { name, argv, repoFlag });
    });
  },
};
