// sbx secret: store an API key or token host-side for the LLM proxy and bridge (typed hidden at a terminal, else from stdin;
// never argv), in the person's keychain or keyring when they have one (secrets/stored.ts).
import type { Command } from "commander";
import { ALL_METHODS, bindingProblem, type BindingSpec } from "../../core/bound-secret";
import { ExitCode, SbxError } from "../../core/errors";
import type { DaemonClient } from "../../client/client";
import { DEFAULT_TTL_MS, isOpRef, parseTtl } from "../../core/secret-sources";
import { IMPORTABLE_KEYS } from "../../core/secret-names";
import type { CliContext, Verb } from "../verb";

/** Where a value comes from: stdin when it is not a terminal; a hidden prompt when it is (null: the person cancelled). */
export interface SecretInput {
  stdin(): Promise<string>;
  hidden(prompt: string): Promise<string | null>;
}

/**
 * The value: asked for hidden at a terminal (null: the person cancelled; empty refused), else stdin (one trailing
 * newline dropped).
 */
async function readValue(ctx: CliContext, n: string, input: SecretInput): Promise<string | null> {
  if (!ctx.stdinIsTTY) return (await input.stdin()).replace(/\r?\n$/, "");
  const typed = await input.hidden(`value for ${n} (hidden as you type or paste; Enter stores it, Ctrl-C cancels): `);
  if (typed === null) {
    ctx.render.info(`cancelled: ${n} was not stored`);
    return null;
  }
  if (typed === "") {
    throw new SbxError("usage", `empty value: ${n} was not stored`, {
      hint: `Run \`sbx secret set ${n}\` again and type or paste the value before Enter (\`sbx secret rm ${n}\` removes a secret).`,
    });
  }
  return typed;
}

/** Exit status of a prompt cancelled with Ctrl-C: the shell's 128 + SIGINT. */
export const CANCELLED = 130;

/** What the verb asks of the daemon for secrets bound to hosts (tests give their own). */
export type SecretClient = Pick<DaemonClient, "secretBind" | "secretUnbind" | "secretBindings" | "secretsReload">;

/** Options that make `set` a binding to hosts. */
const BINDING_OPTS = ["host", "header", "env", "npmrc", "method", "path", "inBody", "command", "ttl", "ref"] as const;

/**
 * Pure: the binding `sbx secret set NAME --host …` asks for, or a usage error that says what was wrong. Defaults: every
 * method, every path, the variable named like the secret (none with --npmrc alone), the value stored by sbx.
 */
export function bindingSpecOf(name: string, opts: Record<string, unknown>): BindingSpec {
  const usage = (m: string, hint: string) => new SbxError("usage", m, { hint });
  const list = (v: unknown) => (Array.isArray(v) ? (v as string[]) : typeof v === "string" ? [v] : []).flatMap((x) => x.split(",")).map((x) => x.trim()).filter(Boolean);
  const hosts = list(opts.host).map((h) => h.toLowerCase());
  if (hosts.length === 0) throw usage(`sbx secret set ${name}: which hosts may it go to?`, `Add --host api.example.com (repeat it, or *.example.com); the proxy puts the value only into requests to those hosts.`);
  const methods = list(opts.method).map((m) => m.toUpperCase());
  for (const m of methods) if (!/^[A-Z]+$/.test(m)) throw usage(`--method ${m}: not an HTTP method`, "e.g. --method GET,POST");
  const paths = list(opts.path);
  for (const p of paths) if (!p.startsWith("/")) throw usage(`--path ${p}: a path starts with /`, "e.g. --path '/v1/**' (** for any depth, * within a segment)");
  let header: BindingSpec["header"] = null;
  if (typeof opts.header === "string") {
    const m = /^([A-Za-z0-9-]+):\s*(.*\{\}.*)$/.exec(opts.header);
    if (!m) throw usage(`--header ${JSON.stringify(opts.header)}: not 'Name: value with {}'`, "e.g. --header 'Authorization: Bearer {}' ({} is where the secret goes)");
    header = { name: m[1]!, template: m[2]! };
  }
  const ttlText = typeof opts.ttl === "string" ? opts.ttl : undefined;
  const ttlMs = ttlText === undefined ? DEFAULT_TTL_MS : parseTtl(ttlText);
  if (ttlMs === null) throw usage(`--ttl ${ttlText}: not a time`, "e.g. --ttl 55m, 30s, 2h, 1d");
  if (typeof opts.command === "string" && typeof opts.ref === "string") throw usage("--command and --ref both say where the value comes from", "Give one of them (or neither: the value is asked for and stored).");
  if (ttlText !== undefined && opts.command === undefined && opts.ref === undefined) throw usage("--ttl is how long a --command's or --ref's answer is kept", "Drop --ttl, or add --command or --ref.");
  if (typeof opts.ref === "string" && !isOpRef(opts.ref)) throw usage(`--ref ${opts.ref}: not a 1Password reference`, "e.g. --ref op://vault/item/field");
  const source: BindingSpec["source"] =
    typeof opts.command === "string" ? { kind: "command", command: opts.command, ttlMs } : typeof opts.ref === "string" ? { kind: "ref", ref: opts.ref, ttlMs } : { kind: "vault" };
  const envName = typeof opts.env === "string" ? opts.env : opts.npmrc === true ? null : name;
  if (envName !== null && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(envName)) throw usage(`--env ${envName}: not a variable name`, "e.g. --env STRIPE_API_KEY");
  const spec: BindingSpec = {
    hosts,
    rules: (paths.length ? paths : ["/**"]).map((path) => ({ methods: methods.length ? methods : [...ALL_METHODS], path })),
    header,
    env: envName,
    npmrc: opts.npmrc === true,
    inBody: opts.inBody === true,
    source,
  };
  // Checked here too, before a value is asked for: what the daemon would refuse is said first.
  const why = bindingProblem(spec);
  if (why) throw usage(why, "Bind a secret to names (api.example.com, *.example.com) and paths like /v1/** .");
  return spec;
}

