// sandboxes-apart, through the push gate: a push carries what this sandbox sent, the host repo's own objects and this
// sandbox's own synced commits, and nothing else. The host repo's alternates list every sandbox's store and the retired
// store (removed sandboxes' kept objects), and git follows alternates recursively: a gate that borrowed the host's
// objects dir would resolve another sandbox's unpushed commit, tree or blob for a push that names it by id and leaves
// it out of the pack, and send it upstream. Real host repo, real stores (src/sync/store.ts, importSandbox), real bridge
// and gate, a token-demanding git server on 127.0.0.1; the hostile packs are crafted and sent as the git shim sends a
// push (a JSON header line, then the pack), since an agent can write any bytes to its bridge socket.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ensureGate, present as gatePresent } from "../../../src/bridge/gate";
import { importSandbox } from "../../../src/sync/import";
import { SANDBOX_GIT_SAFE, type SandboxGit } from "../../../src/sync/sandbox-git";
import { retireStore, retiredStoreDir, storeDir } from "../../../src/sync/store";
import { createExec, streamRun } from "../../../src/sys/exec";
import { craftPack } from "../../support/crafted-pack";
import { commitOn, git, makeHarness, refIn, sh, type Harness } from "./harness";

const PATH = process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin";
const exec = createExec({ PATH });
const ENV = { PATH, HOME: "/nonexistent", GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null", GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.invalid", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.invalid" };
const IDENT = "t <t@example.invalid> 1700000000 +0000";
/** Another sandbox's file: big enough that git deltas a near copy of it against it. */
const B_TEXT = Array.from({ length: 400 }, (_, i) => `sandbox other's unpushed line ${i}\n`).join("");

let h: Harness;
/** Sandbox "other": its unpushed commit (only in its store) and that commit's blob. */
let P = "";
let Pblob = "";
/** Sandbox "gone", removed: its commit, kept in the retired store. */
let R = "";
/** This sandbox's ("demo") own commit, synced into its own store and in no host branch. */
let S = "";
/** A scratch repo where the attacker's objects are made (it never holds the other sandboxes' objects). */
let craft = "";

/** The sandbox's own git in a clone (what a driver's sandboxGit does), for ref sync of the test's sandboxes. */
function sandboxGitIn(clone: string): SandboxGit {
  return (args, stdin) => streamRun(exec, ["git", ...SANDBOX_GIT_SAFE, "-C", clone, ...args], { env: ENV, replaceEnv: true, ...(stdin === undefined ? {} : { stdin }) });
}

/** A sandbox `name` with a commit of `files` on `feature`, synced into its store; returns the commit id. */
async function sandboxWithWork(name: string, files: Record<string, string>): Promise<string> {
  const clone = join(h.root, `clone-${name}`);
  await git(h.root, "clone", "-q", "--shared", h.host, clone);
  const sha = await commitOn(clone, "feature", files, `${name}'s unpushed work`);
  await importSandbox({ repo: h.host, name, sandboxGit: sandboxGitIn(clone), exec });
  return sha;
}

/** Whether the host repo's own objects (its list of alternates emptied for the check, as every sandbox sees them) hold `oid`. */
function hostOwnHas(oid: string): boolean {
  const file = join(h.host, ".git", "objects", "info", "alternates");
  const saved = readFileSync(file, "utf8");
  writeFileSync(file, "");
  try {
    return Bun.spawnSync(["git", "-C", h.host, "cat-file", "-e", oid], { env: ENV }).exitCode === 0;
  } finally {
    writeFileSync(file, saved);
  }
}

/** Whether a repo's own objects (its pack and loose dirs, never an alternate) hold `oid`. */
function ownObjectsHave(gitDir: string, oid: string): boolean {
  const objects = join(gitDir, "objects");
  const idx = readdirSync(join(objects, "pack")).filter((f) => f.endsWith(".idx"));
  for (const f of idx) {
    const r = Bun.spawnSync(["git", "show-index"], { env: ENV, stdin: readFileSync(join(objects, "pack", f)) });
    if (r.stdout.toString().includes(oid)) return true;
  }
  try {
    return readdirSync(join(objects, oid.slice(0, 2))).includes(oid.slice(2));
  } catch {
    return false;
  }
}

async function inCraft(args: string[], stdin?: string): Promise<string> {
  const r = await sh(["git", ...args], { cwd: craft, ...(stdin === undefined ? {} : { stdin }) });
  if (r.code !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
  return r.stdout.trim();
}
const blob = (text: string) => inCraft(["hash-object", "-w", "--stdin"], text);
/** A tree of `name → blob id` entries; the blobs need not exist (an attacker names what it does not have). */
const tree = (entries: Record<string, string>) => inCraft(["mktree", "--missing"], Object.entries(entries).map(([n, b]) => `100644 blob ${b}\t${n}\n`).join(""));
/** A commit object written as raw text: its parents need not exist either. */
const commit = (treeId: string, parents: string[], msg: string) =>
  inCraft(["hash-object", "-t", "commit", "-w", "--stdin"], `tree ${treeId}\n${parents.map((p) => `parent ${p}\n`).join("")}author ${IDENT}\ncommitter ${IDENT}\n\n${msg}\n`);
/** An object's raw bytes (a tree's are binary). */
async function rawObject(type: string, oid: string): Promise<Uint8Array> {
  const r = Bun.spawnSync(["git", "cat-file", type, oid], { cwd: craft, env: ENV });
  if (r.exitCode !== 0) throw new Error(`cat-file ${oid}`);
  return new Uint8Array(r.stdout);
}
/** A pack of exactly these objects (none of what they name besides). */
async function packOf(oids: string[]): Promise<Uint8Array> {
  const p = Bun.spawn(["git", "pack-objects", "--stdout", "-q"], { cwd: craft, env: ENV, stdin: Buffer.from(oids.join("\n") + "\n"), stdout: "pipe" });
  const out = new Uint8Array(await new Response(p.stdout).arrayBuffer());
  if ((await p.exited) !== 0) throw new Error("pack-objects failed");
  return out;
}

/** Sends a push request exactly as the shim does (header line, then the pack) and reads the bridge's frames. */
async function rawPush(sha: string, dst: string, pack?: Uint8Array): Promise<{ code: number; text: string }> {
  const head = new TextEncoder().encode(JSON.stringify({ tool: "git", args: ["push", "origin", `${sha}:${dst}`], cwd: h.clone, resolved: { [sha]: { sha } } }) + "\n");
  const body = new Uint8Array(head.length + (pack?.length ?? 0));
  body.set(head);
  if (pack) body.set(pack, head.length);
  const res = await fetch("http://bridge/v1/run", { method: "POST", body, unix: h.socket } as RequestInit);
  const frames = (await res.text()).trim().split("\n").map((l) => JSON.parse(l) as { t: string; code?: number; d?: string });
  return { code: frames.at(-1)?.code ?? -1, text: frames.map((f) => f.d ?? "").join("") };
}

const upstreamHas = async (oid: string) => (await sh(["git", "--git-dir", h.upstreamRepo, "cat-file", "-e", oid])).code === 0;
const gateRepo = () => join(h.root, "gate", "gate.git");

beforeAll(async () => {
  h = await makeHarness();
  P = await sandboxWithWork("other", { "b.txt": B_TEXT });
  Pblob = await git(h.host, "rev-parse", `${P}:b.txt`);
  R = await sandboxWithWork("gone", { "r.txt": "a removed sandbox's unmerged work\n" });
  await retireStore({ exec, repo: h.host }, "gone");
  // This sandbox's own work, synced: in its store, on no host branch.
  await git(h.clone, "checkout", "-q", "main");
  S = await commitOn(h.clone, "mine", { "mine.txt": "this sandbox's own synced work\n" });
  await importSandbox({ repo: h.host, name: "demo", sandboxGit: sandboxGitIn(h.clone), exec });
  await git(h.clone, "checkout", "-q", "main");
  craft = join(h.root, "craft");
  mkdirSync(craft);
  await git(craft, "init", "-q");
  // What the attack needs is there: the host reads each through its alternates, none is in its own objects.
  for (const [oid, where] of [[P, storeDir(h.host, "other")], [Pblob, storeDir(h.host, "other")], [R, retiredStoreDir(h.host)], [S, storeDir(h.host, "demo")]] as const) {
    expect((await sh(["git", "-C", h.host, "cat-file", "-e", oid])).code).toBe(0);
    expect(hostOwnHas(oid)).toBe(false);
    expect(ownObjectsHave(where, oid)).toBe(true);
  }
});
afterAll(async () => {
  await h.stop();
});

describe("sandboxes-apart: a push never carries another sandbox's objects", () => {
  test("a commit whose parent is another sandbox's unpushed commit, sent without it, is refused naming that commit", async () => {
    const c = await commit(await tree({ "a.txt": await blob("this sandbox's line\n") }), [P], "on top of the other sandbox's work");
    const pack = await packOf([c, await tree({ "a.txt": await blob("this sandbox's line\n") }), await blob("this sandbox's line\n")]);
    const r = await rawPush(c, "refs/heads/sbx/demo/stolen-parent", pack);
    expect(r.code).toBe(77);
    expect(r.text).toContain(`needs commit ${P}`);
    expect(r.text).not.toContain("fatal:");
    expect(await refIn(h.upstreamRepo, "refs/heads/sbx/demo/stolen-parent")).toBe("");
    expect(await upstreamHas(P)).toBe(false);
    expect(ownObjectsHave(gateRepo(), P)).toBe(false);
  });

  test("a tree naming another sandbox's blob, sent without it, is refused naming that object", async () => {
    const main = await refIn(join(h.host, ".git"), "refs/heads/main");
    const t = await tree({ "copied.txt": Pblob });
    const c = await commit(t, [main], "a tree entry that is the other sandbox's file");
    const r = await rawPush(c, "refs/heads/sbx/demo/stolen-blob", await packOf([c, t]));
    expect(r.code).toBe(77);
    expect(r.text).toContain(Pblob);
    expect(r.text).not.toContain("fatal:");
    expect(await refIn(h.upstreamRepo, "refs/heads/sbx/demo/stolen-blob")).toBe("");
    expect(await upstreamHas(Pblob)).toBe(false);
  });

  test("a thin pack whose delta base is another sandbox's blob is refused, and the base is never copied into the gate", async () => {
    // The attacker's near copy of the other sandbox's file, sent as a delta against it (named by id): index-pack
    // --fix-thin copies a thin pack's bases into the gate's own objects.
    const append = "one more line\n";
    const near = await blob(`${B_TEXT}${append}`);
    const t = await tree({ "b.txt": near });
    const c = await commit(t, [], "a near copy");
    const pack = craftPack([
      { type: "commit", body: await rawObject("commit", c) },
      { type: "tree", body: await rawObject("tree", t) },
      { type: "ref-delta", base: Pblob, baseSize: Buffer.byteLength(B_TEXT), append: new TextEncoder().encode(append) },
    ]);
    // It is thin: alone, it does not index; with the base there, it does.
    const lone = join(h.root, "lone.git");
    await git(h.root, "init", "-q", "--bare", lone);
    expect(Bun.spawnSync(["git", "--git-dir", lone, "index-pack", "--stdin", "--fix-thin"], { env: ENV, stdin: pack }).exitCode).not.toBe(0);
    const withBase = join(h.root, "with-base.git");
    await git(h.root, "init", "-q", "--bare", withBase);
    writeFileSync(join(withBase, "objects", "info", "alternates"), `${join(storeDir(h.host, "other"), "objects")}\n`);
    expect(Bun.spawnSync(["git", "--git-dir", withBase, "index-pack", "--stdin", "--fix-thin"], { env: ENV, stdin: pack }).exitCode).toBe(0);
    const r = await rawPush(c, "refs/heads/sbx/demo/thin", pack);
    expect(r.code).toBe(77);
    expect(r.text).toContain("cannot see");
    expect(r.text).not.toContain("fatal:");
    expect(await refIn(h.upstreamRepo, "refs/heads/sbx/demo/thin")).toBe("");
    expect(ownObjectsHave(gateRepo(), Pblob)).toBe(false);
    expect(readdirSync(join(gateRepo(), "objects", "pack")).filter((f) => f.startsWith("tmp_pack_"))).toEqual([]);
    // And naming the base by id afterwards finds nothing in the gate either.
    const t2 = await tree({ "again.txt": Pblob });
    const c2 = await commit(t2, [], "the base, by id");
    expect((await rawPush(c2, "refs/heads/sbx/demo/thin-again", await packOf([c2, t2]))).code).toBe(77);
    expect(await upstreamHas(Pblob)).toBe(false);
  });

  test("a commit on a removed sandbox's kept commit (the retired store) is refused naming it", async () => {
    const b = await blob("on a removed sandbox's work\n");
    const t = await tree({ "x.txt": b });
    const c = await commit(t, [R], "on the removed sandbox's work");
    const r = await rawPush(c, "refs/heads/sbx/demo/stolen-retired", await packOf([c, t, b]));
    expect(r.code).toBe(77);
    expect(r.text).toContain(`needs commit ${R}`);
    expect(await refIn(h.upstreamRepo, "refs/heads/sbx/demo/stolen-retired")).toBe("");
    expect(await upstreamHas(R)).toBe(false);
  });

  test("an annotated tag of another sandbox's commit, sent without it, is refused naming that commit", async () => {
    const tag = await inCraft(["hash-object", "-t", "tag", "-w", "--stdin"], `object ${P}\ntype commit\ntag sbx/demo/stolen-tag\ntagger ${IDENT}\n\nthe other sandbox's work, by id\n`);
    const r = await rawPush(tag, "refs/tags/sbx/demo/stolen-tag", await packOf([tag]));
    expect(r.code).toBe(77);
    expect(r.text).toContain(P);
    expect(r.text).toContain("which it did not send");
    expect(await refIn(h.upstreamRepo, "refs/tags/sbx/demo/stolen-tag")).toBe("");
    expect(await upstreamHas(P)).toBe(false);
  });

  test("this sandbox's own synced commits (its store) are seen: a commit on one, sent without it, is pushed", async () => {
    const b = await blob("on this sandbox's own synced work\n");
    const t = await tree({ "y.txt": b });
    const c = await commit(t, [S], "on my own synced work");
    const r = await rawPush(c, "refs/heads/sbx/demo/on-mine", await packOf([c, t, b]));
    expect(r.text).not.toContain("refused");
    expect(r.code).toBe(0);
    expect(await refIn(h.upstreamRepo, "refs/heads/sbx/demo/on-mine")).toBe(c);
    expect(await upstreamHas(S)).toBe(true);
  });

  test("what the gate reads for this sandbox (fetch bundles' exclusions, the scan, every check) holds the host's own objects and its own store only", async () => {
    const g = await ensureGate(exec, join(h.root, "gate"), h.host, PATH, undefined, undefined, "demo");
    const main = await refIn(join(h.host, ".git"), "refs/heads/main");
    expect((await gatePresent(g, [main, S, P, Pblob, R])).sort()).toEqual([main, S].sort());
  });

  test("a fetch through the bridge, after those pushes, delivers nothing of another sandbox", async () => {
    const head = JSON.stringify({ tool: "git", args: ["fetch", "origin"], cwd: h.clone, haves: [] }) + "\n";
    const res = await fetch("http://bridge/v1/run", { method: "POST", body: head, unix: h.socket } as RequestInit);
    const frames = (await res.text()).trim().split("\n").map((l) => JSON.parse(l) as { t: string; code?: number; d?: string; refs?: Record<string, string> });
    expect(frames.at(-1)).toEqual({ t: "exit", code: 0 });
    // Every tip it names is the upstream's.
    const refs = frames.find((f) => f.t === "refs")?.refs ?? {};
    for (const oid of Object.values(refs)) expect(await upstreamHas(oid)).toBe(true);
    // Every object the bundle carries, indexed into a repo holding the host's branches (its prerequisites).
    const bundle = Buffer.concat(frames.filter((f) => f.t === "bundle").map((f) => Buffer.from(f.d!, "base64")));
    expect(bundle.length).toBeGreaterThan(0);
    const into = join(h.root, "fetched.git");
    await git(h.root, "clone", "-q", "--bare", "--no-local", h.host, into);
    const pack = join(h.root, "fetched.pack");
    writeFileSync(pack, bundle.subarray(bundle.indexOf("\n\n") + 2));
    const ix = Bun.spawnSync(["git", "--git-dir", into, "index-pack", "--stdin", "--fix-thin", "--keep"], { env: ENV, stdin: readFileSync(pack) });
    expect(ix.exitCode).toBe(0);
    const name = ix.stdout.toString().trim().split(/\s+/).at(-1)!;
    const objs = Bun.spawnSync(["git", "show-index"], { env: ENV, stdin: readFileSync(join(into, "objects", "pack", `pack-${name}.idx`)) }).stdout.toString();
    expect(objs.length).toBeGreaterThan(0);
    for (const oid of [P, Pblob, R]) expect(objs).not.toContain(oid);
  });

  test("an ordinary push through the shim still goes out", async () => {
    await git(h.clone, "checkout", "-q", "main");
    const sha = await commitOn(h.clone, "ordinary", { "ordinary.txt": "ordinary work\n" });
    const r = await h.shim(["push", "origin", "ordinary:sbx/demo/ordinary"]);
    expect(r.code).toBe(0);
    expect(await refIn(h.upstreamRepo, "refs/heads/sbx/demo/ordinary")).toBe(sha);
  });
});

describe("sandboxes-apart keeps fetches small: the host view offers the person's tips as what the gate has", () => {
  let f: Harness;
  beforeAll(async () => {
    f = await makeHarness();
  });
  afterAll(async () => {
    await f.stop();
  });

  test("a fresh gate's fetch takes only what the upstream has beyond the host's branches", async () => {
    // 60 commits on the host's main, all on the upstream, plus one the host does not have.
    let stream = "";
    for (let i = 0; i < 60; i++) {
      const data = `line ${i}\n`;
      stream += `commit refs/heads/main\ncommitter t <t@example.invalid> ${1700000000 + i} +0000\ndata 3\nc${i % 10}\n`;
      if (i === 0) stream += "from refs/heads/main^0\n";
      stream += `M 100644 inline f${i}.txt\ndata ${data.length}\n${data}\n`;
    }
    expect((await sh(["git", "fast-import", "--quiet"], { cwd: f.host, stdin: stream })).code).toBe(0);
    const auth = f.upstream.repoUrl("proj").replace("http://", `http://x:${f.token}@`);
    await git(f.host, "push", "-q", auth, "main");
    const other = join(f.root, "upstream-work");
    await git(f.root, "clone", "-q", auth, other);
    await commitOn(other, "main", { "new.txt": "only upstream has this\n" });
    await git(other, "push", "-q", "origin", "main");
    const head = JSON.stringify({ tool: "git", args: ["fetch", "origin"], cwd: f.clone, haves: [] }) + "\n";
    const res = await fetch("http://bridge/v1/run", { method: "POST", body: head, unix: f.socket } as RequestInit);
    const frames = (await res.text()).trim().split("\n").map((l) => JSON.parse(l) as { t: string; code?: number });
    expect(frames.at(-1)).toEqual({ t: "exit", code: 0 });
    // The new commit, its tree and blob: not the 180 objects of the host's history again.
    const counts = (await sh(["git", "--git-dir", join(f.root, "gate", "gate.git"), "count-objects", "-v"])).stdout;
    const n = Number(/^count: (\d+)/m.exec(counts)![1]) + Number(/^in-pack: (\d+)/m.exec(counts)![1]);
    expect(n).toBeGreaterThan(0);
    expect(n).toBeLessThan(10);
  });
});
