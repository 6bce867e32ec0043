// The control socket's wire shapes (zod): every request and response the daemon serves, shared with src/client.
// whole: every wire shape of the control socket in one file, the contract the daemon and src/client share (issue 41 tipped it over 600).
import { z } from "zod";
import { AGENT_NAMES, VERSION_RE } from "../core/agents";
import { BRIDGE_ALLOWS, BridgeSettingsSchema } from "../core/bridge-settings";
import { BindingSpecSchema } from "../core/bound-secret-schema";
import { RuleSpecSchema } from "../core/rules-schema";
import { ERROR_CODES } from "../core/errors";
import { BackendKindSchema, SandboxStateSchema } from "../core/schemas";
import { SERVICE_NAME, ServiceEnvSchema, ServicesSchema } from "../core/services";
import { LEVEL_NAMES, type LevelName } from "../core/levels";
import { FOR_MAX_MS } from "../core/allow-term";

export const API_VERSION = 1;

export const ErrorCodeSchema = z.enum(ERROR_CODES);

/** The one error shape over the socket. */
export const ErrorBodySchema = z.object({ error: ErrorCodeSchema, message: z.string(), hint: z.string(), data: z.record(z.string(), z.unknown()).optional() });
export type ErrorBody = z.infer<typeof ErrorBodySchema>;

export const HealthSchema = z.object({
  ok: z.literal(true),
  api: z.literal(API_VERSION),
  pid: z.number().int(),
  version: z.string(),
  startedAt: z.number(),
  socket: z.string(),
});
export type Health = z.infer<typeof HealthSchema>;

export const GuardStatusSchema = z.object({ name: z.string(), ok: z.boolean(), detail: z.string() });
export type GuardStatus = z.infer<typeof GuardStatusSchema>;

export const PhaseViewSchema = z.enum(["running", "stopped", "absent", "unknown"]);
export const CreatingSchema = z.enum(["in-progress", "interrupted"]);

export const SandboxViewSchema = z.object({
  id: z.number().int(),
  sid: z.string(),
  name: z.string(),
  repo: z.string(),
  backend: BackendKindSchema,
  state: SandboxStateSchema,
  phase: PhaseViewSchema,
  /** True only when every guard is up: the only state in which the daemon runs anything in it. */
  guarded: z.boolean(),
  guards: z.array(GuardStatusSchema),
  error: z.string().optional(),
  /** Its create is under way or was interrupted (absent from older daemons). */
  creating: CreatingSchema.optional(),
  /** Its services (Docker), as the last look at the engine found them: a crashed one shows here. */
  services: z.array(z.object({ name: z.string(), state: z.string(), health: z.string(), exitCode: z.number().int() })).optional(),
});
export type SandboxView = z.infer<typeof SandboxViewSchema>;

export const SandboxListSchema = z.object({ sandboxes: z.array(SandboxViewSchema) });

/** The Zulip bot as the daemon runs it: configured (chat.json exists), connected (event queue registered, last call fine). */
export const ChatStatusSchema = z.object({
  configured: z.boolean(),
  connected: z.boolean(),
  provider: z.string().optional(),
  site: z.string().optional(),
  stream: z.string().optional(),
  error: z.string().optional(),
});
export type ChatStatus = z.infer<typeof ChatStatusSchema>;

/** One outgoing channel (the webhook, Slack): where it posts (never a secret or a URL's query) and how its deliveries went. */
const ChannelStateSchema = z.object({
  target: z.string(),
  queued: z.number().int(),
  delivered: z.number().int(),
  failed: z.number().int(),
  dropped: z.number().int(),
  lastError: z.string().optional(),
  lastErrorAt: z.number().optional(),
  lastOkAt: z.number().optional(),
});

/** The webhook, Slack and the listener their answers come back to (approvals.json), as the daemon runs them. */
export const ApprovalChannelsSchema = z.object({
  configured: z.boolean(),
  error: z.string().optional(),
  listener: z.object({ origin: z.string(), publicUrl: z.string().optional(), loopbackOnly: z.boolean() }).nullable().optional(),
  listenerError: z.string().optional(),
  webhook: ChannelStateSchema.optional(),
  slack: ChannelStateSchema.optional(),
});
export type ApprovalChannels = z.infer<typeof ApprovalChannelsSchema>;

