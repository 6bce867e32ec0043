// LinuxUserBackend: one locked system account per sandbox, a 700 home the host reaches by ACL, a per-UID nft chain.
//
// Phases: running = account + run-mode firewall (only 127.0.0.1:<proxyPort>); stopped = account + block-all
// firewall and none of the guest's processes; absent = no account. Every command goes through the Exec.
// The steps live beside it by what they converge: accounts.ts, uids.ts, firewall.ts, clone.ts, home.ts, inventory.ts;
// where things are on disk is layout.ts.
import { release } from "node:os";
import { procMountsApart } from "../../sys/kernel";
import { dirname, join } from "node:path";
import { GuestCgroups } from "./cgroup";
import type { LimitCounters } from "../../core/limits";
import { SANDBOX_GIT_SAFE } from "../../sync/sandbox-git";
import { SbxError } from "../../core/errors";
import { sha256Hex } from "../../sys/paths";
import { BUN_NO_CWD_CONFIG } from "../../sys/bun-args";
import type { Exec } from "../../sys/exec";
import type { Paths } from "../../sys/paths";
import type { WatchContext, Watcher } from "../driver";
import { startKernelLogAudit } from "./kernel-log-audit";
import { auditOf } from "./monitor";
import type { Backend } from "../backend";
import type { Change, CleanupReport, Observed, SandboxSpec, ShellRequest } from "../../core/spec";
import { renderShellRc, renderShimWrappers, type HomeFile } from "../provision/provision";
import type { AgentPlace } from "../driver";
import { chainName, parseGuestUser } from "./naming";
import { SHARED_TMP_DIRS } from "./ids";
import { chainMatches, DEFAULT_TABLE, type SandboxRules, type TableState } from "./nft";
import { DEFAULT_ROOT, GuestLayout, type GuestSystem } from "./layout";
import { asGuestArgv, getUser, type Passwd } from "./accounts";
import { createUser, heldIds, killGuest } from "./uids";
import { ensureFirewall, readTable, transparentRule } from "./firewall";
import { ensureWorkspace } from "./clone";
import { checkHostHome, CONFINE_SCRIPT, ensureHome, ensureRuntime, ensureSockets, provision } from "./home";
import { describe, inventory, removeInventory, type Inventory } from "./inventory";


