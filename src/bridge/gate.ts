// The push gate: a host-owned bare repo where the sandbox's commits land, are scanned, and leave for the real remote.
import { mkdirSync, chmodSync, writeFileSync, rmSync, readFileSync, readdirSync, existsSync, openSync, writeSync, closeSync, lstatSync, constants } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { hostGitEnv, HOST_GIT_SAFE, validateRemoteName } from "../sync/git-argv";
import { ensureView } from "../sync/object-view";
import { ExecError, streamRun, type Exec, type ExecResult } from "../sys/exec";
import { SECRET_PATTERNS, type SecretFinding, type SecretPattern } from "../core/secrets";
import { MAX_ARCHIVE_BYTES } from "../core/archive";
import { isSshUrl } from "./git-policy";
import { isUserRef } from "../core/user-refs";
import { forgeTokenFor, forgeTokenNames, type ForgeTokenChoice } from "../core/credential-scope";
import { SCAN_LOG_ARGS, scanTag, type UnshownBlob } from "./scan";
import { SCAN_MAX_BLOBS, SCAN_MAX_FINDINGS } from "../core/bounds";
import type { FromScan, ToScan } from "./scan-worker";

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
  /** Present only for the one process that talks to the remote: the token and the host[:port] it is for. */
  token?: { value: string; host: string };
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
    env.SBX_GATE_TOKEN = o.token.value;
    env.SBX_GATE_HOST = o.token.host;
  }
  if (o.verdict) {
    env.SBX_VERDICT_FIFO = o.verdict.fifo;
    env.SBX_VERDICT_NONCE = o.verdict.nonce;
  }
  return env;
}

/**
 * The credential helper, which exists only in the pushing process's config (never in a file): answers `get` only for
 * the expected host, reading the token from that process's environment (never argv). git runs it as
 * `sh -c '<helper> "$@"' <helper> get`; it answers Basic `x-access-token:<token>`, as forges take a token over HTTPS.
 */
export const CREDENTIAL_HELPER =
  '!f() { test "$1" = get || exit 0; h=; while IFS= read -r l && test -n "$l"; do case "$l" in host=*) h="${l#host=}";; esac; done; ' +
  'test -n "$SBX_GATE_TOKEN" && test "$h" = "$SBX_GATE_HOST" || exit 0; echo username=x-access-token; echo "password=$SBX_GATE_TOKEN"; }; f';

/**
 * `git` with config that only the host chose: no hooks, no fsmonitor, no transports but the one needed,
 * no credential helper but ours (and ours only with `credentials`), and as the host view's refs (which a fetch offers
 * the remote as what it has) the tips the bridge wrote beside the view. Pure: golden-tested.
 */
export function gateGit(args: readonly string[], o: { transport?: Transport; credentials?: boolean; hooksPath?: string; sshCommand?: string } = {}): string[] {
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
    ...(o.credentials ? c(`credential.helper=${CREDENTIAL_HELPER}`) : []),
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
}

