// The push gate: a host-owned bare repo where the sandbox's commits land, are scanned, and leave for the real remote.
// The gate's git is gate-git.ts's, its pre-push hook and verdict gate-hook.ts's, the push's scan gate-scan.ts's, which
// token goes where tokens.ts's.
import { mkdirSync, writeFileSync, rmSync, readFileSync, readdirSync, existsSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { hostGitEnv, HOST_GIT_SAFE, validateRemoteName } from "../sync/git-argv";
import { ensureView } from "../sync/object-view";
import { ExecError, type Exec, type ExecResult } from "../sys/exec";
import { isUserRef } from "../core/user-refs";
import { gatePaths, gateGit, gateRun, gitEnv, gitTlsEnv, mkdir0700, tlsEnvNow, transportOf, type Gate, type GateSsh, type TlsEnv } from "./gate-git";
import { ensurePrePushHook, type Verdict } from "./gate-hook";
import { credentialHost } from "./tokens";
import { sshRoute } from "./gate-ssh";
import { readRefFiles } from "./ref-files";

/**
 * Creates the gate if missing; its alternates are views (sync/object-view.ts) of the host repo's own objects
 * (host-owned, read-only to the sandbox) and of this sandbox's store (`store`: its name), so the sandbox sends only
 * what the host does not have, and nothing this sandbox did not make or cannot see counts as there: git follows
 * alternates recursively, and the host's own list leads into every sandbox's store (sandboxes-apart).
 * runs: git rev-parse --git-common-dir --git-dir (in the host repo); git init --bare (the gate)
 */
export async function ensureGate(exec: Exec, gateDir: string, hostRepo: string, path: string, tlsEnv?: TlsEnv, ssh?: GateSsh, store?: string): Promise<Gate> {
  const paths = gatePaths(gateDir);
  mkdir0700(gateDir);
  for (const d of [paths.home, paths.tmp, paths.ghCwd, paths.hooks]) mkdir0700(d);
  ensurePrePushHook(paths);
  const env = gitEnv({ path, home: paths.home });
  if (!existsSync(join(paths.repo, "HEAD"))) {
    await exec.run(gateGit(["init", "--bare", "--quiet", "--template=", paths.repo]), { env, replaceEnv: true, cwd: gateDir });
  }
  const [common = "", gitDir] = (await exec.run(gateGit(["rev-parse", "--path-format=absolute", "--git-common-dir", "--git-dir"]), { env, replaceEnv: true, cwd: hostRepo })).stdout.trim().split("\n");
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
  // The files `git config` reads in the host repo for the gate's git (no system or global config): where its remotes are.
  const configFiles = [join(common, "config"), ...(gitDir && gitDir !== common ? [join(gitDir, "config.worktree")] : [join(common, "config.worktree")])];
  return { paths, exec, hostRepo, hostGitDir: common, path, tls: () => gitTlsEnv(tlsEnvNow(tlsEnv)), ...(ssh ? { ssh } : {}), remotes: { files: configFiles } };
}

/**
 * Remote name → URL from the HOST repo's config (the clone's config is the sandbox's to rewrite). Read again only when
 * the config files' bytes changed since the last read (a push starts no process for it then); never kept for a config
 * with an include, whose other files this does not look at.
 * runs: git config --get-regexp ^remote\..*\.url$ (in the host repo)
 */
export async function hostRemotes(g: Gate): Promise<Record<string, string>> {
  const cache = g.remotes;
  const before = cache ? configBytes(cache.files) : undefined;
  if (cache?.value && before !== undefined && cache.key === before) return { ...cache.value };
  const r = await gateRun(g, ["config", "--get-regexp", "^remote\\..*\\.url$"], { cwd: g.hostRepo, check: false });
  const out: Record<string, string> = {};
  for (const line of r.stdout.split("\n")) {
    const m = /^remote\.(.+)\.url (.+)$/.exec(line.trim());
    if (m) out[m[1]!] = m[2]!;
  }
  // Kept only if the files were the same before and after git read them.
  if (cache && before !== undefined && r.exitCode <= 1 && configBytes(cache.files) === before) {
    cache.key = before;
    cache.value = { ...out };
  }
  return out;
}

/** The config files' contents as one key (a missing file counts as missing), or undefined: unreadable, or it includes others. */
function configBytes(files: readonly string[]): string | undefined {
  let key = "";
  for (const f of files) {
    let text: string;
    try {
      text = readFileSync(f, "latin1");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") return undefined;
      text = "\u0000missing";
    }
    if (/\[\s*include/i.test(text)) return undefined;
    key += `${f}\u0000${text.length}\u0000${text}\u0000`;
  }
  return key;
}

/**
 * Commits the scan and the CI-file check may skip, because the user or the upstream already has them
 * (untrusted-by-origin): the tips of the host repo's refs the person made (`isUserRef`: not ref sync's
 * `refs/remotes/sandbox-*`, not an earlier sandbox's refs set aside under `refs/sbx-retired/*`, nothing of sbx's), and
 * the gate's `refs/remotes/<remote>/*` of the remote pushed to (what that upstream was seen to have: fetched, or pushed
 * after a clean scan). What the sandbox fetched from another remote (a third party's repository) is not what this
 * upstream has. Nothing else in the gate counts.
 * Both are read from their files (ref-files.ts: both repositories are host-owned), by git only where that cannot be done.
 * runs: git for-each-ref --format=%(objectname) %(refname) (in the host repo); git for-each-ref … refs/remotes/ (in the gate)
 */
export async function knownTips(g: Gate): Promise<KnownTips> {
  // Read before the policy has said which remote a push goes to (it overlaps the pack's arrival), judged per remote.
  const hostFiles = g.hostGitDir ? readRefFiles(g.hostGitDir, "refs/", isUserRef) : undefined;
  const gateFiles = readRefFiles(g.paths.repo, "refs/remotes/");
  const [host, gate] = await Promise.all([
    hostFiles ?? gateRun(g, ["for-each-ref", "--format=%(objectname) %(refname)"], { cwd: g.hostRepo, check: false }).then((r) => r.stdout),
    gateFiles ?? gateRun(g, ["for-each-ref", "--format=%(objectname) %(refname)", "refs/remotes/"], { check: false }).then((r) => r.stdout),
  ]);
  const tracking = new Map<string, string>();
  for (const line of gate.split("\n")) {
    const i = line.indexOf(" ");
    if (i > 0) tracking.set(line.slice(i + 1), line.slice(0, i));
  }
  return {
    of: (remote) => trustedTips(host, gate, remote),
    tracking: (remote, dst) => (dst.startsWith("refs/heads/") ? tracking.get(`refs/remotes/${remote}/${dst.slice("refs/heads/".length)}`) : undefined),
  };
}

/** What a push knows before it goes out: the tips it need not scan, and what the gate last saw the remote's refs at. */
export interface KnownTips {
  /** The tips a push to `remote` need not scan past (trustedTips). */
  of(remote: string): string[];
  /**
   * Where the gate last saw the branch `dst` (`refs/heads/…`) on `remote` (its tracking ref: pushed after a clean scan, or
   * fetched): the push's guess of what the pre-push hook will report, so its fast-forward check can be ready before. A
   * guess only: the hook's report is what counts.
   */
  tracking(remote: string, dst: string): string | undefined;
}

/**
 * The tips of the host repo's refs the person made (see knownTips), from its `for-each-ref` lines: what a sandbox sees
 * of the host's objects, and what a push may count as the user's.
 * runs: git for-each-ref --format=%(objectname) %(refname) (in the host repo)
 */
export async function userTips(g: Gate): Promise<string[]> {
  const r = await gateRun(g, ["for-each-ref", "--format=%(objectname) %(refname)"], { cwd: g.hostRepo, check: false });
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
    await gateRun(g, ["index-pack", "--stdin", "--fix-thin", "--fsck-objects"], { stdin: pack });
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
 * gc.autoPackLimit (50) of them or many loose objects (gcDue: git's own count, made here so that the pushes in between
 * start no process for it). In the foreground (no detached gc outliving the bridge), local objects only (the host
 * repo's, through alternates, are never touched).
 * runs: git -c gc.autoDetach=false gc --auto --quiet (in the gate, when gcDue)
 */
export async function maintainGate(g: Gate): Promise<void> {
  if (!gcDue(g.paths.repo)) return;
  await gateRun(g, ["-c", "gc.autoDetach=false", "gc", "--auto", "--quiet"], { check: false });
}

/**
 * Whether `git gc --auto` would do anything in a repository with git's defaults (the gate sets no gc.* of its own):
 * git 2.39's need_to_gc, more than gc.autoPackLimit (50) local packs without a `.keep`, or more than
 * ceil(gc.auto / 256) = 27 loose objects in `objects/17` (git's sample of one fan-out directory). When unsure, yes.
 */
export function gcDue(repo: string): boolean {
  const objects = join(repo, "objects");
  let files: string[];
  try {
    files = readdirSync(join(objects, "pack"));
  } catch {
    return true;
  }
  const keep = new Set(files.filter((f) => f.endsWith(".keep")).map((f) => f.slice(0, -".keep".length)));
  if (files.filter((f) => f.endsWith(".pack") && !keep.has(f.slice(0, -".pack".length))).length > 50) return true;
  let loose: string[];
  try {
    loose = readdirSync(join(objects, "17"));
  } catch {
    return false;
  }
  return loose.filter((f) => /^(?:[0-9a-f]{38}|[0-9a-f]{62})$/.test(f)).length > 27;
}

/** Sets (or deletes, for null) refs in the gate in one transaction. */
export async function updateRefs(g: Gate, updates: Array<[ref: string, sha: string | null]>): Promise<void> {
  if (updates.length === 0) return;
  // runs: git update-ref --stdin (in the gate)
  const stdin = updates.map(([ref, sha]) => (sha === null ? `delete ${ref}` : `update ${ref} ${sha}`)).join("\n") + "\n";
  await gateRun(g, ["update-ref", "--stdin"], { stdin });
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
  const r = await gateRun(g, ["log", "--diff-merges=dense-combined", "--name-only", "--no-renames", "--format=", "-z", "--ignore-missing", "--stdin"], { stdin }).catch((e: unknown) => {
    throw (e instanceof ExecError && missingIn(e.stderr)) || e;
  });
  return new Set(r.stdout.split("\0").map((l) => l.replace(/^\n+/, "")).filter((l) => l !== ""));
}

/** The remote's default branch as the host repo knows it (`refs/remotes/<remote>/HEAD`), if it does. runs: git symbolic-ref -q … (host repo) */
export async function defaultBranchOf(g: Gate, remote: string): Promise<string | undefined> {
  const r = await gateRun(g, ["symbolic-ref", "-q", `refs/remotes/${remote}/HEAD`], { cwd: g.hostRepo, check: false });
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
  const r = await gateRun(g, ["merge-base", "--is-ancestor", ancestor, commit], { check: false });
  return r.exitCode === 0;
}

export async function readRef(g: Gate, ref: string): Promise<string | undefined> {
  // runs: git rev-parse --verify -q <ref> (in the gate)
  const r = await gateRun(g, ["rev-parse", "--verify", "-q", ref], { check: false });
  const s = r.stdout.trim();
  return /^[0-9a-f]{40,64}$/.test(s) ? s : undefined;
}

/**
 * Runs a network git command in the gate with the token, streaming stderr. With `verdict` (pushes), the
 * gate's pre-push hook holds the push, after the remote's ref advertisement and before any object is
 * sent, until the bridge writes its verdict; anything but a yes aborts the push.
 */
export async function remoteGit(g: Gate, url: string, token: string | undefined, args: string[], onStderr: (s: string) => void, cwd?: string, verdict?: Verdict): Promise<ExecResult> {
  if (verdict) ensurePrePushHook(g.paths);
  const transport = transportOf(url);
  // The host's parent proxy, lent for this call: proxy variables for git's http, a tunnel to exactly the remote's host
  // and port for its ssh (gate-ssh.ts).
  let parent: { env: Record<string, string>; release(): void; sshOption?: string } | null = null;
  if (transport === "ssh") {
    const route = await sshRoute(g, url);
    if (route.kind === "refused") {
      const stderr = `sbx: ${route.why}\n`;
      onStderr(stderr);
      return { argv: [], exitCode: 128, stdout: "", stderr };
    }
    if (route.kind === "parent") parent = route.through;
  } else if (g.parent) parent = await g.parent.lease(url);
  try {
    return await gateRun(g, args, {
      transport,
      ...(token && transport !== "ssh" && credentialHost(url) ? { token: { value: token, host: credentialHost(url), scheme: transport } } : {}),
      onStderr,
      check: false,
      ...(cwd ? { cwd } : {}),
      ...(verdict ? { verdict } : {}),
      ...(parent ? { proxy: parent.env } : {}),
      ...(parent?.sshOption ? { sshOption: parent.sshOption } : {}),
    });
  } finally {
    parent?.release();
  }
}

/** Ref name → object id for refs under the given prefixes in the gate. */
// runs: git for-each-ref --format=%(objectname) %(refname) <prefixes> (in the gate)
export async function listRefs(g: Gate, prefixes: string[], repo?: string): Promise<Record<string, string>> {
  const r = await gateRun(g, ["for-each-ref", "--format=%(objectname) %(refname)", ...prefixes], { check: false, ...(repo ? { cwd: repo } : {}) });
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
  const r = await gateRun(g, ["cat-file", "--batch-check=%(objectname)"], { stdin: shas.join("\n") + "\n", check: false });
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
    const r = await gateRun(g, ["bundle", "create", "--quiet", file, ...opts, "--stdin"], { stdin, check: false, ...(repo ? { cwd: repo } : {}) });
    if (r.exitCode !== 0) {
      if (/empty bundle/i.test(r.stderr)) return null;
      throw new Error(`git bundle create failed: ${r.stderr.trim()}`);
    }
    return new Uint8Array(readFileSync(file));
  } finally {
    rmSync(file, { force: true });
  }
}
