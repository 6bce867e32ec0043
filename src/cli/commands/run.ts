// sbx run: create the sandbox if missing, then open a shell or run a command in it; its exit code is sbx's
import type { Command } from "commander";
import type { Verb } from "../verb";
import { BACKEND_OPTION, backendFlag, claudeAuthOpt, EXPOSE_OPTION, LIMIT_OPTIONS, limitsOpt } from "./create";

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
      .option(...EXPOSE_OPTION)
      .option(...BACKEND_OPTION)
      .option(...LIMIT_OPTIONS[0])
      .option(...LIMIT_OPTIONS[1])
      .option(...LIMIT_OPTIONS[2]);
  },
  async run(ctx, args, opts) {
    const [name = "", ...rest] = args;
    const argv = rest[0] === "--" ? rest.slice(1) : rest;
    const repoFlag = opts.repo as string | undefined;
    // An existing sandbox and a command with no terminal: the fast path (see shell); a missing one is created below.
    const limits = limitsOpt(opts);
    if (!ctx.stdinIsTTY && argv.length > 0 && Object.keys(limits.limits).length === 0) {
      const { quickEnter, stdio } = await import("../../client/quick");
      const code = await quickEnter(ctx, { name, argv, repoFlag, missing: "fallback" }, stdio());
      if (code !== null) return code;
    }
    // Loaded here, not at the top: `sbx --help` and `--version` must not pay for them.
    // An existing sandbox is entered whatever its kind; --backend (or this OS's default) picks the kind of a new one.
    const backend = opts.backend === undefined ? undefined : backendFlag(opts, ctx.env.platform);
    if (backend === undefined) backendFlag(opts, ctx.env.platform); // Docker-only flags with a user-account default refuse
    const { daemon, enter, outOf, whereOf } = await import("../../client/sandboxes");
    const client = await daemon(ctx);
    const { created } = await client.lifecycle(
      "create",
      {
        ...whereOf(ctx, repoFlag),
        name,
        ...(backend ? { backend } : {}),
        rebuild: opts.rebuild === true,
        overlays: (opts.overlay as string[] | undefined) ?? [],
        ifExists: "reuse",
        ...claudeAuthOpt(opts),
        ...limits,
        ...(opts.exposeCredentials === true ? { exposeCredentials: true } : {}),
        ...(ctx.env.vars.SHELL?.startsWith("/") ? { shell: ctx.env.vars.SHELL } : {}),
      },
      outOf(ctx),
    );
    if (created) ctx.render.info(`created sandbox ${name}`);
    return enter(ctx, client, { name, argv, repoFlag });
  },
};