export const StatusSchema = z.object({
  daemon: HealthSchema,
  backends: z.array(z.string()),
  guards: z.array(z.string()),
  sandboxes: z.array(SandboxViewSchema),
  sessions: z.number().int(),
  /** The dashboard's origin, never its token (optional: older daemons do not send it). */
  ui: z.object({ origin: z.string() }).nullable().optional(),
  chat: ChatStatusSchema.optional(),
  approvals: ApprovalChannelsSchema.optional(),
});
export type Status = z.infer<typeof StatusSchema>;

const nameSchema = z.string().regex(/^[a-z0-9][a-z0-9-]*$/, "a sandbox name: lowercase letters, digits and '-'").max(63);

const intParam = z.coerce.number().int().nonnegative();

export const LogsQuerySchema = z.object({
  sandbox: nameSchema.optional(),
  repo: z.string().startsWith("/").optional(),
  after: intParam.optional(),
  limit: intParam.max(10_000).optional(),
  /** Long-poll: wait up to this many ms for an entry after `after` when there is none yet. */
  waitMs: intParam.max(60_000).optional(),
  /** Only entries of this kind (egress, bridge, lifecycle, ref-sync, allowlist, daemon, llm, …). */
  kind: z.string().regex(/^[a-z][a-z-]{0,31}$/, "a kind: lowercase letters and '-'").optional(),
  /** Only entries at or after this time (epoch ms). */
  since: intParam.optional(),
});
export type LogsQuery = z.infer<typeof LogsQuerySchema>;

export const AuditViewSchema = z.object({
  id: z.number().int(),
  ts: z.number(),
  sandboxId: z.number().int().nullable(),
  sandbox: z.string().nullable(),
  kind: z.string(),
  action: z.string(),
  detail: z.record(z.string(), z.unknown()),
});
export type AuditView = z.infer<typeof AuditViewSchema>;

export const LogsSchema = z.object({ entries: z.array(AuditViewSchema), cursor: z.number().int() });

/** Terminal-related variables a client may pass into a session (DESIGN: "The environment a sandbox gets"). */
export const TERMINAL_ENV = /^(TERM|COLORTERM|FORCE_COLOR|NO_COLOR|LANG|LC_[A-Z_]+)$/;

export const SessionCreateSchema = z.object({
  name: nameSchema,
  repo: z.string().startsWith("/").optional(),
  argv: z.array(z.string()).default([]),
  /** The command as the person started it (`claude -p …`), for `sbx ps`: shown, never run; absent: argv. */
  command: z.array(z.string().max(4096)).max(256).optional(),
  cwd: z.string().startsWith("/"),
  cols: z.number().int().min(1).max(1000).default(80),
  rows: z.number().int().min(1).max(1000).default(24),
  env: z
    .record(z.string(), z.string())
    .default({})
    .refine((e) => Object.keys(e).every((k) => TERMINAL_ENV.test(k)), {
      message: "only terminal variables (TERM, COLORTERM, FORCE_COLOR, NO_COLOR, LANG, LC_*) may be passed into a sandbox",
    }),
});
export type SessionCreate = z.input<typeof SessionCreateSchema>;

export const SessionViewSchema = z.object({
  id: z.string(),
  sandbox: z.string(),
  repo: z.string(),
  /** What runs (for `sbx run AGENT`: sbx's launcher, then the agent). */
  argv: z.array(z.string()),
  /** The command as the person started it (`claude -p …`); argv when the client gave none. */
  command: z.array(z.string()),
  pid: z.number().int(),
  clients: z.number().int(),
  startedAt: z.number(),
  cols: z.number().int(),
  rows: z.number().int(),
  exitCode: z.number().int().nullable(),
});
export type SessionView = z.infer<typeof SessionViewSchema>;