export interface LinuxUserOptions {
  exec: Exec;
  /** Base dir: `<root>/homes/<guest>` (0711 root), `<root>/meta/<id>.json` (0700 root), `<root>/stage` (0711 root). */
  root?: string;
  /** nft table name in the inet family. */
  table?: string;
  /** Loud warnings (world-readable host home): the daemon logs them and `sbx doctor` repeats them. */
  warn?: (message: string) => void;
  /**
   * The daemon's runtime dir (socket dirs are `<runtimeDir>/sb/<id>/`). When set, apply lets the guest traverse to its
   * own socket dir (ACL `u:<guest>:--x` on each dir, nothing more) and hands it `bridge.sock`; `proxy.sock` stays root's.
   */
  runtimeDir?: string;
  /**
   * Host paths of a Bun binary and sbx's `shims/` dir. When set, apply installs copies under `<root>/runtime` (root-owned,
   * read-only to guests: the host's own Bun usually sits in a 700 home) and provisions the guest's rc files and ~/bin shims.
   */
  runtime?: { bun: string; shims: string };
  /** How often the kernel-log audit reads the log (tests; default 2 s). */
  kernelLogIntervalMs?: number;
  /**
   * The shared dirs every user may write (default SHARED_TMP_DIRS): what a removed guest's uid owns there is swept, and
   * the uid held while anything of it remains.
   */
  tmpDirs?: readonly string[];
  /** Where the cgroup filesystems are (tests give a tree of their own; default /sys/fs/cgroup). */
  cgroupRoot?: string;
  /**
   * Whether each guest command gets a /proc of its own that shows only the guest's processes (`hidepid=invisible`, in a
   * mount namespace of the command's). Default: where the kernel gives each proc mount its own options (Linux ≥ 5.8);
   * on an older kernel the options are the whole machine's, and sbx never changes those.
   */
  privateProc?: boolean;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Set by setpriv --reset-env from the guest's passwd entry; a spec must not override who the guest is. */
const IDENTITY_VARS = new Set(["HOME", "USER", "LOGNAME", "SHELL"]);

/**
 * Runs argv (as root, before setpriv) in a session and process group of its own, passes it stdin, waits for it, then
 * kills what it left in that group (a fork bomb, a forgotten `&`): otherwise they hold its output open, so it never
 * ends for its caller, and hold the sandbox's process limit. INT/TERM/HUP are passed on to the group. It returns once
 * the group is gone, zombies included: a killed process's pid stays charged to the sandbox's process limit until it
 * is reaped, and the orphans are reaped by init, which need not be quick (measured here: a Firecracker init that
 * reaps every 2 s), so returning earlier would let the next command meet a full process table. The runner itself is
 * outside the guest's cgroup (argv joins it), so it can still fork `sleep` while the group is at the limit. A process
 * that wants to outlive the command leaves the group (setsid), as a daemon does. The exit status is the command's.
 */
export const GROUP_SCRIPT = [
  'exec 3<&0; setsid "$@" <&3 3<&- & p=$!',
  "trap 'kill -TERM -\"$p\" 2>/dev/null' INT TERM HUP",
  'while :; do wait "$p"; rc=$?; kill -0 "$p" 2>/dev/null || break; done',
  // dash's kill takes no `--`: a negative pid right after the signal is the group. A zombie still counts as in the
  // group, so this ends when the last one is reaped: at once 20 times (a bomb converges), then each 50 ms, up to 5 s.
  'i=0; while [ $i -lt 120 ] && kill -KILL -"$p" 2>/dev/null; do i=$((i+1)); [ $i -gt 20 ] && sleep 0.05; done',
  'exit "$rc"',
].join("\n");

/**
 * As root, before setpriv: a /proc of the command's own in a mount namespace of its own, showing only the processes of
 * the guest's uid (`hidepid=invisible`): another user's processes, their argv and environment, are not listed. A
 * mount that fails stops the command (125): it never runs with the machine's /proc instead.
 */
export const PROC_SCRIPT = 'mount -t proc -o hidepid=invisible,nosuid,nodev,noexec proc /proc || exit 125; exec "$@"';

/** The loopback guard hands the guest's port to the proxy (fd passing); nft redirects its transparent path there. */
export const LINUX_USER_REACH = { handsOverListener: true, transparent: "redirect" } as const;

export class LinuxUserBackend extends GuestLayout implements Backend {
  readonly kind = "linux-user" as const;
  readonly reach = LINUX_USER_REACH;
  readonly table: string;
  private readonly exec: Exec;
  private readonly warn: (m: string) => void;
  private readonly opts: LinuxUserOptions;
  /** What the steps beside this file are handed (layout.ts). */
  private readonly sys: GuestSystem;
  /** Each guest's memory, CPU and process limits. */
  readonly cgroups: GuestCgroups;
  /** Whether guest commands get a /proc of their own (PROC_SCRIPT). */
  readonly privateProc: boolean;

  /** What the daemon watches for these guests: the kernel log of packets their firewall dropped. */
  watch(ctx: WatchContext, paths: Paths): Watcher[] {
    return [
      startKernelLogAudit({
        backend: this,
        exec: this.exec,
        store: ctx.store,
        paths,
        log: ctx.log.with({ service: "kernel-log" }),
        ...(this.opts.kernelLogIntervalMs !== undefined ? { intervalMs: this.opts.kernelLogIntervalMs } : {}),
        onEvent: (sid, e, auditId) => ctx.blocked(sid, auditId, auditOf(e)),
      }),
    ];
  }

  constructor(opts: LinuxUserOptions) {
    super(opts.root ?? DEFAULT_ROOT);
    this.opts = opts;
    this.exec = opts.exec;
    this.table = opts.table ?? DEFAULT_TABLE;
    // One install's cgroups apart from another's (a test's private root beside the real one): `sbx`, or `sbx-<hash>`.
    this.cgroups = new GuestCgroups(opts.cgroupRoot, this.root === DEFAULT_ROOT ? "sbx" : `sbx-${sha256Hex(this.root).slice(0, 10)}`);
    this.warn = opts.warn ?? ((m) => process.stderr.write(`sbx: warning: ${m}\n`));
    this.privateProc = opts.privateProc ?? (process.platform === "linux" && procMountsApart(release()));
    this.sys = { layout: this, exec: this.exec, table: this.table, tmpDirs: opts.tmpDirs ?? SHARED_TMP_DIRS, warn: (m) => this.warn(m) };
  }

