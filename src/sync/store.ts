// The host-owned object store of each sandbox: where its verified commits live, apart from the host's own objects.
//
// `<repo>/.git/sbx/<name>.git` is a bare repo the host user owns and no sandbox can see. Its alternates lead to a view
// of the host repo's own objects, `<repo>/.git/sbx/_host-objects` (object-view.ts: links to the pack and loose dirs,
// never to the host's list of alternates), so a thin pack resolves against the host's objects and nothing is stored
// twice, but nothing a sandbox sends is judged against, or completed from, another sandbox's store: git follows
// alternates recursively, and the host repo's alternates list each store (so `git log sandbox-<name>/main` works on the
// host). Sandboxes read the host's objects with that list masked: one sandbox never reaches another's store. When the
// person puts a sandbox's commits on a branch of their own, promotion copies those objects into the host's own objects
// as a kept pack, where every sandbox sees them (and a `git gc`, which drops local copies of what an alternate holds,
// keeps them). When a sandbox is removed, what the host keeps of it (what its `sandbox-<name>/*` refs reach) moves into
// the retired store, `<repo>/.git/sbx/_retired.git`: listed in the host's alternates like the others, so never where a
// sandbox reads. Only promotion and retiring, which act for the person on their refs, read through every store.
import { existsSync, lstatSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { SbxError } from "../core/errors";
import { streamRun, type Exec, type ExecResult } from "../sys/exec";
import { hostGitEnv, HOST_GIT_SAFE, validateRemoteName } from "./git-argv";
import { isViewOf, viewLinks } from "./object-view";
import { packObjectCount } from "./sandbox-git";
import { isUserRef } from "../core/user-refs";

/** The store of sandbox `name` in `repo`. Pure. */
export function storeDir(repo: string, name: string): string {
  validateRemoteName(`sandbox-${name}`);
  return join(repo, ".git", "sbx", `${name}.git`);
}

/** The line the host repo's `objects/info/alternates` gets for a store (relative: the repo may move). Pure. */
export function storeAlternate(name: string): string {
  return `../sbx/${name}.git/objects`;
}

/**
 * Where a removed sandbox's kept objects go: one store for every removed sandbox of the repo (one line in the host's
 * alternates however many are removed). `_` starts no sandbox name, so it is nobody's store.
 */
export const RETIRED = "_retired";

/** The retired store of `repo`. Pure. */
export function retiredStoreDir(repo: string): string {
  return join(repo, ".git", "sbx", `${RETIRED}.git`);
}

/** The view of the host's own objects every store borrows from (`_` starts no sandbox name, `.git` does not end it). */
export const HOST_VIEW = "_host-objects";

/** The host view of `repo`. Pure. */
export function hostViewDir(repo: string): string {
  return join(repo, ".git", "sbx", HOST_VIEW);
}

/** The line a store's `objects/info/alternates` holds: the host view, relative to the store's objects dir. */
export const STORE_ALTERNATES = `../../${HOST_VIEW}`;
/** The host's objects as the view links them (relative to the view, so the repo may move). */
const VIEW_OF = "../../objects";

const SEEN = "refs/sbx-seen/";

/**
 * One store operation per repo at a time in this process (the daemon: every sandbox's ref sync and the creates of one
 * repo share its stores and its alternates file). Another process (a second daemon of another state root) is covered
 * by git's own locks and by each step being safe to run twice.
 */
const queues = new Map<string, Promise<unknown>>();
function serialized<T>(repo: string, fn: () => Promise<T>): Promise<T> {
  const prev = queues.get(repo) ?? Promise.resolve();
  const next = prev.then(fn, fn);
  const tail = next.catch(() => undefined);
  queues.set(repo, tail);
  void tail.then(() => {
    if (queues.get(repo) === tail) queues.delete(repo);
  });
  return next;
}

export interface HostGit {
  exec: Exec;
  repo: string;
  timeoutMs?: number;
}

/** Host git, config-free and hook-free, in the host repo or (gitDir) one of its stores. */
export function hostGit(h: HostGit, args: string[], opts: { gitDir?: string; stdin?: string; env?: Record<string, string> } = {}): Promise<ExecResult> {
  const where = opts.gitDir ? ["--git-dir", opts.gitDir] : ["-C", h.repo];
  return h.exec.run(["git", ...HOST_GIT_SAFE, ...where, ...args], {
    env: { ...hostGitEnv(), ...opts.env },
    replaceEnv: true,
    check: false,
    timeoutMs: h.timeoutMs ?? 120_000,
    ...(opts.stdin !== undefined ? { stdin: opts.stdin } : {}),
  });
}

function fail(what: string, r: ExecResult, hint?: string): never {
  throw new SbxError("exec_failed", `${what}: ${r.stderr.trim().split("\n").slice(-3).join(" | ") || `git exited ${r.exitCode}`}`, hint ? { hint } : {});
}

/** Pure: `<oid> <ref>` lines into a map. */
export function parseRefLines(stdout: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of stdout.split("\n")) {
    const i = line.indexOf(" ");
    if (i > 0) out.set(line.slice(i + 1), line.slice(0, i));
  }
  return out;
}

