// The host never reads a clone: sandbox objects reach it only as a pack the sandbox's own git made, verified strictly
// into the sandbox's store before any ref moves. Tried as a hostile sandbox would: garbage, oversized, incomplete and
// malformed packs, and (as root, with a real second uid) every shape of redirection planted in the clone.
import { afterEach, describe, expect, test } from "bun:test";
import { chmodSync, lchownSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SbxError } from "../../../src/core/errors";
import { importSandbox } from "../../../src/sync/import";
import { SANDBOX_GIT_SAFE, type SandboxGit } from "../../../src/sync/sandbox-git";
import { storeDir } from "../../../src/sync/store";
import { createExec, streamRun, type Exec, type ExecOptions } from "../../../src/sys/exec";

const PATH = process.env.PATH ?? "/usr/bin:/bin";
// The test's own git (as root, setting up and checking) may work in the guest-owned clone: safe.directory=* for it only.
const ENV = {
  PATH, HOME: "/nonexistent", GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.invalid", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.invalid",
  GIT_CONFIG_COUNT: "1", GIT_CONFIG_KEY_0: "safe.directory", GIT_CONFIG_VALUE_0: "*",
};
const isRoot = process.getuid?.() === 0;
const GUEST = 54321;

let root = "";
afterEach(() => {
  if (root) rmSync(root, { recursive: true, force: true });
  root = "";
});