/** host[:port] of an http(s) URL. */
export function credentialHost(url: string): string {
  const m = /^https?:\/\/(?:[^@\/]*@)?([^\/?#]+)/i.exec(url);
  return (m?.[1] ?? "").toLowerCase();
}

/**
 * The names a URL's token may have, in the order the bridge looks: GIT_TOKEN_<HOST>, the forge's usual names, and
 * GIT_TOKEN only for a host of the host repo's own remotes (`ownHosts`): core/credential-scope.ts. Pure.
 */
export function tokenNames(url: string, ownHosts: ReadonlySet<string>): string[] {
  return forgeTokenNames(credentialHost(url), ownHosts);
}

/** The name to tell a person to set for a URL's token: the forge's usual one, or GIT_TOKEN_<HOST> for other hosts. Pure. */
export function suggestedTokenName(url: string): string {
  const [specific, usual] = forgeTokenNames(credentialHost(url), new Set());
  return usual ?? specific!;
}

/** The git token for a URL (the first of tokenNames that is set), or none, naming a fallback withheld from this host. */
export function tokenFor(url: string, secrets: Readonly<Record<string, string>>, ownHosts: ReadonlySet<string>): ForgeTokenChoice {
  return forgeTokenFor(credentialHost(url), secrets, ownHosts);
}

/** Pure: a person's words for a fallback token withheld from a host, and what to set instead. */
export function withheldText(name: string, url: string, ownHosts: ReadonlySet<string>): string {
  const host = credentialHost(url);
  const own = [...ownHosts].sort().join(", ") || "none";
  return `${name} is not sent to ${host}: it is for the hosts of the host repository's own remotes (${own}); for ${host} set its own token on the host: sbx secret set ${suggestedTokenName(url)}`;
}

export interface Gate {
  paths: GatePaths;
  exec: Exec;
  hostRepo: string;
  path: string;
  /** The host's CA settings as git takes them (GIT_SSL_CAINFO/GIT_SSL_CAPATH from SSL_CERT_FILE/SSL_CERT_DIR). */
  tls?: Record<string, string>;
  /** How ssh remotes are reached (the host's ssh command and agent); none: ssh is off. */
  ssh?: GateSsh;
}

/** Pure: git's names for the host's CA settings (a private CA in front of a forge works through the bridge too). */
export function gitTlsEnv(tlsEnv: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (tlsEnv?.SSL_CERT_FILE) out.GIT_SSL_CAINFO = tlsEnv.SSL_CERT_FILE;
  if (tlsEnv?.SSL_CERT_DIR) out.GIT_SSL_CAPATH = tlsEnv.SSL_CERT_DIR;
  return out;
}

function mkdir0700(p: string): void {
  mkdirSync(p, { recursive: true, mode: 0o700 });
  chmodSync(p, 0o700);
}

/**
 * Creates the gate if missing; its alternates are views (sync/object-view.ts) of the host repo's own objects
 * (host-owned, read-only to the sandbox) and of this sandbox's store (`store`: its name), so the sandbox sends only
 * what the host does not have, and nothing this sandbox did not make or cannot see counts as there: git follows
 * alternates recursively, and the host's own list leads into every sandbox's store (sandboxes-apart).
 * runs: git rev-parse --git-common-dir (in the host repo); git init --bare (the gate)
 */
export async function ensureGate(exec: Exec, gateDir: string, hostRepo: string, path: string, tlsEnv?: Readonly<Record<string, string>>, ssh?: GateSsh, store?: string): Promise<Gate> {
  const paths = gatePaths(gateDir);
  mkdir0700(gateDir);
  for (const d of [paths.home, paths.tmp, paths.ghCwd, paths.hooks]) mkdir0700(d);
  ensurePrePushHook(paths);
  const env = gitEnv({ path, home: paths.home });
  if (!existsSync(join(paths.repo, "HEAD"))) {
    await exec.run(gateGit(["init", "--bare", "--quiet", "--template=", paths.repo]), { env, replaceEnv: true, cwd: gateDir });
  }
  const common = (await exec.run(gateGit(["rev-parse", "--path-format=absolute", "--git-common-dir"]), { env, replaceEnv: true, cwd: hostRepo })).stdout.trim();
  const host = join(paths.views, "host");
  mkdir0700(paths.views);
  mkdir0700(host);
  ensureView(join(host, "objects"), join(common, "objects"));
  mkdir0700(join(host, "refs"));
  const views = [join(host, "objects")];
  if (store !== undefined) {
    validateRemoteName(`sandbox-${store}`);
    // The store may not exist yet (no sync so far): its links lead nowhere until it does.
    ensureView(join(paths.views, "store", "objects"), join(common, "sbx", `${store}.git`, "objects"));
    views.push(join(paths.views, "store", "objects"));
  }
  const alt = views.join("\n") + "\n";
  const altFile = join(paths.repo, "objects", "info", "alternates");
  mkdirSync(join(paths.repo, "objects", "info"), { recursive: true });
  if (!existsSync(altFile) || readFileSync(altFile, "utf8") !== alt) writeFileSync(altFile, alt, { mode: 0o600 });
  return { paths, exec, hostRepo, path, tls: gitTlsEnv(tlsEnv), ...(ssh ? { ssh } : {}) };
}

function run(g: Gate, args: string[], opts: { cwd?: string; stdin?: string | Uint8Array | ReadableStream<Uint8Array>; onStderr?: (s: string) => void; onStdout?: (s: string) => void; check?: boolean; token?: { value: string; host: string }; transport?: Transport; verdict?: Verdict } = {}): Promise<ExecResult> {
  const ssh = opts.transport === "ssh" ? g.ssh : undefined;
  return g.exec.run(gateGit(args, { ...(opts.transport ? { transport: opts.transport } : {}), credentials: opts.token !== undefined, ...(opts.verdict ? { hooksPath: g.paths.hooks } : {}), ...(ssh ? { sshCommand: ssh.command } : {}) }), {
    cwd: opts.cwd ?? g.paths.repo,
    env: { ...g.tls, ...ssh?.env, ...gitEnv({ path: g.path, home: g.paths.home, ...(opts.token ? { token: opts.token } : {}), ...(opts.verdict ? { verdict: opts.verdict } : {}) }) },
    replaceEnv: true,
    ...(opts.stdin !== undefined ? { stdin: opts.stdin } : {}),
    ...(opts.onStderr ? { onStderr: opts.onStderr } : {}),
    ...(opts.onStdout ? { onStdout: opts.onStdout } : {}),
    check: opts.check ?? true,
    timeoutMs: 15 * 60_000,
  });
}

/**
 * Remote name → URL from the HOST repo's config (the clone's config is the sandbox's to rewrite).
 * runs: git config --get-regexp ^remote\..*\.url$ (in the host repo)
 */
export async function hostRemotes(g: Gate): Promise<Record<string, string>> {
  const r = await run(g, ["config", "--get-regexp", "^remote\\..*\\.url$"], { cwd: g.hostRepo, check: false });
  const out: Record<string, string> = {};
  for (const line of r.stdout.split("\n")) {
    const m = /^remote\.(.+)\.url (.+)$/.exec(line.trim());
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}

/**
 * Commits the scan and the CI-file check may skip, because the user or the upstream already has them
 * (untrusted-by-origin): the tips of the host repo's refs the person made (`isUserRef`: not ref sync's
 * `refs/remotes/sandbox-*`, not an earlier sandbox's refs set aside under `refs/sbx-retired/*`, nothing of sbx's), and
 * the gate's `refs/remotes/<remote>/*` of the remote pushed to (what that upstream was seen to have: fetched, or pushed
 * after a clean scan). What the sandbox fetched from another remote (a third party's repository) is not what this
 * upstream has. Nothing else in the gate counts.
 * runs: git for-each-ref --format=%(objectname) %(refname) (in the host repo); git for-each-ref … refs/remotes/ (in the gate)
 */
export async function knownTips(g: Gate): Promise<(remote: string) => string[]> {
  // Read before the policy has said which remote a push goes to (it overlaps the pack's arrival), judged per remote.
  const [a, b] = await Promise.all([
    run(g, ["for-each-ref", "--format=%(objectname) %(refname)"], { cwd: g.hostRepo, check: false }),
    run(g, ["for-each-ref", "--format=%(objectname) %(refname)", "refs/remotes/"], { check: false }),
  ]);
  return (remote) => trustedTips(a.stdout, b.stdout, remote);
}

/**
 * The tips of the host repo's refs the person made (see knownTips), from its `for-each-ref` lines: what a sandbox sees
 * of the host's objects, and what a push may count as the user's.
 * runs: git for-each-ref --format=%(objectname) %(refname) (in the host repo)
 */
export async function userTips(g: Gate): Promise<string[]> {
  const r = await run(g, ["for-each-ref", "--format=%(objectname) %(refname)"], { cwd: g.hostRepo, check: false });
  return trustedTips(r.stdout, "");
}

/** Pure: the object ids of `for-each-ref` lines (host, gate) that the scan of a push to `remote` may treat as known. */
export function trustedTips(host: string, gate: string, remote?: string): string[] {
  const out = new Set<string>();
  for (const [text, isHost] of [[host, true], [gate, false]] as const) {
    for (const line of text.split("\n")) {
      const i = line.indexOf(" ");
      if (i < 0) continue;
      const sha = line.slice(0, i);
      const ref = line.slice(i + 1);
      if (!/^[0-9a-f]{40,64}$/.test(sha)) continue;
      // The gate's own refs count only as what the upstream has (its remotes' tracking refs); the host's only as the
      // person's own.
      if (!isUserRef(ref) || (!isHost && (remote === undefined || !ref.startsWith(`refs/remotes/${remote}/`)))) continue;
      out.add(sha);
    }
  }
  return [...out];
}

/**
 * What the upstream was seen to have (the gate's `refs/remotes/*`: pushed after a clean scan, or fetched through the
 * bridge) that the host repo holds too, as object ids: a sandbox's commit among them is not lost when the sandbox
 * goes, even if no host branch has it. None when the sandbox never used the bridge. The gate is read as its owner
 * (the daemon), the host repo as the person it belongs to.
 * runs: git -C <repo> remote; git --git-dir <gate> for-each-ref --format=%(objectname) refs/remotes/<remote>/…; git -C <repo> cat-file --batch-check
 */
export async function upstreamTips(exec: { gate: Exec; host: Exec }, gateDir: string, hostRepo: string): Promise<string[]> {
  const repo = gatePaths(gateDir).repo;
  if (!existsSync(join(repo, "HEAD"))) return [];
  const opts = { env: hostGitEnv(), replaceEnv: true, check: false } as const;
  // Only the host repo's own remotes count: a push to a URL the sandbox named is not the user's upstream.
  const names = await exec.host.run(["git", ...HOST_GIT_SAFE, "-C", hostRepo, "remote"], opts);
  const remotes = names.stdout.split("\n").filter((n) => /^[A-Za-z0-9._-]+$/.test(n) && isUserRef(`refs/remotes/${n}/`));
  if (remotes.length === 0) return [];
  const refs = await exec.gate.run(["git", ...HOST_GIT_SAFE, "--git-dir", repo, "for-each-ref", "--format=%(objectname)", ...remotes.map((r) => `refs/remotes/${r}/`)], opts);
  const shas = [...new Set(refs.stdout.split("\n").filter((l) => /^[0-9a-f]{40,64}$/.test(l)))];
  if (shas.length === 0) return [];
  const have = await exec.host.run(["git", ...HOST_GIT_SAFE, "-C", hostRepo, "cat-file", "--batch-check=%(objectname) %(objecttype)"], { ...opts, stdin: `${shas.join("\n")}\n` });
  return have.stdout.split("\n").flatMap((l) => {
    const [sha, type] = l.split(" ");
    return type === "commit" && sha ? [sha] : [];
  });
}

/**
 * Stores a pack the sandbox made (never a path into its clone), read as it arrives. `--fsck-objects` refuses
 * malformed objects, among them a commit with a NUL byte in its message: `git log` stops reading a message at
 * the NUL, so whatever follows it would reach the upstream unscanned.
 * runs: git index-pack --stdin --fix-thin --fsck-objects (in the gate)
 */
export async function indexPack(g: Gate, pack: Uint8Array | ReadableStream<Uint8Array>): Promise<void> {
  if (pack instanceof Uint8Array && pack.length === 0) return;
  if (!(pack instanceof Uint8Array)) {
    // Nothing sent at all is no pack to index (the scan then names what is missing), not index-pack's "early EOF".
    const p = await nonEmpty(pack);
    if (!p) return;
    pack = p;
  }
  try {
    await run(g, ["index-pack", "--stdin", "--fix-thin", "--fsck-objects"], { stdin: pack });
  } catch (e) {
    // A failed index-pack leaves its partial pack behind (tmp_pack_*); one operation runs in a gate at a time.
    const dir = join(g.paths.repo, "objects", "pack");
    for (const f of readdirSync(dir)) if (f.startsWith("tmp_pack_")) rmSync(join(dir, f), { force: true });
    throw (e instanceof ExecError && missingIn(e.stderr)) || e;
  }
}

/** The stream as it was, or null when it ends before its first byte (read up to that byte, no further). */
async function nonEmpty(s: ReadableStream<Uint8Array>): Promise<ReadableStream<Uint8Array> | null> {
  const reader = s.getReader();
  let first: Uint8Array | undefined;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return null;
    if (value.length > 0) {
      first = value;
      break;
    }
  }
  return new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(first);
    },
    async pull(c) {
      const { done, value } = await reader.read();
      if (done) c.close();
      else c.enqueue(value);
    },
    cancel(why) {
      return reader.cancel(why);
    },
  });
}

