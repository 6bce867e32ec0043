// sbx run: `sbx run AGENT [NAME] [-- args]` starts a coding agent in its sandbox (made if missing, the agent supplied);
// `sbx run NAME [-- command]` (NAME not an agent's) creates the sandbox if missing, then a shell or the command.
import type { Command } from "commander";
import { AGENT_NAMES, asksAboutItself, isAgentName, type AgentName } from "../../core/agent-names";
import { OfferingArgument } from "../completion/offers";
import type { Verb, CliContext } from "../verb";
import { backendFlag, claudeAuthOpt, declareNewSandboxOptions, imageOpt, limitsOpt, policyOpt, servicesOpt } from "./create";

/** The options `run` and `exec` share: those of a new sandbox. */
export function declareRunOptions(cmd: Command): Command {
  return declareNewSandboxOptions(
    cmd
      .option("--repo <path>", "the git repo to sandbox")
      .option("--create", "a new sandbox is meant even though its name is one edit from an existing one's (else asked, or refused without a terminal)"),
  );
}

/** The create options as the lifecycle takes them. */
async function createOpts(ctx: CliContext, opts: Record<string, unknown>, backend: string | undefined) {
  return {
    ...(await policyOpt(opts)),
    ...(await servicesOpt(opts, ctx.cwd)),
    ...(backend ? { backend: backend as "docker" } : {}),
    rebuild: opts.rebuild === true,
    overlays: (opts.overlay as string[] | undefined) ?? [],
    ...claudeAuthOpt(opts),
    ...limitsOpt(opts),
    ...imageOpt(opts, ctx.cwd),
    ...(opts.withChanges === true ? { withChanges: true } : {}),
    ...((opts.port as string[] | undefined)?.length ? { ports: opts.port as string[] } : {}),
    ...(opts.allowWeaker === true ? { allowWeaker: true } : {}),
    ...(opts.transparent === false ? { transparent: false } : {}),
    ...(opts.exposeCredentials === true ? { exposeCredentials: true } : {}),
    ...(ctx.env.vars.SHELL?.startsWith("/") ? { shell: ctx.env.vars.SHELL } : {}),
  };
}

/** `run NAME` / `exec NAME`: create if missing, then a shell or the command; its exit code is sbx's. */
export async function runInSandbox(ctx: CliContext, args: string[], opts: Record<string, unknown>, cmd?: Command): Promise<number> {
  const [name = "", ...rest] = args;
  const argv = rest[0] === "--" ? rest.slice(1) : rest;
  const repoFlag = opts.repo as string | undefined;
  // An existing sandbox and a command with no terminal: the fast path (see shell); a missing one is created below.
  const limits = limitsOpt(opts);
  // Options only a new sandbox takes go the full way, where an existing sandbox refuses them (never ignored).
  const newOnly =
    Object.keys(limits.limits).length > 0 ||
    opts.rebuild === true ||
    opts.backend !== undefined ||
    ((opts.overlay as string[] | undefined) ?? []).length > 0 ||
    imageOpt(opts, ctx.cwd).image !== undefined ||
    opts.withChanges === true ||
    ((opts.port as string[] | undefined) ?? []).length > 0 ||
    ((opts.service as string[] | undefined) ?? []).length > 0 ||
    opts.claudeAuth !== undefined ||
    opts.exposeCredentials === true ||
    opts.allowWeaker === true ||
    opts.policy !== undefined ||
    opts.transparent === false;
  if (!ctx.stdinIsTTY && argv.length > 0 && !newOnly) {
    const { quickEnter, stdio } = await import("../../client/quick");
    const code = await quickEnter(ctx, { name, argv, repoFlag, missing: "fallback" }, stdio());
    if (code !== null) return code;
  }
  // Loaded here, not at the top: `sbx --help` and `--version` must not pay for them.
  // An existing sandbox is entered whatever its kind; --backend (or this OS's default) picks the kind of a new one.
  const backend = opts.backend === undefined ? undefined : backendFlag(opts, ctx.env.platform);
  if (backend === undefined) backendFlag(opts, ctx.env.platform); // Docker-only flags with a user-account default refuse
  const { daemon, enter, guardNewName, outOf, whereOf } = await import("../../client/sandboxes");
  const client = await daemon(ctx);
  const verb = cmd?.name() === "run" ? "run" : "exec";
  await guardNewName(ctx, client, { name, repoFlag, create: opts.create === true, again: (n) => `\`sbx ${verb} ${n} -- …\`` });
  const { created } = await client.lifecycle("create", { ...whereOf(ctx, repoFlag), name, ...(await createOpts(ctx, opts, backend)), ifExists: "reuse" }, outOf(ctx));
  if (created) ctx.render.info(`created sandbox ${name}`);
  return enter(ctx, client, { name, argv, repoFlag });
}