  /** Whether guest commands start through confine.ts (the backend has sbx's runtime to run it on). */
  get confines(): boolean {
    return this.opts.runtime !== undefined;
  }
  /**
   * The agent cache guests run agents from (`sbx run AGENT`): under the root-owned runtime dir, written by the daemon
   * (root), read-only to everyone else, at the same path inside as out. None without sbx's Bun and shims to run them.
   */
  agentPlace(): AgentPlace | null {
    if (!this.opts.runtime) return null;
    const dir = join(this.runtimeDir, "agents");
    return { os: "linux", cacheDir: dir, inside: dir, bun: this.runtimeBun, shims: this.runtimeShims };
  }

  private proxyPort(spec: SandboxSpec): number {
    const p = spec.options.driver === "user" ? spec.options.proxyPort : undefined;
    if (typeof p !== "number" || !Number.isInteger(p) || p < 1 || p > 65535) {
      throw new SbxError("config", `sandbox ${spec.name}: the user backend needs options.proxyPort (1-65535), got ${JSON.stringify(p)}`, {
        hint: "The daemon assigns each user-account sandbox a loopback proxy port; this is a bug in sbx if you see it.",
      });
    }
    return p;
  }

  // ── observation (read-only commands) ─────────────────────────────────────────

  /** runs: getent passwd <name> */
  getUser(name: string): Promise<Passwd | null> {
    return getUser(this.sys, name);
  }

  /**
   * The sandbox id whose guest account has `uid`, or null when that uid is no guest of this backend's (an sbx name and a
   * home under `<root>/homes`, as inventory counts them).
   * runs: getent passwd <uid>
   */
  async guestIdOf(uid: number): Promise<string | null> {
    const p = await this.getUser(String(uid));
    if (!p || p.uid !== uid || p.home !== this.home(p.name)) return null;
    return parseGuestUser(p.name);
  }

  /** runs: nft -j list table inet <table> */
  readTable(): Promise<TableState> {
    return readTable(this.sys);
  }

  /** The ids held for a removed guest's files (uids.ts): each looked at again, and one whose files are all gone let go. */
  heldIds(): Promise<Set<number>> {
    return heldIds(this.sys);
  }

  /** Everything of this backend's on the system, by sandbox id (inventory.ts). */
  inventory(): Promise<Map<string, Inventory>> {
    return inventory(this.sys);
  }

  // ── convergence ──────────────────────────────────────────────────────────────

  /** runs: stat -c '%a %u %g' <root> <homes> <meta> <stage>; install -d -m … -o root -g root <dir> for any that differ */
  private async ensureBaseDirs(): Promise<boolean> {
    const want: [string, string][] = [
      [this.root, "755"],
      [this.homesDir, "711"],
      [this.metaDir, "700"],
      [this.stageDir, "711"],
    ];
    const r = await this.exec.run(["stat", "-c", "%a %u %g", ...want.map(([d]) => d)], { check: false });
    const got = r.stdout.split("\n");
    let changed = false;
    for (const [i, [dir, mode]] of want.entries()) {
      if (got[i] === `${mode} 0 0`) continue;
      await this.exec.run(["install", "-d", "-m", `0${mode}`, "-o", "root", "-g", "root", dir]);
      changed = true;
    }
    return changed;
  }

