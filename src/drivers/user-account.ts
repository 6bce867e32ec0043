// Sandboxes as user accounts (`--backend user` on Linux, macOS): identity record, loopback proxy port, spec, create/stop/rm/prune.
//
// The counterpart of SandboxManager for the two user-account backends. The store row keeps everything the daemon needs
// to rebuild the spec after a restart (host user, sandbox id, proxy port), so the port is chosen once and never moves.
// Starting goes through the Supervisor (the daemon: guards, including the loopback port, before the backend applies).
// Every git in the host repo runs as the host user (`hostExec`): the daemon and CLI run as root for this backend, and
// root's git would refuse the host's repo (dubious ownership) or leave root-owned files in it.
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { z } from "zod";
import type { Backend, HostUser, SandboxSpec } from "../backend/backend";
import { proxyEnv } from "../core/egress";
import { SbxError } from "../core/errors";
import { validateSandboxName } from "../core/names";
import type { Sandbox } from "../core/schemas";
import { llmEnv } from "../llm/env";
import type { Store } from "../store/store";
import { finalFetch } from "../sync/final-fetch";
import { hostGitEnv, HOST_GIT_SAFE } from "../sync/git-argv";
import type { Env } from "../sys/env";
import type { Exec, ExecOptions } from "../sys/exec";
import { sandboxDir, sandboxSockets, sha256Hex, type Paths } from "../sys/paths";
import { parseCommits, requirePlainGitDir, sandboxRemote, type Commit } from "../workspace/clone";
import { sandboxLayout } from "../workspace/layout";
import { findRepoRoot } from "../workspace/repo";
import { terminalVars } from "./env";
import { acquireLock, lockPath, type Lock } from "./lock";
import { sandboxId, type Supervisor } from "./manager";

export type UserBackendKind = "linux-user" | "macos";
export const USER_BACKENDS: readonly UserBackendKind[] = ["linux-user", "macos"];

export function isUserBackend(kind: string): kind is UserBackendKind {
  return (USER_BACKENDS as readonly string[]).includes(kind);
}

/** What the lifecycle and the daemon need of a user-account backend beyond the Backend interface. */
export interface UserAccountBackend extends Backend {
  readonly kind: UserBackendKind;
  /** The guest's clone of the host repo (a host path; the guest sees the same path). */
  workspace(spec: SandboxSpec): string;
  /** Exactly what the clone's alternates file must hold. */
  expectedAlternates(spec: SandboxSpec): string;
}

/** Loopback ports user-account sandboxes get: below Linux's ephemeral range (32768+), above the usual dev servers. */
export const PROXY_PORT_RANGE = { min: 21000, max: 28999 } as const;

const HostUserSchema = z.object({
  name: z.string().min(1),
  uid: z.number().int().min(0),
  gid: z.number().int().min(0),
  home: z.string().startsWith("/"),
  shell: z.string(),
});

/** The `identity` column of a user-account sandbox. */
export const UserIdentitySchema = z.object({
  kind: z.literal("user"),
  /** Sandbox id: account name, nft chain / pf anchor, socket dir. */
  id: z.string().regex(/^[a-z0-9]{1,20}$/),
  /** Host-side dir (the bridge's gate repo, a `repo` link for prune). */
  dir: z.string().startsWith("/"),
  /** 127.0.0.1:<proxyPort> is this sandbox's only way out; chosen once, stable across daemon restarts. */
  proxyPort: z.number().int().min(1024).max(65535),
  /** The person the sandbox belongs to (not root when sbx runs under sudo). */
  hostUser: HostUserSchema,
});
export type UserIdentity = z.infer<typeof UserIdentitySchema>;

export function userIdentity(row: Sandbox): UserIdentity {
  const r = UserIdentitySchema.safeParse(row.identity);
  if (!r.success) {
    throw new SbxError("internal", `sandbox ${row.name}: its stored record is not a user-account sandbox's`, {
      hint: `Remove it with \`sbx rm --force ${row.name}\`, then create it again.`,
    });
  }
  return r.data;
}

