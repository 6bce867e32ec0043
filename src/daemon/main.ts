// The daemon's composition root: env → paths → exec → store → drivers → guards → servers. Drivers and guards are registered here and nowhere else.
import { readFileSync, statSync } from "node:fs";
import { rootCertificates } from "node:tls";
import type { IncomingMessage, ServerResponse } from "node:http";
import { join } from "node:path";
import { subjectText, bridgeSettingsOf } from "../core/bridge-settings";
import { defaultRuntime } from "../drivers/docker/docker";
import { LinuxUserBackend } from "../drivers/linux-user/backend";
import { probeLinuxUser } from "../drivers/linux-user/probe";
import { macosBackendHere } from "../drivers/macos/backend";
import type { BackendKind } from "../core/schemas";
import { DockerDriver } from "../drivers/docker/driver";
import type { Driver } from "../drivers/driver";
import { UserAccountDriver } from "../drivers/user-account";
import { PolicyService } from "../policy/service";
import { createLlmHandler, gatewayUpstreams, PROVIDERS, type LlmProxy } from "../llm/handler";
import { hostKeySources, type Provider } from "../llm/keys";
import { CodexRefresher } from "../llm/codex-login";
import { GeminiRefresher } from "../llm/gemini-login";
import { ClaudeKeychain } from "../llm/claude-keychain";
import { LlmBudgets } from "../llm/budget";
import { priceReader } from "../sys/config-file";
import { openStoredValues, type StoredValues } from "../secrets/stored";
import { BoundSecrets } from "../secrets/bound";
import { CompanyTrust, hostToolsTls } from "../tls/host-trust";
import { expandHome, loadConfig } from "../sys/config-file";
import { EgressRules } from "../store/egress-rules";
import { SecretResolver } from "../secrets/sources";
import { SecretBindings } from "../store/secret-bindings";
import { Authority } from "../tls/authority";
import { hostUserExec } from "../sys/as-user";
import { Store } from "../store/store";
import type { Env } from "../sys/env";
import { createExec, type Exec } from "../sys/exec";
import { pathsFor, type Paths } from "../sys/paths";
import { createEventBus, type EventBus } from "../events/feed";
import { VERSION } from "../version";
import { bridgeGuard } from "../guards/bridge";
import { sshSettingsOf } from "../bridge/gate-git";
import { createEgressDesk, DESK_PATH } from "../policy/egress-desk";
import { pairApprovedNames } from "../policy/private-pairing";
import { loopbackGuard } from "../guards/loopback";
import { proxyGuard } from "../guards/proxy";
import { systemResolver, type Resolver } from "../proxy/egress-proxy";
import type { MacosBackend } from "../drivers/macos/backend";
import { defaultKind } from "../core/backend-kind";
import { publishedOf } from "../core/egress";
import { rawBlockFeed } from "../events/raw-blocks";
import { notificationArgv } from "./notify";
import { driverRefSyncGuard } from "./driver-guards";
import { startDaemon } from "./daemon";
import { ExecAgents } from "./exec-agents";
import { startHosted } from "./hosted";
import type { GuardContext, SandboxGuard } from "../guards/guards";
import { createLogger, type LogLevel, type Logger } from "../sys/log";
import type { HostUser } from "../core/spec";
import { hostUserOf, userDirectory } from "../sys/host-user";
import type { Sandbox } from "../core/schemas";
import { baseIdentity } from "../drivers/identity";
import { hostParentSettings, parentFetch, ParentRouter } from "../sys/parent";
import { leaseBuildProxy } from "../sys/build-relay";
import { ParentRelay } from "../sys/parent-relay";

export interface Components {
  /** One driver per kind this host runs: the sandbox service's one table. */
  drivers: Partial<Record<BackendKind, Driver>>;
  /** The kind of a new sandbox when the caller names none (default: docker, or macos on a Mac). */
  defaultKind?: BackendKind;
  /** Started in this order for every sandbox, stopped in reverse; a sandbox runs only when all are up. */
  guards: SandboxGuard[];
  /** The in-sandbox exec agents (the daemon makes its own when absent); guards may run commands through them. */
  agents?: ExecAgents;
  /** The sandbox whose guest account has a uid, or null (no kind with guest accounts here, or no guest's). */
  guestOf?: (uid: number) => Promise<string | null>;
  /** The secrets bound to hosts (secrets/bound.ts): their proxies' side is in the proxy guard; this, a session's. */
  bound?: BoundSecrets;
  /** How the daemon downloads (agents): through the host's parent proxy where it applies. */
  download?: typeof fetch;
  /** Each sandbox's LLM spend and budget (the LLM handler counts into it; the dashboard shows it). */
  budgets?: LlmBudgets;
}