/** Every ref of the host repo (`<oid> <ref>`). runs: git -C <repo> for-each-ref --format=%(objectname) %(refname) */
export async function hostRefs(h: HostGit, prefix?: string): Promise<Map<string, string>> {
  const r = await hostGit(h, ["for-each-ref", "--format=%(objectname) %(refname)", ...(prefix ? [prefix] : [])]);
  if (r.exitCode !== 0) fail(`cannot list the refs of ${h.repo}`, r);
  return parseRefLines(r.stdout);
}

/**
 * Which of `oids` the repo (or store) can read, its alternates included (a store's: the host view; `env`: more).
 * runs: git … cat-file --batch-check
 */
export async function present(h: HostGit, oids: Iterable<string>, gitDir?: string, env?: Record<string, string>): Promise<Set<string>> {
  const list = [...new Set(oids)];
  if (list.length === 0) return new Set();
  const r = await hostGit(h, ["cat-file", "--batch-check=%(objectname)"], { stdin: `${list.join("\n")}\n`, ...(gitDir ? { gitDir } : {}), ...(env ? { env } : {}) });
  if (r.exitCode !== 0) fail("cannot check objects", r);
  return new Set(r.stdout.split("\n").filter((l) => l !== "" && !l.endsWith(" missing")));
}

/**
 * Runs a shell line as the host user (the daemon may be root): the store's files must be theirs.
 * runs: sh -c <script> sh <args…>
 */
function sh(h: HostGit, script: string, args: string[]): Promise<ExecResult> {
  return h.exec.run(["sh", "-c", script, "sh", ...args], { env: hostGitEnv(), replaceEnv: true, check: false });
}

/**
 * Adds `line` to the alternates file in place (never replaced by rename: sandboxes have a mask mounted over it). Only
 * `grep` is a process of its own when the dir is there (a create's first store otherwise paid two more).
 */
const ADD_LINE = 'f="$1/objects/info/alternates"; { [ -d "$1/objects/info" ] || mkdir -p "$1/objects/info"; } && : >> "$f" && { grep -qxF -- "$2" "$f" || printf "%s\\n" "$2" >> "$f"; }';
/**
 * A new store at `$1` (git's argv after `$2`): `git init --bare` with no template (a store runs no hook and needs none
 * of git's sample files), its alternates exactly `$2`, in one shell. Exits GIT_FAILED when git did.
 */
const MAKE_STORE = 'd="$1"; l="$2"; shift 2; "$@" init --bare -q --template= "$d" || exit 90; { [ -d "$d/objects/info" ] || mkdir -p "$d/objects/info"; } && printf "%s\\n" "$l" > "$d/objects/info/alternates"';
const GIT_FAILED = 90;
/** Moves the store made whole at `$1` to `$2`. Exits MOVE_FAILED when it could not. */
const PUT_IN_PLACE = 'mv -T -- "$1" "$2" || exit 91';
const MOVE_FAILED = 91;
/** Makes a store's alternates exactly `line` (a store made before the host view borrowed the host's objects dir itself). */
const SET_LIST = 'mkdir -p "$1/objects/info" && printf "%s\\n" "$2" > "$1/objects/info/alternates"';
/** Removes `line` from the alternates file, rewriting it in place. */
const DROP_LINE = 'f="$1/objects/info/alternates"; [ -f "$f" ] || exit 0; t=$(grep -vxF -- "$2" "$f"); printf "%s" "$t${t:+\n}" > "$f"';

/**
 * Makes the store of sandbox `name` (idempotent) and lists it in the host repo's alternates. A new store starts with
 * what the person's refs are now as its "seen" line, so promotion never walks old history.
 * runs: git for-each-ref (the person's tips, beside the rest); (ensureHostView); sh -c <make store> (git init --bare,
 *       its alternates → host view); git cat-file --batch-check; git update-ref --stdin; sh -c 'mv -T; <append line>'
 *       (host → store)
 */