/**
 * A push needs an object that neither its pack nor anything the gate sees holds: not sent, and not the host repo's own
 * nor this sandbox's (another sandbox's, a removed one's, or none at all). `of`: the commit whose parent it is.
 */
export class MissingObject extends Error {
  constructor(
    readonly kind: "commit" | "tree" | "object" | "delta bases",
    readonly oid: string,
    readonly of?: string,
  ) {
    super(kind === "delta bases" ? `a pack with ${oid} unresolved deltas` : `missing ${kind} ${oid}${of ? ` (a parent of ${of})` : ""}`);
    this.name = "MissingObject";
  }
}

/**
 * Pure: what git 2.39 says when a walk, a diff or index-pack in the gate lacks an object, as a MissingObject (the
 * object, and the commit that needs it when git says), or undefined for any other failure.
 */
export function missingIn(stderr: string): MissingObject | undefined {
  const oid = "([0-9a-f]{40}(?:[0-9a-f]{24})?)";
  const parent = new RegExp(`Could not read ${oid}`).exec(stderr);
  if (parent) return new MissingObject("commit", parent[1]!, new RegExp(`parents of commit ${oid}`).exec(stderr)?.[1]);
  const tree = new RegExp(`unable to read tree ${oid}`).exec(stderr);
  if (tree) return new MissingObject("tree", tree[1]!);
  const other = new RegExp(`(?:unable to read |bad object |missing \\w+ object '?)${oid}`).exec(stderr);
  if (other) return new MissingObject("object", other[1]!);
  const deltas = /pack has (\d+) unresolved delta/.exec(stderr);
  if (deltas) return new MissingObject("delta bases", deltas[1]!);
  return undefined;
}