  /** Converges to running: base dirs, account, firewall (before anything can run as the guest), home, clone. */
  async apply(spec: SandboxSpec): Promise<Change> {
    const port = this.proxyPort(spec);
    const guest = this.guest(spec);
    let changed = await this.ensureBaseDirs();
    let pw = await this.getUser(guest);
    if (pw && pw.home !== this.home(guest)) {
      throw new SbxError("conflict", `account ${guest} exists with home ${pw.home}, not ${this.home(guest)}`, {
        hint: `It was not made by this sbx; remove it with \`userdel ${guest}\` if it is yours to remove.`,
      });
    }
    if (!pw) {
      pw = await createUser(this.sys, spec, guest);
      changed = true;
    }
    if (await ensureFirewall(this.sys, { id: spec.id, uid: pw.uid, mode: "run", proxyPort: port, ...this.localOf(spec, true), ...transparentRule(spec) })) changed = true;
    this.ensureLimits(spec);
    if (await ensureHome(this.sys, pw, spec.hostUser)) changed = true;
    if (await ensureWorkspace(this.sys, spec, pw)) changed = true;
    if (this.opts.runtime) {
      if (await ensureRuntime(this.sys, this.opts.runtime)) changed = true;
      if (await provision(this.sys, pw, this.homeFiles(spec))) changed = true;
    }
    if (await ensureSockets(this.sys, spec, pw, this.socketChain(spec))) changed = true;
    await checkHostHome(this.sys, spec.hostUser);
    return { changed };
  }

  // ── what the guest runs: rc files, shims, its socket dir ──────────────────────

  /**
   * The environment a guest's shells get from their rc files: the spec's (drivers/env.ts builds it: proxy, LLM and
   * bridge variables) without identity variables or PATH (the rc files put ~/bin first), plus where this host's Bun is.
   */
  guestEnv(spec: SandboxSpec): Record<string, string> {
    const guest = this.guest(spec);
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(spec.env)) if (!IDENTITY_VARS.has(k) && k !== "PATH") env[k] = v;
    return {
      ...env,
      SBX_BUN: this.runtimeBun,
      // The shims find the real git by skipping their own dirs: ~/bin (the wrappers) is one of them.
      SBX_SHIM_DIR: this.binDir(guest),
    };
  }

  /** The files the guest's home gets (bash rc files and ~/bin wrappers), and a stamp of all of them. Pure. */
  homeFiles(spec: SandboxSpec): { files: HomeFile[]; stamp: string } {
    const guest = this.guest(spec);
    const files = [
      ...renderShellRc({ shell: "bash", binDir: this.binDir(guest), env: this.guestEnv(spec), sandbox: spec.name, ...(this.opts.runtime ? { lastDir: join(this.runtimeDir, "agents", "bin") } : {}) }),
      ...renderShimWrappers({ runtime: this.runtimeBun, shimDir: this.runtimeShims, binDir: this.binDir(guest) }),
    ];
    return { files, stamp: sha256Hex(JSON.stringify(files)) };
  }

  /** argv that runs as the guest with nothing of root's (accounts.ts). */
  asGuestArgv(guest: string, argv: string[]): string[] {
    return asGuestArgv(guest, argv);
  }

  /** The dirs from the runtime dir down to the sandbox's socket dir, each of which the guest must traverse. */
  socketChain(spec: SandboxSpec): string[] {
    const top = this.opts.runtimeDir;
    if (!top) return [];
    const out: string[] = [];
    for (let d = spec.sockets.dir; d === top || d.startsWith(`${top}/`); d = dirname(d)) out.unshift(d);
    return out;
  }

  /**
   * git as the guest in its clone (how the host reads a clone: never itself). Hooks and fsmonitor off on the command
   * line, so nothing the clone's config names runs behind a stopped sandbox's back.
   * runs: setpriv --reuid=<guest> --regid=<guest> --init-groups --reset-env -- git -c core.hooksPath=/dev/null -c core.fsmonitor=false -C <clone> …
   */
  guestGitArgv(spec: SandboxSpec, args: string[]): string[] {
    return this.asGuestArgv(this.guest(spec), ["git", ...SANDBOX_GIT_SAFE, "-C", this.workspace(spec), ...args]);
  }

  // ── limits ───────────────────────────────────────────────────────────────────

