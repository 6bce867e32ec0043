// The one owner of a sandbox: create, start, session, stop, rm, prune, list and reconcile, for every kind, over the
// store and a driver per kind. Every write of a sandbox's row happens here (and in running.ts, its bring-up order).
//
// Everything that is the same for every kind lives here once (name and repo checks, the per-name lock, the row, the
// order of teardown, the unsynced-work refusal, the last sync, prune's dir scan); what differs is behind `Driver`. The
// daemon hosts the guards and sessions and calls in; the service reaches them only through `SandboxHost` (host.ts).
import { secretSessionEnv, type SessionSecretSource } from "./secret-env";
import { existsSync, mkdirSync, readdirSync, readlinkSync, rmSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import type { SandboxSpec } from "../core/spec";
import { sandboxExists, sandboxNotFound, SbxError, sessionsAttached, unsyncedCommits, unsyncedUnknown } from "../core/errors";
import { validateSandboxName } from "../core/names";
import { isAgentName } from "../core/agent-names";
import type { BackendKind, Sandbox, SandboxState } from "../core/schemas";
import type { CreateOptions, Driver, DriverCaps, DriverReport, NewSandbox, WatchContext, Watcher } from "../drivers/driver";
import { terminalVars } from "../core/terminal-vars";
import { lineSplitter } from "../core/lines";
import { hostKeySources, hostSecretsByName } from "../llm/keys";
import { CopyIn, findingLines } from "../secrets/copy-in";
import { changedFiles, workingTreeChanges } from "../workspace/changes";
import { hostEndpoint, nextPorts, parsePortSpec, portsOf, reachableBeyondLoopback, type PortForward, type PortState } from "../core/ports";
import { acquireLock, createProgress, lockHeld, lockPath, staleLocks, type Lock } from "../workspace/lock";
import type { Store } from "../store/store";
import { putBackRetiredRefs, retiredStamp, retireSandboxRemote, setAsideRetiredRefs, type SetAside } from "../sync/retired-refs";
import { hostGitEnv, HOST_GIT_SAFE } from "../sync/git-argv";
import type { Env } from "../sys/env";
import type { Exec } from "../sys/exec";
import { sandboxDir, sandboxSockets, type Paths } from "../sys/paths";
import { parseCommits, requirePlainGitDir, sandboxRemote, sandboxRemoteUrl, staleConfigLock, type Commit } from "../workspace/clone";
import { sandboxLayout } from "../workspace/layout";
import { importSandbox } from "../sync/import";
import { parsePublished, publishedOf } from "../core/egress";
import { BRIDGE_ALLOWS, BridgeSettingsSchema, bridgeSettingsOf, REF_PATTERN, REMOTE_NAME, type BridgeAllow, type BridgeSettings } from "../core/bridge-settings";
import { ensureStore, promoteStores, retireStore } from "../sync/store";
import { deadStagingDirs } from "../workspace/staged-clone";
import { findRepoRoot } from "../workspace/repo";
import { hostUserExec } from "../sys/as-user";
import { accountOf, userDirectory, type UserDirectory } from "../sys/host-user";
import { baseIdentity, LimitsSchema, sandboxId } from "../drivers/identity";
import { upstreamTips } from "../bridge/gate";
import { defaultLimits, limitHits, parseCpus, parseMemory, parsePids, resolveLimits, type HostCapacity, type LimitCounters, type LimitHit, type Limits, type LimitsInput } from "../core/limits";
import { loadConfig } from "../sys/config-file";
import { hostCapacity } from "../sys/capacity";
import { silentLogger, type Logger } from "../sys/log";
import { kindUnavailableHint } from "../core/backend-kind";
import type { SandboxHost } from "./host";
import { resolveSandbox, type SandboxQuery } from "./resolve";
import { SandboxRunner, type PhaseView, type ReconcileReport } from "./running";

/** What a stop or rm does to sessions attached to the sandbox: end them (each told why), or refuse while there are any. */
export type IfSessions = "end" | "refuse";

/** The drivers a process may use, made when first needed (a user-account driver needs root and its tools). */
export type DriverTable = Partial<Record<BackendKind, () => Driver | Promise<Driver>>>;

export interface ServiceDeps {
  exec: Exec;
  env: Env;
  paths: Paths;
  store: Store;
  drivers: DriverTable;
  /** The kind of a new sandbox when the caller names none (docker on Linux, macos on a Mac). */
  defaultKind: BackendKind;
  /** Finds the repo root (git as the host user when sbx runs as root for them); default: `exec`. */
  repoExec?: Exec;
  /** Where a caller's `asUid` is looked up (host-user.ts); default: this platform's user directory. */
  users?: UserDirectory;
  /** Progress and notes for the person (stderr). */
  log: (line: string) => void;
  /** Raw build output as it arrives (stderr). */
  progress?: (chunk: string) => void;
  /**
   * The daemon, which hosts the sandboxes' guards and sessions: a sandbox runs only once its guards are up, and its
   * sessions end before it stops. Without one (the service's own tests) the service converges the driver alone.
   */
  host?: SandboxHost;
  /** The daemon's log (reconcile, guards that failed beside a start); default: none. */
  logger?: Logger;
  /** This machine's memory and CPUs (limits' defaults and bounds; tests give their own). */
  capacity?: HostCapacity;
  /** The secrets bound to hosts: what a new session or command gets of them (sandboxes/secret-env.ts). */
  secrets?: SessionSecretSource;
}

/** Where a caller's lines go: notes for the person, and raw build output. */
export interface Output {
  log(line: string): void;
  progress?(chunk: string): void;
}

/** Where a caller stands, to find its repo: cwd, --repo, sudo's caller (honoured only as root). */
export interface Where extends SandboxQuery {
  cwd: string;
  /** This call's progress and notes (default: the service's log). */
  out?: Output | undefined;
}

/** Which sandbox a verb is about: where the caller stands, or the repo itself (resolve.ts), and where its lines go. */
export interface Named extends SandboxQuery {
  /** This call's progress and notes (default: the service's log). */
  out?: Output | undefined;
}

export interface CreateRequest extends Where, CreateOptions {
  name: string;
  /** The kind of a new sandbox (default: `defaultKind`); an existing one of another kind is refused. */
  backend?: BackendKind;
  /** `run` reuses an existing sandbox; `create` refuses one. */
  ifExists?: "error" | "reuse";
  /**
   * Aborted when the caller gave up (Ctrl-C, its process killed): the create stops at the next step and removes what
   * it made. A step under way (a clone, an image build) runs to its end first.
   */
  signal?: AbortSignal;
}

export interface SessionRequest extends Where {
  name: string;
  argv: string[];
  tty: boolean;
  /** Whether stdin data will be forwarded (non-interactive). */
  stdin?: boolean;
  /** The caller's terminal variables (default: this process's). */
  env?: Record<string, string>;
}

export interface SandboxInfo {
  name: string;
  repo: string;
  backend: BackendKind;
  state: SandboxState;
  phase: "running" | "stopped" | "absent" | "unknown";
  /** Its create is under way, or was interrupted (core/sandbox-state.ts says the word). */
  creating?: "in-progress" | "interrupted";
  createdAt: number;
  lastUsedAt: number | null;
  /** Commits the clone holds that no other host ref has; null when they could not be counted. */
  unsynced: Commit[] | null;
  dir: string;
  id: string;
  /**
   * Why the phase is unknown (the engine does not answer, the driver cannot run here, the record is unreadable), why
   * a stopped sandbox stopped when sbx did not stop it (killed for memory), or that its create was interrupted.
   */
  reason?: string;
  /** What it may use (absent on sandboxes made before limits). */
  limits?: Limits;
  /** The limits it ran into since it last started (running sandboxes whose kind keeps counters). */
  hits?: LimitHit[];
  /** What the person should know of it (its Dockerfile changed since its image, an older layout), as said at start. */
  notes?: string[];
}

/** A sandbox's limits and what it ran into (`sbx limits NAME`). */
export interface LimitsReport {
  name: string;
  limits: Limits | null;
  /** Limits the sandbox hit since it last started; null when it does not run or its kind keeps no counters. */
  hits: LimitHit[] | null;
  /** When limits changed: whether the running sandbox has them now or gets them at its next start. */
  applied?: "now" | "next-start";
}

export interface PruneReport {
  removed: string[];
  kept: string[];
}

export class SandboxService {
  private readonly made = new Map<BackendKind, Promise<Driver>>();
  /** The start in flight of each sandbox (by row id), which a start asked for meanwhile joins. */
  private readonly starting = new Map<number, Promise<void>>();
  private readonly running: SandboxRunner;

  constructor(private readonly d: ServiceDeps) {
    this.running = new SandboxRunner({
      store: d.store,
      paths: d.paths,
      host: d.host,
      logger: d.logger ?? silentLogger,
      driver: (k) => this.driver(k),
      kinds: () => this.kinds(),
      keepIdentity: (id, identity) => this.driverIdentity(id, identity),
      report: (id) => this.report(id),
    });
  }

  /** The kinds this process has a driver for. */
  kinds(): BackendKind[] {
    return Object.keys(this.d.drivers) as BackendKind[];
  }

  /** The driver of a kind; refuses, with what to do, a kind this process cannot run. */
  driver(kind: BackendKind): Promise<Driver> {
    let p = this.made.get(kind);
    if (!p) {
      const make = this.d.drivers[kind];
      p = make
        ? Promise.resolve().then(make)
        : Promise.reject(
            new SbxError("not_available", `${kind} sandboxes cannot be run from here`, { hint: kindUnavailableHint(kind) }),
          );
      this.made.set(kind, p);
    }
    return p;
  }

  private outOf(out: Output | undefined): Output {
    return out ?? { log: (l) => this.d.log(l), progress: (c) => this.d.progress?.(c) };
  }

  private report(rowId: number | null, out?: Output): DriverReport {
    const o = this.outOf(out);
    return {
      log: (l) => o.log(l),
      progress: (c) => o.progress?.(c),
      audit: (action, detail) => {
        if (rowId !== null) this.d.store.audit({ sandboxId: rowId, kind: "lifecycle", action, detail });
      },
    };
  }

  /**
   * The per-name lock every verb that changes a sandbox holds (create, start, stop, rm, rebuild, limits, …): first this
   * process's queue for the name (requests of this daemon wait their turn without polling), then the lock file, which
   * also tells `sbx list` and prune that a create is under way.
   */
  private lock(repo: string, name: string, out?: Output): Promise<Lock> {
    const key = `${repo}\0${name}`;
    const wait = () => this.outOf(out).log(`waiting for another command on sandbox ${name} to finish…`);
    if (this.running.serial.busy(key)) wait();
    return new Promise<Lock>((resolve, reject) => {
      void this.running.serial
        .run(key, async () => {
          const file = await acquireLock(lockPath(this.d.paths.stateDir, repo, name), {
            onWait: (h) => (h.pid === process.pid ? wait() : this.outOf(out).log(`waiting for another sbx (pid ${h.pid}) working on sandbox ${name}…`)),
          });
          // The queue moves on once the holder releases the file lock.
          await new Promise<void>((released) => resolve({ path: file.path, release: () => (file.release(), released()) }));
        })
        .catch(reject);
    });
  }

  /** The repo a caller means: the one around its cwd, or --repo (git run as the sudo caller when sbx is root for them). */
  async repoOf(w: SandboxQuery & { cwd: string }): Promise<string> {
    if (w.foundRepo !== undefined) return w.foundRepo;
    if (w.asUid !== undefined && this.d.env.uid === 0 && w.asUid !== 0) {
      const person = await accountOf(this.d.users ?? userDirectory(this.d.exec, this.d.env.platform), w.asUid, "sudo says you are");
      return findRepoRoot(hostUserExec(this.d.exec, person, 0), w.cwd, w.repoFlag);
    }
    return findRepoRoot(this.d.repoExec ?? this.d.exec, w.cwd, w.repoFlag);
  }

  /** The sandbox a name means for this caller (resolve.ts: its repo's, else the one of that name anywhere), or the one not-found error. */
  resolve(name: string, q: SandboxQuery): Promise<Sandbox> {
    return resolveSandbox(this.d.store, (w) => this.repoOf(w), name, q);
  }

  /** The live row of a sandbox and its driver, or a not_found error. */
  async locate(name: string, q: SandboxQuery): Promise<{ repo: string; row: Sandbox; driver: Driver }> {
    const row = await this.resolve(name, q);
    return { repo: row.repo, row, driver: await this.driver(row.backend) };
  }

  /**
   * The lock of a sandbox a verb found, taken once it is free; by then another verb may have removed the sandbox (an
   * rm it waited behind): then there is nothing to do but say so, never bring back what is gone.
   */
  private async lockLive(row: Sandbox, out?: Output): Promise<Lock> {
    const lock = await this.lock(row.repo, row.name, out);
    const now = this.d.store.getSandbox(row.id);
    if (now && now.state !== "deleted") return lock;
    lock.release();
    throw sandboxNotFound(row.name, row.repo, false);
  }

  /** The row as it is now (another request may have changed it while this one waited for the lock). */
  private fresh(row: Sandbox): Sandbox {
    return this.d.store.getSandbox(row.id) ?? row;
  }

  /** The spec a driver converges to, for a stored sandbox. */
  async specFor(row: Sandbox): Promise<SandboxSpec> {
    return (await this.driver(row.backend)).spec(row);
  }

  /**
   * Creates a sandbox: row, then the driver's host-side parts, then (through the daemon when there is one: guards
   * first) running. Holds the per-name lock throughout, so two `sbx run x` at once give one sandbox. A failure removes
   * what was made; a half-made one (its creator died) is torn down and made again.
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
    if (isAgentName(req.name) && !(req.ifExists === "reuse" && this.d.store.listSandboxes().some((s) => s.name === req.name))) {
      throw new SbxError("usage", `'${req.name}' is an agent's name, and \`sbx run ${req.name}\` starts that agent`, {
        hint: `Name the sandbox otherwise (e.g. ${req.name}-1), or let \`sbx run ${req.name}\` name it.`,
      });
    }
    // The driver's check (Docker: one engine round trip) runs while the repo is found; both pass before anything is made.
    const guess = req.backend ?? this.d.defaultKind;
    const early = this.driver(guess).then((dr) => dr.ready());
    early.catch(() => undefined); // awaited below; never an unhandled rejection if repoOf throws first
    const repo = await this.repoOf(req);
    requirePlainGitDir(repo);
    // `run` of an existing sandbox without --backend enters it whatever its kind.
    const found = req.backend === undefined && req.ifExists === "reuse" ? this.d.store.findSandbox(repo, req.name) : null;
    const kind = found?.backend ?? guess;
    if (kind === guess) await early;
    else await (await this.driver(kind)).ready();
    const driver = await this.driver(kind);
    const out = this.outOf(req.out);
    const lock = await this.lock(repo, req.name, out);
    try {
      const dir = sandboxDir(this.d.paths, repo, req.name);
      const lay = sandboxLayout(dir);
      const existing = this.d.store.findSandbox(repo, req.name);
      if (existing && !existsSync(lay.creating)) {
        if (req.ifExists === "reuse" && (req.backend === undefined || req.backend === existing.backend)) {
          // An option only a new sandbox takes is refused, never ignored.
          const newOnly = [
            ...((req.overlays?.length ?? 0) > 0 ? ["--overlay"] : []),
            ...(req.claudeAuth ? ["--claude-auth"] : []),
            ...(req.exposeCredentials ? ["--expose-credentials"] : []),
            ...Object.keys(req.image ?? {}).map((k) => `--${k}`),
            ...(req.withChanges ? ["--with-changes"] : []),
            ...((req.ports?.length ?? 0) > 0 ? ["--port"] : []),
            ...(req.transparent === false ? ["--no-transparent"] : []),
            ...(req.allowWeaker ? ["--allow-weaker"] : []),
          ];
          if (newOnly.length > 0) {
            throw new SbxError("usage", `${newOnly.join(", ")} set up a new sandbox, and ${req.name} exists`, {
              hint: `Remove it and create it again with them (\`sbx rm ${req.name}\`; its commits stay as sandbox-${req.name}/*), or leave them out.`,
            });
          }
          if (req.rebuild === true) {
            throw new SbxError("usage", `--rebuild builds a new sandbox's image, and ${req.name} exists`, {
              hint: `\`sbx rebuild ${req.name}\` builds its image again and makes its container anew (its clone, home and allowlist stay).`,
            });
          }
          const given = Object.entries(req.limits ?? {}).filter(([, v]) => v !== undefined).map(([k]) => `--${k}`);
          if (given.length > 0) {
            throw new SbxError("usage", `${given.join(", ")} set the limits of a new sandbox, and ${req.name} exists`, {
              hint: `Change its limits with \`sbx limits ${req.name} ${given.map((g) => `${g} …`).join(" ")}\`.`,
            });
          }
          this.sayNotes(existing, driver, out);
          await this.running.run(existing, driver, this.report(existing.id, out));
          return { sandbox: this.fresh(existing), created: false };
        }
        throw sandboxExists(req.name, repo, existing.backend);
      }
      if (existing || existsSync(dir)) {
        out.log(`clearing what an interrupted create of ${req.name} left behind…`);
        await this.teardown(req.name, repo, dir, existing);
      }
      // Decided before anything is made: a bad config or no free port refuses here, with nothing to clean up.
      const config = loadConfig(this.d.paths, this.d.env);
      const n: NewSandbox = { ...req, name: req.name, repo, dir, id: sandboxId(this.d.paths.sandboxRoot, repo, req.name), cwd: req.cwd, config };
      const limits = resolveLimits(this.capacity, config.limits, req.limits);
      const ports = (req.ports ?? []).map((s) => {
        const r = parsePortSpec(s);
        if (!r.ok) throw new SbxError("usage", `--port: ${r.reason}`, { hint: "e.g. --port 3000, or --port 8080:3000 (the host's 8080 to the sandbox's 3000)" });
        if (reachableBeyondLoopback(r.forward)) out.log(`note: ${hostEndpoint(r.forward)} is not loopback: other machines that reach this one reach sandbox ${req.name}'s port ${r.forward.port}`);
        return r.forward;
      });
      const made = await driver.newIdentity(n, this.d.store.listSandboxes(), this.report(null, out));
      // --port over devcontainer.json's forwardPorts (the driver's), one forward per host port.
      const forwards = nextPorts(portsOf(made), ports, []);
      const identity = { ...made, limits, ...(forwards.length ? { ports: forwards } : {}) };
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      writeFileSync(lay.creating, `${process.pid}\n`);
      const row = this.d.store.createSandbox({ name: req.name, repo, backend: driver.kind, identity });
      let aside: SetAside | null = null;
      try {
        cancelled(req);
        const h = { exec: driver.hostExec(driver.spec(row)), repo };
        // Beside the clone: the store its commits will land in, and the person's branches made whole for every sandbox.
        // An image build whose context holds the repo starts once these writes into its .git are done (`repoQuiet`).
        const storing = promoteStores(h).then(() => ensureStore(h, req.name));
        const [ident] = await Promise.all([driver.provision(row, { ...n, repoQuiet: storing.catch(() => undefined) }, this.report(row.id, out)), storing]);
        this.driverIdentity(row.id, ident);
        cancelled(req);
        aside = await this.setAside(row, driver, out);
        await this.running.run(this.fresh(row), driver, this.report(row.id, out));
        cancelled(req);
      } catch (e) {
        out.log(`creating ${req.name} failed; removing what was made…`);
        await this.undoCreate(row, dir, aside, driver, out);
        this.d.store.audit({ sandboxId: null, kind: "lifecycle", action: "create.failed", detail: { name: req.name, repo, backend: driver.kind, error: (e as Error).message.split("\n")[0] } });
        throw e;
      }
      unlinkSync(lay.creating);
      await this.workingTree(this.d.store.getSandbox(row.id) ?? row, driver, req.withChanges === true, out);
      await this.postCreate(this.d.store.getSandbox(row.id) ?? row, driver, out);
      const live = this.d.store.getSandbox(row.id) ?? row;
      this.d.store.audit({ sandboxId: row.id, kind: "lifecycle", action: "create", detail: { name: req.name, repo, backend: driver.kind, ...createFacts(live) } });
      return { sandbox: live, created: true };
    } finally {
      lock.release();
    }
  }

  /**
   * A new sandbox is a clone of the last commit: the host's uncommitted work is either said to stay behind (how many
   * files), or, with `--with-changes`, carried in as uncommitted changes, through the sandbox's own git and tar (the
   * host only writes to their stdin). One that does not apply is said; the sandbox is kept either way.
   */
  private async workingTree(row: Sandbox, driver: Driver, carry: boolean, out: Output): Promise<void> {
    const spec = driver.spec(row);
    const hostExec = driver.hostExec(spec);
    if (!carry) {
      const n = await changedFiles(hostExec, row.repo).catch(() => 0);
      if (n > 0) out.log(`note: ${n} changed file${n === 1 ? "" : "s"} in your working tree ${n === 1 ? "is" : "are"} not in ${row.name} (it starts from the last commit); \`--with-changes\` carries them in`);
      return;
    }
    // Copied in: through the door, with the host's secrets as they are now; what held one stays behind, said.
    const door = new CopyIn(hostSecretsByName(hostKeySources(this.d.env, this.d.paths.configDir)), { home: this.d.env.vars.HOME });
    const ch = await workingTreeChanges(hostExec, row.repo, Math.floor(Date.now() / 1000), door);
    const said = findingLines(door.findings, door.count);
    if (said.length > 0) out.log(`note: not carried in, it held a secret: ${said.join("; ")}`);
    const cwd = driver.sessionCwd(spec, row.repo);
    const inside = async (argv: string[], stdin: string | Uint8Array, what: string): Promise<boolean> => {
      const a = driver.shellArgv(spec, { argv, cwd, tty: false, env: terminalVars(this.d.env.raw), stdin: true });
      const r = await this.d.exec.run(a, { stdin, check: false, timeoutMs: 10 * 60_000 });
      if (r.exitCode === 0) return true;
      out.log(`warning: ${what} did not apply in ${row.name} (exit ${r.exitCode}): ${r.stderr.trim().split("\n").slice(-3).join(" | ")}`);
      return false;
    };
    let ok = true;
    if (ch.patch !== "") ok = (await inside(["git", "apply", "--binary", "--whitespace=nowarn", "-"], ch.patch, "your uncommitted changes")) && ok;
    if (ch.untracked) ok = (await inside(["tar", "-x", "-f", "-"], ch.untracked, "your untracked files")) && ok;
    for (const s of ch.skipped) out.log(`note: not carried in: ${s}`);
    if (ok) out.log(ch.files === 0 ? "--with-changes: your working tree has no changes" : `carried in ${ch.files} changed file${ch.files === 1 ? "" : "s"} as uncommitted changes`);
  }

  /**
   * devcontainer.json's postCreateCommand, once, in the new sandbox: as the user, in the repo's path, with the sandbox's
   * egress; its output shown as it comes. One that fails is said and the sandbox kept (the person reruns it with
   * `sbx exec`); either way it does not run again.
   */
  private async postCreate(row: Sandbox, driver: Driver, out: Output): Promise<void> {
    const raw = row.identity.postCreate;
    if (!Array.isArray(raw) || raw.length === 0) return;
    const cmds = raw.filter((c): c is string[] => Array.isArray(c) && c.length > 0 && c.every((x) => typeof x === "string"));
    const { postCreate: _ran, ...rest } = row.identity;
    this.d.store.updateIdentity(row.id, rest);
    const spec = driver.spec(row);
    for (const cmd of cmds) {
      out.log(`postCreateCommand: ${cmd.length === 3 && cmd[0] === "/bin/sh" && cmd[1] === "-c" ? cmd[2] : cmd.join(" ")}`);
      // Its stderr with its stdout, in order (one stream back).
      const argv = driver.shellArgv(spec, { argv: ["/bin/sh", "-c", 'exec "$@" 2>&1', "sh", ...cmd], cwd: driver.sessionCwd(spec, row.repo), tty: false, env: terminalVars(this.d.env.raw), stdin: false });
      const r = await this.d.exec.run(argv, { check: false, timeoutMs: 60 * 60_000, onStdout: lineSplitter((l) => out.log(`  ${l}`)) });
      if (r.exitCode !== 0) {
        out.log(`warning: postCreateCommand exited ${r.exitCode}; sandbox ${row.name} is kept (run it again with \`sbx exec ${row.name} -- …\`)`);
        return;
      }
    }
  }

  /**
   * Keeps what a driver learnt or made (image, shell, its own fields) over the stored identity, never in place of it:
   * what the service keeps there (published services, bridge switches, agents run, ports) stays.
   */
  private driverIdentity(id: number, identity: Record<string, unknown>): void {
    this.d.store.write(() => {
      const cur = this.d.store.getSandbox(id)?.identity ?? {};
      this.d.store.updateIdentity(id, { ...cur, ...identity });
    });
  }

  /**
   * Changes one field of a sandbox's stored identity from what it holds now (read and written in one transaction): how
   * another owner's setting that lives with the sandbox is kept (the agents `sbx run AGENT` installed there).
   */
  setIdentityField(row: Sandbox, field: string, next: (current: unknown) => unknown): void {
    this.d.store.write(() => {
      const cur = this.d.store.getSandbox(row.id)?.identity ?? row.identity;
      this.d.store.updateIdentity(row.id, { ...cur, [field]: next(cur[field]) });
    });
  }

  private get capacity(): HostCapacity {
    return this.d.capacity ?? hostCapacity();
  }

  /** The limits a stored sandbox holds (null: made before limits existed, it has none). */
  private limitsOf(row: Sandbox): Limits | null {
    const r = LimitsSchema.safeParse(row.identity.limits);
    return r.success ? r.data : null;
  }

  /** The kernel's limit counters of a stored sandbox, or null (not running, no counters for its kind, unreadable). */
  async counters(row: Sandbox): Promise<LimitCounters | null> {
    const driver = await this.driver(row.backend);
    return driver.counters(driver.spec(row)).catch(() => null);
  }

  /**
   * `sbx limits NAME [--memory …] [--cpus …] [--pids …]`: shows a sandbox's limits and what it ran into, or changes
   * them: stored, then applied at once to what exists (a stopped sandbox has them when it starts). A sandbox made
   * before limits existed starts from the defaults.
   */
  async limits(name: string, w: Named & { set?: LimitsInput }): Promise<LimitsReport> {
    const { repo, row, driver } = await this.locate(name, w);
    const given = Object.entries(w.set ?? {}).filter(([, v]) => v !== undefined);
    if (given.length === 0) {
      const counters = await driver.counters(driver.spec(row)).catch(() => null);
      return { name, limits: this.limitsOf(row), hits: counters === null ? null : limitHits(null, counters) };
    }
    const lock = await this.lockLive(row, w.out);
    try {
      const fresh = this.d.store.getSandbox(row.id) ?? row;
      const cap = this.capacity;
      const next: Limits = { ...(this.limitsOf(fresh) ?? defaultLimits(cap)) };
      const set = w.set ?? {};
      if (set.memory !== undefined) next.memory = parseMemory(set.memory, cap);
      if (set.cpus !== undefined) next.cpus = parseCpus(set.cpus, cap);
      if (set.pids !== undefined) next.pids = parsePids(set.pids);
      const updated: Sandbox = { ...fresh, identity: { ...fresh.identity, limits: next } };
      const spec = driver.spec(updated);
      // Applied first: a value the kernel refuses (memory below what the sandbox uses now) is not stored.
      await driver.applyLimits(spec);
      this.d.store.updateIdentity(row.id, updated.identity);
      this.d.store.audit({ sandboxId: row.id, kind: "lifecycle", action: "limits", detail: { name, ...next } });
      const running = (await driver.inspect(spec).catch(() => null))?.phase === "running";
      return { name, limits: next, hits: null, applied: running ? "now" : "next-start" };
    } finally {
      lock.release();
    }
  }

  /**
   * `sbx port NAME [SPEC…] [--rm PORT…]`: a Docker sandbox's loopback ports reachable from the host at 127.0.0.1,
   * shown, or changed: kept in its identity and applied at once when it runs (a host port that cannot be bound
   * refuses the change, and nothing is kept). User-account sandboxes share the host's loopback: nothing to forward.
   */
  async ports(name: string, w: Named & { add?: string[]; remove?: number[] }): Promise<{ name: string; ports: (PortState | (PortForward & { state: "stopped" }))[]; running: boolean; changed: boolean }> {
    const { row, driver } = await this.locate(name, w);
    if (!driver.caps.portForwards) {
      throw new SbxError("usage", `sandbox ${name} is a ${row.backend} sandbox: its servers listen on this machine's own loopback already`, {
        hint: "Connect to 127.0.0.1:PORT from the host; `sbx port` forwards the ports of Docker sandboxes, which have no network of their own.",
      });
    }
    const add = (w.add ?? []).map((s) => {
      const r = parsePortSpec(s);
      if (!r.ok) throw new SbxError("usage", `sbx port: ${r.reason}`, { hint: "e.g. sbx port NAME 3000, or 8080:3000 (the host's 8080 to the sandbox's 3000)" });
      return r.forward;
    });
    const view = (r: Sandbox) => {
      const live = this.d.host?.portStates?.(r) ?? null;
      return { running: live !== null, ports: live ?? portsOf(r.identity).map((p) => ({ ...p, state: "stopped" as const })) };
    };
    if (add.length === 0 && (w.remove ?? []).length === 0) return { name, ...view(row), changed: false };
    const lock = await this.lockLive(row, w.out);
    try {
      const fresh = this.d.store.getSandbox(row.id) ?? row;
      const cur = portsOf(fresh.identity);
      // A removal that names no forward is said, never passed over (a mistyped port would look removed).
      const unknown = (w.remove ?? []).filter((n) => !cur.some((p) => p.port === n || p.host === n));
      if (unknown.length > 0) {
        throw new SbxError("not_found", `sbx port --rm: sandbox ${name} forwards no port ${unknown.join(", ")}; nothing changed`, { hint: `\`sbx port ${name}\` lists what it forwards.` });
      }
      const next = nextPorts(cur, add, w.remove ?? []);
      const changed = JSON.stringify(next) !== JSON.stringify(cur);
      if (!changed) return { name, ...view(fresh), changed };
      const applied = (await this.d.host?.ports?.(fresh, next)) ?? null;
      const failed = (applied ?? []).filter((p) => p.state === "error" && add.some((a) => a.host === p.host));
      if (failed.length > 0) {
        await this.d.host?.ports?.(fresh, cur);
        throw new SbxError("unavailable", `sbx port: ${failed.map((p) => p.error).join("; ")}; nothing changed`, { hint: `Choose another host port: sbx port ${name} OTHER:${failed[0]!.port}` });
      }
      const updated = { ...fresh.identity, ports: next };
      this.d.store.updateIdentity(row.id, updated);
      this.d.store.audit({ sandboxId: row.id, kind: "lifecycle", action: "port", detail: { name, ports: next } });
      return { name, ...view({ ...fresh, identity: updated }), changed };
    } finally {
      lock.release();
    }
  }

  /**
   * `sbx publish NAME [ENDPOINT…]`: the services of the host (a loopback address and port each) this sandbox's proxy
   * may connect to, shown, or changed and kept in its identity, where the proxy reads them at each request. The
   * host's loopback is reachable no other way. Adding one answers the sandbox's pending approvals for it.
   */
  async publish(name: string, w: Named & { add?: string[]; remove?: string[] }): Promise<{ name: string; published: string[]; changed: boolean; answered: number }> {
    const { repo, row } = await this.locate(name, w);
    const parse = (raw: string) => {
      const r = parsePublished(raw);
      if (!r.ok) throw new SbxError("usage", `sbx publish: ${r.reason}`, { hint: "e.g. sbx publish NAME 5432 (the host's 127.0.0.1:5432), or 127.0.0.2:8443, [::1]:6379" });
      return r.endpoint;
    };
    const add = (w.add ?? []).map(parse);
    const remove = (w.remove ?? []).map(parse);
    if (add.length === 0 && remove.length === 0) return { name, published: publishedOf(row.identity), changed: false, answered: 0 };
    const lock = await this.lockLive(row, w.out);
    try {
      return this.d.store.write(() => {
        const fresh = this.d.store.getSandbox(row.id) ?? row;
        const cur = publishedOf(fresh.identity);
        const unknown = remove.filter((e) => !cur.includes(e));
        if (unknown.length > 0) {
          throw new SbxError("not_found", `sbx publish --remove: sandbox ${name} does not reach ${unknown.join(", ")}; nothing changed`, { hint: `\`sbx publish ${name}\` lists what it reaches.` });
        }
        const next = [...new Set([...cur.filter((e) => !remove.includes(e)), ...add])].sort();
        const changed = JSON.stringify(next) !== JSON.stringify(cur);
        if (changed) {
          this.d.store.updateIdentity(row.id, { ...fresh.identity, publish: next });
          this.d.store.audit({ sandboxId: row.id, kind: "allowlist", action: "publish", detail: { name, added: add, removed: remove, published: next } });
        }
        // What this sandbox was refused for those services, answered.
        const endpoint = (host: string, port: number) => {
          const r = parsePublished(`[${host}]:${port}`);
          return r.ok ? r.endpoint : null;
        };
        const pending = this.d.store.listApprovals({ state: "pending", sandboxId: row.id }).filter((a) => a.kind === "egress" && add.includes(endpoint(a.host, a.port) ?? ""));
        for (const a of pending) this.d.store.decideApproval(a.id, "allowed", "cli:publish");
        return { name, published: next, changed, answered: pending.length };
      });
    } finally {
      lock.release();
    }
  }

  /**
   * `sbx bridge NAME`: the bridge's per-sandbox switches (what its git/gh may do beyond the default), shown, or changed
   * and kept in its identity, where the bridge reads them at each request (no restart).
   */
  async bridge(
    name: string,
    w: Named & { allow?: BridgeAllow[]; disallow?: BridgeAllow[]; protect?: string[]; unprotect?: string[]; addRepos?: string[]; dropRepos?: string[]; pushTo?: string[]; unpushTo?: string[]; prefix?: string; pushRemote?: string },
  ): Promise<{ name: string; settings: BridgeSettings; changed: boolean }> {
    const { repo, row, driver } = await this.locate(name, w);
    const asked = [w.allow, w.disallow, w.protect, w.unprotect, w.addRepos, w.dropRepos, w.pushTo, w.unpushTo].some((l) => (l?.length ?? 0) > 0) || w.prefix !== undefined || w.pushRemote !== undefined;
    if (!asked) return { name, settings: bridgeSettingsOf(row.identity), changed: false };
    for (const [flag, p] of [...(w.protect ?? []).map((p) => ["--protect", p]), ...(w.pushTo ?? []).map((p) => ["--allow-push", p])] as [string, string][]) {
      if (!REF_PATTERN.test(p)) {
        throw new SbxError("usage", `${flag} ${p}: a branch or tag name (letters, digits, . _ - /) with * for any part of one segment`, { hint: `e.g. ${flag} 'release/*'` });
      }
    }
    if (w.prefix !== undefined && w.prefix !== "" && !BridgeSettingsSchema.shape.prefix.safeParse(w.prefix).success) {
      throw new SbxError("usage", `--branch-prefix ${w.prefix}: one or more name segments ending in '/'`, { hint: "e.g. --branch-prefix agents/claude/ (an empty value puts back sbx/<name>/)" });
    }
    for (const u of w.addRepos ?? []) {
      if (!/^https:\/\/[^\s@/]+\/[^\s@]+$/.test(u)) {
        throw new SbxError("usage", `--allow-repo ${u}: an https URL of a repository, without credentials`, { hint: "e.g. --allow-repo https://github.com/acme/shared-lib" });
      }
    }
    if (w.pushRemote !== undefined && w.pushRemote !== "") {
      if (!REMOTE_NAME.test(w.pushRemote)) throw new SbxError("usage", `--push-remote ${w.pushRemote}: the name of one of the repo's remotes`, { hint: "e.g. git remote add fork https://github.com/you/proj, then --push-remote fork" });
      // runs (as the host user): git -C <repo> config --get remote.<name>.url
      const url = await driver.hostExec(driver.spec(row)).run(["git", ...HOST_GIT_SAFE, "-C", repo, "config", "--get", `remote.${w.pushRemote}.url`], { env: hostGitEnv(), replaceEnv: true, check: false });
      if (url.exitCode !== 0 || url.stdout.trim() === "") {
        throw new SbxError("usage", `--push-remote ${w.pushRemote}: ${repo} has no remote of that name`, { hint: `Add the fork first: git -C ${repo} remote add ${w.pushRemote} <its URL>` });
      }
    }
    const lock = await this.lockLive(row, w.out);
    try {
      // Read and written in one transaction: an approval decided meanwhile (PolicyService.decide) is not lost.
      return this.d.store.write(() => {
      const fresh = this.d.store.getSandbox(row.id) ?? row;
      const cur = bridgeSettingsOf(fresh.identity);
      const allow = new Set(cur.allow);
      for (const a of w.allow ?? []) allow.add(a);
      for (const a of w.disallow ?? []) allow.delete(a);
      const protect = new Set(cur.protect);
      for (const p of w.protect ?? []) protect.add(p);
      for (const p of w.unprotect ?? []) protect.delete(p);
      const repos = new Set(cur.repos);
      for (const u of w.addRepos ?? []) repos.add(u.replace(/\/+$/, "").replace(/\.git$/, ""));
      for (const u of w.dropRepos ?? []) repos.delete(u.replace(/\/+$/, "").replace(/\.git$/, ""));
      const pushTo = new Set(cur.pushTo);
      for (const p of w.pushTo ?? []) pushTo.add(p);
      for (const p of w.unpushTo ?? []) pushTo.delete(p);
      const prefix = w.prefix === undefined ? cur.prefix : w.prefix === "" ? null : w.prefix;
      const pushRemote = w.pushRemote === undefined ? cur.pushRemote : w.pushRemote === "" ? null : w.pushRemote;
      const next: BridgeSettings = { ...cur, allow: BRIDGE_ALLOWS.filter((a) => allow.has(a)), protect: [...protect].sort(), repos: [...repos].sort(), pushTo: [...pushTo].sort(), prefix, pushRemote };
      const changed = JSON.stringify(next) !== JSON.stringify(cur);
      if (changed) {
        this.d.store.updateIdentity(row.id, { ...fresh.identity, bridge: next });
        this.d.store.audit({ sandboxId: row.id, kind: "lifecycle", action: "bridge", detail: { name, ...next } });
      }
      return { name, settings: next, changed };
      });
    } finally {
      lock.release();
    }
  }

  /**
   * An earlier sandbox of this name kept its commits as `refs/remotes/sandbox-<name>/*`: the new sandbox's first sync
   * (which makes them what its clone has, once it starts) would delete them, so they move to
   * `refs/sbx-retired/<name>/<stamp>/*` before it starts (nothing-lost). A create that fails puts them back.
   */
  private async setAside(row: Sandbox, driver: Driver, out: Output): Promise<SetAside | null> {
    const aside = await setAsideRetiredRefs(driver.hostExec(driver.spec(row)), row.repo, row.name, retiredStamp(new Date()));
    if (aside !== null) {
      const eg = aside.branches[0] ? ` (e.g. git log ${aside.prefix}/${aside.branches[0]})` : "";
      out.log(`note: the branches an earlier sandbox '${row.name}' left as sandbox-${row.name}/* are kept as ${aside.prefix}/*${eg}`);
      this.d.store.audit({ sandboxId: row.id, kind: "lifecycle", action: "refs.set-aside", detail: { name: row.name, prefix: aside.prefix, branches: aside.branches } });
    }
    return aside;
  }

  /**
   * What a failed create made, unmade, so the host is as it was: the earlier sandbox's refs back where they were,
   * everything the driver made, the remote, the dirs, and the row itself (the audit log keeps the attempt).
   */
  private async undoCreate(row: Sandbox, dir: string, aside: SetAside | null, driver: Driver, out: Output): Promise<void> {
    const warn = (what: string) => (e: unknown) => out.log(`warning: ${what} after the failed create: ${(e as Error).message} (\`sbx prune\` retries)`);
    const live = this.d.store.getSandbox(row.id) ?? row;
    await this.teardown(row.name, row.repo, dir, live).catch(warn("cleanup"));
    if (aside) await putBackRetiredRefs(driver.hostExec(driver.spec(live)), row.repo, row.name, aside).catch(warn("putting the earlier sandbox's refs back"));
    this.d.store.purgeSandbox(row.id);
  }

  /** What the driver says the person should know as a sandbox starts (an older layout it still has). */
  private sayNotes(row: Sandbox, driver: Driver, out: Output): void {
    try {
      for (const n of driver.notes?.(driver.spec(row)) ?? []) out.log(n);
    } catch {
      /* a row the driver cannot read fails the start itself, with its own message */
    }
  }

  /**
   * Starts a stored sandbox (every command in it asks for this; it converges): its guards up, then it runs. Holds its
   * lock, as every verb that changes a sandbox does, so a start never interleaves with a create, stop or rm of it.
   */
  async start(name: string, q: Named): Promise<Sandbox> {
    const { row, driver } = await this.locate(name, q);
    const out = this.outOf(q.out);
    // Commands run into one sandbox at once (an agent's and a person's) each ask for a start: a later one joins the
    // start in flight rather than queue behind it and be told to wait for "another command" (its stderr is the command's).
    const inFlight = this.starting.get(row.id);
    if (inFlight) {
      this.sayNotes(row, driver, out);
      await inFlight;
      return this.fresh(row);
    }
    const started = (async () => {
      const lock = await this.lockLive(row, out);
      try {
        const live = this.fresh(row);
        this.sayNotes(live, driver, out);
        await this.running.run(live, driver, this.report(row.id, out));
      } finally {
        lock.release();
      }
    })();
    this.starting.set(row.id, started);
    try {
      await started;
      return this.fresh(row);
    } finally {
      this.starting.delete(row.id);
    }
  }

  /**
   * `sbx rebuild NAME`: the image built again from the repo's Dockerfile as it is now, then the container made anew
   * from it and started. The image is built first, while the sandbox still runs: a failed build changes nothing. The
   * clone (and its commits), the home's overlays, the allowlist and the audit stay; sessions are ended only when the
   * caller says so (`ifSessions: "end"`), each told why.
   */
  async rebuild(name: string, w: Named & { ifSessions?: IfSessions }): Promise<{ image: string; sessions: number }> {
    const { repo, row, driver } = await this.locate(name, w);
    if (!driver.buildImage || !driver.dropRuntime) {
      throw new SbxError("usage", `sandbox ${name} is a ${row.backend} sandbox, which has no image to rebuild`, { hint: "Install what it needs in its account instead; `sbx rebuild` is for Docker sandboxes." });
    }
    const out = this.outOf(w.out);
    const lock = await this.lockLive(row, out);
    try {
      this.refuseSessions(row, "rebuild", w.ifSessions);
      out.log(`building the image of ${name} again…`);
      out.log(`note: files the sandbox wrote outside the clone and the overlaid dirs (${driver.spec(row).overlays.join(", ") || "none"}) go with its old container`);
      const { identity, image } = await driver.buildImage(row, this.report(row.id, out));
      this.refuseSessions(row, "rebuild", w.ifSessions); // one may have opened while it built
      const { sessions } = await this.running.halt(this.fresh(row), driver, `sandbox ${name} is being rebuilt (sbx rebuild)`);
      await driver.dropRuntime(row);
      this.driverIdentity(row.id, identity);
      this.d.store.audit({ sandboxId: row.id, kind: "lifecycle", action: "rebuild", detail: { name, image } });
      // The new runtime is made here, so what its copy-ins left out (a secret found in ~/.claude, an overlay) is said to the caller.
      const fresh = this.fresh(row);
      await driver.prepareRun(fresh);
      driver.sayCopyIn?.(driver.spec(fresh), this.report(row.id, out));
      await this.running.run(this.fresh(row), driver, this.report(row.id, out));
      return { image, sessions };
    } finally {
      lock.release();
    }
  }

  /**
   * The variables a new session or command gets for the secrets bound to hosts (placeholders, sbx's CA to trust); what
   * could not be given is said to `out` (or the log), never silently left out.
   */
  async secretEnv(row: Sandbox, spec?: SandboxSpec, out?: Output): Promise<Record<string, string>> {
    if (!this.d.secrets) return {};
    const s = await this.d.secrets.session(row.id);
    for (const n of s.notes) (out ?? this.outOf(undefined)).log(n);
    return secretSessionEnv(spec ?? (await this.driver(row.backend)).spec(row), s);
  }

  /** Where a session of a caller in `callerCwd` starts inside the sandbox. */
  async sessionCwd(row: Sandbox, callerCwd: string): Promise<string> {
    const driver = await this.driver(row.backend);
    return driver.sessionCwd(driver.spec(row), callerCwd);
  }

  /** What the kind of a stored sandbox offers (its driver's capabilities). */
  async capsOf(row: Sandbox): Promise<DriverCaps> {
    return (await this.driver(row.backend)).caps;
  }

  /**
   * The host argv of a terminal session in a running sandbox (the daemon runs it under its own PTY, after checking the
   * guards); counts as a use of it.
   */
  async terminalArgv(row: Sandbox, req: { argv: string[]; cwd: string; env: Record<string, string> }): Promise<string[]> {
    const driver = await this.driver(row.backend);
    const spec = driver.spec(row);
    const argv = driver.shellArgv(spec, { argv: req.argv, cwd: req.cwd, tty: true, env: { ...req.env, ...(await this.secretEnv(row, spec)) } });
    this.d.store.touchSandbox(row.id);
    return argv;
  }

  /** What the service last saw of a sandbox: its socket-dir id, its phase on the system, and a create under way or interrupted. */
  observed(row: Sandbox): { sid: string; phase: PhaseView; creating?: "in-progress" | "interrupted" } {
    const dir = baseIdentity(row)?.dir ?? sandboxDir(this.d.paths, row.repo, row.name);
    const creating = createProgress(this.d.paths.stateDir, row.repo, row.name, dir);
    return { sid: this.running.sidOf(row), phase: this.running.phaseOf(row), ...(creating ? { creating } : {}) };
  }

  /** Re-reads what every driver holds (`sbx status` shows the system, not the last reconcile). */
  refreshPhases(): Promise<void> {
    return this.running.refreshPhases();
  }

  /** At daemon start, before any guard: every stored sandbox fenced as its driver says (user accounts: block-all). */
  fence(): Promise<void> {
    return this.running.fenceAll();
  }

  /** Store and system made to agree (running.ts): run by the daemon at start, after `fence`, and on request. */
  reconcile(): Promise<ReconcileReport> {
    return this.running.reconcile();
  }

  /**
   * Starts what each kind must watch while the daemon runs (Driver.watch), with the store, and stops as `sbx stop` does
   * for a sandbox a watcher finds unsafe.
   */
  async watch(ctx: Pick<WatchContext, "log" | "blocked" | "notify">): Promise<Watcher[]> {
    const out: Watcher[] = [];
    for (const kind of this.kinds()) {
      const driver = await this.driver(kind).catch(() => null);
      out.push(...(driver?.watch?.({ ...ctx, store: this.d.store, stopSandbox: (row, why) => this.stopBecause(row, why) }) ?? []));
    }
    return out;
  }

  /** Stops a sandbox because something outside sbx made it unsafe (a watcher saw its firewall go), as `sbx stop` would. */
  stopBecause(row: Sandbox, why: string): Promise<void> {
    return this.running.stopBecause(row, why);
  }

  /**
   * The host argv of a session (shell or command), starting the sandbox if it is stopped: its guards are up before the
   * argv is handed out.
   */
  async session(req: SessionRequest): Promise<string[]> {
    const row = await this.start(req.name, req);
    const driver = await this.driver(row.backend);
    const spec = driver.spec(row);
    if ((await driver.inspect(spec)).phase !== "running") {
      throw new SbxError("unavailable", `sandbox '${req.name}' is not running`, { hint: `Start it with \`sbx run ${req.name}\`; \`sbx status\` shows its guards.` });
    }
    return driver.shellArgv(spec, {
      argv: req.argv,
      cwd: driver.sessionCwd(spec, req.cwd),
      tty: req.tty,
      env: { ...(req.env ?? terminalVars(this.d.env.raw)), ...(await this.secretEnv(row, spec, req.out)) },
      stdin: req.stdin === true,
    });
  }

  /**
   * Stops a sandbox (its sessions ended, the sandbox first, then its guards), then takes one last clone → host sync so
   * `sandbox-<name>/*` on the host holds every commit made inside.
   */
  async stop(name: string, q: Named & { ifSessions?: IfSessions }): Promise<{ changed: boolean; sessions: number }> {
    const { row, driver } = await this.locate(name, q);
    const lock = await this.lockLive(row, q.out);
    try {
      const live = this.fresh(row);
      this.refuseSessions(live, "stop", q.ifSessions);
      const r = await this.running.halt(live, driver, `sandbox ${name} is being stopped (sbx stop)`);
      await this.lastFetch(live, driver, true);
      return { changed: r.running, sessions: r.sessions };
    } finally {
      lock.release();
    }
  }

  /** With `refuse`, a sandbox that has sessions running is not stopped or removed: the caller asks its person first. */
  private refuseSessions(row: Sandbox, verb: "stop" | "rm" | "rebuild", ifSessions: IfSessions | undefined): void {
    if (ifSessions !== "refuse" || !this.d.host) return;
    const n = this.d.host.sessions(row);
    if (n > 0) throw sessionsAttached(row.name, n, verb);
  }

  /**
   * The clone → host sync into `refs/remotes/sandbox-<name>/*`: the sandbox's own git lists and packs, the host
   * verifies into the sandbox's store (importSandbox; never git in the clone on the host). A sandbox nothing can run as
   * (its container and account gone) is an error: what it held cannot be told. Then `<dir>/.synced` says the host has
   * everything of it (prune reads that, never the clone).
   */
  private async lastFetch(row: Sandbox, driver: Driver, audit: boolean): Promise<void> {
    const spec = driver.spec(row);
    const git = await driver.sandboxGit(spec, "read", null);
    if (!git) {
      if (!existsSync(driver.workspace(spec))) return;
      throw new SbxError("unavailable", `nothing can run as sandbox ${row.name} to read its clone`, {
        hint: "Its container or account is gone. `sbx rm --force` it: what the host already took from it stays as sandbox-NAME/*.",
      });
    }
    const remote = sandboxRemote(row.name);
    try {
      const r = await importSandbox({ repo: row.repo, name: row.name, sandboxGit: git, exec: driver.hostExec(spec) });
      if (audit && r.changed) this.d.store.audit({ sandboxId: row.id, kind: "ref-sync", action: "ref-sync.synced", detail: { remote, direction: "clone-to-host", final: true, packBytes: r.packBytes } });
    } catch (e) {
      if (audit) this.d.store.audit({ sandboxId: row.id, kind: "ref-sync", action: "ref-sync.error", detail: { remote, direction: "clone-to-host", final: true, error: (e as Error).message } });
      throw e;
    }
    if (existsSync(spec.dir)) writeFileSync(sandboxLayout(spec.dir).synced, `${new Date().toISOString()}\n`);
  }

  /**
   * Commits the sandbox holds that exist nowhere else on the host: synced first (a stopped sandbox only when asked:
   * nothing runs in it, and its last stop synced it), then those under `refs/remotes/sandbox-<name>/` that no other
   * host ref has. The daemon's ref sync moves the same refs, so a failed sync is tried again a few times before it counts.
   * runs (as the host user): git … -C <repo> log --format=%H%x09%s --remotes=sandbox-<name> --not --exclude=refs/remotes/sandbox-* --all
   */
  private async unsynced(row: Sandbox, driver: Driver, audit: boolean, stoppedToo = true): Promise<Commit[]> {
    const spec = driver.spec(row);
    const running = stoppedToo || (await driver.inspect(spec).catch(() => null))?.phase === "running";
    for (let attempt = 1; running; attempt++) {
      try {
        await this.lastFetch(row, driver, audit);
        break;
      } catch (e) {
        if (attempt >= 4 || (e instanceof SbxError && (e.code === "conflict" || e.code === "unavailable"))) throw e;
        await Bun.sleep(40 * attempt);
      }
    }
    const host = driver.hostExec(spec);
    return this.onlyHere(host, row.repo, row.name, sandboxLayout(spec.dir).gate);
  }

  /**
   * The commits of `sandbox-<name>/*` in the host repo that exist nowhere else: on no other host ref, and not on the
   * upstream as the sandbox's bridge saw it (pushed, or fetched; the gate's `refs/remotes/*`).
   * runs (as the host user): git … -C <repo> log --format=%H%x09%s --remotes=sandbox-<name> --not --exclude=refs/remotes/sandbox-* --all <upstream tips>
   */
  private async onlyHere(host: Exec, repo: string, name: string, gateDir: string): Promise<Commit[]> {
    const upstream = await upstreamTips({ gate: this.d.exec, host }, gateDir, repo).catch(() => []);
    const r = await host.run(
      ["git", ...HOST_GIT_SAFE, "-C", repo, "log", "--format=%H%x09%s", `--remotes=${sandboxRemote(name)}`, "--not", "--exclude=refs/remotes/sandbox-*", "--all", ...upstream],
      { env: hostGitEnv(), replaceEnv: true },
    );
    return parseCommits(r.stdout);
  }

  /**
   * Removes a sandbox: refuses (exit 65) while it holds commits that exist nowhere else on the host, unless `force`;
   * then stops it, syncs once more, lets the daemon go and removes everything of it. The host keeps
   * `refs/remotes/sandbox-<name>/*`.
   */
  async rm(name: string, w: Named & { force?: boolean; ifSessions?: IfSessions }): Promise<{ lost: Commit[]; sessions: number }> {
    const { repo, row, driver } = await this.locate(name, w);
    const lock = await this.lockLive(row, w.out);
    try {
      let lost: Commit[] = [];
      try {
        lost = await this.unsynced(row, driver, true);
      } catch (e) {
        if (!w.force) throw unsyncedUnknown(name, (e as Error).message);
      }
      if (lost.length > 0 && !w.force) throw unsyncedCommits(name, lost);
      this.refuseSessions(row, "rm", w.ifSessions);
      // Stopped first (sandbox, then guards), so nothing is committed after the last sync.
      const { sessions } = await this.running.halt(this.fresh(row), driver, `sandbox ${name} is being removed (sbx rm)`);
      try {
        await this.lastFetch(row, driver, true);
      } catch (e) {
        if (!w.force) throw e;
        this.outOf(w.out).log(`warning: the last sync from sandbox ${name} failed (${(e as Error).message}); removing anyway (--force)`);
      }
      await this.teardown(name, repo, driver.spec(row).dir, row);
      this.d.store.audit({ sandboxId: row.id, kind: "lifecycle", action: "rm", detail: { name, repo, backend: row.backend, force: w.force === true, lost: lost.length, sessions } });
      return { lost, sessions };
    } finally {
      lock.release();
    }
  }

  /**
   * Removes everything of one sandbox, whatever state it is in, in an order a crash can resume: the daemon's hold, the
   * row, what the driver made, the sandbox's store (what host refs reach of it copied into the host's objects first;
   * `sandbox-<name>/*` stays), a `sandbox-<name>` remote an older sbx added, the dirs. Idempotent. A
   * sandbox with no readable row is removed as the default kind would have made it; prune finds anything else.
   */
  private async teardown(name: string, repo: string, dir: string, row: Sandbox | null): Promise<void> {
    if (row) await this.running.release(row).catch(() => undefined);
    if (row && row.state !== "deleted") this.d.store.setSandboxState(row.id, "deleted");
    const id = (row && baseIdentity(row)?.id) || sandboxId(this.d.paths.sandboxRoot, repo, name);
    const driver = await this.driver(row?.backend ?? this.d.defaultKind).catch(() => null);
    let spec: SandboxSpec | null = null;
    if (driver) {
      const shape: Sandbox = row ?? { id: -1, name, repo, backend: driver.kind, state: "deleted", identity: {}, createdAt: 0, updatedAt: 0, lastUsedAt: null };
      try {
        spec = driver.spec({ ...shape, identity: { ...shape.identity, id, dir } });
      } catch {
        spec = null; // unreadable for this kind: prune's cleanup finds what it made by label or name
      }
    }
    if (driver && spec) {
      await driver.remove(spec);
      if (existsSync(join(repo, ".git"))) {
        // What the host keeps of it (sandbox-<name>/*, and whatever the person merged) becomes the host's own objects
        // before its store goes.
        await retireStore({ exec: driver.hostExec(spec), repo }, name);
        // A sandbox made before stores had a `sandbox-<name>` remote in the repo's config: its section goes, its refs stay.
        const url = await sandboxRemoteUrl(driver.hostExec(spec), repo, name).catch(() => null);
        if (url !== null && url === driver.workspace(spec)) await retireSandboxRemote(driver.hostExec(spec), repo, sandboxRemote(name)).catch(() => false);
      }
    }
    rmSync(dir, { recursive: true, force: true });
    rmSync(sandboxSockets(this.d.paths, id).dir, { recursive: true, force: true });
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
   * Removes what no live sandbox owns: sandbox dirs with no live row, half-made sandboxes whose creator died, what each
   * driver finds of sbx's that no live sandbox holds (containers, volumes, accounts, firewall rules), stale locks and
   * staged clones. Dirs whose clone holds unsynced commits are kept. A kind this process cannot reach is said, not skipped silently.
   */
  async prune(opts: { dryRun?: boolean; out?: Output } = {}): Promise<PruneReport> {
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
      const live = row !== null && baseIdentity(row)?.dir === dir;
      const halfMade = existsSync(lay.creating) && !lockHeld(lockPath(this.d.paths.stateDir, repo, name));
      if (live && !halfMade) continue;
      if (existsSync(lay.creating) && !halfMade) continue; // a create in progress
      // The host never reads a clone, an orphan's least of all (nothing runs as it any more): a dir whose sandbox was
      // not synced to the end (no `.synced`, written by the last sync of a stop or rm) is kept.
      if (!halfMade && repo && existsSync(join(lay.clone, ".git")) && !existsSync(lay.synced)) {
        kept.push(`${dir}: its clone may hold commits the host does not have (its sandbox was not synced at the end); look at it inside a container, or delete the dir by hand`);
        continue;
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
    }
    const rows = this.d.store.listSandboxes();
    for (const kind of Object.keys(this.d.drivers) as BackendKind[]) {
      let driver: Driver;
      try {
        driver = await this.driver(kind);
      } catch (e) {
        // Said only when there are sandboxes of that kind: a kind never used here is no news.
        if (rows.some((r) => r.backend === kind)) this.outOf(opts.out).log(`${kind} sandboxes not checked: ${(e as Error).message.split("\n")[0]}`);
        continue;
      }
      const keep = new Set(rows.filter((r) => r.backend === kind).flatMap((r) => baseIdentity(r)?.id ?? []));
      removed.push(...(await driver.prune(keep, { dryRun: dry })).removed);
    }
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

  /** Sandboxes of every kind with their observed phase and unsynced commits. */
  async list(opts: { all?: boolean; repo?: string } = {}): Promise<SandboxInfo[]> {
    const rows = this.d.store.listSandboxes({ all: opts.all === true, ...(opts.repo ? { repo: opts.repo } : {}) });
    return Promise.all(
      rows.map(async (row): Promise<SandboxInfo> => {
        const ident = baseIdentity(row);
        const base = { name: row.name, repo: row.repo, backend: row.backend, state: row.state, createdAt: row.createdAt, lastUsedAt: row.lastUsedAt, dir: ident?.dir ?? "", id: ident?.id ?? "" };
        if (row.state === "deleted") return { ...base, phase: "absent", unsynced: null };
        const creating = createProgress(this.d.paths.stateDir, row.repo, row.name, base.dir);
        if (creating === "in-progress") return { ...base, phase: "absent", creating, unsynced: null };
        const interrupted = creating === "interrupted"
          ? { creating, reason: `its create was interrupted: \`sbx create ${row.name}\` again starts it over, \`sbx rm ${row.name}\` removes it` }
          : {};
        let driver: Driver;
        let spec: SandboxSpec;
        try {
          driver = await this.driver(row.backend);
          spec = driver.spec(row);
        } catch (e) {
          return { ...base, phase: "unknown", unsynced: null, reason: (e as Error).message.split("\n")[0]! };
        }
        const limits = this.limitsOf(row);
        const [obs, unsynced, counters] = await Promise.all([
          driver.inspect(spec).then(
            async (o): Promise<{ phase: SandboxInfo["phase"]; reason?: string }> => {
              const why = o.phase === "stopped" ? await driver.stopReason(spec).catch(() => null) : null;
              return why ? { phase: o.phase, reason: why } : { phase: o.phase };
            },
            (e: unknown) => ({ phase: "unknown" as const, reason: (e as Error).message.split("\n")[0]! }),
          ),
          this.unsynced(row, driver, false, false).catch(() => null),
          driver.counters(spec).catch(() => null),
        ]);
        const hits = counters === null ? [] : limitHits(null, counters);
        const notes: string[] = [];
        this.sayNotes(row, driver, { log: (l) => notes.push(l) });
        return { ...base, ...obs, ...interrupted, unsynced, ...(limits ? { limits } : {}), ...(hits.length ? { hits } : {}), ...(notes.length ? { notes } : {}) };
      }),
    );
  }
}

/** Throws once the caller of a create has gone away (the create then removes what it made). */
function cancelled(req: { name: string; signal?: AbortSignal | undefined }): void {
  if (req.signal?.aborted) {
    throw new SbxError("unavailable", `the create of ${req.name} was cancelled (its caller went away)`, { hint: `Run \`sbx create ${req.name}\` again.` });
  }
}

/** What the create's audit row records of the stored identity (the image for Docker, the port for user accounts). */
function createFacts(row: Sandbox): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of ["image", "proxyPort"]) if (row.identity[k] !== undefined) out[k] = row.identity[k];
  return out;
}