/** The user-account backends this host can run (detected, or a test's). */
export interface UserBackends {
  linuxUser?: LinuxUserBackend;
  macos?: MacosBackend;
}

export interface ComponentDeps {
  env: Env;
  paths: Paths;
  exec: Exec;
  log: Logger;
  store: Store;
  /** The live feed the dashboard, chat bot and notifier listen to; guards publish their decisions on it. */
  events: EventBus;
}

/**
 * TEST SEAM, never set in production: a JSON object of LLM provider base URLs ({"anthropic":"http://127.0.0.1:PORT"})
 * that replaces the real providers, so end-to-end tests can point the key proxy at a fake upstream on loopback.
 * The daemon logs a warning when it is set. Only the daemon's own environment can set it, never a sandbox.
 */
export const TEST_LLM_UPSTREAMS_VAR = "SBX_TEST_ONLY_LLM_UPSTREAMS";

/** Parses the test seam; anything but a JSON object of http(s) URLs for known providers is refused (fail closed). */
export function testLlmUpstreams(raw: string | undefined): Partial<Record<Provider | "chatgpt" | "openai-auth" | "google-auth", string>> | undefined {
  if (raw === undefined || raw === "") return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error(`${TEST_LLM_UPSTREAMS_VAR} is not JSON`);
  }
  const out: Partial<Record<Provider | "chatgpt" | "openai-auth" | "google-auth", string>> = {};
  for (const [k, v] of Object.entries(parsed as Record<string, unknown>)) {
    if (![...Object.keys(PROVIDERS), "chatgpt", "openai-auth", "google-auth"].includes(k) || typeof v !== "string" || !/^https?:\/\//.test(v)) {
      throw new Error(`${TEST_LLM_UPSTREAMS_VAR}: bad entry ${k}`);
    }
    out[k as Provider] = v;
  }
  return out;
}

/**
 * TEST SEAM, never set in production: a JSON object of names under the reserved `.test` domain (RFC 2606) and the
 * addresses the proxy's lookup gives them ({"site.test":"127.0.0.1"}), so end-to-end tests can reach loopback sites by
 * name (the transparent path's names) without touching the host's resolver. Every other name goes to the system
 * resolver as always; a name outside `.test` or an entry that is not an IPv4 address refuses the whole seam.
 */
export const TEST_RESOLVE_VAR = "SBX_TEST_ONLY_RESOLVE";

/** The trust for upstreams of terminated connections: the runtime's roots and an extra CA file, when one is named. */
export function upstreamTrust(extraFile: string | undefined): string | undefined {
  if (!extraFile) return undefined;
  try {
    // Read again only when the file changed: this is asked for each request to a terminated host.
    const at = statSync(extraFile).mtimeMs;
    if (trustKept?.file !== extraFile || trustKept.at !== at) trustKept = { file: extraFile, at, pem: `${rootCertificates.join("\n")}\n${readFileSync(extraFile, "utf8")}` };
    return trustKept.pem;
  } catch {
    return undefined; // unreadable: the roots alone (Bun said so at start)
  }
}
let trustKept: { file: string; at: number; pem: string } | null = null;

/** The upstream trust with a company's CAs added (the runtime's roots first when nothing else was). */
function withCompany(base: string | undefined, company: string): string | undefined {
  if (company === "") return base;
  return `${base ?? rootCertificates.join("\n")}\n${company}`;
}

export function testResolver(raw: string | undefined): Resolver | undefined {
  if (raw === undefined || raw === "") return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error(`${TEST_RESOLVE_VAR} is not JSON`);
  }
  const table = new Map<string, string>();
  for (const [k, v] of Object.entries(parsed as Record<string, unknown>)) {
    if (!/^[a-z0-9.-]+\.test$/.test(k) || typeof v !== "string" || !/^\d{1,3}(\.\d{1,3}){3}$/.test(v)) throw new Error(`${TEST_RESOLVE_VAR}: bad entry ${k}`);
    table.set(k, v);
  }
  return async (host) => {
    const a = table.get(host);
    return a === undefined ? systemResolver(host) : [a];
  };
}

