// `sbx run AGENT`: the sandbox (made if missing), the agent in the host's cache, its preset allowed for that sandbox,
// and the command that starts it: setup inside (instruction section, first-run settings) then the agent's launcher.
import { trace } from "../sys/trace";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { basename } from "node:path";
import { AGENT_NAMES, AGENTS, agentSetupPlan, codexPlaceholderAuth, defaultAgentSandboxName, type AgentName, type AgentPlatform, type AgentSetup, type AgentSetupPlan } from "../core/agents";
import { readCodexLogin } from "../llm/codex-login";
import { credentialFor, hasGeminiSignIn, hostKeySources, hostSecretsByName, type KeySources } from "../llm/keys";
import { CopyIn, findingLines, type Scanned } from "../secrets/copy-in";
import { SbxError } from "../core/errors";
import { PRESETS } from "../core/presets";
import { levelOf } from "../core/levels";
import type { PolicyService } from "../policy/service";
import type { CreateRequest, SandboxService } from "../sandboxes/service";
import type { Sandbox } from "../core/schemas";
import type { Store } from "../store/store";
import type { AgentPlace } from "../drivers/driver";
import { AGENT_SETUP_SCRIPT } from "../drivers/provision/provision";
import type { BackendKind } from "../core/schemas";
import type { Env } from "../sys/env";
import type { Exec } from "../sys/exec";
import { sandboxDir, type Paths } from "../sys/paths";
import { sandboxLayout } from "../workspace/layout";
import { AgentCache } from "./cache";

/** An agent as `sbx agents` shows it (the wire's AgentViewSchema in daemon/protocol.ts checks this shape). */
export interface AgentView {
  name: AgentName;
  title: string;
  binary: string;
  /** The version the launcher runs; null when none is cached (or it is installed inside, as aider is). */
  version: string | null;
  cached: string[];
  install: "npm" | "pip";
  preset: string;
  sandboxes: { name: string; repo: string; version: string }[];
  /** Where the login the LLM proxy would add comes from: names only (an env var, sbx's secrets, a login file). */
  login: { ok: boolean; via: string[] };
}

export interface AgentServiceDeps {
  sandboxes: SandboxService;
  store: Store;
  paths: Paths;
  exec: Exec;
  /** The npm registry (default npm's own). */
  registry?: string;
  /** How agents are downloaded (the host's parent proxy's fetch, sys/parent.ts); default: fetch. */
  fetch?: typeof fetch;
  /** The kinds this daemon runs (`sbx agents` lists each one's cache). */
  kinds: readonly BackendKind[];
  policy: () => PolicyService;
  /** The host's CPU (every kind runs on it; the OS is the driver's: AgentPlace.os). */
  arch: AgentPlatform["arch"];
  /** The host's LLM credentials (which kind of login a placeholder must look like; never copied). */
  keys: () => KeySources;
  now?: () => number;
}

export interface AgentRunRequest extends Omit<CreateRequest, "name" | "ifExists"> {
  agent: AgentName;
  name?: string;
  version?: string;
  /** Add the agent's flags that let it work without asking before each step (default). */
  unattended: boolean;
}

export interface AgentRunResult {
  sandbox: Sandbox;
  created: boolean;
  version: string;
  /** The command the session runs (the caller's arguments go after it). */
  argv: string[];
}

/** Where, under the sandbox's $HOME, the setup records the plan it last applied per agent. */
export const SETUP_STAMP_DIR = ".config/sbx/agent-setup";

/**
 * The setup's plan as it may go in: through the copy-in door (every field scanned; a setup entry that lost a field to
 * it is left out whole, never written half).
 */