export const SessionListSchema = z.object({ sessions: z.array(SessionViewSchema) });

export const AttachQuerySchema = z.object({ session: z.string().regex(/^[a-z0-9-]{4,64}$/) });

/** Text frames from a terminal client; binary frames are keystrokes. */
export const ClientFrameSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("resize"), cols: z.number().int().min(1).max(1000), rows: z.number().int().min(1).max(1000) }),
  z.object({ type: z.literal("detach") }),
]);
export type ClientFrame = z.infer<typeof ClientFrameSchema>;

/** Text frames to a terminal client; binary frames are the PTY's output. */
export const ServerFrameSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("attached"), session: z.string(), clients: z.number().int() }),
  z.object({ type: z.literal("exit"), code: z.number().int() }),
  z.object({ type: z.literal("error"), error: ErrorCodeSchema, message: z.string(), hint: z.string() }),
]);
export type ServerFrame = z.infer<typeof ServerFrameSchema>;

/** `sbx ui` asks for a single-use launch URL valid for ttlMs. */
export const UiLaunchRequestSchema = z.object({ ttlMs: z.number().int().min(1000).max(3_600_000).default(60_000) });

export const UiLaunchSchema = z.object({
  origin: z.string(),
  /** `<origin>?ticket=…`: secret until used; goes to the person's browser only. */
  url: z.string(),
  ticket: z.string(),
  expiresAt: z.number(),
});
export type UiLaunch = z.infer<typeof UiLaunchSchema>;

/** The ticket travels in the body, never in a path or query the daemon might log. */
export const UiTicketRequestSchema = z.object({ ticket: z.string().min(1).max(200) });
export const UiTicketStateSchema = z.object({ state: z.enum(["unused", "used", "expired", "unknown"]) });

// ── The sandbox service's verbs (/v1/lifecycle/*): the CLI's create, run, shell, stop, rm, prune and list ──

/** Where the caller is: the daemon finds the repo from cwd (and --repo), as the caller would. */
const WhereSchema = z.object({
  cwd: z.string().startsWith("/"),
  repoFlag: z.string().min(1).optional(),
  /** sudo's SUDO_UID when the CLI runs as root for someone: the repo is theirs (honoured only by a root daemon). */
  asUid: z.number().int().min(1).optional(),
});

/**
 * The head of POST /v1/sandboxes/exec (the body is a u32 BE length, this JSON, then the command's stdin bytes): start
 * the sandbox (the service's start, under its lock), then run argv through its exec agent. No terminal: interactive
 * sessions are the daemon's PTYs.
 */
export const SandboxExecSchema = WhereSchema.extend({
  name: nameSchema,
  /** The repo of cwd and --repo as the CLI found it without git (the daemon then runs none). */
  foundRepo: z.string().startsWith("/").optional(),
  argv: z.array(z.string().refine((s) => !s.includes("\0"), "no NUL bytes")).min(1),
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string()),
  stdin: z.boolean(),
  /** false: start it and answer how to run the command, not through the agent (its stdin is larger than a request body). */
  agent: z.boolean().default(true),
});

/**
 * The answer to POST /v1/sandboxes/exec when the command was not run through an agent: the started sandbox, where the
 * command runs inside, the start's notes, and whether the engine can run it (a container whose agent is not connected).
 */
export const ExecAnswerSchema = z.object({
  sandbox: SandboxViewSchema,
  cwd: z.string(),
  notes: z.array(z.string()),
  agent: z.literal(false),
  engine: z.boolean(),
});

/** `--memory`, `--cpus`, `--pids` as the person typed them (the service checks them against the machine). */
export const LimitsInputSchema = z
  .object({ memory: z.string().max(32).optional(), cpus: z.string().max(16).optional(), pids: z.string().max(16).optional(), llmBudget: z.string().max(40).optional() })
  .strict();