export function ensureStore(h: HostGit, name: string): Promise<string> {
  return serialized(h.repo, () => ensureNow(h, storeDir(h.repo, name), storeAlternate(name), `sandbox ${name}`));
}

/** Whether anything is at `p`, a link that leads nowhere included. */
function anythingAt(p: string): boolean {
  return lstatSync(p, { throwIfNoEntry: false }) !== undefined;
}

/** ensureStore of a store at `dir` listed as `line`, its owner said as `whose` in errors. */
async function ensureNow(h: HostGit, dir: string, line: string, whose: string): Promise<string> {
  const hostGitDir = join(h.repo, ".git");
  const fresh = !existsSync(join(dir, "objects", "info", "alternates"));
  // The person's tips, read beside the view and the store's making (a read of the host's refs, which neither writes).
  const tips = fresh ? userTips(h) : null;
  tips?.catch(() => undefined); // awaited below, unless a step before fails
  await ensureHostView(h);
  if (fresh) {
    // Made whole beside its place and renamed into it: a store is either absent or complete for anyone listing them.
    const part = `${dir}.part-${process.pid}`;
    // (Each rm only when there is something to remove: a process less for each on a first create.)
    if (anythingAt(part)) await h.exec.run(["rm", "-rf", "--", part], { check: false });
    const i = await sh(h, MAKE_STORE, [part, STORE_ALTERNATES, "git", ...HOST_GIT_SAFE]);
    if (i.exitCode === GIT_FAILED) fail(`cannot make the store of ${whose} in ${hostGitDir}`, i, `Check that ${hostGitDir} is writable by you.`);
    if (i.exitCode !== 0) fail(`cannot point the store of ${whose} at ${hostGitDir}/objects`, i);
    // A store just made has no refs: nothing of it to read first.
    await markSeen(h, part, await tips!, new Map());
    if (anythingAt(dir)) await h.exec.run(["rm", "-rf", "--", dir], { check: false });
    // Put in place and, in the same shell, listed in the host's alternates when it is not yet (read first, as below).
    const listed = alternateLines(hostGitDir).includes(line);
    const mv = await sh(h, listed ? PUT_IN_PLACE : `${PUT_IN_PLACE} && shift 2 && ${ADD_LINE}`, [part, dir, hostGitDir, line]);
    if (mv.exitCode === MOVE_FAILED) fail(`cannot put the store of ${whose} in place`, mv);
    if (mv.exitCode !== 0) fail(`cannot list the store of ${whose} in ${hostGitDir}/objects/info/alternates`, mv);
    return dir;
  } else if (alternateLines(dir).join("\n") !== `${STORE_ALTERNATES}\n`) {
    // A store made before the host view borrowed the host's objects dir, and through it every other store.
    const a = await sh(h, SET_LIST, [dir, STORE_ALTERNATES]);
    if (a.exitCode !== 0) fail(`cannot point the store of ${whose} at ${hostViewDir(h.repo)}`, a);
  }
  // Every sync comes through here: the line is read for (the host's own file) before a shell is started to add it.
  if (!alternateLines(hostGitDir).includes(line)) {
    const b = await sh(h, ADD_LINE, [hostGitDir, line]);
    if (b.exitCode !== 0) fail(`cannot list the store of ${whose} in ${hostGitDir}/objects/info/alternates`, b);
  }
  return dir;
}

/**
 * Makes `$1` a view holding the links given after `$2`, made whole at `$2` (its part) and renamed into place: one shell
 * for the five steps (a process each, spawned by the daemon, cost a first create ≈ 250 ms under load). Exits with the
 * failed step's number (1–5).
 */
const MAKE_VIEW =
  'v="$1"; p="$2"; shift 2; if [ -e "$p" ] || [ -L "$p" ]; then rm -rf -- "$p" || exit 1; fi; mkdir -p -- "$p" || exit 2; ln -s -- "$@" "$p/" || exit 3; ' +
  'if [ -e "$v" ] || [ -L "$v" ]; then rm -rf -- "$v" || exit 4; fi; mv -T -- "$p" "$v" || exit 5';
const VIEW_STEPS = ["", "clearing", "mkdir", "ln", "replacing", "renaming"];

/**
 * The view of the host's own objects the stores borrow from (object-view.ts), made as the host user whole beside its
 * place and renamed into it, unless it is one already (read here: a dir of the host's own).
 * runs: sh -c 'rm -rf <view>.part-<pid>; mkdir -p <part>; ln -s -- ../../objects/pack ../../objects/00 … <part>/; rm -rf <view>; mv -T <part> <view>'
 */