/**
 * The user-account backends this host can run: linux-user when the daemon is root on Linux and the tools are there
 * (`probeLinuxUser`), macos on a Mac for the person the daemon runs as (its root work goes through the sudo helper that
 * `sbx service install` set up for them; never in a root daemon: host-user.ts `macosPersonForRoot` says why).
 * runs: id -u; which nft useradd setfacl getfacl setpriv pkill dmesg (Linux)
 */
export async function detectUserBackends(d: ComponentDeps, host: HostUser): Promise<UserBackends> {
  const out: UserBackends = {};
  if (d.env.platform === "linux") {
    const probe = await probeLinuxUser(d.exec);
    if (!probe.ok) {
      d.log.info("linux-user backend not available", { missing: probe.missing.join("; ") });
      return out;
    }
    let runtime: { bun: string; shims: string } | undefined;
    try {
      runtime = defaultRuntime();
    } catch (e) {
      d.log.warn("linux-user sandboxes get no shims: sbx is not running on Bun", { err: e });
    }
    out.linuxUser = new LinuxUserBackend({ exec: d.exec, runtimeDir: d.paths.runtimeDir, ...(runtime ? { runtime } : {}), warn: (m) => d.log.warn(m) });
  } else if (d.env.platform === "darwin") {
    if (d.env.uid === 0) {
      d.log.warn("no macOS sandboxes in a daemon that runs as root: run `sbx daemon` (or `sbx service install`) as the person they belong to");
      return out;
    }
    out.macos = macosBackendHere({ exec: d.exec, hostUser: host.name, runtimeDir: d.paths.runtimeDir });
  }
  return out;
}

/**
 * The host's parent proxy (the config file's `proxy`, else the daemon's environment), logged as people see it (never
 * its credentials): the router every outbound path asks, and the relay that lends it to the bridge's git and gh.
 */
export function parentOf(d: Pick<ComponentDeps, "paths" | "env" | "log">, secret: (name: string) => string | null): { router: ParentRouter; relay: ParentRelay } | null {
  // A config that cannot be read: sandboxes are refused their start by the same error (sbx create reads the file); the
  // daemon still serves the rest.
  const p = hostParentSettings(d.paths, d.env, (e) => d.log.warn("the config file cannot be read, so its proxy is not used", { err: e.message }));
  for (const problem of p.problems) d.log.warn("a parent proxy setting cannot be used", { problem });
  if (p.settings === null) return null;
  const s = p.settings;
  d.log.info("outbound connections go through the parent proxy", { from: s.source, https: s.https?.shown ?? "none", http: s.http?.shown ?? "none", noProxy: s.noProxy });
  const router = new ParentRouter(s, secret);
  return { router, relay: new ParentRelay(router) };
}

/**
 * The production registry: each driver and each per-sandbox service is added here, once.
 *   drivers:  docker (Linux); linux-user (Linux, root, tools present); macos (darwin).
 *   guards:   proxy (egress + LLM keys), loopback (a guest's 127.0.0.1:<port> → proxy, for kinds whose proxy port is
 *             on the host's loopback), bridge (git/gh), ref sync (each driver's plan).
 *   (each driver's own watchers, Driver.watch, are started by the daemon: the blocked-raw audits, the pf watchdog.)
 * A sandbox of a kind that is not registered stays fenced (the service's reconcile). `users` replaces detection (tests).
 */