const SpendSummarySchema = z.object({
  calls: z.number().int(),
  estimatedCalls: z.number().int(),
  tokens: z.number(),
  usd: z.number(),
  unpricedTokens: z.number(),
  unpricedModels: z.array(z.string()),
});
/** A sandbox's LLM spend (core/llm-budget.ts `SpendView`): in its budget's period (today without one) and its whole life. */
export const SpendViewSchema = z.object({
  budget: z.string().nullable(),
  period: z.string(),
  spent: SpendSummarySchema,
  total: SpendSummarySchema,
  cap: z.object({ unit: z.enum(["usd", "tokens"]), amount: z.number(), spent: z.number(), over: z.boolean() }).optional(),
});

export const LimitsViewSchema = z.object({ memory: z.number().nullable(), cpus: z.number().nullable(), pids: z.number().nullable() });
export const LimitHitSchema = z.object({ limit: z.enum(["memory", "pids"]), count: z.number().int() });

export const LifecycleCreateSchema = WhereSchema.extend({
  name: nameSchema,
  backend: BackendKindSchema.optional(),
  rebuild: z.boolean().default(false),
  overlays: z.array(z.string().min(1)).max(64).default([]),
  claudeAuth: z.enum(["inject", "overlay"]).optional(),
  ifExists: z.enum(["error", "reuse"]).default("error"),
  /** A clone the CLI started ahead: `<cache>/sandbox-staging/<pid>-<random>` (checked: nothing else is taken). */
  staged: z.string().startsWith("/").optional(),
  /** The caller's $SHELL: the shell preference is the creator's, not the daemon's environment's. */
  shell: z.string().startsWith("/").max(4096).optional(),
  limits: LimitsInputSchema.default({}),
  exposeCredentials: z.boolean().default(false),
  withChanges: z.boolean().default(false),
  allowWeaker: z.boolean().default(false),
  /** `--no-transparent` (false); absent: the config's, else on. */
  transparent: z.boolean().optional(),
  /** `--policy LEVEL`; absent: the config's `policy`, else none (the built-in list). */
  policy: z.enum(LEVEL_NAMES as [LevelName, ...LevelName[]]).optional(),
  ports: z.array(z.string().min(1).max(64)).max(64).default([]),
  /** `--service`, `--service-env`, `--pull`: checked again here (core/services.ts). */
  services: ServicesSchema,
  serviceEnv: ServiceEnvSchema,
  pull: z.boolean().default(false),
  /** `--dockerfile`, `--context` (absolute), `--image` (a local image reference). */
  image: z
    .object({ dockerfile: z.string().startsWith("/").max(4096).optional(), context: z.string().startsWith("/").max(4096).optional(), image: z.string().min(1).max(255).optional() })
    .strict()
    .optional(),
});

/** `sbx run AGENT [NAME]`: the sandbox made if missing, the agent cached, its preset allowed; answers the command to run. */
export const LifecycleAgentSchema = LifecycleCreateSchema.omit({ name: true, ifExists: true, staged: true }).extend({
  agent: z.enum(AGENT_NAMES),
  name: nameSchema.optional(),
  version: z.string().regex(VERSION_RE).optional(),
  unattended: z.boolean().default(true),
});

/** `sbx agents`: what each agent is, which versions the host's cache holds, which sandboxes ran it, whether the host is logged in (never how). */
export const AgentViewSchema = z.object({
  name: z.enum(AGENT_NAMES),
  title: z.string(),
  binary: z.string(),
  /** The version the launcher runs; null when none is cached (or it is installed inside, as aider is). */
  version: z.string().nullable(),
  cached: z.array(z.string()),
  install: z.enum(["npm", "pip"]),
  preset: z.string(),
  sandboxes: z.array(z.object({ name: z.string(), repo: z.string(), version: z.string() })),
  /** Where the login the LLM proxy would add comes from: names only (an env var, sbx's secrets, a login file). */
  login: z.object({ ok: z.boolean(), via: z.array(z.string()) }),
});
export const AgentListSchema = z.object({ agents: z.array(AgentViewSchema) });
export type AgentView = z.infer<typeof AgentViewSchema>;

