// sbx create: create a sandbox for this repo and start it
import type { Command } from "commander";
import { dirname, isAbsolute, resolve } from "node:path";
import { SbxError } from "../../core/errors";
import type { BackendKind } from "../../core/schemas";
import { defaultKind, KIND_OPTIONS, KINDS, kindOfFlag } from "../../core/backend-kind";
import type { Exec } from "../../sys/exec";
import type { Paths } from "../../sys/paths";
import type { StagedClone } from "../../workspace/staged-clone";
import type { Verb } from "../verb";

const collect = (v: string, prev: string[] = []) => [...prev, v];

/** `--claude-auth inject|overlay`, checked; absent → the lifecycle's default. */
export function claudeAuthOpt(opts: Record<string, unknown>): { claudeAuth?: "inject" | "overlay" } {
  const v = opts.claudeAuth;
  if (v === undefined) return {};
  if (v === "inject" || v === "overlay") return { claudeAuth: v };
  throw new SbxError("usage", `--claude-auth must be inject or overlay, not '${String(v)}'`, {
    hint: "inject keeps the host's Claude credentials out of the sandbox (the proxy adds them); overlay lets the agent read them.",
  });
}

/** `--memory`, `--cpus`, `--pids`, `--llm-budget` as typed (the daemon checks them and says what is wrong). */
export function limitsOpt(opts: Record<string, unknown>): { limits: { memory?: string; cpus?: string; pids?: string; llmBudget?: string } } {
  const out: { memory?: string; cpus?: string; pids?: string; llmBudget?: string } = {};
  for (const k of ["memory", "cpus", "pids", "llmBudget"] as const) if (typeof opts[k] === "string") out[k] = opts[k];
  return { limits: out };
}

/** `--dockerfile`, `--context`, `--image` as the lifecycle takes them: paths made absolute from where sbx runs. */
export function imageOpt(opts: Record<string, unknown>, cwd: string): { image?: { dockerfile?: string; context?: string; image?: string } } {
  const abs = (p: unknown) => (typeof p === "string" ? (isAbsolute(p) ? p : resolve(cwd, p)) : undefined);
  const image = {
    ...(typeof opts.dockerfile === "string" ? { dockerfile: abs(opts.dockerfile)! } : {}),
    ...(typeof opts.context === "string" ? { context: abs(opts.context)! } : {}),
    ...(typeof opts.image === "string" ? { image: opts.image } : {}),
  };
  return Object.keys(image).length ? { image } : {};
}

/**
 * `--service NAME=IMAGE|DOCKERFILE`, `--service-env SERVICE:NAME=VALUE` (repeatable) and `--pull`, checked here so a
 * typo is said before the daemon is reached (a Dockerfile's path made absolute from where sbx runs).
 */
export async function servicesOpt(opts: Record<string, unknown>, cwd: string): Promise<{ services?: import("../../core/services").ServiceSpec[]; serviceEnv?: Record<string, Record<string, string>>; pull?: true }> {
  const flags = (opts.service as string[] | undefined) ?? [];
  const envFlags = (opts.serviceEnv as string[] | undefined) ?? [];
  const pull = opts.pull === true ? { pull: true as const } : {};
  if (flags.length === 0 && envFlags.length === 0) return pull;
  const { parseServiceEnvFlags, parseServiceFlags } = await import("../../core/services");
  return { ...(flags.length ? { services: parseServiceFlags(flags, cwd) } : {}), ...(envFlags.length ? { serviceEnv: parseServiceEnvFlags(envFlags) } : {}), ...pull };
}

/** The limit flags of create, run and limits. */
export const LIMIT_OPTIONS = [
  ["--memory <size>", "memory the sandbox may use, e.g. 4g or 512m; none for no limit (default: half this machine's; config: limits.memory)"],
  ["--cpus <n>", "CPUs' worth of time, e.g. 2 or 0.5; none for no limit (default: every CPU but one; config: limits.cpus)"],
  ["--pids <n>", "processes and threads at once; none for no limit (default: 4096; config: limits.pids)"],
] as const;

/** The LLM budget flag of create, run, exec and limits. */
export const LLM_BUDGET_OPTION = [
  "--llm-budget <budget>",
  "what its model calls may spend, e.g. 5usd/day, 20usd (its whole life), 2mtokens/day; none for no budget; at the cap its calls are refused and an approval asks to raise it (config: llmBudget; sbx help budget)",
] as const;

