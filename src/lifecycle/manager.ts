// The sandbox manager: create, start, shell, stop, rm, prune and list, over the store, the workspace and a backend.
import { existsSync, readdirSync, readlinkSync, realpathSync, rmSync, statSync, unlinkSync, writeFileSync, mkdirSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { z } from "zod";
import type { HostUser, SandboxSpec } from "../backend/backend";
import type { ClaudeAuth } from "../backend/docker/args";
import { requireSameUidEngine, type DockerBackend } from "../backend/docker/docker";
import { readSecrets, secretsFile } from "../secrets/store";
import { ensureImage, imageExists, planImage } from "../backend/docker/image";
import { SbxError } from "../core/errors";
import { validateSandboxName } from "../core/names";
import type { Sandbox, SandboxState } from "../core/schemas";
import type { Store } from "../store/store";
import { passwdName, type Env } from "../sys/env";
import type { Exec } from "../sys/exec";
import { sandboxDir, sandboxSockets, sha256Hex, SOCKET_ID_LENGTH, type Paths } from "../sys/paths";
import { finalFetch, retiredStamp, retireSandboxRemote, setAsideRetiredRefs } from "../sync/final-fetch";
import {
  createClone,
  requirePlainGitDir,
  sandboxRemote,
  sandboxRemoteUrl,
  sessionCwd,
  staleConfigLock,
  unsyncedCommits,
  type Commit,
} from "../workspace/clone";
import { sandboxLayout } from "../workspace/layout";
import { deadStagingDirs, type StagedClone } from "../workspace/staged-clone";
import { findRepoRoot } from "../workspace/repo";
import type { Config } from "../core/config";
import { expandHome, loadConfig } from "./config";
import { sandboxEnv, terminalVars } from "./env";
import { acquireLock, lockHeld, lockPath, staleLocks, type Lock } from "./lock";

/**
 * Pure: a sandbox's id (container `sbx-<id>`, volume and socket-dir names), scoped to the state root: two state roots
 * (two XDG setups of one user, or a test's own) with the same repo and sandbox name get different containers and socket
 * dirs, so neither can start, stop or remove the other's.
 */
export function sandboxId(sandboxRoot: string, repo: string, name: string): string {
  return sha256Hex(`${sandboxRoot}\0${repo}\0${name}`).slice(0, SOCKET_ID_LENGTH);
}

/** What sbx keeps in a sandbox row's `identity` column for the Docker backend. */
export const DockerIdentitySchema = z.object({
  id: z.string(),
  dir: z.string(),
  overlays: z.array(z.string()).default([]),
  image: z.string().optional(),
  shell: z.string().optional(),
  /** The creating user's $SHELL: the shell preference is the creator's, not the daemon's environment's. */
  hostShell: z.string().optional(),
  /** How the host's Claude login reaches the sandbox (absent on sandboxes made before the choice existed: overlay). */
  claudeAuth: z.enum(["inject", "overlay"]).optional(),
  /** The config file's `env:` at create time (a container's environment is fixed when it is created). */
  userEnv: z.record(z.string(), z.string()).optional(),
});
export type DockerIdentity = z.infer<typeof DockerIdentitySchema>;

/**
 * Who brings a sandbox up and down when the manager is not itself inside the daemon: the daemon, through its client,
 * so guards (proxy, bridge, ref sync) are up before the container starts and go down after it stops. Without one
 * (the daemon's own manager, tests) the manager converges the backend directly.
 */
export interface Supervisor {
  /** Guards up, then the sandbox running; throws when the guards cannot come up (the sandbox stays fenced). */
  start(row: Sandbox): Promise<void>;
  /** The sandbox stopped, then its guards down. */
  stop(row: Sandbox): Promise<boolean>;
  /** The daemon lets go of a sandbox being removed (guards down, sockets gone). */
  release(row: Sandbox): Promise<void>;
}

export interface ManagerDeps {
  exec: Exec;
  env: Env;
  paths: Paths;
  store: Store;
  backend: DockerBackend;
  /** Progress and notes for the person (stderr). */
  log: (line: string) => void;
  /** Raw build output as it arrives (stderr). */
  progress?: (chunk: string) => void;
  /** Engine check seam (tests with a fake executor skip it). */
  checkEngine?: (exec: Exec) => Promise<void>;
  /** The daemon, for callers outside it (the CLI). */
  supervisor?: Supervisor;
}

export interface Where {
  cwd: string;
  repoFlag?: string | undefined;
}

export interface CreateRequest extends Where {
  name: string;
  rebuild?: boolean;
  overlays?: string[];
  /** `run` reuses an existing sandbox; `create` refuses one. */
  ifExists?: "error" | "reuse";
  /** `--claude-auth`; default: inject when the host has an Anthropic key or Claude login, else overlay. */
  claudeAuth?: ClaudeAuth;
  /** A clone the caller started ahead (stageClone): moved into place if it is of this repo, else removed. */
  staged?: StagedClone;
}

export interface SessionRequest extends Where {
  name: string;
  argv: string[];
  tty: boolean;
  /** Whether stdin data will be forwarded (non-interactive). */
  stdin?: boolean;
}

export interface SandboxInfo {
  name: string;
  repo: string;
  state: SandboxState;
  phase: "running" | "stopped" | "absent" | "unknown";
  createdAt: number;
  lastUsedAt: number | null;
  /** Commits the clone holds that no host ref has; null when they could not be counted. */
  unsynced: Commit[] | null;
  dir: string;
  id: string;
}

export interface PruneReport {
  removed: string[];
  kept: string[];
}

export class SandboxManager {
  constructor(private readonly d: ManagerDeps) {}

  hostUser(): HostUser {
    const e = this.d.env;
    const name = e.vars.USER ?? e.vars.LOGNAME ?? passwdName(e.uid) ?? e.userName;
    return { name, uid: e.uid, gid: e.gid, home: e.vars.HOME, shell: e.vars.SHELL ?? "/bin/sh" };
  }

  /** Where the host keeps Claude Code's OAuth login. */
  private claudeCredentials(): string {
    return join(this.d.env.vars.HOME, ".claude", ".credentials.json");
  }

  /** Whether the host has an Anthropic key or Claude login the LLM proxy can inject (env, sbx secrets, ~/.claude). */
  hostHasClaudeCredentials(): boolean {
    const names = ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"];
    if (names.some((n) => (this.d.env.raw[n] ?? "") !== "")) return true;
    if (existsSync(this.claudeCredentials())) return true;
    try {
      const secrets = readSecrets(secretsFile(this.d.paths.configDir));
      return names.some((n) => (secrets[n] ?? "") !== "");
    } catch {
      return false;
    }
  }

  /**
   * The Claude credentials mode of a new sandbox: the flag, else inject when the host has something to inject, else
   * overlay (then a login made inside stays in the sandbox's overlay). Warns when the agent will be able to read the
   * host's credentials file.
   */
  private claudeAuthFor(req: CreateRequest, config: Config): ClaudeAuth {
    const mode: ClaudeAuth = req.claudeAuth ?? config.claudeAuth ?? (this.hostHasClaudeCredentials() ? "inject" : "overlay");
    if (mode === "overlay" && existsSync(this.claudeCredentials())) {
      this.d.log(
        `warning: --claude-auth overlay: the agent in sandbox ${req.name} can read your Claude credentials (${this.claudeCredentials()}) and could use or copy them. ` +
          "The default, --claude-auth inject, keeps them on the host and adds them to the agent's API requests on the way out.",
      );
    }
    return mode;
  }

  /** The overlays every sandbox gets, plus the user's own (`--overlay`, and `overlays` in the config file). */
  overlaysFor(extra: readonly string[], cwd: string): string[] {
    const home = this.d.env.vars.HOME;
    const out = [join(home, ".claude"), join(home, ".config", "fish")];
    for (const p of extra) {
      let abs = resolve(cwd, expandHome(p, home));
      try {
        abs = realpathSync(abs);
      } catch {
        /* a missing dir becomes an empty one inside */
      }
      if (abs === "/" || abs === home) {
        throw new SbxError("usage", `cannot overlay ${abs}: overlay a specific directory, not / or your whole home`, {
          hint: "Name the dirs the agent needs, e.g. --overlay ~/.config/gh",
        });
      }
      out.push(abs);
    }
    return [...new Set(out)];
  }

  private identity(row: Sandbox): DockerIdentity {
    const r = DockerIdentitySchema.safeParse(row.identity);
    if (!r.success) {
      throw new SbxError("internal", `sandbox ${row.name}: its stored record is unreadable`, {
        hint: `Remove it with \`sbx rm --force ${row.name}\`, then create it again.`,
      });
    }
    return r.data;
  }

  /** The spec a backend converges to, for a stored sandbox. */
  specFor(row: Sandbox): SandboxSpec {
    const ident = this.identity(row);
    return this.spec(row.name, row.repo, ident);
  }

  private spec(name: string, repo: string, ident: DockerIdentity): SandboxSpec {
    const options: Record<string, string> = {};
    if (ident.image) options.image = ident.image;
    if (ident.shell) options.shell = ident.shell;
    options.claudeAuth = ident.claudeAuth ?? "overlay";
    const user = this.hostUser();
    return {
      id: ident.id,
      name,
      repo,
      dir: ident.dir,
      hostUser: ident.hostShell ? { ...user, shell: ident.hostShell } : user,
      sockets: sandboxSockets(this.d.paths, ident.id),
      env: sandboxEnv(this.d.env.raw, name, ident.userEnv ? { user: ident.userEnv } : {}),
      overlays: ident.overlays,
      options,
    };
  }

  private lock(repo: string, name: string): Promise<Lock> {
    return acquireLock(lockPath(this.d.paths.stateDir, repo, name), {
      onWait: (h) => this.d.log(`waiting for another sbx (pid ${h.pid}) working on sandbox ${name}…`),
    });
  }

  private async repoOf(w: Where): Promise<string> {
    return findRepoRoot(this.d.exec, w.cwd, w.repoFlag);
  }

  private notFound(name: string, repo: string): SbxError {
    return new SbxError("not_found", `no sandbox '${name}' for ${repo}`, {
      hint: `Create it with \`sbx create ${name}\` (or \`sbx run ${name}\`); \`sbx list\` shows the ones that exist.`,
    });
  }

  /** The live row of a sandbox, or a not_found error. */
  async locate(name: string, w: Where): Promise<{ repo: string; row: Sandbox }> {
    validateSandboxName(name);
    const repo = await this.repoOf(w);
    const row = this.d.store.findSandbox(repo, name);
    if (!row) throw this.notFound(name, repo);
    return { repo, row };
  }

  /**
   * Creates a sandbox: row, clone, image, container. Holds the per-name lock throughout, so two `sbx run x` at once
   * give one sandbox. A half-made one (its creator died) is torn down and made again.
   */
  async create(req: CreateRequest): Promise<{ sandbox: Sandbox; created: boolean }> {
    try {
      return await this.createUnstaged(req);
    } finally {
      // Used or not (exists, a bad config, an error), a clone started ahead never outlives the create.
      await req.staged?.discard();
    }
  }

  private async createUnstaged(req: CreateRequest): Promise<{ sandbox: Sandbox; created: boolean }> {
    validateSandboxName(req.name);
    // The engine check (one API round trip) runs while the repo is found; both must pass before anything is made.
    const engineOk = (this.d.checkEngine ?? ((e: Exec) => requireSameUidEngine(e, this.d.backend.apiSocket)))(this.d.exec);
    engineOk.catch(() => undefined); // awaited below; never an unhandled rejection if repoOf throws first
    const repo = await this.repoOf(req);
    requirePlainGitDir(repo);
    await engineOk;
    const user = this.hostUser();
    const lock = await this.lock(repo, req.name);
    try {
      const dir = sandboxDir(this.d.paths, repo, req.name);
      const lay = sandboxLayout(dir);
      const existing = this.d.store.findSandbox(repo, req.name);
      if (existing && !existsSync(lay.creating)) {
        if (req.ifExists === "reuse") {
          await this.bringUp(existing);
          return { sandbox: this.d.store.getSandbox(existing.id) ?? existing, created: false };
        }
        throw new SbxError("exists", `sandbox '${req.name}' already exists for ${repo}`, {
          hint: `Enter it with \`sbx shell ${req.name}\`, or remove it with \`sbx rm ${req.name}\` first.`,
        });
      }
      if (existing || existsSync(dir)) {
        this.d.log(`clearing what an interrupted create of ${req.name} left behind…`);
        await this.teardown(req.name, repo, dir, existing);
      }
      if (user.uid === 0) {
        this.d.log("note: you are root, so the sandbox runs as root inside (with every capability dropped and no-new-privileges).");
      }

      // Read before anything is made: a bad config refuses here, with nothing to clean up.
      const config = loadConfig(this.d.paths, this.d.env);
      const overlays = this.overlaysFor([...config.overlays, ...(req.overlays ?? [])], req.cwd);
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      writeFileSync(lay.creating, `${process.pid}\n`);
      const ident: DockerIdentity = {
        id: sandboxId(this.d.paths.sandboxRoot, repo, req.name),
        dir,
        overlays,
        hostShell: user.shell,
        claudeAuth: this.claudeAuthFor(req, config),
        ...(Object.keys(config.env).length ? { userEnv: config.env } : {}),
      };
      const row = this.d.store.createSandbox({ name: req.name, repo, backend: "docker", identity: ident });
      // Three independent things at once (the clone is git on the disk, the other two wait on the engine): orphaned
      // volumes (their sandbox dir is gone) are removed on every create; the image is checked (or built); the clone made.
      const pruning = this.d.backend.pruneOrphans().catch(() => undefined);
      const imaging = ensureImage(this.d.exec, repo, user, {
        rebuild: req.rebuild === true,
        onProgress: (s) => this.d.progress?.(s),
        apiSocket: this.d.backend.apiSocket,
      });
      const cloning = (async () => {
        // An earlier sandbox of this name kept its commits as refs/remotes/sandbox-<name>/*: the new clone's first
        // --prune fetch (ref sync, once the sandbox starts) would delete them, so they move to
        // refs/sbx-retired/<name>/<stamp>/* while the clone is made (nothing-lost).
        const [aside] = await Promise.all([
          setAsideRetiredRefs(this.d.exec, repo, req.name, retiredStamp(new Date())),
          createClone(this.d.exec, { repo, dir, name: req.name }, req.staged),
        ]);
        if (aside !== null) {
          const eg = aside.branches[0] ? ` (e.g. git log ${aside.prefix}/${aside.branches[0]})` : "";
          this.d.log(`note: the branches an earlier sandbox '${req.name}' left as sandbox-${req.name}/* are kept as ${aside.prefix}/*${eg}`);
          this.d.store.audit({ sandboxId: row.id, kind: "lifecycle", action: "refs.set-aside", detail: { name: req.name, prefix: aside.prefix, branches: aside.branches } });
        }
      })();
      // The container (and its volumes) is made, not started, while the clone is: it only needs the image and the
      // clone's place (createClone holds it with an empty dir). Best effort: a start makes whatever is still missing.
      const preparing = imaging.then(
        (image) => this.d.backend.prepare(this.spec(req.name, repo, { ...ident, image: image.tag })),
      ).catch(() => undefined);
      // allSettled: nothing may still run in the background once the lock is released.
      const [img, cloned] = await Promise.allSettled([imaging, cloning, pruning, preparing]);
      if (cloned.status === "rejected") throw cloned.reason;
      if (img.status === "rejected") throw img.reason;
      const image = img.value;
      if (image.built) this.d.log(`built image ${image.tag}`);
      ident.image = image.tag;
      this.d.store.updateIdentity(row.id, ident);
      // Through the daemon when there is one: guards first, then the container (ensureRunning resolves the shell).
      await this.bringUp(this.d.store.getSandbox(row.id) ?? row);
      unlinkSync(lay.creating);
      this.d.store.audit({ sandboxId: row.id, kind: "lifecycle", action: "create", detail: { name: req.name, repo, image: image.tag } });
      return { sandbox: this.d.store.getSandbox(row.id) ?? row, created: true };
    } finally {
      lock.release();
    }
  }

  /** Brings a stored sandbox to running: through the supervisor (the daemon) when there is one, else directly. */
  private async bringUp(row: Sandbox): Promise<void> {
    if (this.d.supervisor) await this.d.supervisor.start(row);
    else await this.ensureRunning(row);
  }

  /**
   * Makes the container of a sandbox that has none, without starting it, when its image is already there (else
   * ensureRunning builds it first and makes the container then). The daemon runs this while the sandbox's guards come
   * up; nothing runs in the container until ensureRunning starts it, after the guards.
   * API: GET /images/<tag>/json; then (backend.prepare) docker volume create …, docker create …, docker cp …
   */
  async prepareRun(row: Sandbox): Promise<void> {
    if (row.backend !== "docker") return;
    const spec = this.specFor(row);
    if ((await this.d.backend.inspect(spec)).phase !== "absent") return;
    const ident = this.identity(row);
    const tag = planImage(row.repo, this.hostUser()).tag;
    if (!(await imageExists(this.d.exec, tag, this.d.backend.apiSocket))) return;
    ident.image = tag;
    await this.d.backend.prepare(this.spec(row.name, row.repo, ident));
  }

  /** Starts a stored sandbox's container if it is not running (rebuilding a missing image). */
  async ensureRunning(row: Sandbox): Promise<SandboxSpec> {
    let spec = this.specFor(row);
    const obs = await this.d.backend.inspect(spec);
    if (obs.phase !== "running") {
      const ident = this.identity(row);
      if (obs.phase === "absent") {
        const img = await ensureImage(this.d.exec, row.repo, this.hostUser(), { onProgress: (s) => this.d.progress?.(s), apiSocket: this.d.backend.apiSocket });
        ident.image = img.tag;
      }
      spec = this.spec(row.name, row.repo, ident);
      await this.d.backend.apply(spec);
      if (!ident.shell) ident.shell = await this.d.backend.resolveShell(spec);
      this.d.store.updateIdentity(row.id, ident);
      if (row.state !== "active") this.d.store.setSandboxState(row.id, "active");
      spec = this.spec(row.name, row.repo, ident);
    }
    return spec;
  }

  async start(name: string, w: Where): Promise<Sandbox> {
    const { row } = await this.locate(name, w);
    await this.bringUp(row);
    return this.d.store.getSandbox(row.id) ?? row;
  }

  /**
   * The host argv of a session (shell or command), starting the sandbox if it is stopped (through the daemon when
   * there is one: its guards are up before the argv is handed out).
   */
  async session(req: SessionRequest): Promise<string[]> {
    const { repo, row } = await this.locate(req.name, req);
    await this.bringUp(row);
    const live = this.d.store.getSandbox(row.id) ?? row;
    const spec = this.specFor(live);
    const obs = await this.d.backend.inspect(spec);
    if (obs.phase !== "running") {
      throw new SbxError("unavailable", `sandbox '${req.name}' is not running`, { hint: `Start it with \`sbx run ${req.name}\`; \`sbx status\` shows its guards.` });
    }
    const term = terminalVars(this.d.env.raw);
    const cwd = sessionCwd(repo, req.cwd, sandboxLayout(spec.dir).clone);
    this.d.store.touchSandbox(row.id);
    return this.d.backend.shellArgv(spec, { argv: req.argv, cwd, tty: req.tty, env: term, stdin: req.stdin === true });
  }

  /**
   * Stops a sandbox (through the daemon when there is one: container first, then its guards), then takes one last
   * clone → host fetch so `sandbox-<name>/*` on the host holds every commit made inside.
   */
  async stop(name: string, w: Where): Promise<boolean> {
    const { repo, row } = await this.locate(name, w);
    let changed: boolean;
    if (this.d.supervisor) changed = await this.d.supervisor.stop(row);
    else changed = (await this.d.backend.stop(this.specFor(row))).changed;
    this.d.store.setSandboxState(row.id, "stopped");
    await this.lastFetch(repo, row);
    return changed;
  }

  /**
   * The final clone → host fetch (pinned, config-free; never git in the clone). Refuses when the alternates were
   * rewritten. runs: (finalFetch) git … -C <repo> fetch … <clone> +refs/heads/*:refs/remotes/sandbox-<name>/*
   */
  private async lastFetch(repo: string, row: Sandbox): Promise<void> {
    const lay = sandboxLayout(this.identity(row).dir);
    if (!existsSync(lay.clone)) return;
    await finalFetch({
      hostRepo: repo,
      clonePath: lay.clone,
      remoteName: sandboxRemote(row.name),
      expectedAlternates: `${join(lay.linkGit, "objects")}\n`,
      exec: this.d.exec,
      audit: (e) => this.d.store.audit({ sandboxId: row.id, kind: "ref-sync", action: e.action, detail: e.detail }),
    });
  }

  /**
   * Removes a sandbox: container, volumes, overlay dirs, the host's `sandbox-<name>` remote and the sandbox dir.
   * Refuses (exit 65) while the clone holds commits no host ref has, unless `force`.
   */
  async rm(name: string, w: Where & { force?: boolean }): Promise<{ lost: Commit[] }> {
    const { repo, row } = await this.locate(name, w);
    const lock = await this.lock(repo, name);
    try {
      const spec = this.specFor(row);
      let lost: Commit[] = [];
      if (existsSync(sandboxLayout(spec.dir).clone)) {
        try {
          lost = await unsyncedCommits(this.d.exec, repo, name);
        } catch (e) {
          if (!w.force) {
            throw new SbxError("unsynced_commits", `cannot tell whether sandbox '${name}' holds commits the host lacks: ${(e as Error).message}`, {
              hint: `Check with \`git fetch sandbox-${name}\` in the repo, or remove it anyway with \`sbx rm --force ${name}\`.`,
            });
          }
        }
      }
      if (lost.length > 0 && !w.force) {
        const lines = lost.slice(0, 20).map((c) => `  ${c.sha.slice(0, 12)} ${c.subject}`);
        if (lost.length > 20) lines.push(`  … and ${lost.length - 20} more`);
        throw new SbxError(
          "unsynced_commits",
          `sandbox '${name}' holds ${lost.length} commit${lost.length === 1 ? "" : "s"} that no host ref has:\n${lines.join("\n")}`,
          {
            hint: `Keep them with \`git branch <branch> sandbox-${name}/<branch>\` in the repo (they are already fetched as sandbox-${name}/*), or discard them with \`sbx rm --force ${name}\`.`,
          },
        );
      }
      // Stopped first (container, then guards), so nothing is committed after the last fetch; the fetch keeps every
      // commit made inside as refs/remotes/sandbox-<name>/* on the host, and rm never deletes those refs.
      if (this.d.supervisor) await this.d.supervisor.stop(row);
      else await this.d.backend.stop(spec);
      try {
        await this.lastFetch(repo, row);
      } catch (e) {
        if (!w.force) throw e;
        this.d.log(`warning: the last fetch from sandbox ${name} failed (${(e as Error).message}); removing anyway (--force)`);
      }
      if (this.d.supervisor) await this.d.supervisor.release(row);
      // Row first: a crash after this leaves a dir with no live row, which prune removes.
      this.d.store.setSandboxState(row.id, "deleted");
      await this.teardown(name, repo, spec.dir, row);
      this.d.store.audit({ sandboxId: row.id, kind: "lifecycle", action: "rm", detail: { name, repo, force: w.force === true, lost: lost.length } });
      return { lost };
    } finally {
      lock.release();
    }
  }

  /** Removes everything of one sandbox, whatever state it is in; idempotent. */
  private async teardown(name: string, repo: string, dir: string, row: Sandbox | null): Promise<void> {
    let ident: DockerIdentity = { id: sandboxId(this.d.paths.sandboxRoot, repo, name), dir, overlays: [] };
    if (row) {
      const r = DockerIdentitySchema.safeParse(row.identity);
      if (r.success) ident = r.data;
    }
    const spec = this.spec(name, repo, { ...ident, dir });
    await this.d.backend.remove(spec);
    const url = await sandboxRemoteUrl(this.d.exec, repo, name).catch(() => null);
    // Retire, never `git remote remove`: the remote's config goes, its refs (the sandbox's commits) stay on the host.
    if (url !== null && url === sandboxLayout(dir).clone && existsSync(repo)) {
      await retireSandboxRemote(this.d.exec, repo, sandboxRemote(name)).catch(() => false);
    }
    rmSync(dir, { recursive: true, force: true });
    rmSync(spec.sockets.dir, { recursive: true, force: true });
    if (row && row.state !== "deleted") this.d.store.setSandboxState(row.id, "deleted");
  }

  /** Every sandbox dir on disk: `<sandboxRoot>/<repo>-<hash>/<name>`. */
  private sandboxDirs(): string[] {
    const root = this.d.paths.sandboxRoot;
    const out: string[] = [];
    let repos: string[] = [];
    try {
      repos = readdirSync(root);
    } catch {
      return out;
    }
    for (const r of repos) {
      const rd = join(root, r);
      try {
        if (!statSync(rd).isDirectory()) continue;
        for (const n of readdirSync(rd)) if (statSync(join(rd, n)).isDirectory()) out.push(join(rd, n));
      } catch {
        /* vanished */
      }
    }
    return out;
  }

  /**
   * Removes what no live sandbox owns: labelled containers and volumes whose dir is gone, sandbox dirs with no live
   * row, half-made sandboxes whose creator died, and stale lock files. Dirs whose clone holds unsynced commits are kept.
   */
  async prune(opts: { dryRun?: boolean } = {}): Promise<PruneReport> {
    const dry = opts.dryRun === true;
    const removed: string[] = [];
    const kept: string[] = [];
    for (const dir of this.sandboxDirs()) {
      const lay = sandboxLayout(dir);
      const name = basename(dir);
      let repo: string;
      try {
        repo = readlinkSync(lay.link);
      } catch {
        repo = "";
      }
      const row = repo ? this.d.store.findSandbox(repo, name) : null;
      const rowDir = row ? DockerIdentitySchema.safeParse(row.identity).data?.dir : undefined;
      const live = row !== null && rowDir === dir;
      const halfMade = existsSync(lay.creating) && !lockHeld(lockPath(this.d.paths.stateDir, repo, name));
      if (live && !halfMade) continue;
      if (existsSync(lay.creating) && !halfMade) continue; // a create in progress
      if (!halfMade && repo && existsSync(lay.clone) && (await sandboxRemoteUrl(this.d.exec, repo, name)) === lay.clone) {
        const lost = await unsyncedCommits(this.d.exec, repo, name).catch(() => null);
        if (lost === null || lost.length > 0) {
          kept.push(`${dir}: its clone holds ${lost === null ? "commits that could not be checked" : `${lost.length} unsynced commit(s)`}; fetch them (git fetch sandbox-${name}) or delete the dir by hand`);
          continue;
        }
      }
      removed.push(`sandbox dir ${dir}${halfMade ? " (interrupted create)" : ""}`);
      // A create killed while adding its remote leaves the repo's config locked; its remote cannot be removed (or
      // added again) until that lock is gone.
      const lock = halfMade && repo ? staleConfigLock(repo) : null;
      if (lock) {
        removed.push(`stale git lock ${lock} (a git killed with the create)`);
        if (!dry) rmSync(lock, { force: true });
      }
      if (!dry) await this.teardown(name, repo || "/nonexistent", dir, live ? row : null);
      if (!dry && live && row) this.d.store.setSandboxState(row.id, "deleted");
    }
    const orphans = await this.d.backend.pruneOrphans({ dryRun: dry });
    removed.push(...orphans.removed);
    for (const l of staleLocks(this.d.paths.stateDir)) {
      removed.push(`stale lock ${l}`);
      if (!dry) rmSync(l, { force: true });
    }
    for (const d of deadStagingDirs(this.d.paths)) {
      removed.push(`staged clone ${d} (its create died)`);
      if (!dry) rmSync(d, { recursive: true, force: true });
    }
    return { removed, kept };
  }

  /** Sandboxes with their observed phase and unsynced commits. */
  async list(opts: { all?: boolean; repo?: string } = {}): Promise<SandboxInfo[]> {
    const rows = this.d.store.listSandboxes({ all: opts.all === true, ...(opts.repo ? { repo: opts.repo } : {}) });
    return Promise.all(
      rows.map(async (row): Promise<SandboxInfo> => {
        const ident = DockerIdentitySchema.safeParse(row.identity).data;
        const base = {
          name: row.name,
          repo: row.repo,
          state: row.state,
          createdAt: row.createdAt,
          lastUsedAt: row.lastUsedAt,
          dir: ident?.dir ?? "",
          id: ident?.id ?? "",
        };
        if (row.state === "deleted" || !ident) return { ...base, phase: row.state === "deleted" ? "absent" : "unknown", unsynced: null };
        const spec = this.spec(row.name, row.repo, ident);
        const [obs, unsynced] = await Promise.all([
          this.d.backend.inspect(spec).catch(() => null),
          existsSync(sandboxLayout(ident.dir).clone) ? unsyncedCommits(this.d.exec, row.repo, row.name).catch(() => null) : Promise.resolve([]),
        ]);
        return { ...base, phase: obs?.phase ?? "unknown", unsynced };
      }),
    );
  }
}