/** `sbx services NAME [logs SVC [--tail N] | restart SVC]`. */
export const LifecycleServicesSchema = WhereSchema.extend({
  name: nameSchema,
  action: z.enum(["list", "logs", "restart"]).default("list"),
  service: z.string().regex(SERVICE_NAME).optional(),
  tail: z.number().int().min(1).max(10_000).default(200),
});

/** One service of a sandbox, as `sbx services` and `sbx status` show it. */
export const ServiceViewSchema = z.object({ name: z.string(), image: z.string(), container: z.string(), state: z.string(), health: z.string(), exitCode: z.number().int() });

/** `sbx limits NAME [--memory …]`: shows them, or changes those given. */
export const LifecycleLimitsSchema = WhereSchema.extend({ name: nameSchema, set: LimitsInputSchema.default({}) });

/** `sbx bridge NAME [--allow X] [--protect B] [--allow-repo U] [--allow-push B] [--branch-prefix P] [--push-remote R] …`: shows the switches, or changes those given. */
export const LifecycleBridgeSchema = WhereSchema.extend({
  name: nameSchema,
  allow: z.array(z.enum(BRIDGE_ALLOWS)).max(16).default([]),
  disallow: z.array(z.enum(BRIDGE_ALLOWS)).max(16).default([]),
  protect: z.array(z.string().min(1).max(200)).max(64).default([]),
  unprotect: z.array(z.string().min(1).max(200)).max(64).default([]),
  addRepos: z.array(z.string().min(1).max(500)).max(64).default([]),
  dropRepos: z.array(z.string().min(1).max(500)).max(64).default([]),
  pushTo: z.array(z.string().min(1).max(200)).max(64).default([]),
  unpushTo: z.array(z.string().min(1).max(200)).max(64).default([]),
  /** "" puts the default (sbx/<name>/) back. */
  prefix: z.string().max(200).optional(),
  /** The repo's remote every push goes to (a fork); "" sends pushes where they name again. */
  pushRemote: z.string().max(100).optional(),
});

/** `sbx publish NAME [ENDPOINT…] [--remove ENDPOINT…]`: the host services (loopback address:port) it may reach. */
export const LifecyclePublishSchema = WhereSchema.extend({
  name: nameSchema,
  add: z.array(z.string().min(1).max(100)).max(64).default([]),
  remove: z.array(z.string().min(1).max(100)).max(64).default([]),
});

/** `sbx port NAME [SPEC…] [--rm PORT…]`: SPEC is PORT or HOST:PORT. */
export const LifecyclePortSchema = WhereSchema.extend({
  name: nameSchema,
  add: z.array(z.string().min(1).max(64)).max(64).default([]),
  remove: z.array(z.number().int().min(1).max(65535)).max(64).default([]),
});

const PortStateSchema = z.object({ port: z.number().int(), host: z.number().int(), bind: z.string().optional(), state: z.enum(["forwarding", "error", "stopped"]), error: z.string().optional() });

export const LifecycleNamedSchema = WhereSchema.extend({
  name: nameSchema,
  force: z.boolean().default(false),
  /** stop/rm: end sessions attached to the sandbox (each told why), or refuse while there are any (the CLI asks first). */
  ifSessions: z.enum(["end", "refuse"]).default("end"),
});

export const LifecycleSessionSchema = WhereSchema.extend({
  name: nameSchema,
  argv: z.array(z.string()),
  stdin: z.boolean(),
  /** The caller's terminal variables only. */
  env: z
    .record(z.string(), z.string())
    .default({})
    .refine((e) => Object.keys(e).every((k) => TERMINAL_ENV.test(k)), { message: "only terminal variables may be passed into a sandbox" }),
});

export const LifecyclePruneSchema = z.object({ dryRun: z.boolean().default(false) });
export const LifecycleListSchema = z.object({
  all: z.boolean().default(false),
  /** Only the sandboxes of the repo around this directory (and --repo), as `rm --all` and `stop --all` need. */
  here: WhereSchema.optional(),
});

export const CommitSchema = z.object({ sha: z.string(), subject: z.string() });

