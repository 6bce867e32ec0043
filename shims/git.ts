// git shim (runs inside the sandbox on the host's Bun, no dependencies): local git stays local, network operations go to the bridge.
// node:fs/os/path only where a path needs them, none on a push's way to the bridge (node:fs adds ≈9 ms to Bun's start).
const fs = (): typeof import("node:fs") => require("node:fs");
const path = (): typeof import("node:path") => require("node:path");
// The wire protocol is the bridge's; a type-only import is erased at run time, so the shim stays dependency-free.
import type { Frame } from "../src/bridge/server";

const NETWORK = new Set(["push", "fetch", "pull", "ls-remote", "clone"]);
const EXIT_UNAVAILABLE = 69;

export interface BridgeReply {
  code: number;
  refs?: Extract<Frame, { t: "refs" }>;
  pushed?: Extract<Frame, { t: "pushed" }>;
  bundle?: Uint8Array;
  /** Ends the reply's stream, left open after "exit": a `hangsUp` request's bookkeeping in the bridge waits for that. */
  hangUp?: () => void;
}

/**
 * Sends one request to the bridge and prints its output as it arrives, as if the command ran here. A
 * streamed payload (a push's pack, straight from pack-objects) follows the header line as it is made.
 */
export async function callBridge(header: Record<string, unknown>, payload?: Uint8Array | ReadableStream<Uint8Array>, what = "this command"): Promise<BridgeReply> {
  const socket = process.env.SBX_BRIDGE_SOCKET;
  const down = (why: string): BridgeReply => {
    process.stderr.write(`sbx: the command bridge is not answering${socket ? ` at ${socket}` : " (SBX_BRIDGE_SOCKET is not set)"}: ${why}\n` +
      `sbx: ${what} needs it, because credentials stay on the host. Is the sbx daemon running? (sbx status)\n`);
    return { code: EXIT_UNAVAILABLE };
  };
  if (!socket) return down("no socket");
  const head = new TextEncoder().encode(JSON.stringify(header) + "\n");
  let body: Uint8Array | ReadableStream<Uint8Array>;
  let payloadError: Error | undefined;
  if (payload instanceof ReadableStream) {
    const reader = payload.getReader();
    // The header is queued first; pull (the payload's first read: pack-objects starts there) runs once it is taken.
    body = new ReadableStream<Uint8Array>({
      start: (c) => c.enqueue(head),
      async pull(c) {
        try {
          const { done, value } = await reader.read();
          if (done) c.close();
          else c.enqueue(value);
        } catch (e) {
          payloadError = e as Error;
          c.error(e);
        }
      },
    });
  } else body = payload ? Buffer.concat([head, payload]) : head;
  let res: Response;
  try {
    res = await fetch("http://bridge/v1/run", { method: "POST", body, unix: socket } as RequestInit);
  } catch (e) {
    if (payloadError) {
      process.stderr.write(`sbx: ${payloadError.message}\n`);
      return { code: 1 };
    }
    return down((e as Error).message);
  }
  if (!res.ok || !res.body) {
    let msg = `HTTP ${res.status}`;
    try {
      const j = (await res.json()) as { message?: string; hint?: string };
      msg = `${j.message ?? msg}${j.hint ? `\nhint: ${j.hint}` : ""}`;
    } catch {}
    process.stderr.write(`sbx: bridge error: ${msg}\n`);
    // 429: the sandbox has as many bridge requests under way as it may (EX_TEMPFAIL: try again).
    return { code: res.status === 429 ? 75 : 1 };
  }
  const reply: BridgeReply = { code: 1 };
  const chunks: Uint8Array[] = [];
  const dec = new TextDecoder();
  let buf = "";
  let sawExit = false;
  const onLine = (line: string) => {
    if (!line) return;
    const f = JSON.parse(line) as Frame;
    if (f.t === "out") process.stdout.write(f.d);
    else if (f.t === "err") process.stderr.write(f.d);
    else if (f.t === "bundle") chunks.push(Buffer.from(f.d, "base64"));
    else if (f.t === "refs") reply.refs = f;
    else if (f.t === "pushed") reply.pushed = f;
    else if (f.t === "exit") {
      reply.code = f.code;
      sawExit = true;
    }
  };
  // "exit" is the last frame: stop there (the bridge may still tidy its gate before closing the stream), leaving the
  // stream open until reply.hangUp or this process's exit, so that tidying does not run beside the shim's own tail.
  for await (const chunk of res.body.values({ preventCancel: true })) {
    buf += dec.decode(chunk, { stream: true });
    let nl: number;
    while (!sawExit && (nl = buf.indexOf("\n")) !== -1) {
      onLine(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
    }
    if (sawExit) break;
  }
  if (!sawExit) onLine(buf);
  if (!sawExit) {
    process.stderr.write("sbx: the bridge closed the connection before the command finished\n");
    return { code: EXIT_UNAVAILABLE };
  }
  if (chunks.length) reply.bundle = Buffer.concat(chunks);
  reply.hangUp = () => void res.body?.cancel().catch(() => undefined);
  return reply;
}

/** The real git: the first `git` on PATH that is not in this shim's directory. */
export function realGit(): string {
  const own = new Set<string>();
  for (const d of [import.meta.dir, process.env.SBX_SHIM_DIR]) {
    if (!d) continue;
    try {
      own.add(fs().realpathSync(d));
    } catch {}
  }
  const [{ accessSync, constants, realpathSync }, { delimiter, dirname, join }] = [fs(), path()];
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    let real: string;
    try {
      real = realpathSync(dir);
    } catch {
      continue;
    }
    if (own.has(real)) continue;
    const p = join(dir, "git");
    try {
      accessSync(p, constants.X_OK);
      if (own.has(dirname(realpathSync(p)))) continue;
      return p;
    } catch {}
  }
  process.stderr.write("sbx: no real git found on PATH after the sbx shim\n");
  process.exit(127);
}