async function ensureHostView(h: HostGit): Promise<void> {
  const dir = hostViewDir(h.repo);
  if (isViewOf(dir, VIEW_OF)) return;
  const r = await sh(h, MAKE_VIEW, [dir, `${dir}.part-${process.pid}`, ...viewLinks(VIEW_OF).map(([, target]) => target)]);
  if (r.exitCode !== 0) fail(`cannot make the view of the host's objects in ${dir} (${VIEW_STEPS[r.exitCode] ?? `exit ${r.exitCode}`})`, r, `Check that ${join(h.repo, ".git")} is writable by you.`);
}

/** The person's own ref tips in the host repo. */
async function userTips(h: HostGit): Promise<Set<string>> {
  return new Set([...(await hostRefs(h)).entries()].filter(([ref]) => isUserRef(ref)).map(([, oid]) => oid));
}

/** The lines of a git dir's `objects/info/alternates` (none when it has none). */
function alternateLines(gitDir: string): string[] {
  try {
    return readFileSync(join(gitDir, "objects", "info", "alternates"), "utf8").split("\n");
  } catch {
    return [];
  }
}

/** The store's `refs/sbx-seen/*`: ref → object id. */
async function seenRefs(h: HostGit, store: string): Promise<Map<string, string>> {
  return parseRefLines((await hostGit(h, ["for-each-ref", "--format=%(objectname) %(refname)", SEEN], { gitDir: store })).stdout);
}

/**
 * Makes the store's `refs/sbx-seen/*` the `tips` it can see (`cur`: what they are now, when the caller just read them).
 * A store sees only the host's own objects and its own (its view): a tip on another store's work not yet promoted is
 * left unmarked (git refuses a ref to an object it cannot see), and walked again at the next promotion.
 */
async function markSeen(h: HostGit, store: string, tips: Iterable<string>, cur?: Map<string, string>): Promise<void> {
  cur ??= await seenRefs(h, store);
  const want = new Set([...(await present(h, tips, store))].map((oid) => `${SEEN}${oid}`));
  const lines = [...cur.keys()].filter((r) => !want.has(r)).map((r) => `delete ${r}`);
  for (const ref of want) if (!cur.has(ref)) lines.push(`update ${ref} ${ref.slice(SEEN.length)}`);
  if (lines.length === 0) return;
  const u = await hostGit(h, ["update-ref", "--stdin"], { gitDir: store, stdin: `${lines.join("\n")}\n` });
  if (u.exitCode !== 0) fail(`cannot record what the store ${store} has seen`, u);
}

/** The stores of the host repo's sandboxes (whatever the alternates say: a whole store's dir is what counts). */
function storesOf(repo: string): string[] {
  const root = join(repo, ".git", "sbx");
  try {
    return [...new Bun.Glob("*.git").scanSync({ cwd: root, onlyFiles: false })].map((d) => join(root, d)).filter((d) => existsSync(join(d, "objects", "info", "alternates")));
  } catch {
    return [];
  }
}

/**
 * Copies the objects of `store` itself (never what it borrows) that `tips` reach (and `seen` does not) into the host
 * repo's own objects, or into the store `into`, as a kept pack. How many objects it copied (0: nothing of the store's
 * was reached). It acts for the person, on what their refs reach: the walk reads through every store (the host's
 * objects dir as an extra alternate, which git follows into each store the host lists), as a merge of two sandboxes'
 * work needs; `--local` keeps what it copies to the store's own objects.
 * runs: git --git-dir <store> pack-objects --revs --local --stdout (stdin: tips, --not, seen); git -C <repo> (or --git-dir <into>) index-pack --stdin --keep --strict
 */
async function copyOut(h: HostGit, store: string, tips: Iterable<string>, seen: Iterable<string>, into?: string): Promise<number> {
  const everyStore = { GIT_ALTERNATE_OBJECT_DIRECTORIES: join(h.repo, ".git", "objects") };
  const have = await present(h, seen, store, everyStore);
  const input = `${[...tips].join("\n")}\n--not\n${[...have].join("\n")}\n`;
  const run = streamRun(h.exec, ["git", ...HOST_GIT_SAFE, "--git-dir", store, "pack-objects", "--revs", "--local", "--stdout", "-q"], {
    env: { ...hostGitEnv(), ...everyStore },
    replaceEnv: true,
    stdin: input,
    timeoutMs: h.timeoutMs ?? 600_000,
  });
  const bytes = new Uint8Array(await new Response(run.stdout).arrayBuffer());
  const end = await run.done;
  if (end.exitCode !== 0) throw new SbxError("exec_failed", `cannot pack the objects of ${store}: ${end.stderr.trim()}`);
  const n = packObjectCount(bytes) ?? 0;
  if (n === 0) return 0;
  const where = into ? ["--git-dir", into] : ["-C", h.repo];
  const keep = into ? "--keep=sbx: kept of a removed sandbox" : "--keep=sbx: promoted from a sandbox's store";
  const ip = await h.exec.run(["git", ...HOST_GIT_SAFE, ...where, "index-pack", "--stdin", "--strict", keep], {
    env: { ...hostGitEnv(), ...everyStore },
    replaceEnv: true,
    check: false,
    stdin: bytes,
    timeoutMs: h.timeoutMs ?? 600_000,
  });
  if (ip.exitCode !== 0) fail(`cannot copy the objects of ${store} into ${into ?? h.repo}`, ip);
  return n;
}