/** Runs the verb with injectable input (tests pass strings or a fake terminal) and daemon. */
export async function runSecret(ctx: CliContext, args: string[], opts: Record<string, unknown>, input: SecretInput, client?: () => Promise<SecretClient>): Promise<number> {
  // Loaded here, not at the top: `sbx --help` and `--version` must not pay for it.
  const [{ SecretName }, { Shelf, storedNames, whereOf, readVaultRecord }] = await Promise.all([import("../../secrets/store"), import("../../secrets/stored")]);
  const [action, name] = args;
  const binding = BINDING_OPTS.some((k) => opts[k] !== undefined && opts[k] !== false);
  const scope = () => ({
    cwd: ctx.cwd,
    ...(typeof opts.repo === "string" ? { repoFlag: opts.repo } : {}),
    ...(typeof opts.sandbox === "string" ? { sandbox: opts.sandbox } : {}),
  });
  const daemonOf = client ?? (async () => (await import("../../client/sandboxes")).daemon(ctx));
  /** The daemon when it runs (list and rm never start one for the stored names alone). */
  const running = async (): Promise<SecretClient | null> => {
    if (client) return client();
    if (!ctx.paths.controlSocket) return null;
    const { DaemonClient } = await import("../../client/client");
    const c = new DaemonClient(ctx.paths.controlSocket);
    return (await c.health()) ? c : null;
  };
  /** Where values are kept, opened as this person; what sbx's file held moves there the first time, and is said. */
  const shelf = async () => {
    const { shelf, moved } = await Shelf.open({ exec: ctx.exec, platform: ctx.env.platform, env: ctx.env.raw, configDir: ctx.paths.configDir, home: ctx.env.vars.HOME, uid: ctx.env.uid });
    if (moved.length > 0) ctx.render.info(`moved ${moved.length === 1 ? "1 secret" : `${moved.length} secrets`} (${moved.join(", ")}) out of ${whereOf("file", ctx.paths.configDir)} into ${shelf.vault.where}, once: sbx keeps them there from now on`);
    return shelf;
  };
  /** A stored value changed: a running daemon reads them again before the next request (it starts none for this). */
  const changed = async () => {
    const d = await running();
    await d?.secretsReload();
  };
  const needName = () => {
    if (name === undefined) throw new SbxError("usage", `sbx secret ${action}: which secret?`, { hint: `sbx secret ${action} NAME, e.g. ANTHROPIC_API_KEY` });
    const ok = SecretName.safeParse(name);
    if (!ok.success) throw new SbxError("usage", `bad secret name ${JSON.stringify(name)}`, { hint: ok.error.issues[0]!.message });
    return name;
  };
  switch (action) {
    case "set": {
      const n = needName();
      if (!binding && typeof opts.sandbox === "string") {
        throw new SbxError("usage", "--sandbox binds a secret to hosts for one sandbox", { hint: `Add --host HOST, or drop --sandbox (a stored secret without hosts is sbx's own: LLM keys, forge tokens).` });
      }
      if (binding) {
        const spec = bindingSpecOf(n, opts);
        // The value first, where it is kept: a binding never points at nothing.
        if (spec.source.kind === "vault") {
          const value = await readValue(ctx, n, input);
          if (value === null) return CANCELLED;
          await (await shelf()).set(n, value);
          await changed();
        }
        const r = await (await daemonOf()).secretBind({ ...scope(), name: n, spec });
        ctx.render.info(`bound ${n} to ${spec.hosts.join(", ")} for ${r.scope}: requests there carry it${spec.header ? ` (and get ${spec.header.name} when they lack it)` : ""}`);
        if (spec.env !== null) ctx.render.info(`inside, $${spec.env} holds a placeholder shaped like it (new sessions; the value never enters the sandbox)`);
        if (spec.npmrc) ctx.render.info("inside, npm's config holds the registry's token line with the placeholder (new sessions)");
        return ExitCode.ok;
      }
      const value = await readValue(ctx, n, input);
      if (value === null) return CANCELLED;
      const s = await shelf();
      await s.set(n, value);
      await changed();
      ctx.render.info(`stored ${n} in ${s.vault.where} (${ctx.stdinIsTTY ? `${[...value].length} characters; ` : ""}running sandboxes use it from their next request)`);
      return ExitCode.ok;
    }
    case "rm": {
      const n = needName();
      // Its binding (for --sandbox's sandbox, else the global one) goes, then the stored value when no binding is left.
      // The daemon is started for it: a binding left behind a stopped daemon would outlive its value.
      const d = client ? await client() : ctx.paths.controlSocket ? await daemonOf() : null;
      const unbound = d ? (await d.secretUnbind({ ...scope(), name: n })).changed : false;
      const stillBound = d ? (await d.secretBindings()).bindings.some((b) => b.name === n) : false;
      const removed = !stillBound && typeof opts.sandbox !== "string" && storedNames(ctx.paths.configDir).includes(n) ? await (await shelf()).remove(n) : false;
      if (removed) await changed();
      if (!unbound && !removed) throw new SbxError("not_found", `no secret named ${n}${typeof opts.sandbox === "string" ? ` bound for sandbox ${opts.sandbox}` : ""}`, { hint: "sbx secret list shows the names stored and where each is bound." });
      ctx.render.info(`removed ${n}${unbound ? " and its binding (requests from now on carry its placeholder unswapped)" : ""}`);
      return ExitCode.ok;
    }
    case "list": {
      const names = storedNames(ctx.paths.configDir);
      const d = await running();
      const kept = whereOf(readVaultRecord(ctx.paths.configDir)?.vault ?? "file", ctx.paths.configDir);
      const bindings = d ? (await d.secretBindings()).bindings : [];
      if (opts.json) {
        // One entry per name: where it is bound (none: sbx's own, for its LLM proxy and bridge), never a value.
        const rows = [...new Set([...names, ...bindings.map((b) => b.name)])].sort().map((n) => ({ name: n, stored: names.includes(n), ...(names.includes(n) ? { keptIn: kept } : {}), bindings: bindings.filter((b) => b.name === n) }));
        ctx.render.json(rows);
        return ExitCode.ok;
      }
      for (const n of names) if (!bindings.some((b) => b.name === n)) ctx.render.out(n);
      for (const b of bindings) {
        const where = b.sandbox === null ? "global" : `sandbox ${b.sandbox}`;
        const used = b.lastUsedAt === null ? "never used" : `last used ${new Date(b.lastUsedAt).toISOString()}`;
        ctx.render.out(`${b.name}  ${b.hosts.join(",")}  ${b.scope}  ${where}  ${b.source}  ${used}`);
      }
      if (names.length > 0) ctx.render.info(`(values kept in ${kept})`);
      if (d === null && client === undefined) ctx.render.info("(the daemon is not running: secrets bound to hosts are not listed)");
      return ExitCode.ok;
    }
    case "import": {
      // The keys sbx knows by name that this shell has and sbx does not: stored as they are (never printed).
      const s = await shelf();
      const stored = new Set(s.names());
      const got: string[] = [];
      const differs: string[] = [];
      for (const n of IMPORTABLE_KEYS) {
        const v = ctx.env.raw[n];
        if (!v) continue;
        if (!stored.has(n)) {
          await s.set(n, v);
          got.push(n);
        } else if ((await s.get(n)) !== v) differs.push(n);
      }
      if (got.length > 0) await changed();
      if (opts.json) ctx.render.json({ imported: got, differs });
      else {
        for (const n of got) ctx.render.out(`imported ${n}`);
        for (const n of differs) ctx.render.info(`${n} in this shell differs from the one sbx has; kept sbx's (\`sbx secret set ${n}\` replaces it)`);
        if (got.length === 0 && differs.length === 0) ctx.render.info(`nothing to import: none of ${IMPORTABLE_KEYS.join(", ")} is set in this shell and missing from sbx`);
      }
      return ExitCode.ok;
    }
    default:
      throw new SbxError("usage", `sbx secret: unknown action ${JSON.stringify(action)}`, { hint: "sbx secret set|rm|list|import NAME" });
  }
}

