// The build context of a sandbox's image: what the sandbox's clone holds (HEAD's tree under the context dir), never the
// host's directory. A dir beside the commits holds what the person keeps out of git (`.env`, keys, `.git` with its
// remotes' URLs, caches, other worktrees); sent as a context, a COPY puts it in the image, where the agent reads it.
// So sbx writes the context itself as a tar stream from git's objects (run as the host user, config- and hook-free, as
// ref sync runs git: sync/git-argv.ts), applies .dockerignore as the docker CLI does, adds the Dockerfile being built,
// and with --with-changes the working tree's changes as the copy-in door let them through (secrets/copy-in.ts).
import { createHash } from "node:crypto";
import { realpathSync } from "node:fs";
import { relative, sep } from "node:path";
import { dockerignoreMatcher, parseDockerignore } from "../../core/dockerignore";
import { SbxError } from "../../core/errors";
import { tarEnd, tarHeader, tarPadding, type TarEntry } from "../../core/tar";
import type { Scanned } from "../../secrets/copy-in";
import { hostGitEnv, HOST_GIT_SAFE } from "../../sync/git-argv";
import { streamRun, type Exec } from "../../sys/exec";

/** The working tree's changes a context takes (`--with-changes`), paths from the repo's root, through the door. */
export interface ContextChanges {
  present: Scanned<TarEntry[]>;
  gone: readonly string[];
}

export interface ContextPlan {
  /** Real path of the host repo, and the context dir relative to it ("" for the repo itself). */
  repo: string;
  prefix: string;
  /** The tree the context is (HEAD's tree at `prefix`); null when HEAD has none there (no commit, or a new dir). */
  tree: string | null;
  /** The HEAD commit's time: every entry's mtime (reproducible, and files are not from 1970). */
  time: number;
  /** Where the Dockerfile is in the tar: its path in the context, or a generated name when it lies outside it. */
  dockerfileAt: string;
  outside: boolean;
  /** The working tree's changes under the context, relative to it (`--with-changes`), or null. */
  changes: { present: TarEntry[]; gone: Set<string> } | null;
  /** What the tag hashes for the context: the tree id and what else is sent, never every file's bytes. */
  hash: string;
}

/** The name an outside Dockerfile has in the context (as the docker CLI does it: listed in .dockerignore too). */
export function outsideDockerfileName(dockerfile: string): string {
  return `.dockerfile.${createHash("sha256").update(dockerfile).digest("hex").slice(0, 20)}`;
}

/** Host git in the host repo: no config but the repo's own, no hooks, no fsmonitor, nothing of the daemon's env. */
function hostGit(exec: Exec, repo: string, args: string[], stdin?: string) {
  return exec.run(["git", ...HOST_GIT_SAFE, "-C", repo, ...args], { env: hostGitEnv(), replaceEnv: true, check: false, ...(stdin === undefined ? {} : { stdin }) });
}

/**
 * The context of `contextDir` (inside `repo`): HEAD's tree there, its id the hash's base (one `git cat-file`, one
 * `git ls-tree` of its dir: cheap at every start). A dir outside the repo is refused: it has no commit to stand for it.
 * runs: git -C <repo> cat-file commit HEAD; git -C <repo> --literal-pathspecs ls-tree -z <tree> -- <prefix>
 */