interface Local {
  git: string;
  /** Global options that place the repository (-C, --git-dir, --work-tree), reused for local calls. */
  where: string[];
}

async function run(l: Local, args: string[], stdin?: Uint8Array | string): Promise<{ code: number; out: string; err: string }> {
  const p = Bun.spawn([l.git, ...l.where, ...args], { stdin: stdin === undefined ? "ignore" : typeof stdin === "string" ? Buffer.from(stdin) : stdin, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

async function runBytes(l: Local, args: string[], stdin: string): Promise<Uint8Array> {
  const p = Bun.spawn([l.git, ...l.where, ...args], { stdin: Buffer.from(stdin), stdout: "pipe", stderr: "inherit" });
  const [out, code] = await Promise.all([new Response(p.stdout).arrayBuffer(), p.exited]);
  if (code !== 0) throw new Error(`git ${args[0]} failed (${code})`);
  return new Uint8Array(out);
}

async function inherit(git: string, args: string[]): Promise<number> {
  const p = Bun.spawn([git, ...args], { stdin: "inherit", stdout: "inherit", stderr: "inherit" });
  return p.exited;
}

const GLOBAL_WITH_VALUE = new Set(["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env", "--exec-path"]);
/** Options (per network subcommand) that take the next argument as their value. */
const VALUE_OPTS: Record<string, Set<string>> = {
  push: new Set(["-o", "--push-option", "--receive-pack", "--exec", "--repo"]),
  fetch: new Set(["-j", "--jobs", "--depth", "--deepen", "--upload-pack", "--shallow-since", "--shallow-exclude", "--refmap", "-o", "--server-option", "--negotiation-tip", "--filter"]),
  pull: new Set(["-j", "--jobs", "--depth", "--upload-pack", "-s", "--strategy", "-X", "--strategy-option", "-o", "--server-option"]),
  "ls-remote": new Set(["-u", "--upload-pack", "-o", "--server-option", "--sort"]),
  clone: new Set(["-b", "--branch", "-o", "--origin", "-u", "--upload-pack", "--depth", "-c", "--config", "--reference", "-j", "--jobs", "--separate-git-dir", "--template", "--filter", "--server-option", "--shallow-since", "--shallow-exclude"]),
};

export interface Split {
  global: string[];
  sub: string | undefined;
  rest: string[];
}

/** Splits `git [global options] <sub> [args]`. */
export function splitArgv(argv: string[]): Split {
  let i = 0;
  for (; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith("-")) break;
    if (GLOBAL_WITH_VALUE.has(a)) i++;
  }
  return { global: argv.slice(0, i), sub: argv[i], rest: argv.slice(i + 1) };
}

/** Positional arguments of a network subcommand, and its options as given. */
export function positionals(sub: string, rest: string[]): { pos: string[]; opts: string[] } {
  const takes = VALUE_OPTS[sub] ?? new Set<string>();
  const pos: string[] = [];
  const opts: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!;
    if (a === "--") {
      pos.push(...rest.slice(i + 1));
      break;
    }
    if (a.startsWith("-") && a.length > 1) {
      opts.push(a);
      if (!a.includes("=") && takes.has(a)) opts.push(rest[++i] ?? "");
      continue;
    }
    pos.push(a);
  }
  return { pos, opts };
}

/** A repository argument git would read from the local filesystem. */
export function isLocalUrl(u: string): boolean {
  if (/^file:/i.test(u)) return true;
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(u) || /^[A-Za-z][A-Za-z0-9+.-]*::/.test(u)) return false;
  if (u.startsWith("/") || u.startsWith("./") || u.startsWith("../") || u === "." || u === ".." || u.startsWith("~")) return true;
  // scp-like user@host:path (a colon before any slash) is remote.
  const colon = u.indexOf(":");
  const slash = u.indexOf("/");
  return !(colon > 0 && (slash === -1 || colon < slash));
}