/**
 * Pure: `AGENT [NAME] [--] [agent args…]` split. A first word that is not an option and not `--` names the sandbox;
 * everything else goes to the agent.
 */
export function splitAgentArgs(rest: readonly string[]): { name?: string; args: string[] } {
  if (rest[0] === "--") return { args: rest.slice(1) };
  if (rest[0] !== undefined && !rest[0].startsWith("-")) {
    const after = rest.slice(1);
    return { name: rest[0], args: after[0] === "--" ? after.slice(1) : after };
  }
  return { args: [...rest] };
}

/**
 * A key this shell exports that sbx does not have: the daemon runs apart from the shell and never sees it, so the agent
 * would have no login. Said before it starts, with the fix (a file read; nothing is sent anywhere).
 */
async function sayKeysToImport(ctx: CliContext): Promise<void> {
  // Zod-free readers: this runs at every `sbx run AGENT`, before anything else (secrets/stored.ts took ~70 ms to load).
  const [{ keysToImport }, { storedNamesQuick }] = await Promise.all([import("../../core/secret-names"), import("../../secrets/stored-names")]);
  // A malformed file is said by the verbs that use it.
  const stored = storedNamesQuick(ctx.paths.configDir);
  if (stored === null) return;
  const missing = keysToImport(ctx.env.raw, new Set(stored));
  if (missing.length > 0) ctx.render.info(`note: ${missing.join(", ")} ${missing.length === 1 ? "is" : "are"} set in this shell but sbx has not stored ${missing.length === 1 ? "it" : "them"} (its daemon sees a shell's keys only if that shell started it): \`sbx secret import\` stores ${missing.length === 1 ? "it" : "them"}`);
}

async function runAgent(ctx: CliContext, agent: AgentName, rest: string[], opts: Record<string, unknown>): Promise<number> {
  const { trace } = await import("../../sys/trace");
  trace("cli runAgent");
  const { name, args } = splitAgentArgs(rest);
  await sayKeysToImport(ctx);
  const repoFlag = opts.repo as string | undefined;
  const backend = opts.backend === undefined ? undefined : backendFlag(opts, ctx.env.platform);
  if (backend === undefined) backendFlag(opts, ctx.env.platform);
  const { whereOf } = await import("../../client/where");
  const body = {
    ...whereOf(ctx, repoFlag),
    agent,
    ...(name ? { name } : {}),
    ...(typeof opts.agentVersion === "string" ? { version: opts.agentVersion } : {}),
    // `-- --version` (or --help) acts on nothing: the agent answers as it would outside, without the flags beside it.
    unattended: opts.ask !== true && !asksAboutItself(args),
    ...(await createOpts(ctx, opts, backend)),
  };
  // A NAME given is made if missing: a slip for an existing one's is asked about (or refused) first. Without a terminal
  // the names come from a running daemon's list, read without the client library (whose loading cost more than the
  // rest of the CLI's part); else, or when that cannot be told, from the full client (which starts the daemon).
  trace("cli keys said");
  if (name && opts.create !== true) {
    const again = (n: string) => `\`sbx run ${agent} ${n}\``;
    const quick = ctx.stdinIsTTY || whereOf(ctx, repoFlag).asUid !== undefined ? null : await (await import("../../client/names")).sandboxNamesOrNull(ctx.paths, { cwd: ctx.cwd, repoFlag, vars: ctx.env.raw }, 10_000);
    if (quick !== null) await (await import("../../client/guard-name")).guardNewName(ctx, async () => quick, { name, create: false, again });
    else {
      const { daemon, guardNewName } = await import("../../client/sandboxes");
      await guardNewName(ctx, await daemon(ctx), { name, repoFlag, create: false, again });
    }
  }
  // Without a terminal, the way `sbx shell NAME -- cmd` goes: no zod, no client library, the command through the exec agent.
  if (!ctx.stdinIsTTY) {
    const [{ quickAgent, quickEnter, stdio }, { progressOut }] = await Promise.all([import("../../client/quick"), import("../../client/build-progress")]);
    trace("cli names checked");
    const got = await quickAgent(ctx.paths, body, progressOut(ctx.render));
    trace("cli agent answered");
    if (got) {
      if (got.created) ctx.render.info(`created sandbox ${got.name}`);
      const code = await quickEnter(ctx, { name: got.name, argv: [...got.argv, ...args], repoFlag, missing: "error" }, stdio());
      if (code !== null) return code;
    }
  }
  const { daemon, enter, outOf } = await import("../../client/sandboxes");
  const client = await daemon(ctx);
  const r = await client.lifecycle("agent", body, outOf(ctx));
  if (r.created) ctx.render.info(`created sandbox ${r.sandbox.name}`);
  // `sbx ps` shows the agent as the person asked for it, not sbx's launcher (`--verbose` shows that).
  return enter(ctx, client, { name: r.sandbox.name, argv: [...r.argv, ...args], command: [agent, ...args], repoFlag });
}