export async function planContext(exec: Exec, repo: string, contextDir: string, dockerfilePath: string, dockerfile: string, changes: ContextChanges | null = null): Promise<ContextPlan> {
  // Compared as real paths (the CLI passes --context as typed, through whatever links its cwd had).
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      return p;
    }
  };
  contextDir = real(contextDir);
  dockerfilePath = real(dockerfilePath);
  const rel = relative(repo, contextDir);
  if (rel === ".." || rel.startsWith(`..${sep}`) || rel.startsWith(sep)) {
    throw new SbxError("config", `the build context ${contextDir} is outside the repo ${repo}`, {
      hint: "sbx sends an image build what the sandbox's clone holds (the repo's last commit), so the context must be a dir of the repo. Use --context with a dir inside it.",
    });
  }
  const prefix = rel.split(sep).join("/");
  const commit = await hostGit(exec, repo, ["cat-file", "commit", "HEAD"]);
  let tree: string | null = null;
  let time = 0;
  if (commit.exitCode === 0) {
    const root = /^tree ([0-9a-f]{40,64})$/m.exec(commit.stdout)?.[1] ?? null;
    time = Number(/^committer .* (\d+) [+-]\d{4}$/m.exec(commit.stdout)?.[1] ?? 0);
    if (root !== null && prefix === "") tree = root;
    else if (root !== null) {
      const sub = await hostGit(exec, repo, ["--literal-pathspecs", "ls-tree", "-z", root, "--", prefix]);
      const m = sub.exitCode === 0 ? /^040000 tree ([0-9a-f]{40,64})\t(.*)$/s.exec(sub.stdout.split("\0")[0] ?? "") : null;
      tree = m && m[2] === prefix ? m[1]! : null;
    }
  }
  const inCtx = relative(contextDir, dockerfilePath);
  const outside = inCtx === "" || inCtx === ".." || inCtx.startsWith(`..${sep}`) || inCtx.startsWith(sep);
  const dockerfileAt = outside ? outsideDockerfileName(dockerfile) : inCtx.split(sep).join("/");
  const under = (p: string) => (prefix === "" ? p : p.startsWith(`${prefix}/`) ? p.slice(prefix.length + 1) : null);
  let mine: ContextPlan["changes"] = null;
  if (changes !== null) {
    const present: TarEntry[] = [];
    for (const e of changes.present) {
      const p = under(e.path.replace(/\/$/, ""));
      if (p !== null && p !== "" && e.type !== "dir") present.push({ ...e, path: p, mtime: time });
    }
    const gone = new Set(changes.gone.flatMap((g) => (under(g) === null ? [] : [under(g)!])));
    mine = { present, gone };
  }
  const h = createHash("sha256").update(`tree\0${tree ?? ""}\0prefix\0${prefix}\0dockerfile\0${dockerfileAt}\0`);
  if (mine !== null) {
    for (const e of [...mine.present].sort((a, b) => (a.path < b.path ? -1 : 1))) {
      h.update(`${e.type} ${e.path} ${e.mode & 0o777}\0`);
      if (e.type === "symlink") h.update(`${e.target ?? ""}\0`);
      else h.update(createHash("sha256").update(e.content ?? new Uint8Array()).digest("hex"));
    }
    for (const g of [...mine.gone].sort()) h.update(`gone ${g}\0`);
  }
  return { repo, prefix, tree, time, dockerfileAt, outside, changes: mine, hash: h.digest("hex") };
}

interface TreeEntry {
  mode: string;
  oid: string;
  path: string;
}

const LF = 10;

/**
 * The tar entries of `git cat-file --batch`'s answers for `blobs`, in order: each `<oid> blob <size>` line, its bytes and
 * a newline, parsed as the chunks come (synchronously within a chunk: a tar of many small files is mostly headers), the
 * output handed on in pieces of about 256 KiB. A link's bytes are its target.
 */
async function* tarOfBatch(
  reader: { read(): Promise<{ value?: Uint8Array; done?: boolean }> },
  blobs: readonly TreeEntry[],
  time: number,
  parents: (path: string) => Generator<Uint8Array>,
): AsyncGenerator<Uint8Array> {
  const dec = new TextDecoder();
  let out: Uint8Array[] = [];
  let outSize = 0;
  const push = (p: Uint8Array) => {
    if (p.length === 0) return;
    out.push(p);
    outSize += p.length;
  };
  let i = 0;
  let head: Uint8Array[] = []; // a header line cut between chunks
  let left = -1; // bytes of the current object still to come, its newline included; -1: a header line is next
  let size = 0; // the current object's
  let link: Uint8Array[] | null = null;
  while (i < blobs.length) {
    const { value, done } = await reader.read();
    if (done || value === undefined) throw new Error(`git cat-file ended before ${blobs[i]!.path}`);
    let off = 0;
    while (off < value.length && i < blobs.length) {
      const b = blobs[i]!;
      if (left < 0) {
        const nl = value.indexOf(LF, off);
        if (nl < 0) {
          head.push(value.slice(off));
          off = value.length;
          break;
        }
        const line = dec.decode(head.length ? Buffer.concat([...head, value.subarray(off, nl)]) : value.subarray(off, nl));
        head = [];
        off = nl + 1;
        if (line.endsWith(" missing")) throw new Error(`${b.path} (object ${b.oid}) is missing from the repo's objects`);
        const m = /^([0-9a-f]{40,64}) blob (\d+)$/.exec(line);
        if (!m || m[1] !== b.oid) throw new Error(`git cat-file answered ${JSON.stringify(line)} for ${b.path}`);
        size = Number(m[2]);
        for (const p of parents(b.path)) push(p);
        if (b.mode === "120000") link = [];
        else for (const p of tarHeader({ path: b.path, type: "file", mode: b.mode === "100755" ? 0o755 : 0o644, uid: 0, gid: 0, mtime: time }, size)) push(p);
        left = size + 1;
      }
      const take = Math.min(left, value.length - off);
      const data = value.subarray(off, off + Math.min(take, left - 1));
      if (link !== null) link.push(data.slice());
      else push(data);
      off += take;
      left -= take;
      if (left === 0) {
        if (link !== null) {
          const target = dec.decode(Buffer.concat(link));
          for (const p of tarHeader({ path: b.path, type: "symlink", target, mode: 0o777, uid: 0, gid: 0, mtime: time }, 0)) push(p);
          link = null;
        } else push(tarPadding(size));
        left = -1;
        i++;
      }
    }
    if (outSize >= 256 << 10) {
      yield Buffer.concat(out, outSize);
      out = [];
      outSize = 0;
    }
  }
  if (outSize > 0) yield Buffer.concat(out, outSize);
}