function localWhere(global: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < global.length; i++) {
    const a = global[i]!;
    if (a === "-C" || a === "--git-dir" || a === "--work-tree") out.push(a, global[++i] ?? "");
    else if (a.startsWith("--git-dir=") || a.startsWith("--work-tree=")) out.push(a);
  }
  return out;
}

async function currentBranch(l: Local): Promise<string | undefined> {
  const r = await run(l, ["symbolic-ref", "-q", "--short", "HEAD"]);
  return r.code === 0 ? r.out.trim() || undefined : undefined;
}

async function config(l: Local, key: string): Promise<string | undefined> {
  const r = await run(l, ["config", "--get", key]);
  return r.code === 0 ? r.out.trim() : undefined;
}

/** What a network command needs to know about the clone, read with two git processes at once. */
export interface Snapshot {
  /** Every ref → object id. */
  refs: Map<string, string>;
  /** The current branch's short name (undefined when detached or outside a repository). */
  branch: string | undefined;
  /** `remote.<name>.url` and `branch.<name>.remote` (the last value of each, as `git config --get`). */
  config: Map<string, string>;
}

/** Parses `for-each-ref --format=%(objectname) %(HEAD) %(refname)` and `config -z --get-regexp` output. */
export function parseSnapshot(refsOut: string, configOut: string): Snapshot {
  const refs = new Map<string, string>();
  let branch: string | undefined;
  for (const line of refsOut.split("\n")) {
    const m = /^([0-9a-f]{40,64}) ([* ]) (refs\/.+)$/.exec(line);
    if (!m) continue;
    refs.set(m[3]!, m[1]!);
    if (m[2] === "*" && m[3]!.startsWith("refs/heads/")) branch = m[3]!.slice("refs/heads/".length);
  }
  const config = new Map<string, string>();
  for (const entry of configOut.split("\0")) {
    const nl = entry.indexOf("\n");
    if (nl > 0) config.set(entry.slice(0, nl), entry.slice(nl + 1));
  }
  return { refs, branch, config };
}

/**
 * What the launcher (`shims/git`) read while Bun started: the real git it found (SBX_REAL_GIT: an absolute path it saw
 * executable), and on the fd SBX_GIT_SNAPSHOT_FD names for-each-ref's lines, a NUL, config -z's entries (no snapshot
 * when no ref is there: not a repository, or none yet; read here then). The variables are dropped: no git this runs
 * inherits them, nor the fd (Bun.spawn passes only the stdio it is given), left open as closing it needs node:fs.
 */
export async function fromLauncher(env: NodeJS.ProcessEnv = process.env): Promise<{ git?: string; snapshot?: Snapshot }> {
  const { SBX_GIT_SNAPSHOT_FD: fd, SBX_REAL_GIT: g } = env;
  delete env.SBX_GIT_SNAPSHOT_FD;
  delete env.SBX_REAL_GIT;
  const out: { git?: string; snapshot?: Snapshot } = {};
  if (g?.startsWith("/")) out.git = g;
  if (fd !== "3") return out;
  try {
    const text = await Bun.file(3).text();
    const nul = text.indexOf("\0");
    const s = nul > 0 ? parseSnapshot(text.slice(0, nul), text.slice(nul + 1)) : undefined;
    if (s && s.refs.size > 0) out.snapshot = s;
  } catch {}
  return out;
}

