// The push gate: a host-owned bare repo where the sandbox's commits land, are scanned, and leave for the real remote.
import { mkdirSync, chmodSync, writeFileSync, rmSync, readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import type { Exec, ExecResult } from "../sys/exec";
import { scanUnifiedDiff, type SecretFinding } from "../core/secrets";

export interface GatePaths {
  /** The bare gate repository. */
  repo: string;
  /** An empty HOME for every git/gh the bridge runs, so no user dotfile applies. */
  home: string;
  /** Scratch files (packs, bundles). */
  tmp: string;
  /** gh's working directory: host-owned and not a repository. */
  ghCwd: string;
}

export function gatePaths(gateDir: string): GatePaths {
  return { repo: join(gateDir, "gate.git"), home: join(gateDir, "home"), tmp: join(gateDir, "tmp"), ghCwd: join(gateDir, "gh") };
}

export interface GitEnvOptions {
  path: string;
  home: string;
  /** Present only for the one process that talks to the remote. */
  token?: { value: string; host: string };
}

/** The whole environment of git run by the bridge: built from nothing, so no host or guest variable applies. */
export function gitEnv(o: GitEnvOptions): Record<string, string> {
  const env: Record<string, string> = {
    PATH: o.path,
    HOME: o.home,
    XDG_CONFIG_HOME: join(o.home, ".config"),
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_TERMINAL_PROMPT: "0",
    GIT_ASKPASS: "/bin/false",
    SSH_ASKPASS: "/bin/false",
    GIT_PROTOCOL_FROM_USER: "0",
    GIT_OPTIONAL_LOCKS: "0",
    LC_ALL: "C",
  };
  if (o.token) {
    env.SBX_GATE_TOKEN = o.token.value;
    env.SBX_GATE_HOST = o.token.host;
  }
  return env;
}

/**
 * The credential helper: answers `get` only for the expected host, reading the token from this
 * process's environment (never argv). git runs it as `sh -c '<helper> "$@"' <helper> get`.
 */
export const CREDENTIAL_HELPER =
  '!f() { test "$1" = get || exit 0; h=; while IFS= read -r l && test -n "$l"; do case "$l" in host=*) h="${l#host=}";; esac; done; ' +
  'test -n "$SBX_GATE_TOKEN" && test "$h" = "$SBX_GATE_HOST" || exit 0; echo username=x-access-token; echo "password=$SBX_GATE_TOKEN"; }; f';

/**
 * `git` with config that only the host chose: no hooks, no fsmonitor, no transports but the one needed,
 * no credential helper but ours. Pure: golden-tested.
 */
export function gateGit(args: readonly string[], o: { transport?: "https" | "http"; credentials?: boolean } = {}): string[] {
  const c = (kv: string) => ["-c", kv];
  return [
    "git",
    ...c("core.hooksPath=/dev/null"),
    ...c("core.fsmonitor=false"),
    ...c("core.sshCommand=/bin/false"),
    ...c("protocol.allow=never"),
    ...(o.transport ? c(`protocol.${o.transport}.allow=always`) : []),
    ...c("http.followRedirects=false"),
    ...c("credential.helper="),
    ...(o.credentials ? c(`credential.helper=${CREDENTIAL_HELPER}`) : []),
    ...c("credential.useHttpPath=false"),
    ...c("transfer.fsckObjects=true"),
    ...args,
  ];
}

export function transportOf(url: string): "https" | "http" {
  return url.toLowerCase().startsWith("http://") ? "http" : "https";
}

/** host[:port] of an http(s) URL, as git puts it in the credential request. */
export function credentialHost(url: string): string {
  const m = /^https?:\/\/(?:[^@\/]*@)?([^\/?#]+)/i.exec(url);
  return (m?.[1] ?? "").toLowerCase();
}

/** Which host secret is the git token for a URL: GIT_TOKEN_<HOST>, then the forge's usual name, then GIT_TOKEN. */
export function tokenFor(url: string, secrets: Record<string, string>): string | undefined {
  const host = credentialHost(url);
  const specific = `GIT_TOKEN_${host.replace(/[^a-z0-9]/gi, "_").toUpperCase()}`;
  if (secrets[specific]) return secrets[specific];
  const bare = host.replace(/:\d+$/, "");
  if (bare === "github.com") return secrets.GH_TOKEN ?? secrets.GITHUB_TOKEN ?? secrets.GIT_TOKEN;
  if (bare === "gitlab.com") return secrets.GITLAB_TOKEN ?? secrets.GIT_TOKEN;
  return secrets.GIT_TOKEN;
}

export interface Gate {
  paths: GatePaths;
  exec: Exec;
  hostRepo: string;
  path: string;
}

function mkdir0700(p: string): void {
  mkdirSync(p, { recursive: true, mode: 0o700 });
  chmodSync(p, 0o700);
}

/**
 * Creates the gate if missing; its alternates point at the host repo's objects (host-owned, read-only
 * to the sandbox) so the sandbox sends only what the host does not have.
 * runs: git rev-parse --git-common-dir (in the host repo); git init --bare (the gate)
 */
export async function ensureGate(exec: Exec, gateDir: string, hostRepo: string, path: string): Promise<Gate> {
  const paths = gatePaths(gateDir);
  mkdir0700(gateDir);
  for (const d of [paths.home, paths.tmp, paths.ghCwd]) mkdir0700(d);
  const env = gitEnv({ path, home: paths.home });
  if (!existsSync(join(paths.repo, "HEAD"))) {
    await exec.run(gateGit(["init", "--bare", "--quiet", "--template=", paths.repo]), { env, replaceEnv: true, cwd: gateDir });
  }
  const common = await exec.run(gateGit(["rev-parse", "--path-format=absolute", "--git-common-dir"]), { env, replaceEnv: true, cwd: hostRepo });
  const alt = join(common.stdout.trim(), "objects") + "\n";
  const altFile = join(paths.repo, "objects", "info", "alternates");
  mkdirSync(join(paths.repo, "objects", "info"), { recursive: true });
  if (!existsSync(altFile) || readFileSync(altFile, "utf8") !== alt) writeFileSync(altFile, alt, { mode: 0o600 });
  return { paths, exec, hostRepo, path };
}

function run(g: Gate, args: string[], opts: { cwd?: string; stdin?: string | Uint8Array; onStderr?: (s: string) => void; check?: boolean; token?: { value: string; host: string }; transport?: "https" | "http" } = {}): Promise<ExecResult> {
  return g.exec.run(gateGit(args, { ...(opts.transport ? { transport: opts.transport } : {}), credentials: opts.token !== undefined }), {
    cwd: opts.cwd ?? g.paths.repo,
    env: gitEnv({ path: g.path, home: g.paths.home, ...(opts.token ? { token: opts.token } : {}) }),
    replaceEnv: true,
    ...(opts.stdin !== undefined ? { stdin: opts.stdin } : {}),
    ...(opts.onStderr ? { onStderr: opts.onStderr } : {}),
    check: opts.check ?? true,
    timeoutMs: 15 * 60_000,
  });
}

/**
 * Remote name → URL from the HOST repo's config (the clone's config is the sandbox's to rewrite).
 * runs: git config --get-regexp ^remote\..*\.url$ (in the host repo)
 */
export async function hostRemotes(g: Gate): Promise<Record<string, string>> {
  const r = await run(g, ["config", "--get-regexp", "^remote\\..*\\.url$"], { cwd: g.hostRepo, check: false });
  const out: Record<string, string> = {};
  for (const line of r.stdout.split("\n")) {
    const m = /^remote\.(.+)\.url (.+)$/.exec(line.trim());
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}

/** Object ids of every ref tip in the host repo and in the gate: what the sandbox need not send. */
// runs: git for-each-ref --format=%(objectname) (in the host repo and in the gate)
export async function knownTips(g: Gate): Promise<string[]> {
  const [a, b] = await Promise.all([
    run(g, ["for-each-ref", "--format=%(objectname)"], { cwd: g.hostRepo, check: false }),
    run(g, ["for-each-ref", "--format=%(objectname)"], { check: false }),
  ]);
  return [...new Set([...a.stdout.split("\n"), ...b.stdout.split("\n")].map((s) => s.trim()).filter((s) => /^[0-9a-f]{40,64}$/.test(s)))];
}

/**
 * Stores a pack the sandbox made (never a path into its clone) and checks the pushed commits are complete.
 * runs: git index-pack --stdin --fix-thin; git rev-list --quiet --stdin (in the gate)
 */
export async function receivePack(g: Gate, pack: Uint8Array, shas: string[], tips: string[]): Promise<void> {
  if (pack.length > 0) await run(g, ["index-pack", "--stdin", "--fix-thin"], { stdin: pack });
  // Commits must all be here; the scan (git log -p) then reads every new tree and changed blob, and
  // fails on any that is missing, so a pack that leans on objects the gate cannot see is refused.
  const stdin = [...shas, ...tips.map((t) => `^${t}`)].join("\n") + "\n";
  await run(g, ["rev-list", "--quiet", "--stdin"], { stdin });
}

/**
 * Scans what the pushed commits add for secret-shaped strings.
 * runs: git log -p --no-textconv --no-ext-diff --stdin (in the gate)
 */
export async function scanNew(g: Gate, shas: string[], tips: string[]): Promise<SecretFinding[]> {
  const stdin = [...shas, ...tips.map((t) => `^${t}`)].join("\n") + "\n";
  const r = await run(g, ["log", "-p", "--no-color", "--no-textconv", "--no-ext-diff", "--no-renames", "--format=commit %H", "--stdin"], { stdin });
  return scanUnifiedDiff(r.stdout);
}

/** Sets (or deletes, for null) refs in the gate in one transaction. */
export async function updateRefs(g: Gate, updates: Array<[ref: string, sha: string | null]>): Promise<void> {
  if (updates.length === 0) return;
  // runs: git update-ref --stdin (in the gate)
  const stdin = updates.map(([ref, sha]) => (sha === null ? `delete ${ref}` : `update ${ref} ${sha}`)).join("\n") + "\n";
  await run(g, ["update-ref", "--stdin"], { stdin });
}

export async function readRef(g: Gate, ref: string): Promise<string | undefined> {
  // runs: git rev-parse --verify -q <ref> (in the gate)
  const r = await run(g, ["rev-parse", "--verify", "-q", ref], { check: false });
  const s = r.stdout.trim();
  return /^[0-9a-f]{40,64}$/.test(s) ? s : undefined;
}

/** Runs a network git command in the gate with the token, streaming stderr. */
export function remoteGit(g: Gate, url: string, token: string | undefined, args: string[], onStderr: (s: string) => void, cwd?: string): Promise<ExecResult> {
  return run(g, args, {
    transport: transportOf(url),
    ...(token ? { token: { value: token, host: credentialHost(url) } } : {}),
    onStderr,
    check: false,
    ...(cwd ? { cwd } : {}),
  });
}

/** Ref name → object id for refs under the given prefixes in the gate. */
// runs: git for-each-ref --format=%(objectname) %(refname) <prefixes> (in the gate)
export async function listRefs(g: Gate, prefixes: string[], repo?: string): Promise<Record<string, string>> {
  const r = await run(g, ["for-each-ref", "--format=%(objectname) %(refname)", ...prefixes], { check: false, ...(repo ? { cwd: repo } : {}) });
  const out: Record<string, string> = {};
  for (const line of r.stdout.split("\n")) {
    const [sha, ref] = line.split(" ");
    if (sha && ref) out[ref] = sha;
  }
  return out;
}

/** Which of `shas` the gate (with the host's objects) has. */
// runs: git cat-file --batch-check (in the gate)
export async function present(g: Gate, shas: string[]): Promise<string[]> {
  if (shas.length === 0) return [];
  const r = await run(g, ["cat-file", "--batch-check=%(objectname)"], { stdin: shas.join("\n") + "\n", check: false });
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
    const r = await run(g, ["bundle", "create", "--quiet", file, ...opts, "--stdin"], { stdin, check: false, ...(repo ? { cwd: repo } : {}) });
    if (r.exitCode !== 0) {
      if (/empty bundle/i.test(r.stderr)) return null;
      throw new Error(`git bundle create failed: ${r.stderr.trim()}`);
    }
    return new Uint8Array(readFileSync(file));
  } finally {
    rmSync(file, { force: true });
  }
}

export function scratchDir(g: Gate, prefix: string): string {
  const d = join(g.paths.tmp, `${prefix}-${randomBytes(8).toString("hex")}`);
  return d;
}