/** Why a context stream stopped short, for the build's error (the engine sees only a cut tar). */
export interface ContextFailure {
  error: SbxError | null;
}

/**
 * The context as a tar stream, written as the engine reads it: HEAD's entries under the context (gitlinks as empty
 * dirs, as the clone has them), less what .dockerignore leaves out (the Dockerfile and .dockerignore always sent, as
 * the docker CLI does); then the changes; then the Dockerfile being built. Blobs stream from one `git cat-file --batch`.
 * `close` ends it early (the engine stopped reading).
 * runs: git -C <repo> ls-tree -r -z <tree>; git -C <repo> cat-file --batch --buffer (blob ids on its stdin)
 */
export function contextStream(exec: Exec, plan: ContextPlan, dockerfile: string, failed: ContextFailure): { stream: ReadableStream<Uint8Array>; close(): Promise<void> } {
  const it = batched(contextChunks(exec, plan, dockerfile));
  const stop = async () => {
    await it.return(undefined).catch(() => undefined);
  };
  const stream = new ReadableStream<Uint8Array>({
    async pull(c) {
      try {
        const { value, done } = await it.next();
        if (done) c.close();
        else c.enqueue(value);
      } catch (e) {
        failed.error = e instanceof SbxError ? e : new SbxError("exec_failed", `the build context could not be read from git: ${(e as Error).message}`, { hint: "Check the repo with `git fsck`, then run the command again." });
        c.error(failed.error);
      }
    },
    cancel: stop,
  });
  // After the build, whatever it did not read: git is stopped, never left writing into a pipe no one reads.
  return { stream, close: stop };
}

/** Pieces joined into chunks of about 256 KiB: a tar of many small files is otherwise a stream of 512-byte pieces. */
async function* batched(pieces: AsyncGenerator<Uint8Array>): AsyncGenerator<Uint8Array> {
  const MAX = 256 << 10;
  let parts: Uint8Array[] = [];
  let size = 0;
  const flush = () => {
    const out = parts.length === 1 ? parts[0]! : Buffer.concat(parts, size);
    parts = [];
    size = 0;
    return out;
  };
  try {
    for await (const p of pieces) {
      if (p.length === 0) continue;
      if (p.length >= MAX && size === 0) {
        yield p;
        continue;
      }
      parts.push(p);
      size += p.length;
      if (size >= MAX) yield flush();
    }
    if (size > 0) yield flush();
  } finally {
    await pieces.return(undefined);
  }
}