export const secret: Verb = {
  name: "secret",
  summary: "store a secret host-side: sbx's own keys, or one bound to hosts that the proxy puts into their requests",
  declare(cmd: Command) {
    const many = (v: string, prev: string[] = []) => [...prev, v];
    cmd
      .argument("<action>", "set | rm | list | import")
      .argument("[name]", "secret name, e.g. ANTHROPIC_API_KEY, GH_TOKEN, SENTRY_TOKEN")
      .option("--host <host>", "set: a host it may go to (repeat; *.example.com for subdomains); makes it a bound secret", many)
      .option("--header <'Name: template {}'>", "set: a header added to requests that lack it ({} is where the value goes)")
      .option("--env <VAR>", "set: the variable inside that holds its placeholder (default: NAME)")
      .option("--npmrc", "set: npm's config inside gets each host's _authToken line with the placeholder")
      .option("--method <M,...>", "set: the methods it may go with (default: all)", many)
      .option("--path <glob>", "set: a path it may go to, e.g. '/v1/**' (repeat; default: every path)", many)
      .option("--in-body", "set: also swap its placeholder in text request bodies (JSON, forms, text)")
      .option("--command <shell line>", "set: read the value by running this on the host as you (e.g. 'gh auth token')")
      .option("--ttl <time>", "set: how long a --command's or --ref's answer is kept (default 5m): 30s, 55m, 2h")
      .option("--ref <op://…>", "set: read the value with 1Password's CLI (op read)")
      .option("--sandbox <name>", "set/rm: bound for this sandbox only (default: every sandbox)")
      .option("--repo <path>", "the repo the sandbox belongs to (when two repos have one of that name)")
      .option("--json", "list: names, where each is bound, source and last use, as JSON (never a value)")
      .addHelpText(
        "after",
        `
The value never goes on the command line (it would land in shell history and argv):
  sbx secret set ANTHROPIC_API_KEY                      at a terminal: asks for it and shows nothing you type
                                                        or paste; Enter stores it, Ctrl-C cancels (exit 130)
  printf %s "$KEY" | sbx secret set ANTHROPIC_API_KEY   in a script: reads stdin (one trailing newline dropped)
An empty value is refused. Values are kept where you keep secrets: the login keychain on a Mac, the Secret Service
(GNOME Keyring, KWallet, KeePassXC) where your session has one, else <config dir>/secrets.json (mode 0600); what
that file held moves over once, and is said. A running sandbox uses a new value from its next request.

A secret with --host is bound to those hosts, for any service an agent uses:
  sbx secret set SENTRY_TOKEN --host sentry.io --header 'Authorization: Bearer {}'
  sbx secret set NPM_TOKEN --host npm.example.com --npmrc
  sbx secret set STRIPE_KEY --host api.stripe.com --env STRIPE_API_KEY --method GET,POST --path '/v1/**'
  sbx secret set GH_TOKEN --host api.github.com --command 'gh auth token' --ttl 55m
  sbx secret set OPENAI_KEY --host api.openai.com --ref op://dev/openai/key
Inside, the variable holds a placeholder shaped like the value (same prefix, length and kinds of characters),
random per sandbox. The proxy ends TLS only for bound hosts (with a certificate from sbx's CA, whose key stays on
the host; new sessions trust it through SSL_CERT_FILE, CURL_CA_BUNDLE, REQUESTS_CA_BUNDLE, GIT_SSL_CAINFO,
NODE_EXTRA_CA_CERTS and, for Java, a trust store in JAVA_TOOL_OPTIONS) and swaps the placeholder for the value in headers and the query (the body with --in-body),
only within --method and --path, judged on the path the server will see. Anywhere else the placeholder goes as it
is. A response that holds the value comes back with the placeholder. Every other host stays an opaque tunnel.
Each use and each refused use is in \`sbx logs\` by name, never by value.
list shows names, hosts, scope, source and last use; rm removes a binding (and the stored value, once unbound).
import stores the keys sbx knows by name (${IMPORTABLE_KEYS.join(", ")}) that this shell has and sbx does not: a key only
your shell exports never reaches the daemon, which runs apart from it.`,
      );
  },
  async run(ctx, args, opts) {
    const { processPromptTty, readHidden } = await import("../../client/hidden-input");
    return runSecret(ctx, args, opts, { stdin: () => Bun.stdin.text(), hidden: (prompt) => readHidden(processPromptTty(), prompt) });
  },
};