function git(cwd: string, ...args: string[]): string {
  const r = Bun.spawnSync(["git", "-C", cwd, ...args], { env: ENV, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}
const has = (repo: string, oid: string) => Bun.spawnSync(["git", "-C", repo, "cat-file", "-e", oid], { env: ENV }).exitCode === 0;

/** The host's executor, recording every command: the host must never name the clone. */
function recording(): { exec: Exec; argv: string[][] } {
  const base = createExec(ENV);
  const argv: string[][] = [];
  const note = (a: readonly string[], o?: ExecOptions) => argv.push([...a, ...(o?.cwd ? [`cwd=${o.cwd}`] : [])]);
  return {
    argv,
    exec: {
      run: (a, o) => (note(a, o), base.run(a, o)),
      stream: (a, o) => (note(a, o), streamRun(base, a, o)),
      terminal: (a, o) => base.terminal(a, o),
    },
  };
}

function world() {
  root = mkdtempSync(join(tmpdir(), "sbx-import-"));
  chmodSync(root, 0o755);
  const host = join(root, "host");
  mkdirSync(host);
  git(host, "init", "-q", "-b", "main");
  writeFileSync(join(host, "README"), "hello\n");
  git(host, "add", "README");
  git(host, "commit", "-q", "-m", "init");
  const clone = join(root, "clone");
  git(root, "clone", "-q", "--shared", host, clone);
  return { host, clone };
}

/** A sandbox that answers with whatever bytes it likes for the pack, and says it has `tip` on main. */
function liar(tip: string, pack: Uint8Array): SandboxGit {
  const out = (bytes: Uint8Array, code = 0) => ({ stdout: new Response(bytes).body!, done: Promise.resolve({ exitCode: code, stderr: "" }) });
  return (args, stdin) => {
    if (args[0] === "show-ref") return out(new TextEncoder().encode(`${tip} refs/heads/main\n`));
    if (args[0] === "cat-file") return out(new TextEncoder().encode(stdin ?? ""));
    if (args[0] === "pack-objects") return out(pack);
    return out(new Uint8Array(0), 1);
  };
}

async function refused(p: Promise<unknown>): Promise<SbxError> {
  const e = await p.then(() => null, (x: unknown) => x);
  expect(e).toBeInstanceOf(SbxError);
  return e as SbxError;
}

describe("the-host-verifies-every-pack: nothing a sandbox sends moves a host ref unless it is whole and well-formed", () => {
  test("garbage instead of a pack is refused; no ref, no object", async () => {
    const { host } = world();
    const tip = "c".repeat(40);
    const e = await refused(importSandbox({ repo: host, name: "t", sandboxGit: liar(tip, new TextEncoder().encode("<html>this is not a pack</html>")), exec: createExec(ENV) }));
    expect(e.message).toContain("refused");
    expect(git(host, "for-each-ref", "refs/remotes/")).toBe("");
  });

  test("a pack over the size bound is cut off and refused", async () => {
    const { host, clone } = world();
    writeFileSync(join(clone, "big"), randomBytes(256 * 1024)); // incompressible: the pack is as big
    git(clone, "add", "big");
    git(clone, "commit", "-q", "-m", "big");
    const tip = git(clone, "rev-parse", "HEAD");
    const pack = Bun.spawnSync(["git", "-C", clone, "pack-objects", "--revs", "--stdout", "-q"], { env: ENV, stdin: Buffer.from(`${tip}\n`) }).stdout;
    const e = await refused(importSandbox({ repo: host, name: "t", sandboxGit: liar(tip, pack), exec: createExec(ENV), maxPackBytes: 4096 }));
    expect(e.message).toContain("refused");
    expect(has(host, tip)).toBe(false);
  });

  test("a pack that leaves out the tip's parent is refused (strict index, else the completeness check): the host checks, it does not trust", async () => {
    const { host, clone } = world();
    git(clone, "commit", "-q", "--allow-empty", "-m", "one");
    const one = git(clone, "rev-parse", "HEAD");
    git(clone, "commit", "-q", "--allow-empty", "-m", "two");
    const two = git(clone, "rev-parse", "HEAD");
    // Only `two`: its parent `one` is in no pack and not on the host.
    const pack = Bun.spawnSync(["git", "-C", clone, "pack-objects", "--revs", "--stdout", "-q"], { env: ENV, stdin: Buffer.from(`${two}\n^${one}\n`) }).stdout;
    const e = await refused(importSandbox({ repo: host, name: "t", sandboxGit: liar(two, pack), exec: createExec(ENV) }));
    expect(e.message).toMatch(/refused|incomplete/);
    expect(e.message).toContain(one);
    expect(git(host, "for-each-ref", "refs/remotes/")).toBe("");
  });

  test("an empty pack for a tip the host does not have is refused as incomplete: a ref never moves to an object the host lacks", async () => {
    const { host, clone } = world();
    const empty = Bun.spawnSync(["git", "-C", clone, "pack-objects", "--stdout", "-q"], { env: ENV, stdin: Buffer.from("") }).stdout;
    const tip = "d".repeat(40);
    const e = await refused(importSandbox({ repo: host, name: "t", sandboxGit: liar(tip, empty), exec: createExec(ENV) }));
    expect(e.message).toContain("incomplete");
    expect(e.hint).toContain("Nothing moved on the host");
    expect(git(host, "for-each-ref", "refs/remotes/")).toBe("");
  });

  test("a malformed object (a tree entry named .git) is refused by the strict index", async () => {
    const { host, clone } = world();
    const blob = Bun.spawnSync(["git", "-C", clone, "hash-object", "-w", "--stdin"], { env: ENV, stdin: Buffer.from("x\n") }).stdout.toString().trim();
    const tree = Bun.spawnSync(["git", "-C", clone, "mktree"], { env: ENV, stdin: Buffer.from(`100644 blob ${blob}\t.git\n`) }).stdout.toString().trim();
    const c = git(clone, "commit-tree", tree, "-m", "dotgit");
    const pack = Bun.spawnSync(["git", "-C", clone, "pack-objects", "--revs", "--stdout", "-q"], { env: ENV, stdin: Buffer.from(`${c}\n`) }).stdout;
    const e = await refused(importSandbox({ repo: host, name: "t", sandboxGit: liar(c, pack), exec: createExec(ENV) }));
    expect(e.message).toContain("hasDotgit");
    expect(has(host, c)).toBe(false);
  });

  test("a well-formed pack lands in the sandbox's store, not in the host's own objects; the host's refs see it through the store", async () => {
    const { host, clone } = world();
    git(clone, "commit", "-q", "--allow-empty", "-m", "inside");
    const tip = git(clone, "rev-parse", "HEAD");
    const sandboxGit: SandboxGit = (args, stdin) => streamRun(createExec(ENV), ["git", ...SANDBOX_GIT_SAFE, "-C", clone, ...args], stdin === undefined ? {} : { stdin });
    const r = await importSandbox({ repo: host, name: "t", sandboxGit, exec: createExec(ENV) });
    expect(r.changed).toBe(true);
    expect(r.refs.get("main")).toBe(tip);
    expect(git(host, "log", "--format=%s", "-1", "sandbox-t/main")).toBe("inside");
    expect(readdirSync(join(storeDir(host, "t"), "objects", "pack")).some((p) => p.endsWith(".pack"))).toBe(true);
    // The host's own objects are what they were (the init commit, loose): the sandbox's commit is in its store only.
    expect(git(host, "count-objects", "-v")).toContain("packs: 0");
    // The same refs again: nothing runs but the listing, nothing moves.
    expect((await importSandbox({ repo: host, name: "t", sandboxGit, exec: createExec(ENV) })).changed).toBe(false);
  });
});

/** git as the guest uid in its clone (root drops to it: the sandbox's identity, which cannot read root's canary). */
function asGuest(clone: string): SandboxGit {
  return (args, stdin) =>
    streamRun(createExec(ENV), ["setpriv", `--reuid=${GUEST}`, `--regid=${GUEST}`, "--clear-groups", "--", "git", ...SANDBOX_GIT_SAFE, "-C", clone, ...args], {
      env: { PATH, HOME: "/nonexistent", GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" },
      replaceEnv: true,
      ...(stdin === undefined ? {} : { stdin }),
    });
}

describe.skipIf(!isRoot)(`the-host-never-reads-a-clone: redirections planted in a clone owned by another uid${isRoot ? "" : " (skipped: needs root for a second uid)"}`, () => {
  /** The host repo and a guest-owned clone, plus the canary: a repo only root (the host, here) can read. */
  function guestWorld() {
    const { host, clone } = world();
    const canary = join(root, "canary");
    mkdirSync(canary, { mode: 0o700 });
    git(canary, "init", "-q", "-b", "main");
    git(canary, "commit", "-q", "--allow-empty", "-m", "canary secret");
    const secret = git(canary, "rev-parse", "HEAD");
    git(canary, "pack-refs", "--all");
    // lchown: a planted symlink is the guest's, never what it points at.
    const own = (p: string) => {
      for (const e of readdirSync(p, { recursive: true })) lchownSync(join(p, String(e)), GUEST, GUEST);
      lchownSync(p, GUEST, GUEST);
    };
    own(clone);
    return { host, clone, canary, secret, own };
  }

  async function tryImport(host: string, clone: string) {
    const rec = recording();
    const out = await importSandbox({ repo: host, name: "t", sandboxGit: asGuest(clone), exec: rec.exec }).then(
      (r) => ({ ok: true as const, r }),
      (e: unknown) => ({ ok: false as const, e: e as Error }),
    );
    // The host side ran only in the host repo and the store: not one command names the clone.
    for (const a of rec.argv) expect(a.join(" ")).not.toContain(clone);
    return out;
  }

  function noCanary(host: string, secret: string) {
    expect(has(host, secret)).toBe(false);
    expect(git(host, "for-each-ref", "--format=%(objectname)")).not.toContain(secret);
  }

  test("alternates (and nested alternates) leading to the canary, with a commit on top of its secret", async () => {
    const { host, clone, canary, secret, own } = guestWorld();
    const nested = join(root, "nested");
    mkdirSync(join(nested, "info"), { recursive: true });
    writeFileSync(join(nested, "info", "alternates"), `${join(canary, ".git", "objects")}\n`);
    own(nested);
    writeFileSync(join(clone, ".git", "objects", "info", "alternates"), `${join(host, ".git", "objects")}\n${nested}\n${join(canary, ".git", "objects")}\n`);
    const tree = git(host, "rev-parse", "HEAD^{tree}");
    const bait = Bun.spawnSync(["git", "-C", clone, "hash-object", "-t", "commit", "-w", "--stdin"], {
      env: ENV,
      stdin: Buffer.from(`tree ${tree}\nparent ${secret}\nauthor a <a@x> 1 +0000\ncommitter a <a@x> 1 +0000\n\nbait\n`),
    }).stdout.toString().trim();
    git(clone, "update-ref", "refs/heads/bait", bait);
    own(clone);
    // Control: git run by the host (root) in that clone reads the canary through it.
    expect(has(clone, secret)).toBe(true);
    const r = await tryImport(host, clone);
    expect(r.ok).toBe(false);
    noCanary(host, secret);
    expect(has(host, bait)).toBe(false);
  });

  test("a gitdir: file, or a commondir, in place of the clone's own .git leading to the canary", async () => {
    const { host, clone, canary, secret, own } = guestWorld();
    rmSync(join(clone, ".git"), { recursive: true, force: true });
    writeFileSync(join(clone, ".git"), `gitdir: ${join(canary, ".git")}\n`);
    own(clone);
    expect(git(clone, "rev-parse", "HEAD")).toBe(secret); // control: root follows it
    expect((await tryImport(host, clone)).ok).toBe(false);
    noCanary(host, secret);

    const { host: host2, clone: clone2, canary: canary2, secret: secret2, own: own2 } = (() => {
      rmSync(root, { recursive: true, force: true });
      return guestWorld();
    })();
    writeFileSync(join(clone2, ".git", "commondir"), `${join(canary2, ".git")}\n`);
    own2(clone2);
    await tryImport(host2, clone2);
    noCanary(host2, secret2);
  });

  test("the clone's .git itself a symlink to the canary's .git", async () => {
    const { host, clone, canary, secret, own } = guestWorld();
    rmSync(join(clone, ".git"), { recursive: true, force: true });
    symlinkSync(join(canary, ".git"), join(clone, ".git"));
    own(clone);
    expect(git(clone, "rev-parse", "HEAD")).toBe(secret); // control: root follows it
    expect((await tryImport(host, clone)).ok).toBe(false);
    noCanary(host, secret);
  });

  test("symlinked refs, refs/heads and packed-refs leading to the canary's", async () => {
    const { host, clone, canary, secret, own } = guestWorld();
    rmSync(join(clone, ".git", "packed-refs"), { force: true });
    symlinkSync(join(canary, ".git", "packed-refs"), join(clone, ".git", "packed-refs"));
    symlinkSync(join(canary, ".git", "refs", "heads"), join(clone, ".git", "refs", "heads", "canary"));
    own(clone);
    await tryImport(host, clone);
    noCanary(host, secret);
    // A whole refs dir and objects dir swapped for the canary's: still nothing of it.
    rmSync(join(clone, ".git", "refs"), { recursive: true, force: true });
    symlinkSync(join(canary, ".git", "refs"), join(clone, ".git", "refs"));
    rmSync(join(clone, ".git", "objects"), { recursive: true, force: true });
    symlinkSync(join(canary, ".git", "objects"), join(clone, ".git", "objects"));
    await tryImport(host, clone);
    noCanary(host, secret);
  });

  test("grafts and replace refs in the clone change nothing the host takes: the host checks with its own view", async () => {
    const { host, clone, secret, own } = guestWorld();
    git(clone, "commit", "-q", "--allow-empty", "-m", "one");
    const one = git(clone, "rev-parse", "HEAD");
    git(clone, "commit", "-q", "--allow-empty", "-m", "two");
    const two = git(clone, "rev-parse", "HEAD");
    // A graft that says `two` has no parent: a pack walked with it would leave `one` out.
    mkdirSync(join(clone, ".git", "info"), { recursive: true });
    writeFileSync(join(clone, ".git", "info", "grafts"), `${two}\n`);
    git(clone, "update-ref", `refs/replace/${one}`, two);
    own(clone);
    const r = await tryImport(host, clone);
    if (r.ok) {
      // Whatever the sandbox's git sent, what the host took is whole by the host's own reading.
      expect(git(host, "rev-list", "--count", "sandbox-t/main")).toBe("3");
      expect(git(host, "log", "--format=%s", "-1", `${two}^`)).toBe("one");
    }
    expect(git(host, "for-each-ref", "refs/remotes/sandbox-t/")).not.toContain("replace");
    noCanary(host, secret);
  });
});