export async function productionComponents(d: ComponentDeps, users?: UserBackends): Promise<Components> {
  // One driver per kind this host runs: the sandbox service's table, the only place kinds are told apart.
  const drivers: Partial<Record<BackendKind, Driver>> = {};
  // Image builds get the parent proxy (made below; leased at each build) as Docker's predefined proxy args: a parent
  // that wants a login or is on loopback through a relay on the engine's bridge gateway for that build alone.
  if (d.env.platform === "linux") drivers.docker = new DockerDriver({ exec: d.exec, env: d.env, paths: d.paths, buildProxy: (gateway) => leaseBuildProxy(parent?.router ?? null, gateway) });
  // The person every user-account sandbox of this daemon belongs to (sudo's caller for a root daemon started by sudo).
  const host = await hostUserOf(d.env, userDirectory(d.exec, d.env.platform));
  const ub = users ?? (await detectUserBackends(d, host));
  for (const b of [ub.linuxUser, ub.macos]) {
    if (!b) continue;
    drivers[b.kind] = new UserAccountDriver({ exec: d.exec, env: d.env, paths: d.paths, backend: b, hostUser: host });
  }
  // sbx's stored secrets, read as the person from where they keep them (their keychain or keyring, else sbx's file),
  // held in memory and read again when `sbx secret set`/`rm` changes them: every reader below asks this.
  const asPerson = hostUserExec(d.exec, host, d.env.uid);
  const stored = await openStoredValues(
    {
      exec: asPerson,
      platform: d.env.platform,
      env: d.env.raw,
      configDir: d.paths.configDir,
      home: host.home,
      uid: host.uid,
      ...(d.env.platform === "darwin" && d.env.uid !== host.uid ? { keychainFile: join(host.home, "Library", "Keychains", "login.keychain-db") } : {}),
    },
    (m, f) => d.log.warn(m, f),
  );
  // The host's parent proxy: the egress proxy, the LLM proxy, the bridge's git and gh and the agents' downloads go out
  // through it where it applies; its credentials are a stored secret read at each connection.
  const parent = parentOf(d, (name) => stored.all()[name] ?? null);
  const secrets = () => {
    const fromEnv: Record<string, string> = {};
    for (const k of ["GH_TOKEN", "GITHUB_TOKEN"]) if (d.env.raw[k]) fromEnv[k] = d.env.raw[k]!;
    return { ...fromEnv, ...stored.all() };
  };
  // Secrets bound to hosts (sbx secret set NAME --host …): values from sbx's stored secrets or their source, read as the
  // person (a command they wrote runs as them, never as a root daemon), certificates from sbx's CA, made on first need.
  const egressRules = new EgressRules(d.store);
  // A company's CAs (the config's `trust`): every session trusts them, and terminated upstreams are verified with them.
  const company = new CompanyTrust({
    trust: () => {
      const t = loadConfig(d.paths, d.env).trust;
      return t === "host" || t === undefined ? t : t.map((f) => expandHome(f, d.env.vars.HOME));
    },
    platform: d.env.platform,
    env: d.env.raw,
    exec: d.exec,
    guard: { forbidden: [d.paths.sandboxRoot, d.paths.runtimeDir, d.paths.stateDir], uid: host.uid },
    log: (m, f) => d.log.warn(m, f),
    stamp: () => {
      try {
        return String(statSync(d.paths.configFile).mtimeMs);
      } catch {
        return "none";
      }
    },
  });
  // Read now, so the first session and the first bridge call already have them.
  void company.current().catch(() => undefined);
  const bound = new BoundSecrets({
    bindings: new SecretBindings(d.store),
    resolver: new SecretResolver({ vault: stored.asVault(), exec: asPerson }),
    authority: () => Authority.open(d.paths.stateDir),
    // The upstreams are verified against the runtime's roots, plus the CAs the daemon's environment adds the standard
    // way (NODE_EXTRA_CA_CERTS: a private CA in front of a service), read when a connection is made.
    upstreamCa: () => withCompany(upstreamTrust(d.env.raw.NODE_EXTRA_CA_CERTS), company.pemNow()),
    terminatesFor: (id) => egressRules.anyFor(id),
    companyCas: () => company.current(),
    published: (id) => publishedOf(d.store.getSandbox(id)?.identity ?? {}),
    log: (m, f) => d.log.warn(m, f),
  });
  const seam = testLlmUpstreams(d.env.raw[TEST_LLM_UPSTREAMS_VAR]);
  if (seam) d.log.warn("LLM upstreams replaced by the test seam", { var: TEST_LLM_UPSTREAMS_VAR, upstreams: Object.keys(seam).join(",") });
  // The host's own gateway (ANTHROPIC_BASE_URL, OPENAI_BASE_URL, GOOGLE_GEMINI_BASE_URL) is where sandboxes' requests go too.
  const gateways = gatewayUpstreams(d.env.raw);
  if (Object.keys(gateways).length > 0) d.log.info("LLM requests go to the host's gateways", gateways);
  const upstreams = seam ?? (Object.keys(gateways).length > 0 ? gateways : undefined);
  // On a Mac, Claude Code keeps its login in the Keychain: read through the executor, a minute at a time.
  const keychain = d.env.platform === "darwin" ? new ClaudeKeychain(d.exec, host.name) : undefined;
  const keys = () => hostKeySources(d.env, d.paths.configDir, keychain);
  // One for the daemon: every sandbox's Codex shares the host's one sign-in, refreshed once when it is due.
  const outbound = parent ? parentFetch(parent.router) : undefined;
  const codex = new CodexRefresher({ file: keys().codexAuthFile!, ...(seam?.["openai-auth"] ? { tokenUrl: seam["openai-auth"] } : {}), ...(outbound ? { fetch: outbound } : {}) });
  // Likewise Gemini CLI's Google sign-in.
  const gemini = new GeminiRefresher({ file: keys().geminiOauthFile!, ...(seam?.["google-auth"] ? { tokenUrl: seam["google-auth"] } : {}), ...(outbound ? { fetch: outbound } : {}) });
  // The LLM key proxy answers the proxy's origin-form requests (/llm/<provider>/…), which is where the sandbox's
  // base URLs point (through the forwarder or the loopback port); keys are read per request, so rotation needs no restart.
  // /sbx/egress… is the sandbox's own egress desk: its policy, what it was refused, and asking the user for a host.
  const publish = d.events.publish;
  // Every model call is counted per sandbox, priced at the table in force, and refused at the sandbox's budget.
  const budgets = new LlmBudgets({ store: d.store, prices: priceReader(d.paths, d.env, (m, f) => d.log.warn(m, f)), publish, warn: (m, f) => d.log.warn(m, f) });
  const resolve = testResolver(d.env.raw[TEST_RESOLVE_VAR]);
  if (resolve) d.log.warn("name lookups of .test names replaced by the test seam", { var: TEST_RESOLVE_VAR });
  // Each sandbox's LLM key proxy (its pools of connections to the providers, through the parent where it applies, and
  // its budget): the same one answers its proxy's forwarded routes and Codex's token refresh on the origin handler.
  const llms = new WeakMap<GuardContext, LlmProxy>();
  const llmOf = (ctx: GuardContext): LlmProxy => {
    let llm = llms.get(ctx);
    if (!llm) {
      llm = createLlmHandler({
        ...(parent ? { parent: parent.router } : {}),
        keys,
        codex,
        gemini,
        ...(keychain ? { claudeKeychain: keychain } : {}),
        ...(upstreams ? { upstreams } : {}),
        budget: budgets.forSandbox({ id: ctx.sandbox.id, name: ctx.sandbox.name }),
        onEvent: (e) => ctx.audit("llm.request", { provider: e.provider, method: e.method, path: e.path, status: e.status, credential: e.credential ?? null, ms: e.durationMs, ...(e.usage ? { usage: e.usage } : {}) }),
      });
      llms.set(ctx, llm);
    }
    return llm;
  };
  const originHandler = (ctx: GuardContext) => {
    const llm = llmOf(ctx);
    const desk = createEgressDesk({ store: d.store, sandbox: { id: ctx.sandbox.id, name: ctx.sandbox.name }, publish });
    return (req: IncomingMessage, res: ServerResponse) => {
      const u = req.url ?? "";
      if (u === DESK_PATH || u.startsWith(`${DESK_PATH}/`) || u.startsWith(`${DESK_PATH}?`)) void desk(req, res);
      else llm.local(req, res);
    };
  };
  // Where the bridge works and with which git: each kind's driver says (a guest's own clone, or the container's).
  const placement = (ctx: GuardContext) => ctx.driver.bridgePlace(ctx.spec, ctx.exec);
  // Whose guest a uid is, as the drivers of kinds with guest accounts say (a port a sandbox holds is taken back from
  // another sandbox's guest, never from anything else).
  const guestOf = async (uid: number): Promise<string | null> => {
    for (const driver of Object.values(drivers)) {
      const id = (await driver?.guestIdOf?.(uid)) ?? null;
      if (id !== null) return d.store.listSandboxes().find((r) => baseIdentity(r)?.id === id)?.name ?? `${id} (of another sbx state)`;
    }
    return null;
  };
  const guards: SandboxGuard[] = [
    proxyGuard({ originHandler, originForwarder: llmOf, publish, guestOf, secrets: (ctx) => bound.forSandbox(ctx.sandbox.id), ...(resolve ? { resolve } : {}), ...(parent ? { parent: parent.router } : {}) }),
    loopbackGuard({ guestOf }),
    bridgeGuard({ secrets, path: d.env.vars.PATH, tlsEnv: hostToolsTls({ env: d.env.raw, company: () => company.pemNow(), file: join(d.paths.stateDir, "tls", "host-tools-roots.pem") }), ssh: sshSettingsOf(d.env.raw), ...(parent ? { parent: parent.relay } : {}), settingsOf: (id) => bridgeSettingsOf(d.store.getSandbox(id)?.identity ?? {}), ask: (id, subject, reason) => {
        const a = d.store.recordPending(id, subjectText(subject), 0, reason, "bridge");
        return a === null ? null : { id: a.id, count: a.count };
      }, publish, placement }),
  ];
  const agents = new ExecAgents();
  guards.push(driverRefSyncGuard(agents));
  return { drivers, defaultKind: defaultKind(d.env.platform), guards, agents, guestOf, bound, budgets, ...(outbound ? { download: outbound } : {}) };
}