/**
 * The host user a user-account sandbox belongs to. Under `sudo` (root, with SUDO_UID) that is the invoking user, read
 * from the passwd file; otherwise the process's own user. Pure given the passwd text.
 */
export function hostUserFor(env: Env, passwd: string): HostUser {
  const entry = (pred: (f: string[]) => boolean) => passwd.split("\n").map((l) => l.split(":")).find((f) => f.length >= 7 && pred(f));
  const sudoUid = env.raw.SUDO_UID;
  if (env.uid === 0 && sudoUid !== undefined && /^\d+$/.test(sudoUid) && sudoUid !== "0") {
    const f = entry((f) => f[2] === sudoUid);
    if (!f) throw new SbxError("config", `sudo says you are uid ${sudoUid}, but that uid has no passwd entry`, { hint: "Run sbx as a user with a passwd entry." });
    return { name: f[0]!, uid: Number(f[2]), gid: Number(f[3]), home: f[5]!, shell: f[6]! };
  }
  const f = entry((f) => f[2] === String(env.uid));
  return {
    name: f?.[0] ?? env.userName,
    uid: env.uid,
    gid: env.gid,
    home: env.vars.HOME,
    shell: env.vars.SHELL ?? f?.[6] ?? "/bin/sh",
  };
}

/**
 * Pure: a free loopback port for a new sandbox. Starts at a point derived from its id (so two creates at once rarely
 * race for one port), skips ports other sandboxes hold and any `isFree` says is bound now.
 */
export function pickProxyPort(id: string, taken: ReadonlySet<number>, isFree: (port: number) => boolean): number {
  const size = PROXY_PORT_RANGE.max - PROXY_PORT_RANGE.min + 1;
  const start = Number.parseInt(sha256Hex(id).slice(0, 8), 16) % size;
  for (let i = 0; i < size; i++) {
    const p = PROXY_PORT_RANGE.min + ((start + i) % size);
    if (!taken.has(p) && isFree(p)) return p;
  }
  throw new SbxError("unavailable", `no free loopback port in ${PROXY_PORT_RANGE.min}-${PROXY_PORT_RANGE.max} for a sandbox proxy`, {
    hint: "Remove sandboxes you no longer need (`sbx rm`, `sbx prune`).",
  });
}

/** Whether 127.0.0.1:<port> can be bound right now (binds and releases it). */
export function loopbackPortFree(port: number): boolean {
  try {
    const l = Bun.listen({ hostname: "127.0.0.1", port, socket: { data() {} } });
    l.stop(true);
    return true;
  } catch {
    return false;
  }
}

/** Pure: the environment every process of a user-account sandbox gets (rc files and sessions). */
export function userSandboxEnv(name: string, proxyPort: number, bridgeSocket: string): Record<string, string> {
  return { SANDBOX: name, ...proxyEnv(proxyPort), ...llmEnv(proxyPort), SBX_BRIDGE_SOCKET: bridgeSocket };
}

/** Pure: the spec of a stored user-account sandbox (what the daemon hands to the backend and the guards). */
export function userSpec(paths: Paths, row: Sandbox): SandboxSpec {
  const ident = userIdentity(row);
  const sockets = sandboxSockets(paths, ident.id);
  return {
    id: ident.id,
    name: row.name,
    repo: row.repo,
    dir: ident.dir,
    hostUser: ident.hostUser,
    sockets,
    env: userSandboxEnv(row.name, ident.proxyPort, sockets.bridge),
    overlays: [],
    options: { proxyPort: ident.proxyPort },
  };
}

/**
 * An Exec whose commands run as the host user: `setpriv` drops root to its uid, gid and groups (nothing when sbx is
 * not root or the host user is root). HOME/USER/LOGNAME are the host user's unless the caller set them (ref sync's
 * git gets HOME=/nonexistent). runs: setpriv --reuid=<uid> --regid=<gid> --init-groups -- <argv>
 */