/** runs: git for-each-ref --format=%(objectname) %(HEAD) %(refname); git config -z --get-regexp ^(remote\..*\.url|branch\..*\.remote)$ */
async function snapshot(l: Local, early?: Snapshot): Promise<Snapshot> {
  // Refs but none of them named by HEAD: an unborn branch, or detached.
  if (early) return early.branch === undefined ? { ...early, branch: await currentBranch(l) } : early;
  const [r, c] = await Promise.all([
    run(l, ["for-each-ref", "--format=%(objectname) %(HEAD) %(refname)"]),
    run(l, ["config", "-z", "--get-regexp", "^(remote\\..*\\.url|branch\\..*\\.remote)$"]),
  ]);
  const s = parseSnapshot(r.code === 0 ? r.out : "", c.code === 0 ? c.out : "");
  // Unborn branch: HEAD names a branch no ref holds yet.
  if (s.branch === undefined && r.code === 0) s.branch = await currentBranch(l);
  return s;
}

/** Is this network operation about a remote beyond this machine (so it needs the bridge)? */
export function needsBridge(s: Snapshot, sub: string, pos: string[]): boolean {
  if (sub === "clone") return pos[0] !== undefined && !isLocalUrl(pos[0]);
  let repo = pos[0];
  if (repo === undefined) repo = (s.branch && s.config.get(`branch.${s.branch}.remote`)) || "origin";
  if (isLocalUrl(repo) && !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(repo)) return false;
  const url = /^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(repo) ? s.config.get(`remote.${repo}.url`) : repo;
  if (url === undefined) return !isLocalUrl(repo);
  return !isLocalUrl(url);
}

function remoteTips(s: Snapshot): string[] {
  const out = new Set<string>();
  for (const [ref, sha] of s.refs) if (ref.startsWith("refs/remotes/")) out.add(sha);
  return [...out];
}

/**
 * Resolves a push source the way `git rev-parse` would, from the snapshot, when that is unambiguous: a
 * full ref, HEAD on a branch, or a name exactly one of git's ref rules matches. Anything else (object ids,
 * ~^ suffixes, pseudo-refs, ambiguous names) returns undefined and is asked of git.
 */
export function resolveFromSnapshot(s: Snapshot, src: string): { sha: string; ref: string } | undefined {
  if (src === "HEAD") {
    const ref = s.branch ? `refs/heads/${s.branch}` : undefined;
    const sha = ref ? s.refs.get(ref) : undefined;
    return ref && sha ? { sha, ref } : undefined;
  }
  if (!/^[A-Za-z0-9._\/-]+$/.test(src) || /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/.test(src) || /^[A-Z_]+$/.test(src)) return undefined;
  const rules = [`refs/${src}`, `refs/tags/${src}`, `refs/heads/${src}`, `refs/remotes/${src}`, `refs/remotes/${src}/HEAD`];
  if (src.startsWith("refs/")) rules.unshift(src);
  const hits = [...new Set(rules.filter((r) => s.refs.has(r)))];
  if (hits.length !== 1) return undefined;
  return { sha: s.refs.get(hits[0]!)!, ref: hits[0]! };
}

/** pack-objects' stdout as a stream that fails if pack-objects does, started at the first read (after the header went out). */
function packStream(spawn: () => { stdout: ReadableStream<Uint8Array>; exited: Promise<number> }): { stream: ReadableStream<Uint8Array>; exited: Promise<number> } {
  let onExit!: (code: number) => void;
  const exited = new Promise<number>((r) => (onExit = r));
  let read: (() => Promise<{ done: boolean; value?: Uint8Array }>) | undefined;
  const stream = new ReadableStream<Uint8Array>({
    async pull(c) {
      if (!read) {
        const proc = spawn();
        const reader = proc.stdout.getReader();
        read = () => reader.read();
        void proc.exited.then(onExit);
      }
      const { done, value } = await read();
      if (!done && value) {
        c.enqueue(value);
        return;
      }
      const code = await exited;
      if (code !== 0) c.error(new Error(`git pack-objects failed (${code})`));
      else c.close();
    },
  });
  return { stream, exited };
}

