// Host → clone ref sync with real git on this machine (temp repos): the host's fetch into the mirror, then update-ref in a `--shared` clone of it; only the sudo hop to the guest is left out.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SandboxSpec } from "../../../../src/core/spec";
import { MacosBackend } from "../../../../src/drivers/macos/backend";
import { hostRefs } from "../../../../src/sync/store";
import { createExec, streamRun, type Exec, type ExecOptions } from "../../../../src/sys/exec";
import { exportHostRefs } from "../../../../src/sync/import";
import type { SandboxGit } from "../../../../src/sync/sandbox-git";

const root = mkdtempSync(join(tmpdir(), "sbx-mirror-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null", GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@t", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@t" } as Record<string, string>;
function git(cwd: string, ...args: string[]): string {
  const r = Bun.spawnSync(["git", "-C", cwd, ...args], { env: ENV, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}
function commit(repo: string, file: string, text: string): string {
  writeFileSync(join(repo, file), text);
  git(repo, "add", file);
  git(repo, "commit", "-q", "-m", file);
  return git(repo, "rev-parse", "HEAD");
}

/**
 * The daemon's Exec with one difference: `sudo -n -H -u <guest> argv` runs argv as this user (no guest account here),
 * with the small environment sudo's env_reset leaves (nothing of the daemon's).
 */
function noSudo(exec: Exec, guests: string[][]): Exec {
  const hop = (argv: readonly string[], opts: ExecOptions | undefined): [readonly string[], ExecOptions | undefined] => {
    if (argv[0] !== "/usr/bin/sudo" || argv[3] !== "-u") return [argv, opts];
    guests.push([...argv]);
    return [argv.slice(5), { ...opts, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(root, "Users", argv[4]!) }, replaceEnv: true }];
  };
  return {
    ...exec,
    run: (argv, opts) => exec.run(...hop(argv, opts)),
    stream: (argv, opts) => streamRun(exec, ...hop(argv, opts)),
  };
}

describe("macOS mirror update with real git (Linux stand-in for the host side)", () => {
  const host = join(root, "src", "demo");
  const spec: SandboxSpec = {
    id: "0a1b2c3d4e5f",
    name: "demo",
    repo: host,
    dir: join(root, "sandbox"),
    hostUser: { name: "alice", uid: 501, gid: 20, home: join(root, "home"), shell: "/bin/zsh" },
    sockets: { dir: join(root, "sb"), proxy: join(root, "sb", "proxy.sock"), bridge: join(root, "sb", "bridge.sock") },
    env: {},
    overlays: [],
    options: { driver: "user", proxyPort: 17001 },
  };
  const guests: string[][] = [];
  // The daemon's own environment may carry git variables; the host's git must not see them.
  const exec = noSudo(createExec({ ...ENV, GIT_DIR: join(root, "nowhere"), GIT_ALTERNATE_OBJECT_DIRECTORIES: join(root, "nowhere") }), guests);
  const backend = new MacosBackend({
    exec,
    root: { run: async () => ({ changed: false, out: "" }) },
    hostUser: "alice",
    runtimeDir: join(root, "run"),
    runtime: "/b/bun",
    shimDir: "/b/shims",
    usersDir: join(root, "Users"),
    shareRoot: join(root, "share"),
  });
  const ws = backend.workspace(spec);
  const asGuest: SandboxGit = (args, stdin) => streamRun(exec, backend.guestGitArgv(spec, args), stdin === undefined ? {} : { stdin });
  const mirror = backend.mirror(spec);
  let a = "";

  test("setup as apply leaves it: host repo, its --mirror, the guest's --shared clone of the mirror", () => {
    mkdirSync(host, { recursive: true });
    git(host, "init", "-q", "-b", "main");
    a = commit(host, "a.txt", "a");
    mkdirSync(join(mirror, ".."), { recursive: true });
    git(root, "clone", "--mirror", "--quiet", "--", host, mirror);
    mkdirSync(join(ws, ".."), { recursive: true });
    git(root, "clone", "--quiet", "--shared", "--", mirror, ws);
    expect(backend.expectedAlternates(spec)).toBe(`${mirror}/objects\n`);
    expect(Bun.file(join(ws, ".git/objects/info/alternates")).size).toBeGreaterThan(0);
  });

  test("new host commits and branches reach refs/remotes/host/* in the clone, objects borrowed from the mirror; hooks never run", async () => {
    const b = commit(host, "b.txt", "b");
    git(host, "checkout", "-q", "-b", "feature");
    const c = commit(host, "c.txt", "c");
    git(host, "checkout", "-q", "main");
    // a hook in the mirror (host-owned, but still: ref sync disables hooks) must not run
    const marker = join(root, "hook-ran");
    writeFileSync(join(mirror, "hooks", "reference-transaction"), `#!/bin/sh\ntouch ${marker}\n`);
    chmodSync(join(mirror, "hooks", "reference-transaction"), 0o755);
    const objectsBefore = readdirSync(join(ws, ".git", "objects")).sort();

    const refs = await hostRefs({ exec, repo: host });
    const m = await backend.updateMirror(spec);
    expect(m.exitCode).toBe(0);
    expect(git(mirror, "rev-parse", "refs/heads/main", "refs/heads/feature").split("\n")).toEqual([b, c]);
    expect(await exportHostRefs(asGuest, "demo", refs)).toBe(2);
    expect(git(ws, "rev-parse", "refs/remotes/host/main", "refs/remotes/host/feature").split("\n")).toEqual([b, c]);
    expect(git(ws, "log", "--format=%s", "refs/remotes/host/feature")).toBe("c.txt\nb.txt\na.txt");
    git(ws, "fsck", "--connectivity-only", "--no-dangling");
    expect(readdirSync(join(ws, ".git", "objects")).sort()).toEqual(objectsBefore); // nothing copied into the clone
    expect(existsSync(marker)).toBe(false);
    // every git in the clone went through the guest hop; the mirror fetch did not
    expect(guests.map((g) => g.slice(5).includes(ws))).toEqual([true, true]);
    expect(guests.some((g) => g.includes(mirror))).toBe(false);
    expect(a).not.toBe(b);
  });

  test("a branch deleted and main rewritten on the host: the clone follows, the mirror keeps the old objects (no prune)", async () => {
    const oldFeature = git(host, "rev-parse", "feature");
    git(host, "branch", "-q", "-D", "feature");
    git(host, "reset", "-q", "--hard", a);
    const d = commit(host, "d.txt", "d");
    const refs = await hostRefs({ exec, repo: host });
    expect((await backend.updateMirror(spec)).exitCode).toBe(0);
    await exportHostRefs(asGuest, "demo", refs);
    expect(git(ws, "for-each-ref", "--format=%(refname) %(objectname)", "refs/remotes/host/")).toBe(`refs/remotes/host/main ${d}`);
    // a guest branch made from the old feature tip still resolves: its objects are still in the mirror
    git(ws, "cat-file", "-e", `${oldFeature}^{commit}`);
    git(mirror, "cat-file", "-e", `${oldFeature}^{commit}`);
  });
});
