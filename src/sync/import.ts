// clone → host: the sandbox's own git lists its branches and packs what the host lacks; the host verifies the pack into
// the sandbox's store, checks it is complete, and only then moves `refs/remotes/sandbox-<name>/*`. The host never runs
// git in the clone, never reads a file there, and never follows anything the sandbox planted.
import { SbxError } from "../core/errors";
import { streamRun, type Exec } from "../sys/exec";
import { hostGitEnv, HOST_GIT_SAFE, validateRemoteName } from "./git-argv";
import { collectText, isOid, parseSandboxRefs, type SandboxGit } from "./sandbox-git";
import { ensureStore, hostGit, hostRefs, parseRefLines, present, type HostGit } from "./store";
import { isUserRef } from "../core/user-refs";

/** Bounds on what a sandbox may send in one sync (it chooses the bytes). */
export const IMPORT_LIMITS = { refsBytes: 8 << 20, packBytes: 1 << 30, haves: 2000 } as const;

export interface ImportOptions {
  repo: string;
  name: string;
  /** git as the sandbox, in its clone. */
  sandboxGit: SandboxGit;
  /** The host user's executor (git in the host repo and the store). */
  exec: Exec;
  /** Largest pack taken (default 1 GiB). */
  maxPackBytes?: number;
  timeoutMs?: number;
}

export interface ImportResult {
  /** Whether any host ref moved. */
  changed: boolean;
  /** The host's `refs/remotes/sandbox-<name>/*` now: branch → object id (HEAD included when it resolves). */
  refs: Map<string, string>;
  /** Bytes of the pack taken (0: no objects were needed). */
  packBytes: number;
  /** Refs the sandbox listed that were left out, and why. */
  skipped: string[];
}

function sandboxFailed(what: string, name: string, stderr: string, code: number): never {
  throw new SbxError("exec_failed", `${what} in sandbox ${name} failed (exit ${code}): ${stderr.trim().split("\n").slice(-3).join(" | ")}`, {
    hint: "The sandbox's clone may be damaged; look inside it (`sbx shell`), or `sbx rm --force` it (what the host already has stays).",
  });
}

/** Counts bytes through, and errors the stream past `max`. */
function bounded(max: number, seen: { n: number }): TransformStream<Uint8Array, Uint8Array> {
  return new TransformStream({
    transform(chunk, c) {
      seen.n += chunk.length;
      if (seen.n > max) c.error(new Error(`the pack is over ${max} bytes`));
      else c.enqueue(chunk);
    },
  });
}

/**
 * One clone → host sync. Lists the sandbox's branches (as the sandbox), and when the host lacks a tip, asks the sandbox
 * for a pack of what it lacks (as the sandbox: `--local`, so nothing of the host's is sent back), indexes it strictly
 * into the store, checks every new tip is complete, and moves the host's refs in one transaction (deleted branches go).
 * runs (as the sandbox): git show-ref --head --heads; git cat-file --batch-check (haves); git pack-objects --revs --local --thin --stdout
 * runs (host): git --git-dir <store> cat-file --batch-check; index-pack --strict --fix-thin --stdin; rev-list --objects --quiet --stdin --not --all
 *              (stdin: new tips, ^the person's tips and this sandbox's earlier ones the store sees);
 *              git -C <repo> update-ref --stdin
 */