export function hostUserExec(exec: Exec, host: HostUser, selfUid: number): Exec {
  if (selfUid !== 0 || host.uid === 0) return exec;
  const wrap = (argv: readonly string[]) => ["setpriv", `--reuid=${host.uid}`, `--regid=${host.gid}`, "--init-groups", "--", ...argv];
  const envOf = (o: { env?: Record<string, string> | undefined }) => ({ HOME: host.home, USER: host.name, LOGNAME: host.name, ...o.env });
  return {
    run: (argv, opts: ExecOptions = {}) => exec.run(wrap(argv), { ...opts, env: envOf(opts) }),
    terminal: (argv, opts) => exec.terminal(wrap(argv), { ...opts, env: envOf(opts) }),
  } as Exec;
}

export interface UserSandboxesDeps {
  exec: Exec;
  env: Env;
  paths: Paths;
  store: Store;
  backend: UserAccountBackend;
  log: (line: string) => void;
  /** The daemon (guards before the backend); without one the backend is applied directly (tests). */
  supervisor?: Supervisor;
  /** The passwd file (tests). */
  passwdFile?: string;
  /** Port probe seam (tests). */
  portFree?: (port: number) => boolean;
}

export interface UserCreateRequest {
  name: string;
  cwd: string;
  repoFlag?: string | undefined;
  ifExists?: "error" | "reuse";
}

export interface UserWhere {
  cwd: string;
  repoFlag?: string | undefined;
}

/** create / session / stop / rm / prune / list for user-account sandboxes. */
export class UserSandboxes {
  readonly host: HostUser;
  /** Runs as the host user: every git in the host repo. */
  readonly hostExec: Exec;

  constructor(private readonly d: UserSandboxesDeps) {
    this.host = hostUserFor(d.env, readFileSync(d.passwdFile ?? "/etc/passwd", "utf8"));
    this.hostExec = hostUserExec(d.exec, this.host, d.env.uid);
  }

  private get kind(): UserBackendKind {
    return this.d.backend.kind;
  }

  private lock(repo: string, name: string): Promise<Lock> {
    return acquireLock(lockPath(this.d.paths.stateDir, repo, name), {
      onWait: (h) => this.d.log(`waiting for another sbx (pid ${h.pid}) working on sandbox ${name}…`),
    });
  }

  async locate(name: string, w: UserWhere): Promise<{ repo: string; row: Sandbox }> {
    validateSandboxName(name);
    const repo = await findRepoRoot(this.hostExec, w.cwd, w.repoFlag);
    const row = this.d.store.findSandbox(repo, name);
    if (!row) {
      throw new SbxError("not_found", `no sandbox '${name}' for ${repo}`, {
        hint: `Create it with \`sbx create --backend user ${name}\`; \`sbx list\` shows the ones that exist.`,
      });
    }
    if (row.backend !== this.kind) {
      throw new SbxError("conflict", `sandbox '${name}' is a ${row.backend} sandbox, not a ${this.kind} one`, { hint: "This is a bug in sbx's verb dispatch." });
    }
    return { repo, row };
  }

  spec(row: Sandbox): SandboxSpec {
    return userSpec(this.d.paths, row);
  }

  private async bringUp(row: Sandbox): Promise<void> {
    if (this.d.supervisor) await this.d.supervisor.start(row);
    else await this.d.backend.apply(this.spec(row));
  }