/**
 * Keeps the gate from growing without end: every push adds a pack, and `gc --auto` repacks once there are more than
 * gc.autoPackLimit (50) of them or many loose objects; below that it only counts (a few ms). In the foreground
 * (no detached gc outliving the bridge), local objects only (the host repo's, through alternates, are never touched).
 * runs: git -c gc.autoDetach=false gc --auto --quiet (in the gate)
 */
export async function maintainGate(g: Gate): Promise<void> {
  await run(g, ["-c", "gc.autoDetach=false", "gc", "--auto", "--quiet"], { check: false });
}

/** What a push's scan found: at most SCAN_MAX_FINDINGS findings (and how many more), or why it could not be read whole. */
export interface PushScan {
  findings: SecretFinding[];
  more: number;
  /** A bound the push went over (too many blobs to read whole): refused, saying so. */
  over?: string;
}

/**
 * Scans every line the pushed commits add (merges' own lines and binary files included), every pushed
 * commit's message and headers, and every pushed annotated tag's message, for secret-shaped strings. It is
 * also the completeness check: the walk fails on any pushed commit that is missing (as `rev-list` would)
 * and the diffs on any new tree or changed blob that is, so a pack that leans on objects the gate cannot
 * see is refused; unchanged trees and blobs are the parents' (checked the same way, or known).
 * Bounded (invariant 14): the log is read as it streams and dropped as it is read (a line of many MiB a window at a
 * time: LogScanner), the blobs it asks for are read one at a time as the log names them (each at most
 * MAX_ARCHIVE_BYTES, at most SCAN_MAX_BLOBS a push), and at most SCAN_MAX_FINDINGS findings are kept. The reading runs on
 * a thread of its own (scan-worker.ts), one chunk at a time, so the daemon's event loop serves other sandboxes meanwhile.
 * runs: git log -p --cc -a -U0 --pretty=raw --full-index --no-textconv --no-ext-diff --no-renames --stdin (in the gate,
 *       read as it streams); git cat-file --batch-check (the types of pushed tips the log did not show);
 *       git cat-file tag <oid> (each annotated tag); git cat-file blob <oid> (only for binary files a merge changed against every parent)
 */