async function* contextChunks(exec: Exec, plan: ContextPlan, dockerfile: string): AsyncGenerator<Uint8Array> {
  const { time } = plan;
  const head: TreeEntry[] = [];
  if (plan.tree !== null) {
    const ls = await hostGit(exec, plan.repo, ["ls-tree", "-r", "-z", plan.tree]);
    if (ls.exitCode !== 0) throw new SbxError("exec_failed", `git ls-tree of the build context failed: ${ls.stderr.trim()}`, { hint: "Check the repo with `git fsck`, then run the command again." });
    for (const rec of ls.stdout.split("\0")) {
      const m = /^(\d{6}) \w+ ([0-9a-f]{40,64})\t(.+)$/s.exec(rec);
      if (m) head.push({ mode: m[1]!, oid: m[2]!, path: m[3]! });
    }
  }
  const changed = new Map((plan.changes?.present ?? []).map((e) => [e.path, e]));
  const gone = plan.changes?.gone ?? new Set<string>();
  // .dockerignore as the context has it (a change of it with --with-changes); its patterns decide what is sent.
  const ignoreChange = changed.get(".dockerignore");
  let ignoreText = "";
  if (ignoreChange?.type === "file") ignoreText = new TextDecoder().decode(ignoreChange.content);
  else if (!gone.has(".dockerignore")) {
    const e = head.find((x) => x.path === ".dockerignore" && x.mode.startsWith("100"));
    if (e) {
      const r = await hostGit(exec, plan.repo, ["cat-file", "blob", e.oid]);
      if (r.exitCode === 0) ignoreText = r.stdout;
    }
  }
  const leftOut = dockerignoreMatcher(parseDockerignore(ignoreText));
  const always = new Set([".dockerignore", plan.dockerfileAt]);
  const sent = (p: string) => always.has(p) || !leftOut(p);

  const dirs = new Set<string>();
  function* parents(path: string): Generator<Uint8Array> {
    const parts = path.split("/").slice(0, -1);
    for (let i = 1; i <= parts.length; i++) {
      const d = parts.slice(0, i).join("/");
      if (dirs.has(d)) continue;
      dirs.add(d);
      yield* tarHeader({ path: d, type: "dir", mode: 0o755, uid: 0, gid: 0, mtime: time }, 0);
    }
  }
  function* whole(e: TarEntry): Generator<Uint8Array> {
    yield* parents(e.path);
    const content = e.type === "file" ? (e.content ?? new Uint8Array()) : new Uint8Array();
    yield* tarHeader(e, content.length);
    if (content.length > 0) {
      yield content;
      yield tarPadding(content.length);
    }
  }

  // A Dockerfile from outside the context is listed in .dockerignore (the daemon then drops it), as the docker CLI
  // does it: appended to the context's own, or after `.dockerignore` itself when there is none.
  const hasIgnore = ignoreChange?.type === "file" || (!gone.has(".dockerignore") && head.some((e) => e.path === ".dockerignore"));
  const outsideIgnore = plan.outside ? (hasIgnore ? ignoreText : ".dockerignore") : null;
  // HEAD's entries that go: not replaced by a change or the Dockerfile, not gone, not left out.
  const blobs: TreeEntry[] = [];
  for (const e of head) {
    if (changed.has(e.path) || gone.has(e.path) || e.path === plan.dockerfileAt || !sent(e.path)) continue;
    if (outsideIgnore !== null && e.path === ".dockerignore") continue;
    if (e.mode === "160000") {
      // A submodule: the clone has an empty dir there.
      yield* whole({ path: e.path, type: "dir", mode: 0o755, uid: 0, gid: 0, mtime: time });
      dirs.add(e.path);
    } else if (e.mode === "100644" || e.mode === "100755" || e.mode === "120000") blobs.push(e);
  }
  if (blobs.length > 0) {
    const run = streamRun(exec, ["git", ...HOST_GIT_SAFE, "-C", plan.repo, "cat-file", "--batch", "--buffer"], { env: hostGitEnv(), replaceEnv: true, stdin: `${blobs.map((b) => b.oid).join("\n")}\n` });
    const reader = run.stdout.getReader();
    let read = false;
    try {
      yield* tarOfBatch(reader, blobs, time, parents);
      read = true;
    } finally {
      reader.releaseLock();
      if (!read) await run.stdout.cancel().catch(() => undefined);
    }
    const done = await run.done;
    if (done.exitCode !== 0) {
      throw new SbxError("exec_failed", `git cat-file of the build context failed (exit ${done.exitCode}): ${done.stderr.trim().split("\n").slice(-2).join(" | ")}`, {
        hint: "Check the repo with `git fsck`, then run the command again.",
      });
    }
  }
  // The changes (already through the door), left out as HEAD's are by .dockerignore; never the Dockerfile's path.
  for (const e of changed.values()) if (e.path !== plan.dockerfileAt && sent(e.path) && !(outsideIgnore !== null && e.path === ".dockerignore")) yield* whole(e);
  // The Dockerfile being built; from outside the context, under its own name, which .dockerignore then lists.
  yield* whole({ path: plan.dockerfileAt, type: "file", mode: 0o644, uid: 0, gid: 0, mtime: time, content: new TextEncoder().encode(dockerfile) });
  if (outsideIgnore !== null) yield* whole({ path: ".dockerignore", type: "file", mode: 0o644, uid: 0, gid: 0, mtime: time, content: new TextEncoder().encode(`${outsideIgnore}\n${plan.dockerfileAt}\n`) });
  yield tarEnd();
}
