// Integration harness for the bridge: a token-demanding upstream, a host repo, a shared clone, a bridge, and the shim as a child process.
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { startBridge, type AuditEvent, type BridgeDeps, type StartedBridge } from "../../../src/bridge/server";
import { createExec } from "../../../src/sys/exec";
import { NO_BRIDGE_SETTINGS, type BridgeSettings } from "../../../src/core/bridge-settings";
import { startGitHttpServer, type GitHttpServer } from "../../support/git-http-server";

export const SHIMS = join(import.meta.dir, "../../../shims");
const PATH = process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin";

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command with a clean environment (no user git config). */
export async function sh(argv: string[], opts: { cwd?: string; env?: Record<string, string>; stdin?: string } = {}): Promise<Run> {
  const p = Bun.spawn(argv, {
    cwd: opts.cwd,
    env: { PATH, HOME: "/nonexistent", GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null", GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.invalid", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.invalid", ...opts.env },
    stdin: opts.stdin === undefined ? "ignore" : Buffer.from(opts.stdin),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

export async function git(cwd: string, ...args: string[]): Promise<string> {
  const r = await sh(["git", ...args], { cwd, env: { SBX_IN_SANDBOX: "1" } });
  if (r.code !== 0) throw new Error(`git ${args.join(" ")} (in ${cwd}): ${r.stderr}`);
  return r.stdout.trim();
}

export interface Harness {
  root: string;
  token: string;
  upstream: GitHttpServer;
  upstreamRepo: string;
  host: string;
  clone: string;
  socket: string;
  bridge: StartedBridge;
  audit: AuditEvent[];
  /** Runs the git shim (via its launcher) in the clone, as a sandbox would. */
  shim(args: string[], opts?: { cwd?: string; env?: Record<string, string> }): Promise<Run>;
  /** Env of commands "inside" the sandbox: hooks planted by tests fire only outside it. */
  sandboxEnv: Record<string, string>;
  stop(): Promise<void>;
}

/** Sets up upstream ← host repo (origin = upstream), clone = `git clone --shared host`, bridge on its socket. */
export async function makeHarness(opts: { settings?: () => BridgeSettings; ask?: BridgeDeps["ask"]; secrets?: Record<string, string>; placeholders?: () => readonly string[]; noToken?: boolean } = {}): Promise<Harness> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-br-")));
  const token = `tok-${randomBytes(16).toString("hex")}`;
  const upstream = startGitHttpServer(join(root, "srv"), token);
  const upstreamRepo = await upstream.createRepo("proj");
  const host = join(root, "host");
  mkdirSync(host);
  await git(host, "init", "-q", "-b", "main");
  await Bun.write(join(host, "README.md"), "hello\n");
  await git(host, "add", "README.md");
  await git(host, "commit", "-q", "-m", "init");
  await git(host, "remote", "add", "origin", upstream.repoUrl("proj"));
  // Seed the upstream directly (test-side, with the token in the URL; never the bridge's way).
  await git(host, "push", "-q", upstream.repoUrl("proj").replace("http://", `http://x:${token}@`), "main");
  await git(host, "fetch", "-q", upstream.repoUrl("proj").replace("http://", `http://x:${token}@`), "+refs/heads/*:refs/remotes/origin/*");
  const clone = join(root, "clone");
  await git(root, "clone", "-q", "--shared", host, clone);
  // The sandbox's clone carries the host repo's remote URLs (the bridge ignores them and uses the host's).
  await git(clone, "remote", "set-url", "origin", upstream.repoUrl("proj"));
  const socket = join(root, "s", "bridge.sock");
  const audit: AuditEvent[] = [];
  const bridge = await startBridge({
    socketPath: socket,
    sandbox: { id: "sbx-test-id", name: "demo", workspace: clone, repo: host },
    gateDir: join(root, "gate"),
    secrets: () => ({ ...opts.secrets, ...(opts.noToken ? {} : { GIT_TOKEN: token }) }),
    audit: (e) => audit.push(e),
    exec: createExec({ PATH }),
    path: PATH,
    // Tests of other rules push anywhere; the branch prefix has its own (push-prefix.test.ts, with no settings given).
    settings: opts.settings ?? (() => ({ ...NO_BRIDGE_SETTINGS, allow: ["push-anywhere"] })),
    ...(opts.ask ? { ask: opts.ask } : {}),
    ...(opts.placeholders ? { placeholders: opts.placeholders } : {}),
  });
  const sandboxEnv = { SBX_IN_SANDBOX: "1", SBX_BRIDGE_SOCKET: socket, SBX_BUN: process.execPath, PATH: `${SHIMS}:${PATH}` };
  return {
    root,
    token,
    upstream,
    upstreamRepo,
    host,
    clone,
    socket,
    bridge,
    audit,
    sandboxEnv,
    shim: (args, opts = {}) => sh([join(SHIMS, "git"), ...args], { cwd: opts.cwd ?? clone, env: { ...sandboxEnv, ...opts.env } }),
    async stop() {
      await bridge.close();
      await upstream.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** The object id a ref has in a bare repo, or "" when missing. */
export async function refIn(repo: string, ref: string): Promise<string> {
  const r = await sh(["git", "--git-dir", repo, "rev-parse", "--verify", "-q", ref]);
  return r.stdout.trim();
}

/** Commits `files` on a new branch in `dir` (inside the sandbox); returns the commit id. */
export async function commitOn(dir: string, branch: string, files: Record<string, string>, msg = "work"): Promise<string> {
  await git(dir, "checkout", "-q", "-B", branch);
  for (const [name, text] of Object.entries(files)) {
    await Bun.write(join(dir, name), text);
    await git(dir, "add", name);
  }
  await git(dir, "commit", "-q", "-m", msg);
  return git(dir, "rev-parse", "HEAD");
}