export async function scanNew(g: Gate, shas: string[], tips: string[], hostValues: readonly SecretPattern[] = []): Promise<PushScan> {
  const stdin = [...shas, ...tips.map((t) => `^${t}`)].join("\n") + "\n";
  const patterns = [...SECRET_PATTERNS, ...hostValues];
  const thread = new ScanThread();
  let blobs = 0;
  let over: string | undefined;
  const seen = new Set<string>();
  // Rare (a merge that changed a binary file against every parent; a gzip or zip file): one read per blob, as bytes, as
  // soon as the log names it (so no list grows), scanned on the thread. What is not an archive is scanned as text.
  const readNamed = async (named: { u: UnshownBlob; whole: boolean }[]) => {
    for (const { u, whole } of named) {
      if (over !== undefined) return;
      const key = `${whole ? "w" : "a"}${u.blob}`;
      if (seen.has(key) || (!whole && seen.has(`w${u.blob}`))) continue;
      if (seen.size < 4 * SCAN_MAX_BLOBS) seen.add(key);
      if (++blobs > SCAN_MAX_BLOBS) {
        over = `the commits hold more than ${SCAN_MAX_BLOBS} archives (or binary files a merge changed) to read whole; push fewer at a time`;
        return;
      }
      const bytes = await readBlob(g, u.blob, MAX_ARCHIVE_BYTES);
      if (bytes === null) continue; // over the bound: not unpacked (its text lines were scanned in the diff)
      await thread.ask({ t: "blob", u, whole, bytes });
    }
  };
  try {
    await thread.ask({ t: "start", patterns: patterns.map((p) => ({ id: p.id, description: p.description, source: p.regex.source, flags: p.regex.flags })), watch: shas });
    const log = streamRun(g.exec, gateGit([...SCAN_LOG_ARGS]), { cwd: g.paths.repo, env: { ...g.tls, ...gitEnv({ path: g.path, home: g.paths.home }) }, replaceEnv: true, stdin, timeoutMs: 15 * 60_000 });
    const reader = log.stdout.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        // One chunk at a time: the next is read once the thread has read this one (git waits meanwhile).
        await readNamed((await thread.ask({ t: "log", bytes: value })).named);
        if (over !== undefined) break;
      }
    } finally {
      if (over !== undefined) void reader.cancel().catch(() => undefined);
      reader.releaseLock();
    }
    const end = await log.done;
    if (over !== undefined) return { findings: [], more: 0, over };
    // A pack that leans on an object the gate cannot see (another sandbox's) is refused by name, not with git's words.
    if (end.exitCode !== 0) throw missingIn(end.stderr) ?? new Error(`git log (the scan) exited ${end.exitCode}: ${end.stderr.trim().split("\n").slice(-3).join(" | ")}`);
    await readNamed((await thread.ask({ t: "flush" })).named);
    if (over !== undefined) return { findings: [], more: 0, over };
    const r = await thread.ask({ t: "finish" });
    // A pushed tip the log did not show as a commit is a tag (log shows what it points at) or a commit
    // already known: only those are looked at, so a push of new commits costs no extra process.
    const commits = new Set(r.commits);
    const tagFindings = await scanTags(g, shas.filter((s) => !commits.has(s)));
    const all = [...r.findings, ...tagFindings];
    return { findings: all.slice(0, SCAN_MAX_FINDINGS), more: r.more + Math.max(0, all.length - SCAN_MAX_FINDINGS) };
  } finally {
    thread.close();
  }
}

/** The scan's thread (scan-worker.ts): one message at a time, each answered once read; its failure fails the scan. */
class ScanThread {
  private readonly worker = new Worker(new URL("./scan-worker.ts", import.meta.url).href);
  private pending: { resolve: (m: FromScan) => void; reject: (e: Error) => void } | null = null;
  private failed: Error | null = null;

  constructor() {
    this.worker.onmessage = (ev: MessageEvent<FromScan>) => {
      const p = this.pending;
      this.pending = null;
      if (ev.data.t === "error") p?.reject(new Error(`the push scan failed: ${ev.data.message}`));
      else p?.resolve(ev.data);
    };
    this.worker.onerror = (ev: ErrorEvent) => {
      this.failed = new Error(`the push scan's thread failed: ${ev.message}`);
      this.pending?.reject(this.failed);
      this.pending = null;
    };
  }

  ask(m: Extract<ToScan, { t: "finish" }>): Promise<Extract<FromScan, { t: "done" }>>;
  ask(m: Exclude<ToScan, { t: "finish" }>): Promise<Extract<FromScan, { t: "ok" }>>;
  ask(m: ToScan): Promise<FromScan> {
    if (this.failed) return Promise.reject(this.failed);
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.worker.postMessage(m);
    });
  }

  close(): void {
    this.worker.terminate();
  }
}

export { scanArchive } from "./scan";

/**
 * A blob's bytes, or null when it is larger than `max`.
 * runs: git cat-file -s <oid>; git cat-file blob <oid> (in the gate)
 */
async function readBlob(g: Gate, blob: string, max: number): Promise<Uint8Array | null> {
  const size = Number((await run(g, ["cat-file", "-s", blob])).stdout.trim());
  if (!(size <= max)) return null;
  const r = streamRun(g.exec, gateGit(["cat-file", "blob", blob]), { cwd: g.paths.repo, env: { ...g.tls, ...gitEnv({ path: g.path, home: g.paths.home }) }, replaceEnv: true, timeoutMs: 60_000 });
  const bytes = new Uint8Array(await new Response(r.stdout).arrayBuffer());
  const done = await r.done;
  if (done.exitCode !== 0) throw new Error(`git cat-file blob ${blob} exited ${done.exitCode}: ${done.stderr.trim()}`);
  return bytes;
}

