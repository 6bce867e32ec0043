// The command table by name, each verb's module loaded only when its word is typed: a command loads its own verb
// (and what it imports), not all of them. `sbx --help`, a word that is no verb, and the verbs that read the whole
// program (completion scripts are made from it) load verbs.ts, the whole table. A test holds this to verbs.ts.
import type { Verb } from "./verb";

/** Every verb's loader, by its name. */
export const VERB_LOADERS: Readonly<Record<string, () => Promise<Verb>>> = {
  agents: async () => (await import("./commands/agents")).agents,
  allow: async () => (await import("./commands/allow")).allow,
  allowlist: async () => (await import("./commands/allowlist")).allowlist,
  approvals: async () => (await import("./commands/approvals")).approvals,
  attach: async () => (await import("./commands/attach")).attach,
  bridge: async () => (await import("./commands/bridge")).bridge,
  chat: async () => (await import("./commands/chat")).chat,
  code: async () => (await import("./commands/code")).code,
  __complete: async () => (await import("./commands/complete")).complete,
  completion: async () => (await import("./commands/completion")).completion,
  create: async () => (await import("./commands/create")).create,
  daemon: async () => (await import("./commands/daemon")).daemon,
  demo: async () => (await import("./commands/demo")).demo,
  deny: async () => (await import("./commands/deny")).deny,
  doctor: async () => (await import("./commands/doctor")).doctor,
  exec: async () => (await import("./commands/exec")).exec,
  init: async () => (await import("./commands/init")).init,
  limits: async () => (await import("./commands/limits")).limits,
  list: async () => (await import("./commands/list")).list,
  logs: async () => (await import("./commands/logs")).logs,
  prune: async () => (await import("./commands/prune")).prune,
  rebuild: async () => (await import("./commands/rebuild")).rebuild,
  publish: async () => (await import("./commands/publish")).publish,
  port: async () => (await import("./commands/port")).port,
  policy: async () => (await import("./commands/policy")).policy,
  ps: async () => (await import("./commands/ps")).ps,
  rm: async () => (await import("./commands/rm")).rm,
  run: async () => (await import("./commands/run")).run,
  secret: async () => (await import("./commands/secret")).secret,
  service: async () => (await import("./commands/service")).service,
  services: async () => (await import("./commands/services")).services,
  shell: async () => (await import("./commands/shell")).shell,
  status: async () => (await import("./commands/status")).status,
  stop: async () => (await import("./commands/stop")).stop,
  ui: async () => (await import("./commands/ui")).ui,
};

/** Other names a verb answers to (its `aliases`), to the verb's name. */
export const VERB_ALIASES: Readonly<Record<string, string>> = { ls: "list" };

/** Verbs that read the whole program: `completion` prints scripts made from every verb's options. */
const READS_ALL = new Set(["completion"]);

/**
 * The verbs a command line needs: the one its first word names (or aliases), none for `--version` alone, else the whole
 * table (no verb word: help, a typo that wants a suggestion).
 */
export async function verbsFor(argv: readonly string[]): Promise<readonly Verb[]> {
  // `sbx --version` alone prints a constant: no verb.
  if (argv.length === 1 && (argv[0] === "--version" || argv[0] === "-V")) return [];
  const word = argv[0];
  const name = word === undefined ? undefined : (VERB_ALIASES[word] ?? word);
  const load = name !== undefined && Object.hasOwn(VERB_LOADERS, name) && !READS_ALL.has(name) ? VERB_LOADERS[name] : undefined;
  if (load) return [await load()];
  return (await import("./verbs")).verbs;
}