async function push(l: Local, s: Snapshot, argv: string[], rest: string[], cwd: string): Promise<number> {
  const { pos, opts } = positionals("push", rest);
  const del = opts.some((o) => o === "-d" || o === "--delete");
  const branch = s.branch;
  const resolved: Record<string, { sha: string; ref?: string }> = {};
  const srcs = pos.length > 1 ? (del ? [] : pos.slice(1).map((x) => x.replace(/^\+/, "").split(":")[0]!).filter(Boolean)) : branch ? [branch] : [];
  const slow: string[] = [];
  for (const src of srcs) {
    const r = resolveFromSnapshot(s, src);
    if (r) resolved[src] = r;
    else slow.push(src);
  }
  // runs: git rev-parse --verify -q <src>; git rev-parse --symbolic-full-name <src> (only for what the snapshot cannot answer)
  const looked = await Promise.all(slow.map((src) => Promise.all([run(l, ["rev-parse", "--verify", "-q", src]), run(l, ["rev-parse", "--symbolic-full-name", src])])));
  for (const [i, src] of slow.entries()) {
    const [r, full] = looked[i]!;
    if (r.code !== 0) {
      process.stderr.write(`error: src refspec ${src} does not match any\n`);
      return 1;
    }
    const ref = full.out.trim();
    resolved[src] = { sha: r.out.trim(), ...(ref.startsWith("refs/") ? { ref } : {}) };
  }
  const shas = [...new Set(Object.values(resolved).map((r) => r.sha))];
  let pack: ReadableStream<Uint8Array> | undefined;
  let packed: Promise<unknown> = Promise.resolve();
  if (shas.length) {
    // runs: git pack-objects --revs --stdout --thin --delta-base-offset -q (streamed to the bridge as it is written;
    // offset deltas, as git push sends: a smaller pack that the gate indexes faster)
    const p = packStream(() => {
      T("pack-objects spawned");
      return Bun.spawn([l.git, ...l.where, "pack-objects", "--revs", "--stdout", "--thin", "--delta-base-offset", "-q"], {
        stdin: Buffer.from([...shas, "--not", ...remoteTips(s)].join("\n") + "\n"),
        stdout: "pipe",
        stderr: "inherit",
      });
    });
    pack = p.stream;
    packed = p.exited.then(() => T("pack-objects exited"));
  }
  T("calling bridge");
  const replied = callBridge({ tool: "git", args: argv, cwd, ...(branch ? { branch } : {}), resolved, hangsUp: true }, pack, "git push");
  // The tracking refs' update starts once the pack is made and is told its lines at the answer: no git starts after it.
  const tracking = updateRefsLater(l, packed);
  const reply = await replied;
  T("bridge replied");
  const lines: string[] = [];
  if (reply.code === 0 && reply.pushed) {
    const remote = reply.pushed.remote;
    for (const u of reply.pushed.updates) {
      if (!u.dst.startsWith("refs/heads/")) continue;
      const b = u.dst.slice("refs/heads/".length);
      lines.push(u.sha ? `update refs/remotes/${remote}/${b} ${u.sha}` : `delete refs/remotes/${remote}/${b}`);
      if (u.sha && opts.some((o) => o === "-u" || o === "--set-upstream")) {
        const local = Object.entries(resolved).find(([, r]) => r.sha === u.sha && r.ref?.startsWith("refs/heads/"))?.[1].ref;
        if (local) {
          const lb = local.slice("refs/heads/".length);
          await run(l, ["config", `branch.${lb}.remote`, remote]);
          await run(l, ["config", `branch.${lb}.merge`, u.dst]);
          process.stderr.write(`branch '${lb}' set up to track '${remote}/${b}'.\n`);
        }
      }
    }
  }
  await tracking(lines);
  T("tracking refs updated");
  reply.hangUp?.();
  return reply.code;
}