/** How deep a chain of tags pointing at tags the gate follows before it refuses the push. */
const MAX_TAG_DEPTH = 8;

/**
 * The messages of the annotated tags among the pushed tips, and of any tag they point at (the commits
 * they lead to are in the log walk).
 * runs: git cat-file --batch-check=%(objectname) %(objecttype) (in the gate); git cat-file tag <oid> (each tag)
 */
export async function scanTags(g: Gate, shas: string[]): Promise<SecretFinding[]> {
  if (shas.length === 0) return [];
  const r = await run(g, ["cat-file", "--batch-check=%(objectname) %(objecttype)"], { stdin: shas.join("\n") + "\n" });
  // The log skips a pushed tip it cannot find (--ignore-missing, so a known tip the gate lacks cuts nothing): here it is
  // refused.
  const gone = /^([0-9a-f]{40,64}) missing$/m.exec(r.stdout);
  if (gone) throw new MissingObject("object", gone[1]!);
  let tags = r.stdout.split("\n").flatMap((l) => (/^[0-9a-f]{40,64} tag$/.test(l) ? [l.slice(0, l.indexOf(" "))] : []));
  const findings: SecretFinding[] = [];
  const seen = new Set<string>();
  for (let depth = 0; tags.length > 0; depth++) {
    if (depth >= MAX_TAG_DEPTH) throw new Error(`a chain of more than ${MAX_TAG_DEPTH} tags pointing at tags`);
    const next: string[] = [];
    const read = await Promise.all(tags.map((t) => run(g, ["cat-file", "tag", t])));
    tags.forEach((t, i) => {
      seen.add(t);
      const { tag, findings: f } = scanTag(t, read[i]!.stdout);
      findings.push(...f);
      if (tag.type === "tag" && /^[0-9a-f]{40,64}$/.test(tag.object) && !seen.has(tag.object)) next.push(tag.object);
    });
    tags = [...new Set(next)];
  }
  return findings;
}

/** git in the gate, for a reader of its objects (ls-tree, cat-file): the gate's pinned config, never a check. */
export function gateReader(g: Gate): (args: string[]) => Promise<ExecResult> {
  return (args) => run(g, args, { check: false });
}

/** Sets (or deletes, for null) refs in the gate in one transaction. */
export async function updateRefs(g: Gate, updates: Array<[ref: string, sha: string | null]>): Promise<void> {
  if (updates.length === 0) return;
  // runs: git update-ref --stdin (in the gate)
  const stdin = updates.map(([ref, sha]) => (sha === null ? `delete ${ref}` : `update ${ref} ${sha}`)).join("\n") + "\n";
  await run(g, ["update-ref", "--stdin"], { stdin });
}

/**
 * The paths the commits new to the remote change: every non-merge commit's, and a merge's where it differs from all its
 * parents (what the merge itself brought, an "evil merge" included), never what a merged parent already had.
 * runs: git log --diff-merges=dense-combined --name-only --no-renames --format= -z --ignore-missing --stdin (tips, then ^known; in the gate)
 */
export async function changedPaths(g: Gate, shas: string[], tips: string[]): Promise<Set<string>> {
  const stdin = [...shas, ...tips.map((t) => `^${t}`)].join("\n") + "\n";
  // -z: names as they are. Without it git quotes a name with a quote, a tab or a non-ASCII byte ("…\303\274.yml"), and
  // the quoted form matches no CI path.
  const r = await run(g, ["log", "--diff-merges=dense-combined", "--name-only", "--no-renames", "--format=", "-z", "--ignore-missing", "--stdin"], { stdin }).catch((e: unknown) => {
    throw (e instanceof ExecError && missingIn(e.stderr)) || e;
  });
  return new Set(r.stdout.split("\0").map((l) => l.replace(/^\n+/, "")).filter((l) => l !== ""));
}

/** The remote's default branch as the host repo knows it (`refs/remotes/<remote>/HEAD`), if it does. runs: git symbolic-ref -q … (host repo) */
export async function defaultBranchOf(g: Gate, remote: string): Promise<string | undefined> {
  const r = await run(g, ["symbolic-ref", "-q", `refs/remotes/${remote}/HEAD`], { cwd: g.hostRepo, check: false });
  const ref = r.stdout.trim();
  return ref.startsWith(`refs/remotes/${remote}/`) ? ref.slice(`refs/remotes/${remote}/`.length) : undefined;
}

/** The gate's record that this sandbox created `dst` on `remote` (so it may delete it). Pure. */
export function createdMarker(remote: string, dst: string): string {
  return `refs/sbx-created/${remote}/${dst.slice("refs/".length)}`;
}

/** Whether `ancestor` is in `commit`'s history (false when either is missing). */
export async function isAncestor(g: Gate, ancestor: string, commit: string): Promise<boolean> {
  // runs: git merge-base --is-ancestor <ancestor> <commit> (in the gate)
  const r = await run(g, ["merge-base", "--is-ancestor", ancestor, commit], { check: false });
  return r.exitCode === 0;
}