/**
 * `--backend`: docker or a user-account kind (`user` is this OS's); an option the kind does not take is refused
 * (core/backend-kind.ts says which take which). Without the flag: docker on Linux, the hidden-account kind on macOS.
 */
export function backendFlag(opts: Record<string, unknown>, platform: NodeJS.Platform): BackendKind {
  const named = opts.backend === undefined ? undefined : String(opts.backend);
  const kind = named === undefined ? defaultKind(platform) : kindOfFlag(platform, named);
  const bad = KIND_OPTIONS.find((o) => o.set(opts) && !KINDS[kind].options.includes(o.flag));
  if (bad) {
    throw new SbxError("usage", `--${bad.flag} applies to ${bad.takenBy}, not --backend ${named ?? kind}${named === undefined ? " (the default here)" : ""}`, { hint: bad.hint });
  }
  return kind;
}

/** A clone started ahead for a new sandbox `name` of the repo around cwd, or null (bad name, no repo found cheaply, the sandbox dir exists). */
async function stageIfNew(ctx: { exec: Exec; env: { raw: Readonly<Record<string, string>> }; paths: Paths; cwd: string }, name: string, repoFlag: string | undefined): Promise<StagedClone | null> {
  const [{ NAME_MAX, NAME_PATTERN }, { findRepoRootQuick }, { sandboxDir }, { stageClone }, { existsSync }] = await Promise.all([
    import("../../core/names"),
    import("../../workspace/repo"),
    import("../../sys/paths"),
    import("../../workspace/staged-clone"),
    import("node:fs"),
  ]);
  if (name.length > NAME_MAX || !NAME_PATTERN.test(name)) return null; // the create says what is wrong
  const repo = findRepoRootQuick(ctx.cwd, repoFlag, ctx.env.raw);
  if (repo === null || existsSync(sandboxDir(ctx.paths, repo, name))) return null;
  try {
    return stageClone(ctx.exec, ctx.paths, repo);
  } catch {
    return null; // a head start only: the create clones as usual (and reports any real problem)
  }
}

/** An overlay of a credential location is refused without it. */
export const EXPOSE_OPTION = ["--expose-credentials", "allow an --overlay (or config overlay) that holds credentials (~/.ssh, ~/.config/gh, ~/.aws, …): the agent can then read them"] as const;

export const BACKEND_OPTION = ["--backend <kind>", "docker (the default on Linux) or user: a dedicated account per sandbox (Linux, as root; the default on macOS)"] as const;

/** The options of a new sandbox, shared by create, run and exec (--repo is each verb's own). */
export function declareNewSandboxOptions(cmd: Command): Command {
  return cmd
    .option("--rebuild", "rebuild the image even if its tag exists")
    .option("--port <port>", "reach the sandbox's port from the host's 127.0.0.1: PORT or HOST:PORT (ADDRESS:HOST:PORT for another address; repeatable; later: sbx port)", collect, [])
    .option("--allow-weaker", "--backend user on Linux: create it even though this kernel's Landlock cannot scope abstract sockets and signals (sbx doctor)")
    .option("--policy <level>", "its egress level: locked (sbx's own routes only), balanced (the agent's API and login, the repo's package registries and forge) or open (every public host); default: the config's policy, else the built-in list (sbx help egress; later: sbx policy set)")
    .option("--no-transparent", "no transparent path: no DNS stub and no 80/443 carried to the proxy; only clients that honour the proxy variables get out (config: transparent)")
    .option("--with-changes", "carry your uncommitted changes and untracked (not ignored) files in, as uncommitted changes, and into the image's build context (default: the sandbox and its image start from the last commit)")
    .option("--dockerfile <path>", "build the image from this Dockerfile (default: .devcontainer/devcontainer.json's, else the repo's Dockerfile); context: the repo unless --context")
    .option("--context <dir>", "the build context, a dir of the repo: what its last commit holds there (default: the repo; its Dockerfile when --dockerfile is not given)")
    .option("--image <ref>", "use this local image as it is, no build (sbx pulls nothing; it runs as you either way)")
    .option("--overlay <path>", "overlay another host dir copy-on-write (repeatable)", collect, [])
    .option("--service <name=image>", "run a local image (or one built from a Dockerfile: NAME=./path/x.Dockerfile, the repo's last commit as its context) beside the sandbox, in its network namespace: reached on 127.0.0.1, no network of its own, removed with it (Docker; repeatable; sbx help databases)", collect, [])
    .option("--service-env <service:name=value>", "a variable of a service (repeatable; nothing of your environment is read, no secret is expanded)", collect, [])
    .option("--pull", "services: pull a missing image, and let a service's Dockerfile fetch its bases, from a registry (otherwise only local images are used)")
    .option(
      "--claude-auth <mode>",
      "inject: the host's Claude key/login is added on the way out and ~/.claude/.credentials.json is hidden inside (default when the host has one); overlay: the agent can read the host's credentials file",
    )
    .option(...EXPOSE_OPTION)
    .option(...BACKEND_OPTION)
    .option(...LIMIT_OPTIONS[0])
    .option(...LIMIT_OPTIONS[1])
    .option(...LIMIT_OPTIONS[2])
    .option(...LLM_BUDGET_OPTION);
}