export async function importSandbox(o: ImportOptions): Promise<ImportResult> {
  const remote = validateRemoteName(`sandbox-${o.name}`);
  const h: HostGit = { exec: o.exec, repo: o.repo, ...(o.timeoutMs ? { timeoutMs: o.timeoutMs } : {}) };
  const store = await ensureStore(h, o.name);

  const listed = await collectText(o.sandboxGit(["show-ref", "--head", "--heads"]), IMPORT_LIMITS.refsBytes);
  // show-ref exits 1 when there is no branch at all: that is an empty list, not a failure.
  if (listed.exitCode !== 0 && !(listed.exitCode === 1 && listed.stdout === "")) sandboxFailed("listing the branches", o.name, listed.stderr, listed.exitCode);
  const sb = parseSandboxRefs(listed.stdout);
  const want = new Map<string, string>(sb.branches);
  if (sb.head !== undefined) want.set("HEAD", sb.head);

  const prefix = `refs/remotes/${remote}/`;
  const all = await hostRefs(h);
  const cur = new Map([...all].filter(([r]) => r.startsWith(prefix)).map(([r, oid]) => [r.slice(prefix.length), oid]));
  const same = cur.size === want.size && [...want].every(([b, oid]) => cur.get(b) === oid);
  if (same) return { changed: false, refs: cur, packBytes: 0, skipped: sb.skipped };

  const tips = new Set(want.values());
  // The store sees the host's own objects and its own, never another store (store.ts): a tip of another sandbox's is
  // missing here. What the walk below may stop at: the person's tips and what the host took from this sandbox before.
  const cuts = [...all].filter(([r]) => isUserRef(r)).map(([, oid]) => oid).concat([...cur.values()]);
  const known = await present(h, [...tips, ...cuts], store);
  const missing = [...tips].filter((t) => !known.has(t));
  let packBytes = 0;
  if (missing.length > 0) {
    // What the sandbox may leave out: host branches and what the host already took from it, as far as it has them.
    const candidates = [...new Set([...[...all].filter(([r]) => isUserRef(r) && !r.startsWith("refs/tags/")).map(([, oid]) => oid), ...cur.values()])].slice(0, IMPORT_LIMITS.haves);
    let haves: string[] = [];
    if (candidates.length > 0) {
      const chk = await collectText(o.sandboxGit(["cat-file", "--batch-check=%(objectname)"], `${candidates.join("\n")}\n`), IMPORT_LIMITS.refsBytes);
      if (chk.exitCode !== 0) sandboxFailed("checking objects", o.name, chk.stderr, chk.exitCode);
      const cset = new Set(candidates);
      haves = chk.stdout.split("\n").filter((l) => isOid(l) && cset.has(l));
    }
    const pack = o.sandboxGit(["pack-objects", "--revs", "--local", "--thin", "--stdout", "--delta-base-offset", "-q"], `${missing.join("\n")}\n--not\n${haves.join("\n")}\n`);
    const seen = { n: 0 };
    const index = streamRun(o.exec, ["git", ...HOST_GIT_SAFE, "--git-dir", store, "index-pack", "--strict", "--fix-thin", "--stdin"], {
      env: hostGitEnv(),
      replaceEnv: true,
      stdin: pack.stdout.pipeThrough(bounded(o.maxPackBytes ?? IMPORT_LIMITS.packBytes, seen)),
      timeoutMs: o.timeoutMs ?? 600_000,
    });
    await new Response(index.stdout).arrayBuffer();
    const [made, ix] = await Promise.all([pack.done, index.done]);
    packBytes = seen.n;
    if (made.exitCode !== 0) sandboxFailed("packing new commits", o.name, made.stderr, made.exitCode);
    if (ix.exitCode !== 0) {
      throw new SbxError("conflict", `the pack sandbox ${o.name} sent was refused: ${ix.stderr.trim().split("\n").slice(-2).join(" | ") || `index-pack exited ${ix.exitCode}`}`, {
        hint: "Nothing of it reached the host repo. A damaged or hostile clone sends such packs; look inside it, or `sbx rm --force` it.",
      });
    }
  }
  // Every new tip complete (the pack may have left out what it claimed the host had), judged by what this store sees.
  const stops = [...new Set(cuts)].filter((oid) => known.has(oid));
  const conn = await hostGit(h, ["rev-list", "--objects", "--quiet", "--stdin", "--not", "--all"], { gitDir: store, stdin: `${[...missing, ...stops.map((s) => `^${s}`)].join("\n")}\n` });
  if (conn.exitCode !== 0) {
    throw new SbxError("conflict", `sandbox ${o.name}'s commits are incomplete: ${conn.stderr.trim().split("\n")[0] ?? ""}`, {
      hint: "Nothing moved on the host. A clone with missing objects sends this; look inside it, or `sbx rm --force` it.",
    });
  }
  const lines: string[] = [];
  for (const [b, oid] of want) if (cur.get(b) !== oid) lines.push(`update ${prefix}${b} ${oid}`);
  for (const b of cur.keys()) if (!want.has(b)) lines.push(`delete ${prefix}${b}`);
  const u = await hostGit(h, ["update-ref", "--stdin"], { stdin: `start\n${lines.join("\n")}\ncommit\n` });
  if (u.exitCode !== 0) {
    throw new SbxError("exec_failed", `cannot move ${remote}'s refs in ${o.repo}: ${u.stderr.trim()}`, { hint: "Another git may hold a ref lock there; the next sync tries again." });
  }
  return { changed: true, refs: want, packBytes, skipped: sb.skipped };
}