/** A stored sandbox as the service returns it. */
export const SandboxRowSchema = z.object({
  id: z.number().int(),
  name: z.string(),
  repo: z.string(),
  backend: BackendKindSchema,
  state: SandboxStateSchema,
  identity: z.record(z.string(), z.unknown()),
  createdAt: z.number(),
  updatedAt: z.number(),
  lastUsedAt: z.number().nullable(),
});

export const SandboxInfoSchema = z.object({
  name: z.string(),
  repo: z.string(),
  backend: BackendKindSchema,
  state: SandboxStateSchema,
  phase: PhaseViewSchema,
  creating: CreatingSchema.optional(),
  createdAt: z.number(),
  lastUsedAt: z.number().nullable(),
  unsynced: z.array(CommitSchema).nullable(),
  dir: z.string(),
  id: z.string(),
  /** Every guard up (the daemon's view). */
  guarded: z.boolean(),
  /** Why its guards are down, when they failed to come up (the daemon's view). */
  guardError: z.string().optional(),
  /** Why the phase is unknown, why a stopped sandbox stopped when sbx did not stop it, or that its create was interrupted. */
  reason: z.string().optional(),
  limits: LimitsViewSchema.optional(),
  /** The limits it ran into since it last started. */
  hits: z.array(LimitHitSchema).optional(),
  /** What the person should know of it, as said when it starts (its Dockerfile changed since its image, …). */
  notes: z.array(z.string()).optional(),
  /** Its LLM spend and budget. */
  llm: SpendViewSchema.optional(),
  /** Its policy level; null: none (the built-in list). Absent from older daemons. */
  level: z.enum(LEVEL_NAMES as [LevelName, ...LevelName[]]).nullable().optional(),
});
export type SandboxInfo = z.infer<typeof SandboxInfoSchema>;

/** What each verb answers with, once done. */
export const LifecycleResults = {
  create: z.object({ sandbox: SandboxRowSchema, created: z.boolean() }),
  agent: z.object({ sandbox: SandboxRowSchema, created: z.boolean(), version: z.string(), argv: z.array(z.string()) }),
  start: z.object({ sandbox: SandboxRowSchema, cwd: z.string() }),
  session: z.object({ argv: z.array(z.string()) }),
  stop: z.object({ changed: z.boolean(), sessions: z.number().int() }),
  rebuild: z.object({ image: z.string(), sessions: z.number().int() }),
  rm: z.object({ lost: z.array(CommitSchema), sessions: z.number().int() }),
  prune: z.object({ removed: z.array(z.string()), kept: z.array(z.string()) }),
  list: z.object({ sandboxes: z.array(SandboxInfoSchema) }),
  limits: z.object({
    name: z.string(),
    limits: LimitsViewSchema.nullable(),
    hits: z.array(LimitHitSchema).nullable(),
    applied: z.enum(["now", "next-start"]).optional(),
    llm: SpendViewSchema.optional(),
  }),
  bridge: z.object({ name: z.string(), settings: BridgeSettingsSchema, changed: z.boolean() }),
  publish: z.object({ name: z.string(), published: z.array(z.string()), changed: z.boolean(), answered: z.number().int() }),
  port: z.object({ name: z.string(), ports: z.array(PortStateSchema), running: z.boolean(), changed: z.boolean() }),
  services: z.object({ name: z.string(), services: z.array(ServiceViewSchema), logs: z.string().optional(), restarted: z.string().optional() }),
} as const;
export type LifecycleVerb = keyof typeof LifecycleResults;

/** The content type of a lifecycle answer: one JSON line each for notes, build output, then the result or the error. */
export const LIFECYCLE_LINES_TYPE = "application/x-sbx-lines";

export const LifecycleLineSchema = z.discriminatedUnion("t", [
  z.object({ t: z.literal("log"), line: z.string() }),
  z.object({ t: z.literal("progress"), chunk: z.string() }),
  z.object({ t: z.literal("done"), result: z.unknown() }),
  z.object({ t: z.literal("error"), body: ErrorBodySchema }),
]);
export type LifecycleLine = z.infer<typeof LifecycleLineSchema>;