  /**
   * Creates (or with `ifExists: "reuse"`, starts) a sandbox: row with its port, then the daemon brings up guards and
   * applies the backend (account, firewall, clone, rc files). A failure tears down what was made and says why.
   */
  async create(req: UserCreateRequest): Promise<{ sandbox: Sandbox; created: boolean }> {
    validateSandboxName(req.name);
    const repo = await findRepoRoot(this.hostExec, req.cwd, req.repoFlag);
    requirePlainGitDir(repo);
    const lock = await this.lock(repo, req.name);
    try {
      const existing = this.d.store.findSandbox(repo, req.name);
      if (existing) {
        if (req.ifExists === "reuse" && existing.backend === this.kind) {
          await this.bringUp(existing);
          return { sandbox: this.d.store.getSandbox(existing.id) ?? existing, created: false };
        }
        throw new SbxError("exists", `sandbox '${req.name}' already exists for ${repo} (${existing.backend})`, {
          hint: `Enter it with \`sbx shell ${req.name}\`, or remove it with \`sbx rm ${req.name}\` first.`,
        });
      }
      const id = sandboxId(this.d.paths.sandboxRoot, repo, req.name);
      const taken = new Set<number>();
      for (const r of this.d.store.listSandboxes({ all: true })) {
        const p = UserIdentitySchema.safeParse(r.identity);
        if (p.success && r.state !== "deleted") taken.add(p.data.proxyPort);
      }
      const proxyPort = pickProxyPort(id, taken, this.d.portFree ?? loopbackPortFree);
      const dir = sandboxDir(this.d.paths, repo, req.name);
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      // The `repo` link tells prune whose dir this is (a dir without one counts as a leftover).
      const link = sandboxLayout(dir).link;
      if (!existsSync(link)) symlinkSync(repo, link);
      const identity: UserIdentity = { kind: "user", id, dir, proxyPort, hostUser: this.host };
      const row = this.d.store.createSandbox({ name: req.name, repo, backend: this.kind, identity });
      try {
        await this.bringUp(row);
      } catch (e) {
        this.d.log(`creating ${req.name} failed; removing what was made…`);
        await this.teardown(row).catch((e2: unknown) => this.d.log(`warning: cleanup after the failed create: ${(e2 as Error).message} (\`sbx prune\` retries)`));
        throw e;
      }
      this.d.store.audit({ sandboxId: row.id, kind: "lifecycle", action: "create", detail: { name: req.name, repo, backend: this.kind, proxyPort } });
      return { sandbox: this.d.store.getSandbox(row.id) ?? row, created: true };
    } finally {
      lock.release();
    }
  }

  /** The host argv of a shell or command as the guest (the sandbox started first, through the daemon). */
  async session(req: UserWhere & { name: string; argv: string[]; tty: boolean }): Promise<string[]> {
    const { row } = await this.locate(req.name, req);
    await this.bringUp(row);
    const live = this.d.store.getSandbox(row.id) ?? row;
    this.d.store.touchSandbox(row.id);
    return this.d.backend.shellArgv(this.spec(live), { argv: req.argv, cwd: req.cwd, tty: req.tty, env: terminalVars(this.d.env.raw) });
  }

  /** Stops the sandbox (firewall to block-all, the guest's processes killed), then its guards; then the last fetch. */
  async stop(name: string, w: UserWhere): Promise<boolean> {
    const { repo, row } = await this.locate(name, w);
    const changed = this.d.supervisor ? await this.d.supervisor.stop(row) : (await this.d.backend.stop(this.spec(row))).changed;
    this.d.store.setSandboxState(row.id, "stopped");
    await this.lastFetch(repo, row);
    return changed;
  }

  /**
   * The clone → host fetch into `refs/remotes/sandbox-<name>/*`, as the host user with ref sync's pinned, config-free
   * git (never git in the clone). runs: (finalFetch, as the host user) git … -C <repo> fetch … <clone> …
   */
  private async lastFetch(repo: string, row: Sandbox): Promise<void> {
    const spec = this.spec(row);
    await finalFetch({
      hostRepo: repo,
      clonePath: this.d.backend.workspace(spec),
      remoteName: sandboxRemote(row.name),
      expectedAlternates: this.d.backend.expectedAlternates(spec),
      exec: this.hostExec,
      audit: (e) => this.d.store.audit({ sandboxId: row.id, kind: "ref-sync", action: e.action, detail: e.detail }),
    });
  }