export interface RunOptions {
  env: Env;
  logLevel?: LogLevel;
  /** Where log lines go (stderr by default). */
  write?: (line: string) => void;
  /** Replaces the production registry (test entry scripts only). */
  components?: (deps: ComponentDeps) => Components | Promise<Components>;
  exec?: Exec;
  /** Desktop notifications of blocked requests (default on; the test entry turns them off). */
  notifications?: boolean;
}

/** Runs the daemon in the foreground until SIGTERM or SIGINT; returns the exit code. */
export async function runDaemonForeground(opts: RunOptions): Promise<number> {
  const { env } = opts;
  const paths = pathsFor(env);
  const exec = opts.exec ?? createExec(env.raw);
  const log = createLogger(opts.write ?? ((l) => void process.stderr.write(l)), opts.logLevel ?? "info");
  // Opened before the lock is taken: SQLite is safe across processes, and the components need it.
  const store = new Store(paths.dbFile);
  const events = createEventBus((err) => log.warn("feed listener failed", { err }));
  let comps: Components;
  try {
    comps = await (opts.components ?? productionComponents)({ env, paths, exec, log, store, events });
  } catch (e) {
    store.close();
    throw e;
  }
  let daemon;
  try {
    const policy = new PolicyService({ store, publish: (e) => events.publish(e) });
    // A name approved by a person that resolves to a private address is paired with it at once (one approval).
    pairApprovedNames({ subscribe: (fn) => events.subscribe(fn), policy, store, resolve: testResolver(env.raw[TEST_RESOLVE_VAR]) ?? systemResolver, log: (m, f) => log.warn(m, f) });
    daemon = await startDaemon({
      env,
      paths,
      exec,
      log,
      store,
      version: VERSION,
      drivers: comps.drivers,
      defaultKind: comps.defaultKind ?? defaultKind(env.platform),
      guards: comps.guards,
      ...(comps.agents ? { agents: comps.agents } : {}),
      ...(comps.guestOf ? { guestOf: comps.guestOf } : {}),
      ...(comps.bound ? { sessionSecrets: { session: (id: number) => comps.bound!.sessionSecrets(id) } } : {}),
      ...(comps.download ? { download: comps.download } : {}),
      policy,
      // What the drivers' watchers say reaches the live feed (blocked raw connections) and the person's desktop.
      watchers: {
        blocked: rawBlockFeed(store, (e) => events.publish(e)),
        notify: (n) => {
          const argv = notificationArgv(env.platform, n);
          if (argv) void exec.run(argv, { check: false }).catch(() => {});
        },
      },
      hosted: (st, stateOf) =>
        startHosted({
          store: st,
          stateOf,
          ...(comps.budgets ? { spendOf: (sb: Sandbox) => comps.budgets!.view(sb) } : {}),
          events,
          log,
          exec,
          configDir: paths.configDir,
          dashboardState: join(paths.stateDir, "dashboard.json"),
          platform: env.platform,
          // The chat bot, the webhook and Slack go out as the daemon's downloads do: through the parent proxy.
          ...(comps.download ? { fetch: comps.download } : {}),
          ...(opts.notifications === false ? { notifications: false } : {}),
        }),
    });
  } catch (e) {
    store.close();
    throw e;
  }
  const onSignal = (sig: NodeJS.Signals) => void daemon.stop(sig);
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  process.on("SIGHUP", onSignal);
  try {
    await daemon.reconciled.catch((e) => log.error("reconcile failed", { err: e }));
    await daemon.stopped;
  } finally {
    store.close();
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
    process.off("SIGHUP", onSignal);
  }
  return 0;
}