// ── The allowlist and approvals (/v1/policy/*): sbx allow, deny, allowlist and approvals ──

/** A list to change: a sandbox's (named as the CLI names it: in the repo around cwd) or the global one. */
const ScopeSchema = WhereSchema.extend({ sandbox: nameSchema.optional(), global: z.boolean().default(false) });

/** How long an allow lasts: for good (absent), one connection, or a number of milliseconds (core/allow-term.ts). */
export const AllowTermSchema = z.union([
  z.object({ kind: z.literal("good") }),
  z.object({ kind: z.literal("once") }),
  z.object({ kind: z.literal("for"), ms: z.number().int().min(1_000).max(FOR_MAX_MS) }),
]);
export const PolicyPatternsSchema = ScopeSchema.extend({ patterns: z.array(z.string().max(300)).max(200), term: AllowTermSchema.optional() });
export type PolicyPatterns = z.input<typeof PolicyPatternsSchema>;

/** `sbx secret set NAME --host …`: a binding for every sandbox or one (never a value: that stays on the CLI's side). */
export const SecretBindSchema = ScopeSchema.extend({ name: z.string().regex(/^[A-Z][A-Z0-9_]{0,63}$/), spec: BindingSpecSchema });
export type SecretBind = z.input<typeof SecretBindSchema>;
export const SecretUnbindSchema = ScopeSchema.extend({ name: z.string().regex(/^[A-Z][A-Z0-9_]{0,63}$/) });
export type SecretUnbind = z.input<typeof SecretUnbindSchema>;
export const SecretChangeSchema = z.object({ scope: z.string(), changed: z.boolean() });
export const SecretBindingViewSchema = z.object({
  name: z.string(),
  /** null: every sandbox. */
  sandbox: z.string().nullable(),
  hosts: z.array(z.string()),
  scope: z.string(),
  header: z.string().nullable(),
  env: z.string().nullable(),
  npmrc: z.boolean(),
  inBody: z.boolean(),
  source: z.string(),
  createdAt: z.number(),
  lastUsedAt: z.number().nullable(),
});
export type SecretBindingView = z.infer<typeof SecretBindingViewSchema>;
export const SecretBindingsSchema = z.object({ bindings: z.array(SecretBindingViewSchema) });

export const PolicyShowSchema = WhereSchema.extend({ sandbox: nameSchema.optional() });
export type PolicyShow = z.input<typeof PolicyShowSchema>;

/** `sbx allow|deny HOST --method … --path … [--remove]`: a rule that sees requests (core/rules.ts). */
export const PolicyRuleSchema = ScopeSchema.extend({ spec: RuleSpecSchema, remove: z.boolean().default(false) });
export type PolicyRule = z.input<typeof PolicyRuleSchema>;
export const PolicyRuleChangeSchema = z.object({ scope: z.string(), rule: z.string(), changed: z.boolean(), resolved: z.number().int() });

/** `sbx policy check HOST[:PORT] [--method M --path P] [--sandbox NAME]`: a dry run. */
export const PolicyCheckSchema = WhereSchema.extend({
  sandbox: nameSchema.optional(),
  host: z.string().min(1).max(300),
  port: z.number().int().min(1).max(65535),
  method: z.string().regex(/^[A-Za-z]{1,20}$/).optional(),
  target: z.string().max(8192).optional(),
});
export type PolicyCheck = z.input<typeof PolicyCheckSchema>;
export const PolicyCheckResultSchema = z.object({
  /** Which lists were judged with ("sandbox 'demo'", or the global ones alone). */
  scope: z.string(),
  allowed: z.boolean(),
  host: z.string(),
  port: z.number().int(),
  method: z.string().nullable(),
  path: z.string().nullable(),
  decidedBy: z.object({ text: z.string(), source: z.string(), kind: z.enum(["pattern", "rule"]) }).nullable(),
  reason: z.string().nullable(),
  detail: z.string(),
  fix: z.string().nullable(),
  judged: z.boolean(),
});