export async function readRef(g: Gate, ref: string): Promise<string | undefined> {
  // runs: git rev-parse --verify -q <ref> (in the gate)
  const r = await run(g, ["rev-parse", "--verify", "-q", ref], { check: false });
  const s = r.stdout.trim();
  return /^[0-9a-f]{40,64}$/.test(s) ? s : undefined;
}

/**
 * Runs a network git command in the gate with the token, streaming stderr. With `verdict` (pushes), the
 * gate's pre-push hook holds the push, after the remote's ref advertisement and before any object is
 * sent, until the bridge writes its verdict; anything but a yes aborts the push.
 */
export function remoteGit(g: Gate, url: string, token: string | undefined, args: string[], onStderr: (s: string) => void, cwd?: string, verdict?: Verdict): Promise<ExecResult> {
  if (verdict) ensurePrePushHook(g.paths);
  const transport = transportOf(url);
  return run(g, args, {
    transport,
    ...(token && transport !== "ssh" && credentialHost(url) ? { token: { value: token, host: credentialHost(url) } } : {}),
    onStderr,
    check: false,
    ...(cwd ? { cwd } : {}),
    ...(verdict ? { verdict } : {}),
  });
}

/** The lines the pre-push hook writes to the push's stderr (read and removed by the bridge): each ref the push would update, with what the remote has now. */
export const HOOK_REF = "sbx-gate-ref";
export const HOOK_REFS_END = "sbx-gate-refs-end";

/**
 * The gate's pre-push hook. git runs it after the remote's ref advertisement and before it packs or sends
 * anything. It reports each ref the push would update, with the remote's current value, on the push's
 * stderr (the bridge reads and removes those lines: its fast-forward check), then waits for one line on
 * the push's own FIFO and lets the push go on only if that line is `ok <nonce>`.
 * It never waits for ever: the FIFO is opened read-write first (which does not block), so the read-only
 * open after it returns at once, and the read-write end is closed again. From then on the bridge, which
 * holds the FIFO open from before the push starts, is its only writer: the read returns the verdict, or
 * end-of-file as soon as the bridge is gone, whether it died before the hook opened the FIFO or after.
 * SIGPIPE is ignored, so a dead bridge (its end of stderr gone) cannot end the hook in a way that passes.
 * Every way out but `ok <nonce>` exits non-zero. POSIX sh only (dash, macOS sh).
 */
export const PRE_PUSH_HOOK = `#!/bin/sh
# sbx gate: hold this push until the bridge's secret scan has passed (written by sbx; not the sandbox's).
test -n "$SBX_VERDICT_FIFO" && test -n "$SBX_VERDICT_NONCE" || exit 1
trap '' PIPE
while read -r lr lo rr ro; do printf '\\n${HOOK_REF} %s %s %s %s\\n' "$SBX_VERDICT_NONCE" "$rr" "$ro" "$lo" >&2; done
printf '\\n${HOOK_REFS_END} %s\\n' "$SBX_VERDICT_NONCE" >&2
exec 3<>"$SBX_VERDICT_FIFO" 4<"$SBX_VERDICT_FIFO" 3>&-
v=
read -r v <&4
test "$v" = "ok $SBX_VERDICT_NONCE"
`;
/** A ref the held push would update, as its pre-push hook saw it: what the remote has now (zeros: nothing). */
export interface HookRef {
  remoteRef: string;
  remoteSha: string;
  localSha: string;
}

/**
 * Takes the pre-push hook's lines out of the push's stderr (passing everything else on, in order) and
 * resolves `refs` when the hook has listed them all. Only lines with this push's nonce count.
 */
export function hookRefsReader(nonce: string, emit: (s: string) => void): { write(s: string): void; end(): void; refs: Promise<HookRef[]> } {
  let resolve!: (r: HookRef[]) => void;
  const refs = new Promise<HookRef[]>((r) => (resolve = r));
  const seen: HookRef[] = [];
  const marker = new RegExp(`\\n(?:${HOOK_REF} ${nonce} (\\S+) ([0-9a-f]{40,64}) (\\S+)|${HOOK_REFS_END} ${nonce})\\n`);
  const start = `\n${HOOK_REF.slice(0, HOOK_REF.lastIndexOf("-"))}`;
  let buf = "";
  return {
    refs,
    write(s) {
      buf += s;
      for (let m = marker.exec(buf); m; m = marker.exec(buf)) {
        if (m.index > 0) emit(buf.slice(0, m.index));
        buf = buf.slice(m.index + m[0].length);
        if (m[1] !== undefined) seen.push({ remoteRef: m[1], remoteSha: m[2]!, localSha: m[3]! });
        else resolve(seen);
      }
      // Hold back only what may be the start of a marker still arriving.
      let keep = buf.lastIndexOf(start);
      if (keep !== -1 && buf.indexOf("\n", keep + 1) !== -1) keep = -1;
      if (keep === -1) for (let k = Math.min(start.length - 1, buf.length); k > 0; k--) if (start.startsWith(buf.slice(buf.length - k))) { keep = buf.length - k; break; }
      if (keep === -1) keep = buf.length;
      if (keep > 0) emit(buf.slice(0, keep));
      buf = buf.slice(keep);
    },
    end() {
      if (buf) emit(buf);
      buf = "";
    },
  };
}