  /** Commits under `refs/remotes/sandbox-<name>/` that no other host ref has. runs (as the host user): git -C <repo> log … */
  private async unsynced(repo: string, name: string): Promise<Commit[]> {
    const r = await this.hostExec.run(
      ["git", ...HOST_GIT_SAFE, "-C", repo, "log", "--format=%H%x09%s", `--remotes=${sandboxRemote(name)}`, "--not", "--exclude=refs/remotes/sandbox-*", "--all"],
      { env: hostGitEnv(), replaceEnv: true },
    );
    return parseCommits(r.stdout);
  }

  /**
   * Removes a sandbox: fetch its commits, refuse (exit 65) while some are on no other host ref unless `force`, stop it,
   * fetch once more, let the daemon go, then the account, firewall chain, home, sockets and dir. The host keeps
   * `refs/remotes/sandbox-<name>/*`.
   */
  async rm(name: string, w: UserWhere & { force?: boolean }): Promise<{ lost: Commit[] }> {
    const { repo, row } = await this.locate(name, w);
    const lock = await this.lock(repo, name);
    try {
      let lost: Commit[] = [];
      try {
        await this.lastFetch(repo, row);
        lost = await this.unsynced(repo, name);
      } catch (e) {
        if (!w.force) {
          throw new SbxError("unsynced_commits", `cannot tell whether sandbox '${name}' holds commits the host lacks: ${(e as Error).message}`, {
            hint: `Remove it anyway with \`sbx rm --force ${name}\`.`,
          });
        }
      }
      if (lost.length > 0 && !w.force) {
        const lines = lost.slice(0, 20).map((c) => `  ${c.sha.slice(0, 12)} ${c.subject}`);
        throw new SbxError("unsynced_commits", `sandbox '${name}' holds ${lost.length} commit(s) that no host ref has:\n${lines.join("\n")}`, {
          hint: `Keep them with \`git branch <branch> sandbox-${name}/<branch>\`, or discard them with \`sbx rm --force ${name}\`.`,
        });
      }
      if (this.d.supervisor) await this.d.supervisor.stop(row);
      else await this.d.backend.stop(this.spec(row));
      try {
        await this.lastFetch(repo, row);
      } catch (e) {
        if (!w.force) throw e;
        this.d.log(`warning: the last fetch from sandbox ${name} failed (${(e as Error).message}); removing anyway (--force)`);
      }
      await this.teardown(row);
      this.d.store.audit({ sandboxId: row.id, kind: "lifecycle", action: "rm", detail: { name, repo, force: w.force === true, lost: lost.length } });
      return { lost };
    } finally {
      lock.release();
    }
  }

  /** Everything of one sandbox, in an order a crash can resume: daemon's hold, row, backend, dirs. Idempotent. */
  private async teardown(row: Sandbox): Promise<void> {
    const spec = this.spec(row);
    if (this.d.supervisor) await this.d.supervisor.release(row).catch(() => undefined);
    this.d.store.setSandboxState(row.id, "deleted");
    await this.d.backend.remove(spec);
    rmSync(spec.dir, { recursive: true, force: true });
    rmSync(spec.sockets.dir, { recursive: true, force: true });
  }

  /** What a crash left: accounts, chains/anchors, homes, mounts and records of no live sandbox of this backend. */
  async prune(opts: { dryRun?: boolean } = {}): Promise<{ removed: string[] }> {
    const keep = new Set<string>();
    for (const r of this.d.store.listSandboxes()) {
      if (r.backend !== this.kind) continue;
      const p = UserIdentitySchema.safeParse(r.identity);
      if (p.success) keep.add(p.data.id);
    }
    return this.d.backend.cleanup(keep, opts.dryRun ? { dryRun: true } : {});
  }