/**
 * host → clone, as the sandbox while it runs: its `refs/remotes/host/*` become the person's branches (update-ref; the
 * objects are the host's own, which the clone reads through its alternates). Only what differs is written.
 * runs (as the sandbox): git for-each-ref --format=%(objectname) %(refname) refs/remotes/host/; git update-ref --stdin
 */
export async function exportHostRefs(sandboxGit: SandboxGit, name: string, hostBranches: ReadonlyMap<string, string>): Promise<number> {
  const cur = await collectText(sandboxGit(["for-each-ref", "--format=%(objectname) %(refname)", "refs/remotes/host/"]), IMPORT_LIMITS.refsBytes);
  if (cur.exitCode !== 0) sandboxFailed("listing refs/remotes/host", name, cur.stderr, cur.exitCode);
  const have = parseRefLines(cur.stdout);
  // Only what differs: the watcher calls this on every host ref change, most of which touch no branch.
  const lines = hostUpdateRefs(hostBranches, [...have.keys()]).filter((l) => {
    const [op, ref, oid] = l.split(" ");
    return !(op === "update" && have.get(ref!) === oid);
  });
  if (lines.length === 0) return 0;
  const u = await collectText(sandboxGit(["update-ref", "--stdin"], `start\n${lines.join("\n")}\ncommit\n`), 1 << 20);
  if (u.exitCode !== 0) sandboxFailed("updating refs/remotes/host", name, u.stderr, u.exitCode);
  return lines.length;
}

/**
 * Pure: the `git update-ref --stdin` lines that make a clone's `refs/remotes/host/*` equal the host's branches: an
 * update per host branch, a delete for each host-tracking ref whose branch is gone. Names are checked strictly.
 */
export function hostUpdateRefs(hostRefs: ReadonlyMap<string, string>, current: readonly string[]): string[] {
  const want = new Map<string, string>();
  for (const [ref, oid] of hostRefs) {
    if (!ref.startsWith("refs/heads/") || !isOid(oid)) continue;
    const branch = ref.slice("refs/heads/".length);
    if (!/^[A-Za-z0-9._\/-]+$/.test(branch) || branch.includes("..") || branch.endsWith(".lock")) continue;
    want.set(`refs/remotes/host/${branch}`, oid);
  }
  const out: string[] = [];
  for (const [ref, oid] of [...want].sort(([a], [b]) => (a < b ? -1 : 1))) out.push(`update ${ref} ${oid}`);
  // refs/remotes/host/HEAD is the clone's symref to the default branch: deleting it would delete that branch too.
  for (const ref of [...current].sort()) if (!want.has(ref) && ref.startsWith("refs/remotes/host/") && ref !== "refs/remotes/host/HEAD") out.push(`delete ${ref}`);
  return out;
}