  /**
   * Whether (and by which v2 cgroup) the guest may reach servers of its own on its loopback: only when its processes
   * join a cgroup (it has limits) and the machine has a v2 hierarchy, whose dir is made first with `ensure` (nft
   * resolves the path when the rules load). See nft.ts.
   */
  private localOf(spec: SandboxSpec, ensure: boolean): { local?: { level: number; path: string } } {
    if (!spec.limits) return {};
    const s = ensure ? this.cgroups.ensureSocketCgroup(spec.id) : this.cgroups.socketCgroup(spec.id);
    return s ? { local: { level: s.level, path: s.path } } : {};
  }

  /**
   * The guest's cgroup with the spec's limits, before anything runs as the guest. A machine whose kernel offers no
   * cgroup sbx can use runs the guest without limits, and says so (the daemon logs it; `sbx doctor` repeats it).
   */
  private ensureLimits(spec: SandboxSpec): void {
    if (!spec.limits) return;
    try {
      this.cgroups.ensure(spec.id, spec.limits);
    } catch (e) {
      this.warn(`sandbox ${spec.name}: its memory, CPU and process limits are not enforced: ${(e as Error).message}`);
    }
  }

  /** The kernel's counters of the guest's cgroup (OOM kills, refused forks), or null when it has none. */
  async counters(spec: SandboxSpec): Promise<LimitCounters | null> {
    return this.cgroups.counters(spec.id);
  }

  /** New limits hold at once for every process of the guest (they are all in its cgroup). */
  async applyLimits(spec: SandboxSpec): Promise<void> {
    if (spec.limits && this.cgroups.exists(spec.id)) this.cgroups.ensure(spec.id, spec.limits);
  }

  // ── Backend ──────────────────────────────────────────────────────────────────

  /** Blocks everything for the guest, then kills its processes; the account, home and clone stay. */
  async stop(spec: SandboxSpec): Promise<Change> {
    const pw = await this.getUser(this.guest(spec));
    if (!pw) return { changed: false };
    let changed = await ensureFirewall(this.sys, { id: spec.id, uid: pw.uid, mode: "stop" });
    // Its cgroup first: with forks shut off there, even a fork bomb ends; then anything of its uid outside it.
    if (await this.cgroups.killAll(spec.id, spec.limits).catch(() => false)) changed = true;
    if (await killGuest(this.sys, pw.uid)) changed = true;
    return { changed };
  }

  async remove(spec: SandboxSpec): Promise<Change> {
    const inv = (await this.inventory()).get(spec.id);
    if (!inv) return { changed: false };
    await removeInventory(this.sys, { cgroups: this.cgroups, runtimeDir: this.opts.runtimeDir }, inv);
    return { changed: true };
  }

  async inspect(spec: SandboxSpec): Promise<Observed> {
    const guest = this.guest(spec);
    const pw = await this.getUser(guest);
    const base: Observed = { id: spec.id, name: spec.name, repo: spec.repo, phase: "absent", detail: {} };
    if (!pw) return base;
    const t = await this.readTable();
    const port = spec.options.driver === "user" ? spec.options.proxyPort : -1;
    const running = chainMatches(t.chains.get(chainName(spec.id)), { id: spec.id, uid: pw.uid, mode: "run", proxyPort: port, ...this.localOf(spec, false), ...transparentRule(spec) });
    return {
      ...base,
      phase: running && t.baseOk ? "running" : "stopped",
      detail: { user: guest, uid: String(pw.uid), home: pw.home, workspace: this.workspace(spec), proxyPort: String(port) },
    };
  }

  async list(): Promise<Observed[]> {
    const inv = await this.inventory();
    const t = await this.readTable();
    const out: Observed[] = [];
    for (const i of inv.values()) {
      if (!i.user) continue;
      const c = t.chains.get(chainName(i.id));
      const running = t.baseOk && c?.rules?.mode === "run" && c.rules.uid === i.user.uid && c.uids.includes(i.user.uid);
      out.push({
        id: i.id,
        name: i.meta?.name ?? i.user.gecos.replace(/^sbx sandbox /, ""),
        repo: i.meta?.repo ?? "",
        phase: running ? "running" : "stopped",
        detail: { user: i.user.name, uid: String(i.user.uid), home: i.user.home, ...(i.meta?.dir ? { dir: i.meta.dir } : {}) },
      });
    }
    return out;
  }

