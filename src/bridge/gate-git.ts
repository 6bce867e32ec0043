// What the push gate is and how its git runs: its paths, an environment built from nothing, config only the host chose,
// and the one place that runs git in it (gateRun). The gate's operations are gate.ts's; its pre-push hook and verdict
// gate-hook.ts's; the push's scan gate-scan.ts's.
import { mkdirSync, chmodSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import type { Exec, ExecResult } from "../sys/exec";
import { isSshUrl } from "./git-policy";

export interface GatePaths {
  /** The bare gate repository. */
  repo: string;
  /** An empty HOME for every git/gh the bridge runs, so no user dotfile applies. */
  home: string;
  /** Scratch files (packs, bundles). */
  tmp: string;
  /** gh's working directory: host-owned and not a repository. */
  ghCwd: string;
  /** The gate's own hooks (only pre-push, written by the bridge); the push is the only git that uses them. */
  hooks: string;
  /** The pull requests, issues and gists this sandbox opened through gh (`bridge/gh-created.ts`). */
  ghCreated: string;
  /** Written once this sandbox's first push has said which CI workflows its branches start. */
  pushNoted: string;
  /**
   * What the gate borrows objects from (its alternates): `host/objects`, a view of the host repo's own objects, and
   * `store/objects`, a view of this sandbox's store (sync/object-view.ts). Never the host's objects dir itself, whose
   * list of alternates leads into every other sandbox's store and the retired store. `host/tips` (with an empty
   * `host/refs`, which git looks for first) is what git's fetch takes as the view's refs: the person's ref tips.
   */
  views: string;
}

export function gatePaths(gateDir: string): GatePaths {
  return { repo: join(gateDir, "gate.git"), home: join(gateDir, "home"), tmp: join(gateDir, "tmp"), ghCwd: join(gateDir, "gh"), hooks: join(gateDir, "hooks"), ghCreated: join(gateDir, "gh-created"), pushNoted: join(gateDir, "push-ci-noted"), views: join(gateDir, "views") };
}

export interface GitEnvOptions {
  path: string;
  home: string;
  /** Present only for the one process that talks to the remote: the token and the scheme and host[:port] it is for. */
  token?: GateToken;
  /** The push's verdict channel, read by the gate's pre-push hook. */
  verdict?: { fifo: string; nonce: string };
}

/** The whole environment of git run by the bridge: built from nothing, so no host or guest variable applies. */
export function gitEnv(o: GitEnvOptions): Record<string, string> {
  const env: Record<string, string> = {
    PATH: o.path,
    HOME: o.home,
    XDG_CONFIG_HOME: join(o.home, ".config"),
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_TERMINAL_PROMPT: "0",
    GIT_ASKPASS: "/bin/false",
    SSH_ASKPASS: "/bin/false",
    GIT_PROTOCOL_FROM_USER: "0",
    GIT_OPTIONAL_LOCKS: "0",
    LC_ALL: "C",
  };
  if (o.token) {
    // Sent with the first request (no 401 round trip, no helper process per request), and only to that scheme and
    // host[:port]: git's http.<url>.* applies to URLs of that origin alone, and the gate's git follows no redirect.
    // In this process's environment, never its argv (other users can read argv).
    env.GIT_CONFIG_COUNT = "1";
    env.GIT_CONFIG_KEY_0 = `http.${o.token.scheme}://${o.token.host}/.extraHeader`;
    env.GIT_CONFIG_VALUE_0 = `Authorization: Basic ${Buffer.from(`x-access-token:${o.token.value}`).toString("base64")}`;
  }
  if (o.verdict) {
    env.SBX_VERDICT_FIFO = o.verdict.fifo;
    env.SBX_VERDICT_NONCE = o.verdict.nonce;
  }
  return env;
}

/**
 * The forge token of the one git process that talks to the remote: Basic `x-access-token:<token>` (as forges take a token
 * over HTTPS), set as that process's `http.<scheme>://<host>/.extraHeader` through its environment (gitEnv), never in a
 * file or argv.
 */
export interface GateToken {
  value: string;
  /** host[:port], as tokens.ts's credentialHost gives it. */
  host: string;
  scheme: "http" | "https";
}

/**
 * `git` with config that only the host chose: no hooks, no fsmonitor, no transports but the one needed,
 * no credential helper (the token, where one goes, is a header of that process: gitEnv), and as the host view's refs
 * (which a fetch offers the remote as what it has) the tips the bridge wrote beside the view. Pure: golden-tested.
 */
export function gateGit(args: readonly string[], o: { transport?: Transport; hooksPath?: string; sshCommand?: string } = {}): string[] {
  const c = (kv: string) => ["-c", kv];
  return [
    "git",
    ...c(`core.hooksPath=${o.hooksPath ?? "/dev/null"}`),
    ...c("core.fsmonitor=false"),
    // ssh runs only for an ssh remote of the host repo's own config, as the host's ssh command, never prompting.
    ...c(`core.sshCommand=${o.transport === "ssh" && o.sshCommand ? o.sshCommand : "/bin/false"}`),
    ...c("protocol.allow=never"),
    ...(o.transport ? c(`protocol.${o.transport}.allow=always`) : []),
    ...c("http.followRedirects=false"),
    ...c("credential.helper="),
    ...c("credential.useHttpPath=false"),
    ...c("transfer.fsckObjects=true"),
    ...c(`core.alternateRefsCommand=${ALTERNATE_REFS}`),
    ...args,
  ];
}

/**
 * What git runs for an alternate's refs (its path, `<views>/host`, appended): the tips file there. Without it a fetch
 * into a gate with no refs of its own would offer the remote nothing it has, and take the whole history again.
 */
export const ALTERNATE_REFS = 'f() { cat "$1/tips" 2>/dev/null; }; f';

export type Transport = "https" | "http" | "ssh";

export function transportOf(url: string): Transport {
  if (isSshUrl(url)) return "ssh";
  return url.toLowerCase().startsWith("http://") ? "http" : "https";
}

/**
 * How the bridge's git reaches an ssh remote: the host's own ssh command (GIT_SSH_COMMAND of the daemon's environment,
 * else `ssh`) with BatchMode (no prompt: a key the agent or ~/.ssh has, or nothing), and the host's agent socket. The
 * key never enters the sandbox. Pure.
 */
export function sshSettingsOf(env: Readonly<Record<string, string | undefined>>): GateSsh {
  const base = env.GIT_SSH_COMMAND?.trim() || "ssh";
  return { command: `${base} -o BatchMode=yes`, env: env.SSH_AUTH_SOCK ? { SSH_AUTH_SOCK: env.SSH_AUTH_SOCK } : {} };
}

export interface GateSsh {
  command: string;
  /** SSH_AUTH_SOCK, when the host has an agent. */
  env: Record<string, string>;
  /** How to run the ProxyCommand helper behind a parent proxy (gate-ssh.ts defaultSshHelper when absent). */
  helper?: string[];
}

export interface Gate {
  paths: GatePaths;
  exec: Exec;
  hostRepo: string;
  /** The host repo's common git dir (its refs), when known. */
  hostGitDir?: string;
  path: string;
  /**
   * The host's CA settings as git takes them (GIT_SSL_CAINFO/GIT_SSL_CAPATH from SSL_CERT_FILE/SSL_CERT_DIR), now: the
   * company's CAs (the config's `trust`) can change while the daemon runs.
   */
  tls?: () => Record<string, string>;
  /** How ssh remotes are reached (the host's ssh command and agent); none: ssh is off. */
  ssh?: GateSsh;
  /** The host's parent proxy, lent to one git or gh call at a time (sys/parent-relay.ts); none: straight out. */
  parent?: HostToolParent;
  /** The host repo's config files and the remotes last read from them (gate.ts hostRemotes); shared by the gate's copies. */
  remotes?: { files: readonly string[]; key?: string; value?: Record<string, string> };
}

/** Lends a host tool's one call the host's parent proxy: its proxy variables, and their end. */
export interface HostToolParent {
  lease(url: string): Promise<{ env: Record<string, string>; release(): void }>;
  /** A one-call tunnel to exactly host:port through the relay (ssh's ProxyCommand), or null: straight out (NO_PROXY). */
  tunnel?(host: string, port: number): Promise<{ relay: string; password: string; release(): void } | null>;
}

/** The host's CA settings for git and gh (SSL_CERT_FILE, SSL_CERT_DIR), or what says them at each call. */
export type TlsEnv = Readonly<Record<string, string>> | (() => Readonly<Record<string, string>>);

/** The CA settings in force now. */
export function tlsEnvNow(t: TlsEnv | undefined): Record<string, string> {
  return { ...(typeof t === "function" ? t() : t) };
}

/** Pure: git's names for the host's CA settings (a private CA in front of a forge works through the bridge too). */
export function gitTlsEnv(tlsEnv: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (tlsEnv?.SSL_CERT_FILE) out.GIT_SSL_CAINFO = tlsEnv.SSL_CERT_FILE;
  if (tlsEnv?.SSL_CERT_DIR) out.GIT_SSL_CAPATH = tlsEnv.SSL_CERT_DIR;
  return out;
}

export function mkdir0700(p: string): void {
  mkdirSync(p, { recursive: true, mode: 0o700 });
  chmodSync(p, 0o700);
}

/** Runs git in the gate (or `cwd`) with the gate's pinned config and environment (the token and verdict only when given). */
export function gateRun(g: Gate, args: string[], opts: { cwd?: string; stdin?: string | Uint8Array | ReadableStream<Uint8Array>; onStderr?: (s: string) => void; onStdout?: (s: string) => void; check?: boolean; token?: GateToken; transport?: Transport; verdict?: { fifo: string; nonce: string }; proxy?: Record<string, string>; sshOption?: string } = {}): Promise<ExecResult> {
  const ssh = opts.transport === "ssh" ? g.ssh : undefined;
  return g.exec.run(gateGit(args, { ...(opts.transport ? { transport: opts.transport } : {}), ...(opts.verdict ? { hooksPath: g.paths.hooks } : {}), ...(ssh ? { sshCommand: opts.sshOption ? `${ssh.command} ${opts.sshOption}` : ssh.command } : {}) }), {
    cwd: opts.cwd ?? g.paths.repo,
    env: { ...g.tls?.(), ...ssh?.env, ...opts.proxy, ...gitEnv({ path: g.path, home: g.paths.home, ...(opts.token ? { token: opts.token } : {}), ...(opts.verdict ? { verdict: opts.verdict } : {}) }) },
    replaceEnv: true,
    ...(opts.stdin !== undefined ? { stdin: opts.stdin } : {}),
    ...(opts.onStderr ? { onStderr: opts.onStderr } : {}),
    ...(opts.onStdout ? { onStdout: opts.onStdout } : {}),
    check: opts.check ?? true,
    timeoutMs: 15 * 60_000,
  });
}

/** git in the gate, for a reader of its objects (ls-tree, cat-file): the gate's pinned config, never a check. */
export function gateReader(g: Gate): (args: string[]) => Promise<ExecResult> {
  return (args) => gateRun(g, args, { check: false });
}

export function scratchDir(g: Gate, prefix: string): string {
  const d = join(g.paths.tmp, `${prefix}-${randomBytes(8).toString("hex")}`);
  return d;
}