export const PolicyDecideSchema = z.object({ id: z.number().int().positive(), choice: z.enum(["allow-sandbox", "allow-global", "deny"]), term: AllowTermSchema.optional() });

const AllowEntryViewSchema = z.object({
  pattern: z.string(),
  addedBy: z.string(),
  addedAt: z.number(),
  /** `--for`/`--once`: when it lapses (absent: for good, or an older daemon). */
  expiresAt: z.number().nullable().optional(),
  once: z.boolean().optional(),
});
export const ApprovalViewSchema = z.object({
  id: z.number().int(),
  sandboxId: z.number().int(),
  /** The sandbox's name (pending lists carry it). */
  sandbox: z.string().optional(),
  /** egress: host and port; bridge: `host` is what the bridge refused (a push outside the prefix), port 0; budget: `host` is the LLM budget reached (`llm-budget 5usd/day`), port 0. */
  kind: z.enum(["egress", "bridge", "budget"]).default("egress"),
  host: z.string(),
  port: z.number().int(),
  reason: z.string(),
  state: z.enum(["pending", "allowed", "denied"]),
  count: z.number().int(),
  firstSeen: z.number(),
  lastSeen: z.number(),
  decidedBy: z.string().nullable(),
  decidedAt: z.number().nullable(),
});

export const PolicyChangeSchema = z.object({
  /** Which list, as people read it ("sandbox 'demo'", "every sandbox (global)"). */
  scope: z.string(),
  results: z.array(z.object({ pattern: z.string(), changed: z.boolean(), resolved: z.number().int() })),
});
const RuleViewSchema = z.object({ rule: z.string(), spec: RuleSpecSchema, addedBy: z.string(), addedAt: z.number() });
export const PolicyViewSchema = z.object({
  sandbox: z.object({ name: z.string(), entries: z.array(AllowEntryViewSchema), rules: z.array(RuleViewSchema).default([]) }).nullable(),
  global: z.array(AllowEntryViewSchema),
  globalRules: z.array(RuleViewSchema).default([]),
  builtin: z.array(z.string()),
});
export const PolicyPendingSchema = z.object({ pending: z.array(ApprovalViewSchema) });
export const PolicyDecisionSchema = z.object({
  approval: ApprovalViewSchema,
  sandbox: z.object({ id: z.number().int(), name: z.string() }),
  pattern: z.string(),
  scope: z.enum(["sandbox", "global"]),
  action: z.enum(["allow", "deny"]),
  added: z.boolean(),
});

// ── Policy levels (/v1/policy/level): sbx policy show NAME, sbx policy set NAME --level L ──

export const PolicyLevelSchema = WhereSchema.extend({ name: nameSchema, level: z.enum(LEVEL_NAMES as [LevelName, ...LevelName[]]).optional() });
export type PolicyLevel = z.input<typeof PolicyLevelSchema>;

const LevelPartViewSchema = z.object({ pattern: z.string(), why: z.string() });
/** A sandbox's policy as `sbx policy show` prints it: its level and what it allows, then the person's own entries. */
export const PolicyLevelViewSchema = z.object({
  name: z.string(),
  /** null: no level, the built-in list. */
  level: z.enum(LEVEL_NAMES as [LevelName, ...LevelName[]]).nullable(),
  about: z.string(),
  /** What the level (or the built-in list) allows, each with why. */
  allows: z.array(LevelPartViewSchema),
  /** The `open` level: any public host and address, on any port. */
  open: z.boolean(),
  /** What `balanced` read of the repo, and when. */
  repo: z.object({ registries: z.array(z.object({ preset: z.string(), file: z.string() })), registryHosts: z.array(z.object({ host: z.string(), file: z.string() })), forges: z.array(z.object({ host: z.string(), remote: z.string() })) }).nullable(),
  sandbox: z.array(AllowEntryViewSchema),
  global: z.array(AllowEntryViewSchema),
  published: z.array(z.string()),
  changed: z.boolean(),
});
export type PolicyLevelView = z.infer<typeof PolicyLevelViewSchema>;