/**
 * Promotion: objects of any store that the person's own refs now reach are copied into the host's own objects, so
 * every sandbox sees what the person put on a branch of theirs. Cheap when nothing changed (each store remembers the
 * tips it last saw, and walks only from new ones). How many objects were copied.
 */
export function promoteStores(h: HostGit): Promise<number> {
  return serialized(h.repo, () => promoteNow(h));
}

async function promoteNow(h: HostGit): Promise<number> {
  const stores = storesOf(h.repo);
  if (stores.length === 0) return 0;
  const tips = await userTips(h);
  let copied = 0;
  // Every store's objects are copied before any store records what it saw: a tip on one store's work is visible to the
  // others (through the host's own objects) only once that store's objects are there.
  const marks: { store: string; cur: Map<string, string> }[] = [];
  for (const store of stores) {
    const cur = await seenRefs(h, store);
    const seen = new Set(cur.values());
    const fresh = [...tips].filter((t) => !seen.has(t));
    if (fresh.length === 0 && seen.size === tips.size) continue;
    if (fresh.length > 0) copied += await copyOut(h, store, fresh, seen);
    marks.push({ store, cur });
  }
  for (const m of marks) await markSeen(h, m.store, tips, m.cur);
  return copied;
}

/**
 * A sandbox is removed. What the person's own refs reach of its store is promoted first (as at any sync); the rest that
 * any host ref reaches (its kept `sandbox-<name>/*` refs, refs set aside under `refs/sbx-retired/`) goes into the
 * retired store, which only the host reads: never into the host's own objects, which every other sandbox of the repo
 * reads (a removed sandbox's unmerged work would be theirs to read by id). Then its store leaves the alternates and is
 * deleted: the host repo never points at a store that is gone. A missing store is fine. How many objects were copied.
 * runs: (promotion) …; (ensureStore of the retired store) …; (copyOut into it) …; sh -c <drop line>; rm -rf <store>;
 *       (after the last store) rm -rf <host view>; rmdir <repo>/.git/sbx
 */
export function retireStore(h: HostGit, name: string): Promise<number> {
  return serialized(h.repo, () => retireNow(h, name));
}

async function retireNow(h: HostGit, name: string): Promise<number> {
  const dir = storeDir(h.repo, name);
  const hostGitDir = join(h.repo, ".git");
  let copied = 0;
  if (existsSync(join(dir, "objects"))) {
    copied += await promoteNow(h);
    const refs = await hostRefs(h);
    const mine = new Set([...refs.entries()].filter(([ref]) => isUserRef(ref)).map(([, oid]) => oid));
    // Only what exists in the store: a host ref may name an object of another store, which is that store's to keep.
    const kept = [...(await present(h, refs.values(), dir))].filter((oid) => !mine.has(oid));
    if (kept.length > 0) {
      const retired = await ensureNow(h, retiredStoreDir(h.repo), storeAlternate(RETIRED), "removed sandboxes");
      copied += await copyOut(h, dir, kept, mine, retired);
    }
  }
  if (existsSync(hostGitDir)) {
    const d = await sh(h, DROP_LINE, [hostGitDir, storeAlternate(name)]);
    if (d.exitCode !== 0) fail(`cannot take the store of sandbox ${name} out of ${hostGitDir}/objects/info/alternates`, d);
  }
  const r = await h.exec.run(["rm", "-rf", "--", dir], { check: false });
  if (r.exitCode !== 0) fail(`cannot remove ${dir}`, r);
  // The host view and the stores' dir go with the last store (a non-empty dir stays: rmdir refuses).
  if (storesOf(h.repo).length === 0) await h.exec.run(["rm", "-rf", "--", hostViewDir(h.repo)], { check: false });
  await h.exec.run(["rmdir", "--", join(hostGitDir, "sbx")], { check: false });
  return copied;
}