/** runs: git update-ref --stdin, started after `after` and given its lines later (none: it changes nothing). */
function updateRefsLater(l: Local, after: Promise<unknown>): (lines: string[]) => Promise<void> {
  const spawn = () => Bun.spawn([l.git, ...l.where, "update-ref", "--stdin"], { stdin: "pipe", stdout: "ignore", stderr: "ignore" });
  let proc: ReturnType<typeof spawn> | undefined;
  const start = () => (proc ??= spawn());
  after.then(start, start);
  return async (lines) => {
    const p = start();
    if (lines.length) p.stdin.write(lines.join("\n") + "\n");
    await p.stdin.end();
    await p.exited;
  };
}

async function withBundle<T>(bundle: Uint8Array, f: (file: string) => Promise<T>): Promise<T> {
  const { mkdtempSync, rmSync, writeFileSync } = fs();
  const dir = mkdtempSync(path().join(require("node:os").tmpdir(), "sbx-fetch-"));
  const file = path().join(dir, "in.bundle");
  try {
    writeFileSync(file, bundle, { mode: 0o600 });
    return await f(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const PULL_LOCAL = /^(--rebase(=.*)?|-r|--no-rebase|--ff|--no-ff|--ff-only|--autostash|--no-autostash|--edit|-e|--no-edit|--squash|--no-squash|--commit|--no-commit|--stat|--no-stat|-n|--signoff|--allow-unrelated-histories|-q|--quiet|-v|--verbose|(-s|--strategy|-X|--strategy-option)(=.*)?)$/;

async function fetchOrPull(l: Local, s: Snapshot, sub: "fetch" | "pull", argv: string[], rest: string[], cwd: string): Promise<number> {
  const { pos, opts } = positionals(sub, rest);
  const haves = remoteTips(s);
  const branch = s.branch;
  const onBranch = branch ? s.refs.get(`refs/heads/${branch}`) : undefined;
  if (onBranch) haves.push(onBranch);
  else {
    const head = await run(l, ["rev-parse", "--verify", "-q", "HEAD"]);
    if (head.code === 0) haves.push(head.out.trim());
  }
  const reply = await callBridge({ tool: "git", args: argv, cwd, ...(branch ? { branch } : {}), haves }, undefined, `git ${sub}`);
  if (reply.code !== 0 || !reply.refs) return reply.code;
  const { remote, url, refs, prune } = reply.refs;
  if (reply.bundle) {
    const r = await withBundle(reply.bundle, (file) => run(l, ["bundle", "unbundle", file]));
    if (r.code !== 0) {
      process.stderr.write(r.err);
      return r.code;
    }
  }
  const before: Record<string, string> = {};
  const cur = await run(l, ["for-each-ref", "--format=%(objectname) %(refname)", `refs/remotes/${remote}/`, "refs/tags/"]);
  for (const line of cur.out.split("\n")) {
    const [sha, ref] = line.split(" ");
    if (sha && ref) before[ref] = sha;
  }
  const tx: string[] = [];
  const report: string[] = [];
  const short = (r: string) => r.replace(/^refs\/remotes\//, "").replace(/^refs\/tags\//, "");
  for (const [ref, sha] of Object.entries(refs)) {
    if (before[ref] === sha) continue;
    if (ref.startsWith("refs/tags/") && before[ref] !== undefined) continue;
    tx.push(`update ${ref} ${sha}`);
    const name = short(ref).replace(`${remote}/`, "");
    report.push(before[ref] === undefined ? ` * [new ${ref.startsWith("refs/tags/") ? "tag" : "branch"}]      ${name} -> ${short(ref)}` : `   ${before[ref]!.slice(0, 7)}..${sha.slice(0, 7)}  ${name} -> ${short(ref)}`);
  }
  if (prune) {
    for (const ref of Object.keys(before)) {
      if (ref.startsWith(`refs/remotes/${remote}/`) && !(ref in refs) && !ref.endsWith("/HEAD")) {
        tx.push(`delete ${ref}`);
        report.push(` - [deleted]         (none) -> ${short(ref)}`);
      }
    }
  }
  if (tx.length) {
    const r = await run(l, ["update-ref", "--stdin"], tx.join("\n") + "\n");
    if (r.code !== 0) {
      process.stderr.write(r.err);
      return r.code;
    }
  }
  const quiet = opts.some((o) => o === "-q" || o === "--quiet");
  if (report.length && !quiet) process.stderr.write(`From ${url}\n${report.join("\n")}\n`);
  if (sub === "fetch") return 0;
  // pull: the network part is done; merge or rebase locally, as git would, from the updated tracking ref.
  let b = pos[1];
  if (b === undefined) {
    const merge = branch ? await config(l, `branch.${branch}.merge`) : undefined;
    b = merge?.replace(/^refs\/heads\//, "") ?? branch;
  }
  if (!b) {
    process.stderr.write("sbx: pull: not on a branch and no branch named\n");
    return 1;
  }
  const local = opts.filter((o) => PULL_LOCAL.test(o));
  return inherit(l.git, [...l.where, "pull", ...local, ".", `refs/remotes/${remote}/${b}`]);
}

async function clone(l: Local, argv: string[], rest: string[], cwd: string): Promise<number> {
  const { pos, opts } = positionals("clone", rest);
  const url = pos[0]!;
  const { basename, join } = path();
  const dir = pos[1] ?? basename(url.replace(/\/+$/, "")).replace(/\.git$/, "");
  const reply = await callBridge({ tool: "git", args: argv, cwd }, undefined, "git clone");
  if (reply.code !== 0) return reply.code;
  if (!reply.bundle) {
    process.stderr.write("sbx: clone: the bridge sent no repository\n");
    return 1;
  }
  const keep: string[] = [];
  for (let i = 0; i < opts.length; i++) {
    const o = opts[i]!;
    if (o === "-b" || o === "--branch" || o === "-o" || o === "--origin") keep.push(o, opts[++i]!);
    else if (/^(--branch|--origin)=/.test(o) || ["--bare", "-n", "--no-checkout", "-q", "--quiet"].includes(o)) keep.push(o);
  }
  const oi = keep.findIndex((o) => o === "-o" || o === "--origin");
  const oe = keep.find((o) => o.startsWith("--origin="));
  const origin = oi !== -1 ? keep[oi + 1]! : oe ? oe.slice("--origin=".length) : "origin";
  return withBundle(reply.bundle, async (file) => {
    const code = await inherit(l.git, [...l.where, "clone", ...keep, file, dir]);
    if (code !== 0) return code;
    const r = await run({ git: l.git, where: ["-C", join(l.where.includes("-C") ? l.where[l.where.indexOf("-C") + 1]! : ".", dir)] }, ["remote", "set-url", origin, url]);
    return r.code;
  });
}

/** SBX_SHIM_TRACE=<epoch ms>: each stage's time since then, written to stderr at exit (bench/bridge-push.bench.ts TRACE=1). */
const traceFrom = Number(process.env.SBX_SHIM_TRACE) || 0;
const traced: string[] = [];
const T = (stage: string) => traceFrom && traced.push(`  @${(performance.timeOrigin + performance.now() - traceFrom).toFixed(1)} ms shim: ${stage}\n`);
if (traceFrom) process.on("exit", () => (T("exit"), process.stderr.write(traced.join(""))));
T("module loaded");
export async function main(argv: string[]): Promise<number> {
  const early = await fromLauncher();
  const git = early.git ?? realGit();
  const { global, sub, rest } = splitArgv(argv);
  if (sub === undefined || !NETWORK.has(sub)) return inherit(git, argv);
  const l: Local = { git, where: localWhere(global) };
  T("main");
  // The launcher reads ahead only for `git <sub> …` (no global option that would place the repository elsewhere).
  const s = sub === "clone" ? parseSnapshot("", "") : await snapshot(l, global.length === 0 ? early.snapshot : undefined);
  T("snapshot");
  if (!needsBridge(s, sub, positionals(sub, rest).pos)) return inherit(git, argv);
  const cwd = process.cwd();
  if (sub === "push") return push(l, s, argv, rest, cwd);
  if (sub === "fetch" || sub === "pull") return fetchOrPull(l, s, sub, argv, rest, cwd);
  if (sub === "clone") return clone(l, argv, rest, cwd);
  const reply = await callBridge({ tool: "git", args: argv, cwd }, undefined, `git ${sub}`);
  return reply.code;
}

if (import.meta.main) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e: unknown) => {
      process.stderr.write(`sbx git shim: ${(e as Error).message}\n`);
      process.exit(1);
    },
  );
}