/** `--policy LEVEL` as the lifecycle takes it; an unknown level is refused here, with the levels. */
export async function policyOpt(opts: Record<string, unknown>): Promise<{ policy?: "locked" | "balanced" | "open" }> {
  if (typeof opts.policy !== "string") return {};
  const { levelNamed } = await import("../../core/levels");
  return { policy: levelNamed(opts.policy, "--policy") };
}

export const create: Verb = {
  name: "create",
  summary: "create a sandbox for this repo and start it",
  declare(cmd: Command) {
    declareNewSandboxOptions(
      cmd.argument("<name>", "sandbox name: lowercase letters, digits and -").option("--repo <path>", "the git repo to sandbox (default: the repo around the current directory)"),
    ).option("--json", "print the sandbox as JSON");
  },
  async run(ctx, args, opts) {
    const name = args[0] ?? "";
    const backend = backendFlag(opts, ctx.env.platform);
    // The clone (create's slowest step) starts before sbx even reaches the daemon, which moves it into place under
    // the create's lock, or removes it. Only for a new sandbox of a kind whose clone the host makes, of a repo found at once.
    const staged = KINDS[backend].stagesClone ? await stageIfNew(ctx, name, opts.repo as string | undefined) : null;
    // Loaded here, not at the top: `sbx --help` and `--version` must not pay for them.
    const { daemon, outOf, whereOf } = await import("../../client/sandboxes");
    // The daemon makes it (clone, image, guards, container), its build output on this terminal as it comes.
    const request = {
      ...whereOf(ctx, opts.repo as string | undefined),
      name,
      backend,
      rebuild: opts.rebuild === true,
      overlays: (opts.overlay as string[] | undefined) ?? [],
      ifExists: "error" as const,
      ...claudeAuthOpt(opts),
      ...limitsOpt(opts),
      ...imageOpt(opts, ctx.cwd),
      ...(opts.withChanges === true ? { withChanges: true } : {}),
      ...((opts.port as string[] | undefined)?.length ? { ports: opts.port as string[] } : {}),
      ...(await servicesOpt(opts, ctx.cwd)),
      ...(opts.allowWeaker === true ? { allowWeaker: true } : {}),
      ...(opts.transparent === false ? { transparent: false } : {}),
      ...(opts.exposeCredentials === true ? { exposeCredentials: true } : {}),
      ...(ctx.env.vars.SHELL?.startsWith("/") ? { shell: ctx.env.vars.SHELL } : {}),
      ...(staged ? { staged: dirname(staged.path) } : {}),
      ...(await policyOpt(opts)),
    };
    const { sandbox } = await daemon(ctx)
      .then((client) => client.lifecycle("create", request, outOf(ctx, { json: opts.json === true })))
      .finally(() => staged?.discard()); // also when the create never began (no daemon, a bad option)
    if (opts.json) {
      // A create that answers has brought the sandbox up (guards, then it runs): its state in sbx's one word.
      const { stateOfView } = await import("../../core/sandbox-state");
      ctx.render.json({ ...sandbox, state: stateOfView({ state: sandbox.state, phase: "running" }) });
    }
    else {
      ctx.render.out(`created sandbox ${sandbox.name}${KINDS[sandbox.backend].label} for ${sandbox.repo}; enter it with: sbx shell ${sandbox.name}`);
    }
    return 0;
  },
};