  async cleanup(keep: ReadonlySet<string>, opts: { dryRun?: boolean } = {}): Promise<CleanupReport> {
    const removed: string[] = [];
    const inventory = await this.inventory();
    for (const inv of inventory.values()) {
      if (keep.has(inv.id)) continue;
      removed.push(...describe(inv));
      if (!opts.dryRun) await removeInventory(this.sys, { cgroups: this.cgroups, runtimeDir: this.opts.runtimeDir }, inv);
    }
    // A cgroup whose sandbox left nothing else (a crash between making it and the account).
    for (const id of this.cgroups.ids()) {
      if (keep.has(id) || inventory.has(id)) continue;
      removed.push(`cgroup sbx/${id}`);
      if (!opts.dryRun) await this.cgroups.remove(id);
    }
    return { removed };
  }

  /**
   * A login shell (or argv) as the guest: setpriv drops to the guest's uid, gid and groups and resets the
   * environment from its passwd entry; env sets the cwd and sbx's variables; bash -l reads the guest's profile.
   * Spawned by sbx under a PTY it owns.
   */
  shellArgv(spec: SandboxSpec, req: ShellRequest): string[] {
    const guest = this.guest(spec);
    const ws = this.workspace(spec);
    let cwd = this.home(guest);
    if (req.cwd === spec.repo) cwd = ws;
    else if (req.cwd.startsWith(spec.repo + "/")) cwd = ws + req.cwd.slice(spec.repo.length);
    else if (req.cwd === ws || req.cwd.startsWith(ws + "/")) cwd = req.cwd;
    const env: string[] = [];
    for (const [k, v] of Object.entries({ ...spec.env, ...req.env }).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      if (!ENV_NAME.test(k)) throw new SbxError("config", `invalid environment variable name ${JSON.stringify(k)}`);
      if (IDENTITY_VARS.has(k)) continue;
      env.push(`${k}=${v}`);
    }
    const cmd = req.argv.length === 0 ? ["/bin/bash", "-l"] : ["/bin/bash", "-l", "-c", 'exec "$@"', "sbx", ...req.argv];
    // Then, as the guest, the confinement the kernel keeps (seccomp, Landlock's scopes: shims/confine.ts), then the command.
    // `--ro`: sbx's root (its Bun, shims, agents, the host repo's objects) stays readable under Landlock's file rules.
    const confine = this.opts.runtime ? [this.runtimeBun, ...BUN_NO_CWD_CONFIG, join(this.runtimeShims, CONFINE_SCRIPT), "--ro", this.root, "--"] : [];
    const dropped = this.asGuestArgv(guest, [...confine, "env", "-C", cwd, ...env, ...cmd]);
    const guestArgv = this.privateProc ? ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", PROC_SCRIPT, "sbx-proc", ...dropped] : dropped;
    // Into the guest's cgroup first (as root), so nothing it runs is outside its limits.
    const argv = spec.limits ? this.cgroups.joinArgv(spec.id, guestArgv) : guestArgv;
    // A command with no terminal: what it leaves running ends with it (a terminal's close ends a session's own).
    return req.tty ? argv : ["sh", "-c", GROUP_SCRIPT, "sbx-group", ...argv];
  }

  /** At daemon start: every guest's chain back in block-all form, until its guards are up and a start brings it to run mode. */
  restoreBlockAll(specs: readonly SandboxSpec[]): Promise<number> {
    return this.restoreFirewall(specs.map((spec) => ({ spec, active: false })));
  }

  /** Re-loads every chain after a reboot or a foreign `nft flush ruleset`: run mode for active sandboxes, block-all for the rest. */
  async restoreFirewall(specs: readonly { spec: SandboxSpec; active: boolean }[]): Promise<number> {
    let n = 0;
    for (const { spec, active } of specs) {
      const pw = await this.getUser(this.guest(spec));
      if (!pw) continue;
      const want: SandboxRules = active
        ? { id: spec.id, uid: pw.uid, mode: "run", proxyPort: this.proxyPort(spec), ...this.localOf(spec, true), ...transparentRule(spec) }
        : { id: spec.id, uid: pw.uid, mode: "stop" };
      if (await ensureFirewall(this.sys, want)) n++;
    }
    return n;
  }
}