/**
 * (Re)writes the pre-push hook unless it is already exactly ours: a regular 0700 file in the host-owned gate.
 * Checked before every push, because a hook that is missing or not executable is skipped by git.
 */
export function ensurePrePushHook(paths: GatePaths): void {
  const file = join(paths.hooks, "pre-push");
  const st = lstatSync(file, { throwIfNoEntry: false });
  if (st && st.isFile() && (st.mode & 0o777) === 0o700 && readFileSync(file, "utf8") === PRE_PUSH_HOOK) return;
  mkdir0700(paths.hooks);
  rmSync(file, { force: true, recursive: true });
  writeFileSync(file, PRE_PUSH_HOOK, { mode: 0o700 });
  chmodSync(file, 0o700);
}

/** One push's verdict channel: a FIFO in a fresh 0700 scratch dir, held open (read-write) by the bridge. */
export interface Verdict {
  fifo: string;
  nonce: string;
  fd: number;
  dir: string;
}

/**
 * Makes the FIFO and opens it read-write (never blocks; keeps the pipe alive until the bridge closes it).
 * runs: mkfifo -m 600 <gate>/tmp/v-<random>/verdict
 */
export async function openVerdict(g: Gate): Promise<Verdict> {
  const dir = scratchDir(g, "v");
  mkdir0700(dir);
  const fifo = join(dir, "verdict");
  await g.exec.run(["mkfifo", "-m", "600", fifo], { env: { PATH: g.path, LC_ALL: "C" }, replaceEnv: true, cwd: dir });
  const fd = openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK);
  return { fifo, nonce: randomBytes(16).toString("hex"), fd, dir };
}

/** Writes the verdict the hook waits for: `ok <nonce>` lets the push proceed, anything else stops it. */
export function giveVerdict(v: Verdict, ok: boolean): void {
  writeSync(v.fd, ok ? `ok ${v.nonce}\n` : "no\n");
}

export function closeVerdict(v: Verdict): void {
  try {
    closeSync(v.fd);
  } catch {}
  rmSync(v.dir, { recursive: true, force: true });
}

/** Ref name → object id for refs under the given prefixes in the gate. */
// runs: git for-each-ref --format=%(objectname) %(refname) <prefixes> (in the gate)
export async function listRefs(g: Gate, prefixes: string[], repo?: string): Promise<Record<string, string>> {
  const r = await run(g, ["for-each-ref", "--format=%(objectname) %(refname)", ...prefixes], { check: false, ...(repo ? { cwd: repo } : {}) });
  const out: Record<string, string> = {};
  for (const line of r.stdout.split("\n")) {
    const [sha, ref] = line.split(" ");
    if (sha && ref) out[ref] = sha;
  }
  return out;
}

/**
 * Writes the person's ref tips as the host view's refs (ALTERNATE_REFS): a fetch offers the remote those it can read as
 * what it has, so it takes only what is new. Refs of sbx's own (other sandboxes') are not among them.
 */
export function setViewTips(g: Gate, tips: readonly string[]): void {
  writeFileSync(join(g.paths.views, "host", "tips"), tips.map((t) => `${t}\n`).join(""), { mode: 0o600 });
}

/** Which of `shas` the gate (with the host's own objects and this sandbox's store) has. */
// runs: git cat-file --batch-check (in the gate)
export async function present(g: Gate, shas: string[]): Promise<string[]> {
  if (shas.length === 0) return [];
  const r = await run(g, ["cat-file", "--batch-check=%(objectname)"], { stdin: shas.join("\n") + "\n", check: false });
  return r.stdout.split("\n").filter((l) => /^[0-9a-f]{40,64}$/.test(l.trim()));
}

/**
 * A bundle of `refs` minus what the sandbox has, or null when it would be empty.
 * runs: git bundle create <tmp> --stdin (in the gate or the given repo)
 */
export async function makeBundle(g: Gate, refs: string[], exclude: string[], repo?: string): Promise<Uint8Array | null> {
  const file = join(g.paths.tmp, `b-${randomBytes(8).toString("hex")}.bundle`);
  try {
    // Pseudo-options (--all) are not accepted on stdin by git 2.39; they go on argv.
    const opts = refs.filter((r) => r.startsWith("--"));
    const stdin = [...refs.filter((r) => !r.startsWith("--")), ...exclude.map((s) => `^${s}`)].join("\n") + "\n";
    const r = await run(g, ["bundle", "create", "--quiet", file, ...opts, "--stdin"], { stdin, check: false, ...(repo ? { cwd: repo } : {}) });
    if (r.exitCode !== 0) {
      if (/empty bundle/i.test(r.stderr)) return null;
      throw new Error(`git bundle create failed: ${r.stderr.trim()}`);
    }
    return new Uint8Array(readFileSync(file));
  } finally {
    rmSync(file, { force: true });
  }
}

export function scratchDir(g: Gate, prefix: string): string {
  const d = join(g.paths.tmp, `${prefix}-${randomBytes(8).toString("hex")}`);
  return d;
}