export function scannedSetupPlan(door: CopyIn, agent: AgentName, sandbox: string, workdir: string, extra: readonly AgentSetup[] = []): Scanned<AgentSetupPlan> {
  const plan = door.json(`sbx run ${agent}'s first-run files`, agentSetupPlan(agent, sandbox, workdir, extra), "strict");
  const whole = (s: Partial<AgentSetup>) => typeof s.path === "string" && (s.kind === "file" || s.kind === "file-if-missing" ? typeof (s as { content?: unknown }).content === "string" : typeof (s as { values?: unknown }).values === "object");
  const instructions = plan.instructions && typeof plan.instructions.section === "string" ? plan.instructions : { path: AGENTS[agent].instructions, section: "" };
  return { instructions, setup: (plan.setup ?? []).filter(whole) } as unknown as Scanned<AgentSetupPlan>;
}

/** What `sbx run AGENT` runs inside: the setup shim on sbx's Bun (its plan through the copy-in door), then the launcher with the agent's flags. */
export function agentLaunchArgv(o: { agent: AgentName; sandbox: string; workdir: string; place: Pick<AgentPlace, "inside" | "bun" | "shims">; unattended: boolean; extra?: AgentSetup[]; door: CopyIn }): string[] {
  const a = AGENTS[o.agent];
  const launcher = `${o.place.inside}/bin/${a.binary}`;
  const plan = JSON.stringify(scannedSetupPlan(o.door, o.agent, o.sandbox, o.workdir, o.extra));
  const script = [
    'b=$1 s=$2 p=$3 l=$4 h=$5 st=$6; shift 6',
    `[ -x "$l" ] || { echo "sbx: this sandbox was made before sbx supplied agents (no $l); remove it with \\\`sbx rm ${o.sandbox}\\\` and run again" >&2; exit 69; }`,
    // The setup runs when its plan differs from the one last applied here (the stamp), so most starts cost no Bun.
    // Bun reads nothing from the repo it starts in (bunfig.toml, .env): the sandbox's files are its own, but sbx's setup is sbx's.
    'x=; [ -r "$HOME/$st" ] && read -r x < "$HOME/$st"',
    '[ "$x" = "$h" ] || "$b" --no-env-file --config=/dev/null "$s" "$p" "$h" "$st"',
    'exec "$l" "$@"',
  ].join("\n");
  return [
    "/bin/sh",
    "-c",
    script,
    "sbx-agent",
    o.place.bun,
    `${o.place.shims}/${AGENT_SETUP_SCRIPT}`,
    plan,
    launcher,
    createHash("sha256").update(plan).digest("hex").slice(0, 32),
    `${SETUP_STAMP_DIR}/${o.agent}`,
    ...(o.unattended ? a.unattended : []),
  ];
}

export class AgentService {
  private readonly caches = new Map<string, AgentCache>();
  constructor(private readonly d: AgentServiceDeps) {}

  private cacheOf(place: AgentPlace): AgentCache {
    let c = this.caches.get(place.cacheDir);
    if (!c) {
      c = new AgentCache({ dir: place.cacheDir, inside: place.inside, exec: this.d.exec, ...(this.d.registry ? { registry: this.d.registry } : {}), ...(this.d.fetch ? { fetch: this.d.fetch } : {}) });
      this.caches.set(place.cacheDir, c);
    }
    return c;
  }

  /** Where agents come from for a kind; a kind that has none refuses `sbx run AGENT` with what to do. */
  private async placeOf(kind: BackendKind, agent: AgentName, name: string): Promise<AgentPlace> {
    const place = (await this.d.sandboxes.driver(kind)).agentPlace?.() ?? null;
    if (place) return place;
    const a = AGENTS[agent];
    throw new SbxError("unavailable", `sbx run ${agent}: sbx supplies no agents to ${kind} sandboxes (yet)`, {
      hint: `Install ${a.title} in the sandbox yourself and run \`sbx exec ${name} -- ${a.binary}\`, or use a Docker sandbox.`,
    });
  }