  /** This backend's sandboxes with their observed phase. */
  async list(opts: { all?: boolean; repo?: string } = {}): Promise<{ name: string; repo: string; state: Sandbox["state"]; phase: string; proxyPort: number | null }[]> {
    const rows = this.d.store.listSandboxes({ all: opts.all === true, ...(opts.repo ? { repo: opts.repo } : {}) }).filter((r) => r.backend === this.kind);
    return Promise.all(
      rows.map(async (row) => {
        const p = UserIdentitySchema.safeParse(row.identity);
        const phase = row.state === "deleted" || !p.success ? "absent" : (await this.d.backend.inspect(this.spec(row)).catch(() => null))?.phase ?? "unknown";
        return { name: row.name, repo: row.repo, state: row.state, phase, proxyPort: p.success ? p.data.proxyPort : null };
      }),
    );
  }
}

/** `--backend user` means the user-account backend of this OS; `--backend macos` is accepted on a Mac too. */
export function userBackendKind(platform: NodeJS.Platform, flag: string): UserBackendKind {
  if (flag === "macos" || (flag === "user" && platform === "darwin")) {
    if (platform !== "darwin") throw new SbxError("usage", "--backend macos runs only on macOS", { hint: "On Linux use --backend user (as root) or docker." });
    return "macos";
  }
  if (flag === "user" || flag === "linux-user") {
    if (platform !== "linux") throw new SbxError("usage", `--backend user is not available on ${platform}`, { hint: "Use --backend docker." });
    return "linux-user";
  }
  throw new SbxError("usage", `unknown backend '${flag}'`, { hint: "Use --backend docker, user or macos." });
}

/**
 * The CLI-side instance of a user-account backend, configured as the daemon configures its own (same root, table,
 * runtime dir, shims), for the host-side work the CLI does: workspace paths, final fetch, remove, prune.
 */
export async function userBackendFor(kind: UserBackendKind, d: { exec: Exec; env: Env; paths: Paths; warn?: (m: string) => void }): Promise<UserAccountBackend> {
  if (kind === "linux-user") {
    const { defaultRuntime } = await import("../backend/docker/docker");
    const rt = defaultRuntime();
    const { LinuxUserBackend } = await import("../backend/linux-user/backend");
    const { probeLinuxUser } = await import("../backend/linux-user/probe");
    const probe = await probeLinuxUser(d.exec);
    if (!probe.ok) {
      throw new SbxError("not_available", `the user backend cannot run here:\n  ${probe.missing.join("\n  ")}`, {
        hint: "Run sbx with sudo (it creates accounts and nft rules), after installing what is listed; or use --backend docker.",
      });
    }
    return new LinuxUserBackend({ exec: d.exec, runtimeDir: d.paths.runtimeDir, runtime: rt, ...(d.warn ? { warn: d.warn } : {}) });
  }
  const { macosBackendHere } = await import("../backend/macos/backend");
  return macosBackendHere({ exec: d.exec, hostUser: d.env.userName, runtimeDir: d.paths.runtimeDir });
}

/** Opens the store and a UserSandboxes over the given backend kind; call close() when done (CLI verbs). */
export async function openUserSandboxes(
  d: { exec: Exec; env: Env; paths: Paths; log: (line: string) => void; supervisor?: Supervisor },
  kind: UserBackendKind,
): Promise<{ users: UserSandboxes; store: Store; close(): void }> {
  const { Store: StoreImpl } = await import("../store/store");
  const backend = await userBackendFor(kind, { ...d, warn: (m) => d.log(`warning: ${m}`) });
  const store = new StoreImpl(d.paths.dbFile);
  const users = new UserSandboxes({ exec: d.exec, env: d.env, paths: d.paths, store, backend, log: d.log, ...(d.supervisor ? { supervisor: d.supervisor } : {}) });
  return { users, store, close: () => store.close() };
}
