// sandboxes-apart, through ref sync: what one sandbox sends lands in its own store, judged against the host's own objects
// and that store only. The host repo's alternates list every store and the retired store, and git follows alternates
// recursively: a store that borrowed the host's objects dir would take another sandbox's commit as this one's tip, count
// a pack resting on another sandbox's commit complete, and copy another sandbox's blob into this store as a thin pack's
// delta base. Real host repo, real stores, the sandbox side played by a liar that answers with crafted bytes.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SbxError } from "../../../src/core/errors";
import { importSandbox } from "../../../src/sync/import";
import { SANDBOX_GIT_SAFE, type SandboxGit } from "../../../src/sync/sandbox-git";
import { ensureStore, promoteStores, retireStore, storeDir, STORE_ALTERNATES } from "../../../src/sync/store";
import { createExec, streamRun } from "../../../src/sys/exec";
import { craftPack } from "../../support/crafted-pack";

const PATH = process.env.PATH ?? "/usr/bin:/bin";
const ENV = { PATH, HOME: "/nonexistent", GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null", GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.invalid", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.invalid" };
const exec = createExec(ENV);
const IDENT = "t <t@example.invalid> 1700000000 +0000";
const B_TEXT = Array.from({ length: 400 }, (_, i) => `sandbox b's unpushed line ${i}\n`).join("");

let root = "";
afterEach(() => {
  if (root) rmSync(root, { recursive: true, force: true });
  root = "";
});

function git(cwd: string, args: string[], stdin?: string | Uint8Array): string {
  const r = Bun.spawnSync(["git", "-C", cwd, ...args], { env: ENV, stdout: "pipe", stderr: "pipe", ...(stdin === undefined ? {} : { stdin: typeof stdin === "string" ? Buffer.from(stdin) : stdin }) });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

function sandboxGitIn(clone: string): SandboxGit {
  return (args, stdin) => streamRun(exec, ["git", ...SANDBOX_GIT_SAFE, "-C", clone, ...args], { env: ENV, replaceEnv: true, ...(stdin === undefined ? {} : { stdin }) });
}

/** A sandbox that says it has `tip` on main and answers the pack request with `pack`. */
function liar(tip: string, pack: Uint8Array): SandboxGit {
  const out = (bytes: Uint8Array, code = 0) => ({ stdout: new Response(bytes).body!, done: Promise.resolve({ exitCode: code, stderr: "" }) });
  return (args, stdin) => {
    if (args[0] === "show-ref") return out(new TextEncoder().encode(`${tip} refs/heads/main\n`));
    if (args[0] === "cat-file") return out(new TextEncoder().encode(stdin ?? ""));
    if (args[0] === "pack-objects") return out(pack);
    return out(new Uint8Array(0), 1);
  };
}

/** Whether a repo's own objects (its packs and loose dirs, never an alternate) hold `oid`. */
function ownObjectsHave(gitDir: string, oid: string): boolean {
  const objects = join(gitDir, "objects");
  for (const f of readdirSync(join(objects, "pack")).filter((x) => x.endsWith(".idx"))) {
    const r = Bun.spawnSync(["git", "show-index"], { env: ENV, stdin: readFileSync(join(objects, "pack", f)) });
    if (r.stdout.toString().includes(oid)) return true;
  }
  try {
    return readdirSync(join(objects, oid.slice(0, 2))).includes(oid.slice(2));
  } catch {
    return false;
  }
}

interface World {
  host: string;
  craft: string;
  /** Sandbox b's unpushed commit and its blob (in b's store). */
  P: string;
  Pblob: string;
  /** A removed sandbox's kept commit (in the retired store). */
  R: string;
}

async function world(): Promise<World> {
  root = mkdtempSync(join(tmpdir(), "sbx-apart-"));
  const host = join(root, "host");
  mkdirSync(host);
  git(host, ["init", "-q", "-b", "main"]);
  writeFileSync(join(host, "README"), "hello\n");
  git(host, ["add", "README"]);
  git(host, ["commit", "-q", "-m", "init"]);
  const work = async (name: string, file: string, text: string) => {
    const clone = join(root, `clone-${name}`);
    git(root, ["clone", "-q", "--shared", host, clone]);
    git(clone, ["checkout", "-q", "-b", "feature"]);
    writeFileSync(join(clone, file), text);
    git(clone, ["add", file]);
    git(clone, ["commit", "-q", "-m", `${name}'s work`]);
    await importSandbox({ repo: host, name, sandboxGit: sandboxGitIn(clone), exec });
    return git(clone, ["rev-parse", "HEAD"]);
  };
  const P = await work("b", "b.txt", B_TEXT);
  const R = await work("gone", "r.txt", "removed sandbox's work\n");
  await retireStore({ exec, repo: host }, "gone");
  const craft = join(root, "craft");
  mkdirSync(craft);
  git(craft, ["init", "-q"]);
  return { host, craft, P, Pblob: git(host, ["rev-parse", `${P}:b.txt`]), R };
}

const blob = (w: World, text: string) => git(w.craft, ["hash-object", "-w", "--stdin"], text);
const tree = (w: World, entries: Record<string, string>) => git(w.craft, ["mktree", "--missing"], Object.entries(entries).map(([n, b]) => `100644 blob ${b}\t${n}\n`).join(""));
const commit = (w: World, t: string, parents: string[], msg: string) =>
  git(w.craft, ["hash-object", "-t", "commit", "-w", "--stdin"], `tree ${t}\n${parents.map((p) => `parent ${p}\n`).join("")}author ${IDENT}\ncommitter ${IDENT}\n\n${msg}\n`);
const packOf = (w: World, oids: string[]) => Bun.spawnSync(["git", "-C", w.craft, "pack-objects", "--stdout", "-q"], { env: ENV, stdin: Buffer.from(oids.map((o) => `${o}\n`).join("")) }).stdout;
const raw = (w: World, type: string, oid: string) => new Uint8Array(Bun.spawnSync(["git", "-C", w.craft, "cat-file", type, oid], { env: ENV }).stdout);

async function refused(p: Promise<unknown>): Promise<SbxError> {
  const e = await p.then(() => null, (x: unknown) => x);
  expect(e).toBeInstanceOf(SbxError);
  return e as SbxError;
}
const sandboxRefs = (w: World, name: string) => git(w.host, ["for-each-ref", `refs/remotes/sandbox-${name}/`]);

describe("sandboxes-apart: ref sync takes into a sandbox's store nothing of another sandbox's", () => {
  test("a sandbox naming another sandbox's commit as its branch (sending nothing) moves no ref", async () => {
    const w = await world();
    const empty = packOf(w, []);
    const e = await refused(importSandbox({ repo: w.host, name: "a", sandboxGit: liar(w.P, empty), exec }));
    expect(e.message).toContain("incomplete");
    expect(sandboxRefs(w, "a")).toBe("");
  });

  test("a commit resting on another sandbox's commit, sent without it, is refused; no ref moves", async () => {
    const w = await world();
    const b = blob(w, "a's line\n");
    const t = tree(w, { "a.txt": b });
    const c = commit(w, t, [w.P], "on b's work");
    const e = await refused(importSandbox({ repo: w.host, name: "a", sandboxGit: liar(c, packOf(w, [c, t, b])), exec }));
    expect(e.message).toContain(w.P);
    expect(sandboxRefs(w, "a")).toBe("");
  });

  test("a commit resting on a removed sandbox's kept commit (the retired store) is refused", async () => {
    const w = await world();
    const b = blob(w, "on the removed one\n");
    const t = tree(w, { "x.txt": b });
    const c = commit(w, t, [w.R], "on the removed sandbox's work");
    const e = await refused(importSandbox({ repo: w.host, name: "a", sandboxGit: liar(c, packOf(w, [c, t, b])), exec }));
    expect(e.message).toContain(w.R);
    expect(sandboxRefs(w, "a")).toBe("");
  });

  test("a thin pack whose delta base is another sandbox's blob is refused, and the base is not copied into this store", async () => {
    const w = await world();
    // A near copy of b's file sent as a delta against it, named by id (index-pack --fix-thin copies a thin pack's bases).
    const append = "one more line\n";
    const t = tree(w, { "b.txt": blob(w, `${B_TEXT}${append}`) });
    const c = commit(w, t, [], "a near copy");
    const pack = craftPack([
      { type: "commit", body: raw(w, "commit", c) },
      { type: "tree", body: raw(w, "tree", t) },
      { type: "ref-delta", base: w.Pblob, baseSize: Buffer.byteLength(B_TEXT), append: new TextEncoder().encode(append) },
    ]);
    const e = await refused(importSandbox({ repo: w.host, name: "a", sandboxGit: liar(c, pack), exec }));
    expect(e.message).toContain("refused");
    expect(sandboxRefs(w, "a")).toBe("");
    expect(ownObjectsHave(storeDir(w.host, "a"), w.Pblob)).toBe(false);
  });

  test("a store made before the host view (borrowing the host's objects dir) is re-pointed at the next sync, which then refuses", async () => {
    const w = await world();
    await ensureStore({ exec, repo: w.host }, "a");
    writeFileSync(join(storeDir(w.host, "a"), "objects", "info", "alternates"), "../../../objects\n");
    const b = blob(w, "a's line\n");
    const t = tree(w, { "a.txt": b });
    const c = commit(w, t, [w.P], "on b's work");
    const e = await refused(importSandbox({ repo: w.host, name: "a", sandboxGit: liar(c, packOf(w, [c, t, b])), exec }));
    expect(e.message).toContain(w.P);
    expect(readFileSync(join(storeDir(w.host, "a"), "objects", "info", "alternates"), "utf8")).toBe(`${STORE_ALTERNATES}\n`);
    expect(sandboxRefs(w, "a")).toBe("");
  });

  test("an honest sandbox still syncs: a thin pack against the host's branch, then promotion of what the person takes", async () => {
    const w = await world();
    const clone = join(root, "clone-a");
    git(root, ["clone", "-q", "--shared", w.host, clone]);
    writeFileSync(join(clone, "README"), "hello\nfrom a\n");
    git(clone, ["commit", "-q", "-am", "a's work"]);
    const a = git(clone, ["rev-parse", "HEAD"]);
    const r = await importSandbox({ repo: w.host, name: "a", sandboxGit: sandboxGitIn(clone), exec });
    expect(r.changed).toBe(true);
    expect(git(w.host, ["rev-parse", "refs/remotes/sandbox-a/main"])).toBe(a);
    // The person takes b's and a's work: promotion walks every store it needs, and each lands in the host's own objects.
    git(w.host, ["merge", "-q", "--no-edit", "refs/remotes/sandbox-a/main"]);
    git(w.host, ["merge", "-q", "--no-edit", "refs/remotes/sandbox-b/feature"]);
    expect(await promoteStores({ exec, repo: w.host })).toBeGreaterThan(0);
    for (const oid of [a, w.P]) expect(ownObjectsHave(join(w.host, ".git"), oid)).toBe(true);
    git(w.host, ["fsck", "--connectivity-only", "--no-dangling"]);
  });
});