  async run(req: AgentRunRequest): Promise<AgentRunResult> {
    const a = AGENTS[req.agent];
    const out = req.out ?? { log: () => undefined };
    // No login sbx can add: refused before anything is made, with the fix (an agent left to retry its refused requests
    // shows nothing for minutes).
    if (a.routes.every((r) => !credentialFor(r, this.d.keys()))) {
      const files = a.login.hostFiles.length ? ` or sign ${a.title} in on this machine (~/${a.login.hostFiles.join(", ~/")})` : "";
      throw new SbxError("unavailable", `no login for ${a.title} that sbx can add: the host has none of ${a.login.hostEnv.join(", ")}${files ? `, ${a.login.hostFiles.map((f) => `~/${f}`).join(", ")}` : ""}`, {
        hint: `Run \`sbx secret set ${a.login.hostEnv[0]}\`${files}; if your shell has the key, \`sbx secret import\` stores it. The daemon reads it at each request: no restart.`,
      });
    }
    trace("d agent run");
    const repo = await this.d.sandboxes.repoOf(req);
    const name = req.name ?? defaultAgentSandboxName(req.agent, basename(repo));
    if (req.backend !== undefined) await this.placeOf(req.backend, req.agent, name);
    // An existing sandbox is started as `sbx shell` starts it (no driver check, no create lock); anything else, or with
    // options only a new sandbox takes, goes through create, which says what is wrong.
    const known = this.d.store.findSandbox(repo, name);
    const plain = known !== null && !existsSync(sandboxLayout(sandboxDir(this.d.paths, repo, name)).creating) && req.backend === undefined && req.policy === undefined && Object.values(req.limits ?? {}).every((v) => v === undefined);
    const { sandbox, created } = plain ? { sandbox: await this.d.sandboxes.start(name, req), created: false } : await this.d.sandboxes.create({ ...req, name, repoFlag: req.repoFlag, ifExists: "reuse" });
    trace("d agent started");
    const place = await this.placeOf(sandbox.backend, req.agent, name);
    const inst = await this.cacheOf(place).ensure(req.agent, { os: place.os, arch: this.d.arch }, req.version, (l) => out.log(l));
    trace("d agent cached");
    if (agentsOf(sandbox.identity)[req.agent] !== inst.version) {
      // Said once per sandbox and version: a script's every run is not told again.
      if (inst.version !== "pip") out.log(`${a.title} ${inst.version}`);
      this.d.sandboxes.setIdentityField(sandbox, "agents", (cur) => ({ ...agentsOf({ agents: cur }), [req.agent]: inst.version }));
    }
    // What it needs beyond the LLM API (which the LLM proxy serves), for this sandbox only, the first time it runs
    // there (`sandbox` is the row from before this run): what the person takes off the list later stays off.
    // A sandbox with a policy level has what the level says instead: `balanced` has each agent it runs (read per
    // request), `locked` nothing, `open` everything public.
    if (agentsOf(sandbox.identity)[req.agent] === undefined && levelOf(sandbox.identity) === null) {
      const changed = this.d.policy().allow({ kind: "sandbox", sandbox }, PRESETS[a.preset], `sbx run ${req.agent}`);
      if (changed.some((c) => c.changed)) out.log(`allowed for ${name}: the ${a.preset} preset (${PRESETS[a.preset].join(", ")})`);
    }
    // The first-run files are copied in: through the door, with the host's secrets as they are now.
    const door = new CopyIn(hostSecretsByName(this.d.keys()), { home: this.d.keys().env.HOME ?? "/" });
    const argv = agentLaunchArgv({ agent: req.agent, sandbox: name, workdir: await this.d.sandboxes.sessionCwd(sandbox, sandbox.repo), place, unattended: req.unattended, extra: this.loginFiles(req.agent), door });
    trace("d agent argv");
    const said = findingLines(door.findings, door.count);
    if (said.length > 0) out.log(`note: sbx left out of ${req.agent}'s first-run files what held a secret: ${said.join("; ")}`);
    return { sandbox, created, version: inst.version, argv };
  }