export const run: Verb = {
  name: "run",
  summary: `start a coding agent (${AGENT_NAMES.join(", ")}) in its sandbox; or NAME: a shell or the command`,
  runsCommand: true,
  keepsDashDash: true,
  declare(cmd: Command) {
    declareRunOptions(
      cmd
        .addArgument(new OfferingArgument("<agent-or-name>", `an agent (${AGENT_NAMES.join(", ")}), or a sandbox name`, ["agent", "sandbox"]))
        // Completion offers sandbox names for the first of these words: the NAME of `sbx run AGENT NAME`.
        .addArgument(new OfferingArgument("[args...]", "AGENT: [NAME] [-- agent args]; NAME: [-- command] (its exit code is sbx's)", ["sandbox"], true)),
    )
      .option("--agent-version <v>", "AGENT: the agent's version to install and run (default: the one sbx has, else the latest)")
      .option("--ask", "AGENT: leave out the flags that let the agent act without asking (default: sbx is the boundary, so it does not ask)")
      .addHelpText(
        "after",
        [
          "",
          "sbx run AGENT [NAME] [-- ARGS]",
          "  Creates the sandbox if missing (NAME defaults to AGENT-<repo dir>), supplies the agent when the image lacks it",
          "  (fetched once on the host from its npm package, sha512-checked, mounted read-only), allows the agent's preset",
          "  for this sandbox, writes sbx's section into its user-level instruction file, and starts it attached. Logins stay",
          "  on the host: the LLM proxy adds the host's key or login to each request.",
          "    sbx run claude                       Claude Code in sandbox claude-<repo dir>",
          "    sbx run codex work -- exec 'fix it'  Codex CLI, non-interactive, in sandbox work",
          "    sbx run --ask --agent-version 2.1.0 claude",
          "  sbx's own options go before AGENT, or after AGENT [NAME] when a `--` ends them (sbx run claude work --memory 8g",
          "  -- --model opus); without a `--`, everything after AGENT is the sandbox's name and the agent's arguments.",
          "",
          "sbx run NAME [-- COMMAND]",
          "  NAME is not an agent's: creates the sandbox if missing, then a shell or COMMAND (same as sbx exec). sbx's options",
          "  go before NAME or right after it; from COMMAND's first word (or `--`) on, every word is COMMAND's.",
        ].join("\n"),
      );
  },
  async run(ctx, args, opts, cmd) {
    const [first = ""] = args;
    if (isAgentName(first)) return runAgent(ctx, first, args.slice(1), opts);
    if (opts.agentVersion !== undefined || opts.ask === true) {
      const { SbxError } = await import("../../core/errors");
      throw new SbxError("usage", `--agent-version and --ask go with an agent (${AGENT_NAMES.join(", ")}), and '${first}' is none`, { hint: `e.g. sbx run claude --ask` });
    }
    return runInSandbox(ctx, args, opts, cmd);
  },
};