  /** `sbx agents`: every agent, its cache, the sandboxes that ran it, and whether the host has a login for it. */
  async list(): Promise<AgentView[]> {
    const keys = this.d.keys();
    const caches: AgentCache[] = [];
    for (const k of this.d.kinds) {
      const place = (await this.d.sandboxes.driver(k).catch(() => null))?.agentPlace?.() ?? null;
      if (place) caches.push(this.cacheOf(place));
    }
    const rows = this.d.store.listSandboxes();
    return AGENT_NAMES.map((n) => {
      const a = AGENTS[n];
      const via = [...new Set(a.routes.map((r) => credentialFor(r, keys)?.source).filter((s): s is string => s !== undefined))];
      return {
        name: n,
        title: a.title,
        binary: a.binary,
        version: caches.map((c) => c.versions()[n]).find((v) => v !== undefined) ?? null,
        cached: [...new Set(caches.flatMap((c) => c.installed(n)))].sort(),
        install: a.install.kind,
        preset: a.preset,
        sandboxes: rows.flatMap((s) => {
          const v = agentsOf(s.identity)[n];
          return v === undefined ? [] : [{ name: s.name, repo: s.repo, version: v }];
        }),
        login: { ok: via.length > 0, via },
      };
    });
  }

  /** The placeholder login files an agent needs inside, shaped like the host's login (Codex: API key or ChatGPT). */
  private loginFiles(agent: AgentName): AgentSetup[] {
    const keys = this.d.keys();
    if (agent === "gemini") {
      // A key when the host has one; else the host's Google sign-in (a placeholder token inside, the real one added).
      const google = !credentialFor("google", keys) && hasGeminiSignIn(keys.geminiOauthFile);
      return [{ kind: "json-set", path: ".gemini/settings.json", values: { security: { auth: { selectedType: google ? "oauth-personal" : "gemini-api-key" } } } }];
    }
    if (agent !== "codex") return [];
    const cred = credentialFor("codex", keys);
    const login = readCodexLogin(keys.codexAuthFile);
    const kind = cred?.upstream === "chatgpt" && login?.kind === "chatgpt" ? { kind: "chatgpt" as const, plan: login.plan } : { kind: "apikey" as const };
    // The day, not the moment: Codex wants a recent refresh (it refreshes after 8 days), and the plan stays the same all day.
    const now = `${new Date((this.d.now ?? Date.now)()).toISOString().slice(0, 10)}T00:00:00Z`;
    return [{ kind: "file", path: ".codex/auth.json", content: codexPlaceholderAuth(kind, now) }];
  }
}

/** The agents a sandbox has run, by the version it last ran (kept in its identity). */
function agentsOf(identity: Record<string, unknown>): Record<string, string> {
  const v = identity.agents;
  if (!v || typeof v !== "object" || Array.isArray(v)) return {};
  return Object.fromEntries(Object.entries(v as Record<string, unknown>).filter((e): e is [string, string] => typeof e[1] === "string"));
}

/** The npm registry agents come from: the host's npm setting when it has one (a mirror), else npm's own. */
export function agentRegistry(env: Env): string | undefined {
  const r = env.raw.SBX_NPM_REGISTRY ?? env.raw.npm_config_registry ?? env.raw.NPM_CONFIG_REGISTRY;
  return r && /^https?:\/\//.test(r) ? r : undefined;
}

/** The CPU a Docker sandbox runs on: the host's (no emulation). */
export function hostAgentArch(arch: string = process.arch): AgentPlatform["arch"] {
  if (arch !== "x64" && arch !== "arm64") throw new SbxError("unavailable", `sbx supplies agents for x64 and arm64 CPUs; this host is ${arch}`);
  return arch;
}

/** The daemon's agent service: each kind's cache where its driver says (Docker: paths.agentsDir, mounted). */
export function agentService(sandboxes: SandboxService, store: Store, policy: PolicyService, paths: Paths, exec: Exec, env: Env, kinds: readonly BackendKind[], download?: typeof fetch): AgentService {
  const registry = agentRegistry(env);
  return new AgentService({
    sandboxes,
    store,
    paths,
    exec,
    kinds,
    ...(registry ? { registry } : {}),
    ...(download ? { fetch: download } : {}),
    policy: () => policy,
    keys: () => hostKeySources(env, paths.configDir),
    // Resolved when a run needs it: an unsupported CPU refuses `sbx run AGENT`, not the daemon's start.
    get arch() {
      return hostAgentArch();
    },
  });
}
