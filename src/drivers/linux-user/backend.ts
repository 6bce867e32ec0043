// LinuxUserBackend: one locked system account per sandbox, a 700 home the host reaches by ACL, a per-UID nft chain.
//
// Phases: running = account + run-mode firewall (only 127.0.0.1:<proxyPort>); stopped = account + block-all
// firewall and none of the guest's processes; absent = no account. Every command goes through the Exec.
import { release } from "node:os";
import { procMountsApart } from "../../sys/kernel";
import { basename, dirname, join } from "node:path";
import { z } from "zod";
import { GuestCgroups } from "./cgroup";
import type { LimitCounters } from "../../core/limits";
import { parseHostGitSetup } from "../../workspace/clone";
import { SANDBOX_GIT_SAFE } from "../../sync/sandbox-git";
import { SbxError } from "../../core/errors";
import { sha256Hex } from "../../sys/paths";
import { BUN_NO_CWD_CONFIG } from "../../sys/bun-args";
import type { Exec, ExecResult } from "../../sys/exec";
import type { Paths } from "../../sys/paths";
import type { WatchContext, Watcher } from "../driver";
import { startKernelLogAudit } from "./kernel-log-audit";
import { auditOf } from "./monitor";
import type { Backend } from "../backend";
import type { Change, CleanupReport, HostUser, Observed, SandboxSpec, ShellRequest } from "../../core/spec";
import { AGENT_SETUP_SCRIPT, renderShellRc, renderShimWrappers, SHIM_FILES, type HomeFile } from "../provision/provision";
import type { AgentPlace } from "../driver";
import { chainName, guestUser, parseChainName, parseGuestUser } from "./naming";
import { idsOf, leftoversOf, parseSysIdRange, parseSysvIpc, pickGuestId, SHARED_TMP_DIRS } from "./ids";
import { chainMatches, DEFAULT_TABLE, parseTable, renderBase, renderRemove, renderSandbox, type SandboxRules, type TableState } from "./nft";

/** Root-owned base of everything this backend keeps on disk. */
export const DEFAULT_ROOT = "/var/lib/sbx";

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

export interface Passwd {
  name: string;
  uid: number;
  gid: number;
  gecos: string;
  home: string;
  shell: string;
}

/** What sbx recorded about a guest so that removal can undo ACLs on host paths even after a crash. */
export const GuestMetaSchema = z.object({
  id: z.string(),
  name: z.string(),
  repo: z.string(),
  user: z.string(),
  uid: z.number().int(),
  /** Host dirs given `u:<guest>:--x`; empty since objects are reached through a bind mount (kept for older records). */
  traverse: z.array(z.string()),
  /** The host repo's objects dir given `u:<guest>:rX` recursively (and as default ACL). */
  objects: z.string().nullable(),
  /** The guest's gid (its own group): what it owns is swept by uid and gid even when the account is gone. */
  gid: z.number().int().optional(),
  /** The sandbox's host-side dir: tells a daemon of another sbx state root that this guest is not its to clean up. */
  dir: z.string().optional(),
});
export type GuestMeta = z.infer<typeof GuestMetaSchema>;

export function parsePasswdLine(line: string): Passwd | null {
  const f = line.split(":");
  if (f.length < 7) return null;
  const uid = Number(f[2]);
  const gid = Number(f[3]);
  if (!Number.isInteger(uid) || !Number.isInteger(gid)) return null;
  return { name: f[0]!, uid, gid, gecos: f[4]!, home: f[5]!, shell: f[6]! };
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** As the host user: their objects dir's `info/alternates` exists (appended nothing: a list that is there stays). */
export const ENSURE_LIST = 'mkdir -p "$1/info" && : >> "$1/info/alternates"';

/** The shim every guest command starts through (as the guest, on sbx's Bun): seccomp and Landlock, then exec. */
export const CONFINE_SCRIPT = "confine.ts";

/** What a guest process may never gain: privileges through exec (setuid, file capabilities), or any capability. */
export const GUEST_PRIVS = ["--no-new-privs", "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all"] as const;

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

/** The firewall's part of the transparent path for a spec: its redirects, when the sandbox has it. */
function transparentRule(spec: SandboxSpec): { transparent?: true } {
  return spec.options.driver === "user" && spec.options.transparent === true ? { transparent: true } : {};
}

/**
 * As root, before setpriv: a /proc of the command's own in a mount namespace of its own, showing only the processes of
 * the guest's uid (`hidepid=invisible`): another user's processes, their argv and environment, are not listed. A
 * mount that fails stops the command (125): it never runs with the machine's /proc instead.
 */
export const PROC_SCRIPT = 'mount -t proc -o hidepid=invisible,nosuid,nodev,noexec proc /proc || exit 125; exec "$@"';

/**
 * As root, in a mount namespace of its own: the IPC namespace's POSIX message queues mounted at $1, and those of uid $2
 * deleted (the queue filesystem is flat: no dir or link to be led through).
 */
export const MQUEUE_SCRIPT = 'mount -t mqueue mqueue "$1" && find "$1" -mindepth 1 -maxdepth 1 -type f -uid "$2" -delete';

/** Process states of a process that still runs (every state but Z, a zombie, and X, dead). */
const LIVE_STATES = "R,S,D,T,t,I";

/** The loopback guard hands the guest's port to the proxy (fd passing); nft redirects its transparent path there. */
export const LINUX_USER_REACH = { handsOverListener: true, transparent: "redirect" } as const;

export class LinuxUserBackend implements Backend {
  readonly kind = "linux-user" as const;
  readonly reach = LINUX_USER_REACH;
  readonly root: string;
  readonly table: string;
  private readonly exec: Exec;
  private readonly warn: (m: string) => void;
  private readonly opts: LinuxUserOptions;
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
    this.opts = opts;
    this.exec = opts.exec;
    this.root = opts.root ?? DEFAULT_ROOT;
    this.table = opts.table ?? DEFAULT_TABLE;
    // One install's cgroups apart from another's (a test's private root beside the real one): `sbx`, or `sbx-<hash>`.
    this.cgroups = new GuestCgroups(opts.cgroupRoot, this.root === DEFAULT_ROOT ? "sbx" : `sbx-${sha256Hex(this.root).slice(0, 10)}`);
    this.warn = opts.warn ?? ((m) => process.stderr.write(`sbx: warning: ${m}\n`));
    this.privateProc = opts.privateProc ?? (process.platform === "linux" && procMountsApart(release()));
  }

  // ── layout (pure) ──────────────────────────────────────────────────────────

  get homesDir(): string {
    return join(this.root, "homes");
  }
  get metaDir(): string {
    return join(this.root, "meta");
  }
  get stageDir(): string {
    return join(this.root, "stage");
  }
  /** `<root>/held/<id>`: a removed guest's uid (or gid) that still owns files; never given to a new guest while it does. */
  get heldDir(): string {
    return join(this.root, "held");
  }
  private get tmpDirs(): readonly string[] {
    return this.opts.tmpDirs ?? SHARED_TMP_DIRS;
  }
  guest(spec: SandboxSpec): string {
    return guestUser(spec.hostUser.name, spec.id);
  }
  home(guest: string): string {
    return join(this.homesDir, guest);
  }
  /** The guest's clone of the host repo: `<home>/work/<repo dir name>`. */
  workspace(spec: SandboxSpec): string {
    return join(this.home(this.guest(spec)), "work", basename(spec.repo));
  }
  metaFile(id: string): string {
    return join(this.metaDir, `${id}.json`);
  }
  /** Root-owned, world-readable copies of Bun and the shims that guests run (never the host's own files). */
  get runtimeDir(): string {
    return join(this.root, "runtime");
  }
  /** Whether guest commands start through confine.ts (the backend has sbx's runtime to run it on). */
  get confines(): boolean {
    return this.opts.runtime !== undefined;
  }
  get runtimeBun(): string {
    return join(this.runtimeDir, "bun");
  }
  get runtimeShims(): string {
    return join(this.runtimeDir, "shims");
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
  /** The guest's ~/bin (the git/gh shim wrappers), first on its PATH. */
  binDir(guest: string): string {
    return join(this.home(guest), "bin");
  }
  /** What the guest's clone's alternates must say, exactly (ref sync refuses to read a clone whose alternates differ). */
  expectedAlternates(spec: SandboxSpec): string {
    return `${this.objectsMount(spec.id)}\n`;
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
  async getUser(name: string): Promise<Passwd | null> {
    const r = await this.exec.run(["getent", "passwd", name], { check: false });
    if (r.exitCode !== 0) return null;
    return parsePasswdLine(r.stdout.trim());
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
  async readTable(): Promise<TableState> {
    const r = await this.exec.run(["nft", "-j", "list", "table", "inet", this.table], { check: false });
    return parseTable(r.exitCode === 0 ? r.stdout : "");
  }

  /** runs: cat <root>/meta/<id>.json */
  private async readMeta(id: string): Promise<GuestMeta | null> {
    const r = await this.exec.run(["cat", this.metaFile(id)], { check: false });
    if (r.exitCode !== 0) return null;
    try {
      return GuestMetaSchema.parse(JSON.parse(r.stdout));
    } catch {
      return null;
    }
  }

  // ── convergence steps ──────────────────────────────────────────────────────────

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

  /**
   * The account, with a uid sbx picks: useradd --system alone gives the last removed guest's uid to the next, and with
   * it whatever that guest left. An id taken meanwhile (useradd exits 4) is picked again.
   * runs: (freeId) …; useradd --system --uid <id> --user-group --shell /bin/bash --home-dir <home> --no-create-home --comment … <guest>
   */
  private async createUser(spec: SandboxSpec, guest: string): Promise<Passwd> {
    for (let attempt = 1; ; attempt++) {
      const id = await this.freeId();
      const r = await this.exec.run(
        ["useradd", "--system", "--uid", String(id), "--user-group", "--shell", "/bin/bash", "--home-dir", this.home(guest), "--no-create-home", "--comment", `sbx sandbox ${spec.name}`, guest],
        { check: false },
      );
      if (r.exitCode === 4 && attempt < 4) continue;
      if (r.exitCode !== 0) throw new SbxError("exec_failed", `useradd ${guest} (uid ${id}) failed: ${r.stderr.trim() || `exit ${r.exitCode}`}`);
      const pw = await this.getUser(guest);
      if (!pw) throw new SbxError("internal", `useradd succeeded but ${guest} is not in the user database`);
      return pw;
    }
  }

  /**
   * An id no account or group has, no removed guest's files hold and no rule of sbx's table names, in the system range
   * of /etc/login.defs.
   * runs: getent passwd; getent group; cat /etc/login.defs; (heldIds) …; nft -j list table inet <table>
   */
  private async freeId(): Promise<number> {
    const [pw, gr, defs] = await Promise.all([
      this.exec.run(["getent", "passwd"], { check: false }),
      this.exec.run(["getent", "group"], { check: false }),
      this.exec.run(["cat", "/etc/login.defs"], { check: false }),
    ]);
    const taken = new Set([...idsOf(pw.stdout), ...idsOf(gr.stdout), ...(await this.heldIds())]);
    // A uid the firewall still names (a removal that stopped before its rules went) would get that sandbox's rules.
    for (const c of (await this.readTable()).chains.values()) for (const u of [...c.uids, ...c.inUids, ...c.natUids, ...(c.rules ? [c.rules.uid] : [])]) taken.add(u);
    const range = parseSysIdRange(defs.exitCode === 0 ? defs.stdout : "");
    // An id that owns files in the shared temp dirs already (as owner or group: a guest of another sbx root, one removed
    // before sbx swept, a system account removed by hand) would hand them to the new guest: it is held instead, like a
    // removed guest's, and the next id is tried.
    for (let tries = 0; tries < 32; tries++) {
      const id = pickGuestId(taken, range);
      const left = await this.leftovers(new Set([id]));
      if (left.size === 0) return id;
      await this.hold(left);
      taken.add(id);
    }
    throw new SbxError("unavailable", "no free system user id without files of an earlier owner in the shared temp dirs", {
      hint: `See the ids held in ${this.heldDir} and the files each lists; remove those files, then try again.`,
    });
  }

  /**
   * The ids held for a removed guest's files: each is looked at again, and one whose files are all gone is let go.
   * runs: find <held> -mindepth 1 -maxdepth 1 -printf '%f\n'; (leftovers) …; rm -f <held>/<id>
   */
  async heldIds(): Promise<Set<number>> {
    const r = await this.exec.run(["find", this.heldDir, "-mindepth", "1", "-maxdepth", "1", "-printf", "%f\n"], { check: false });
    const ids = new Set(r.stdout.split("\n").filter((l) => /^\d{1,10}$/.test(l)).map(Number));
    if (ids.size === 0) return ids;
    const left = await this.leftovers(ids);
    for (const id of ids) {
      if (left.has(id)) continue;
      await this.exec.run(["rm", "-f", "--", join(this.heldDir, String(id))], { check: false });
      ids.delete(id);
    }
    return ids;
  }

  /**
   * What `ids` still own (as file owner or group) in the shared temp dirs, looked at as root without changing anything.
   * runs: find <tmp dirs> -xdev ( -uid <id> -o -gid <id> … ) -printf '%U %G %p\n'
   */
  private async leftovers(ids: ReadonlySet<number>): Promise<Map<number, string[]>> {
    const test = [...ids].flatMap((id, i) => [...(i > 0 ? ["-o"] : []), "-uid", String(id), "-o", "-gid", String(id)]);
    const r = await this.exec.run(["find", ...this.tmpDirs, "-xdev", "(", ...test, ")", "-printf", "%U %G %p\n"], { check: false, timeoutMs: 120_000 });
    return leftoversOf(r.stdout, ids);
  }

  /**
   * What a removed guest's uid owns outside its home: its files in the shared temp dirs, deleted AS THE GUEST (the
   * kernel then lets it delete only what the guest itself could: a link it planted is removed, never followed, and a
   * rename race can lead it nowhere the guest could not go), and its System V IPC objects (removed by id, as root). What
   * is left (a file in a dir the guest may no longer write, a dir it made unreadable to itself) holds its uid and gid in
   * `<root>/held`. Runs while the account still exists, so no new guest can get the id in between.
   * runs: setpriv --reuid=<uid> --regid=<gid> --clear-groups <GUEST_PRIVS> -- env -i PATH=/usr/bin:/bin find <tmp dirs> -xdev -uid <uid> -type d ! -perm -u=rwx -exec chmod u+rwx {} ;
   *       (the same) find <tmp dirs> -xdev -uid <uid> -delete; install -d … <root>/mqueue; unshare --mount … sh -c
   *       <MQUEUE_SCRIPT> (mount -t mqueue; find -uid <uid> -delete); cat /proc/sysvipc/{shm,msg,sem}; ipcrm -m|-q|-s <id>;
   *       (leftovers) …; (hold) …
   */
  private async sweep(uid: number, gid: number): Promise<void> {
    const asGuest = (argv: string[]) => ["setpriv", `--reuid=${uid}`, `--regid=${gid}`, "--clear-groups", ...GUEST_PRIVS, "--", "env", "-i", "PATH=/usr/bin:/bin", ...argv];
    const mine = ["find", ...this.tmpDirs, "-xdev", "-uid", String(uid)];
    // A dir of its own it made unreadable or unwritable to itself would stop the delete: opened first, one at a time, so
    // find goes on into what it just opened.
    await this.exec.run(asGuest([...mine, "-type", "d", "!", "-perm", "-u=rwx", "-exec", "chmod", "u+rwx", "{}", ";"]), { check: false, timeoutMs: 120_000 });
    await this.exec.run(asGuest([...mine, "-delete"]), { check: false, timeoutMs: 120_000 });
    // POSIX message queues live in the IPC namespace's own filesystem, which nothing need have mounted: mounted in a
    // mount namespace of this command's, the uid's queues go (a flat filesystem: no dir or link to be led through).
    await this.exec.run(["install", "-d", "-m", "0700", "-o", "root", "-g", "root", join(this.root, "mqueue")]);
    await this.exec.run(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", MQUEUE_SCRIPT, "sbx-mqueue", join(this.root, "mqueue"), String(uid)], { check: false });
    for (const kind of ["shm", "msg", "sem"] as const) {
      const r = await this.exec.run(["cat", `/proc/sysvipc/${kind}`], { check: false });
      for (const o of parseSysvIpc(kind, r.exitCode === 0 ? r.stdout : "")) {
        if (o.uid === uid || o.cuid === uid) await this.exec.run(["ipcrm", o.flag, String(o.id)], { check: false });
      }
    }
    const left = await this.leftovers(new Set([uid, gid]));
    if (left.size > 0) await this.hold(left);
  }

  /**
   * Holds each id in `<root>/held/<id>`, listing (some of) the files that keep it, and says so.
   * runs: install -d -m 0700 -o root -g root <held>; tee <held>/<id>
   */
  private async hold(left: ReadonlyMap<number, string[]>): Promise<void> {
    await this.exec.run(["install", "-d", "-m", "0700", "-o", "root", "-g", "root", this.heldDir]);
    for (const [id, paths] of left) {
      await this.exec.run(["tee", join(this.heldDir, String(id))], { stdin: `${paths.slice(0, 20).join("\n")}\n` });
      this.warn(`id ${id} still owns ${paths.length} file(s) (${paths.slice(0, 3).join(", ")}${paths.length > 3 ? ", …" : ""}): no new sandbox gets it until they are gone`);
    }
  }

  /** runs: nft -f - (the rendered base and/or sandbox chain on stdin), only when the table differs */
  private async ensureFirewall(want: SandboxRules, state?: TableState): Promise<boolean> {
    const t = state ?? (await this.readTable());
    const parts: string[] = [];
    if (!t.baseOk) parts.push(renderBase(this.table));
    if (!t.baseOk || !chainMatches(t.chains.get(chainName(want.id)), want)) parts.push(renderSandbox(want, this.table));
    if (parts.length === 0) return false;
    await this.exec.run(["nft", "-f", "-"], { stdin: parts.join("") });
    return true;
  }

  /**
   * The guest's home: `<homes>/<guest>`, owned by the guest, mode 700, plus `u:<host>:rwx` and the same as a
   * default ACL so the host can read and change what the agent writes. (`ls` shows `rwx` in the group bits:
   * that is the ACL mask; the owning group's own entry stays `---`.)
   * runs: getfacl -p --numeric <home>; install -d -m 0700 -o <uid> -g <gid> <home>; setfacl -m … <home>
   */
  private async ensureHome(pw: Passwd, host: HostUser): Promise<boolean> {
    const home = this.home(pw.name);
    const r = await this.exec.run(["getfacl", "-p", "--numeric", home], { check: false });
    const acl = r.exitCode === 0 ? r.stdout : null;
    let changed = false;
    if (acl === null || !acl.includes(`# owner: ${pw.uid}\n`) || !acl.includes(`# group: ${pw.gid}\n`)) {
      await this.exec.run(["install", "-d", "-m", "0700", "-o", String(pw.uid), "-g", String(pw.gid), home]);
      changed = true;
    }
    if (host.uid === 0) return changed; // root needs no ACL to get in
    const wanted = [
      `user:${host.uid}:rwx`,
      "group::---",
      "mask::rwx",
      "other::---",
      `default:user:${host.uid}:rwx`,
      "default:group::---",
      "default:other::---",
    ];
    if (changed || acl === null || wanted.some((w) => !acl.split("\n").includes(w))) {
      const spec = [`u:${host.uid}:rwx`, "g::---", "m::rwx", "o::---", "d:u::rwx", `d:u:${host.uid}:rwx`, "d:g::---", "d:m::rwx", "d:o::---"];
      await this.exec.run(["setfacl", "-m", spec.join(","), home]);
      changed = true;
    }
    return changed;
  }

  /** Warns (once per apply) when the host home lets every user in: the guest then needs no ACL to read it. runs: stat -c %a <host home> */
  private async checkHostHome(host: HostUser): Promise<void> {
    const r = await this.exec.run(["stat", "-c", "%a", host.home], { check: false });
    if (r.exitCode !== 0) return;
    const mode = r.stdout.trim();
    const other = Number.parseInt(mode.slice(-1), 8);
    if ((other & 5) !== 0) {
      this.warn(
        `your home ${host.home} is mode ${mode}: every account on this machine, sandbox users included, can ` +
          `${other & 4 ? "list and " : ""}open world-readable files in it. Run \`chmod 700 ${host.home}\` to keep sandboxes out.`,
      );
    }
  }

  /** runs: setpriv --reuid=<host uid> --regid=<host gid> --init-groups --reset-env -- <argv> (or argv as is for root) */
  private asHost(host: HostUser, argv: string[]): string[] {
    if (host.uid === 0) return argv;
    return ["setpriv", `--reuid=${host.uid}`, `--regid=${host.gid}`, "--init-groups", "--reset-env", "--", ...argv];
  }

  /**
   * The guest's clone, made once: the host user clones (`--shared`) into a root-owned staging dir, root writes
   * the alternates, hands the tree to the guest and moves it into the home. The guest reaches the host's objects
   * read-only through ACLs on exactly the dirs it must traverse and the objects tree; these paths are recorded
   * in the meta file first, so removal (or prune after a crash) can take the ACLs back.
   */
  private async ensureWorkspace(spec: SandboxSpec, pw: Passwd): Promise<boolean> {
    const ws = this.workspace(spec);
    const have = await this.exec.run(["stat", "-c", "%u", join(ws, ".git")], { check: false });
    const meta = await this.readMeta(spec.id);
    if (have.exitCode === 0 && have.stdout.trim() === String(pw.uid) && meta?.uid === pw.uid && meta.objects) {
      return this.ensureObjectsMount(pw, spec.hostUser, spec.id, meta.objects);
    }
    if (have.exitCode === 0) {
      throw new SbxError("conflict", `sandbox ${spec.name}: ${ws} exists but is not the guest's clone`, {
        hint: `Remove the sandbox with \`sbx rm ${spec.name}\` and create it again.`,
      });
    }
    const host = spec.hostUser;

    // runs: git -C <repo> rev-parse --path-format=absolute --git-common-dir (as the host user); realpath -e <objects>
    const common = await this.exec.run(this.asHost(host, ["git", "-C", spec.repo, "rev-parse", "--path-format=absolute", "--git-common-dir"]));
    const objects = (await this.exec.run(["realpath", "-e", join(common.stdout.trim(), "objects")])).stdout.trim();

    const record: GuestMeta = { id: spec.id, name: spec.name, repo: spec.repo, user: pw.name, uid: pw.uid, gid: pw.gid, traverse: [], objects, dir: spec.dir };
    // runs: tee <root>/meta/<id>.json (first, so removal after a crash knows which ACLs to take back)
    await this.exec.run(["tee", this.metaFile(spec.id)], { stdin: JSON.stringify(record) + "\n" });
    // runs: setfacl -R -m u:<guest>:rX,d:u:<guest>:rX <objects>
    await this.exec.run(["setfacl", "-R", "-m", `u:${pw.uid}:rX,d:u:${pw.uid}:rX`, objects]);
    await this.ensureObjectsMount(pw, host, spec.id, objects);

    // Stage: <stage>/<id> is the host's for the clone; nothing of the guest's is on this path.
    const stage = join(this.stageDir, spec.id);
    const staged = join(stage, basename(spec.repo));
    await this.exec.run(["rm", "-rf", "--one-file-system", stage]);
    await this.exec.run(["install", "-d", "-m", "0700", "-o", String(host.uid), "-g", String(host.gid), stage]);
    await this.exec.run(this.asHost(host, ["git", "clone", "--quiet", "--shared", spec.repo, staged]));
    // Remotes as in every sandbox: `host` is the host repo (its refs arrive as refs/remotes/host/* by ref sync), `origin`
    // is the host's origin URL, so `git push origin` inside goes to the shim and the bridge. Still the host's tree here.
    // Every host remote under its name (the bridge pushes with the host's URL and token) and who commits: the host's.
    // runs (as the host user): git -C <staged> remote rename origin host; git -C <repo> config --get-regexp <remotes,
    //   identity>; git -C <staged> config user.name/email; git -C <staged> remote add <r> <url>;
    //   git -C <staged> fetch --quiet --no-tags host +refs/remotes/<r>/*:refs/remotes/<r>/*
    await this.exec.run(this.asHost(host, ["git", "-C", staged, "remote", "rename", "origin", "host"]));
    const cfg = await this.exec.run(this.asHost(host, ["git", "-C", spec.repo, "config", "--get-regexp", "^(remote\\..*\\.url|user\\.(name|email))$"]), { check: false });
    const setup = parseHostGitSetup(cfg.exitCode === 0 ? cfg.stdout : "");
    if (setup.name !== undefined) await this.exec.run(this.asHost(host, ["git", "-C", staged, "config", "user.name", setup.name]));
    if (setup.email !== undefined) await this.exec.run(this.asHost(host, ["git", "-C", staged, "config", "user.email", setup.email]));
    const remotes = Object.keys(setup.remotes).sort();
    for (const r of remotes) await this.exec.run(this.asHost(host, ["git", "-C", staged, "remote", "add", r, setup.remotes[r]!]));
    if (remotes.length > 0) {
      await this.exec.run(this.asHost(host, ["git", "-C", staged, "fetch", "--quiet", "--no-tags", "host", ...remotes.map((r) => `+refs/remotes/${r}/*:refs/remotes/${r}/*`)]), { check: false });
    }
    await this.exec.run(["tee", join(staged, ".git", "objects", "info", "alternates")], { stdin: `${this.objectsMount(spec.id)}\n` });
    await this.exec.run(["chown", "-R", "--no-dereference", `${pw.uid}:${pw.gid}`, staged]);
    if (host.uid !== 0) {
      await this.exec.run(["setfacl", "-R", "-m", `u:${host.uid}:rwX,d:u:${host.uid}:rwX,m::rwX`, staged]);
    }
    // <home>/work is made by root (0770 keeps the ACL mask open for the host; the group entry stays ---).
    const work = dirname(ws);
    const w = await this.exec.run(["stat", "-c", "%F %u", work], { check: false });
    if (w.exitCode !== 0) {
      await this.exec.run(["install", "-d", "-m", "0770", "-o", String(pw.uid), "-g", String(pw.gid), work]);
    } else if (w.stdout.trim() !== `directory ${pw.uid}`) {
      throw new SbxError("conflict", `sandbox ${spec.name}: ${work} is not a directory owned by ${pw.name}`, {
        hint: `Remove the sandbox with \`sbx rm ${spec.name}\` and create it again.`,
      });
    }
    await this.exec.run(["mv", "-T", staged, ws]);
    await this.exec.run(["rmdir", stage]);
    return true;
  }

  /** Where the guest sees the host repo's objects: `<root>/objects/<id>/objects`, a read-only bind mount. */
  objectsMount(id: string): string {
    return join(this.root, "objects", id, "objects");
  }

  /**
   * The host's objects dir, bind-mounted read-only under a root-owned dir only this guest may traverse. The
   * guest thus needs no ACL on any dir of the host's home (a traverse ACL there would let it open every
   * world-readable file whose name it guesses, such as ~/.bashrc). Mounts vanish at reboot: apply re-makes them.
   * runs: mountpoint -q <mnt>; install -d …; setfacl -m u:<uid>:--x <dir>; mount --bind <objects> <mnt>; mount -o remount,bind,ro <mnt>;
   *       mountpoint -q <mnt>/info/alternates; (as the host user) sh -c <ENSURE_LIST> sh <objects>; tee <dir>/alternates.masked;
   *       mount --bind <mask> <mnt>/info/alternates; mount -o remount,bind,ro <mnt>/info/alternates
   */
  private async ensureObjectsMount(pw: Passwd, host: HostUser, id: string, objects: string): Promise<boolean> {
    const mnt = this.objectsMount(id);
    const dir = dirname(mnt);
    let changed = false;
    if ((await this.exec.run(["mountpoint", "-q", mnt], { check: false })).exitCode !== 0) {
      await this.exec.run(["install", "-d", "-m", "0711", "-o", "root", "-g", "root", dirname(dir)]);
      await this.exec.run(["install", "-d", "-m", "0700", "-o", "root", "-g", "root", dir, mnt]);
      await this.exec.run(["setfacl", "-m", `u:${pw.uid}:--x`, dir]);
      await this.exec.run(["mount", "--bind", objects, mnt]);
      await this.exec.run(["mount", "-o", "remount,bind,ro", mnt]);
      changed = true;
    }
    // Over the host objects' own list of alternates (the stores of every sandbox of the repo), an empty root-owned
    // file: this guest never reaches another sandbox's commits. The list must exist to be masked; it is made (empty,
    // which changes nothing) by the host user, never by root in their repo.
    const list = join(mnt, "info", "alternates");
    if ((await this.exec.run(["mountpoint", "-q", list], { check: false })).exitCode !== 0) {
      await this.exec.run(this.asHost(host, ["sh", "-c", ENSURE_LIST, "sh", objects]));
      const mask = join(dir, "alternates.masked");
      await this.exec.run(["tee", mask], { stdin: "" });
      await this.exec.run(["mount", "--bind", mask, list]);
      await this.exec.run(["mount", "-o", "remount,bind,ro", list]);
      changed = true;
    }
    return changed;
  }

  /**
   * Kills every process of the guest UID (these processes belong to the account sbx made). Zombies are not counted:
   * they are dead already, waiting for init to reap them (which, on a loaded machine, may come after we look).
   * runs: pgrep -u <uid> --runstates R,S,D,T,t,I; pkill -KILL -u <uid>
   */
  private async killGuest(uid: number): Promise<boolean> {
    let killed = false;
    for (let i = 0; i < 20; i++) {
      const r = await this.exec.run(["pgrep", "-u", String(uid), "--runstates", LIVE_STATES], { check: false });
      if (r.exitCode !== 0) return killed;
      await this.exec.run(["pkill", "-KILL", "-u", String(uid)], { check: false });
      killed = true;
      await Bun.sleep(Math.min(10 * (i + 1), 100));
    }
    throw new SbxError("unavailable", `processes of uid ${uid} kept running after SIGKILL`, {
      hint: "Check `ps -u " + uid + "` for processes stuck in the kernel (D state) and try again.",
    });
  }

  // ── Backend ───────────────────────────────────────────────────────────────────

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
      pw = await this.createUser(spec, guest);
      changed = true;
    }
    if (await this.ensureFirewall({ id: spec.id, uid: pw.uid, mode: "run", proxyPort: port, ...this.localOf(spec, true), ...transparentRule(spec) })) changed = true;
    this.ensureLimits(spec);
    if (await this.ensureHome(pw, spec.hostUser)) changed = true;
    if (await this.ensureWorkspace(spec, pw)) changed = true;
    if (this.opts.runtime) {
      if (await this.ensureRuntime(this.opts.runtime)) changed = true;
      if (await this.provision(spec, pw)) changed = true;
    }
    if (await this.ensureSockets(spec, pw)) changed = true;
    await this.checkHostHome(spec.hostUser);
    return { changed };
  }

  // ── what the guest runs: runtime, rc files, shims, its socket dir ──────────────────

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

  /**
   * argv that runs as the guest with nothing of root's: its uid, gid and groups, a reset environment, no way to gain a
   * privilege (no_new_privs: a setuid binary runs as the guest) and every capability set empty, the bounding set too.
   */
  asGuestArgv(guest: string, argv: string[]): string[] {
    return ["setpriv", `--reuid=${guest}`, `--regid=${guest}`, "--init-groups", ...GUEST_PRIVS, "--reset-env", "--", ...argv];
  }

  /**
   * Writes the rc files and shims AS THE GUEST (root never writes into a tree the guest owns: a planted symlink would
   * redirect it), only when their rendering changed. runs (as the guest): cat ~/.sbx/provisioned; mkdir -p …; tee <f>; chmod <m> <f>
   */
  private async provision(spec: SandboxSpec, pw: Passwd): Promise<boolean> {
    const home = this.home(pw.name);
    const { files, stamp } = this.homeFiles(spec);
    const stampFile = join(home, ".sbx", "provisioned");
    const g = (argv: string[]) => this.asGuestArgv(pw.name, argv);
    const cur = await this.exec.run(g(["cat", stampFile]), { check: false });
    if (cur.exitCode === 0 && cur.stdout.trim() === stamp) return false;
    const dirs = [...new Set([join(home, ".sbx"), ...files.map((f) => dirname(join(home, f.path)))])].sort();
    await this.exec.run(g(["mkdir", "-p", ...dirs]));
    for (const f of files) {
      const p = join(home, f.path);
      await this.exec.run(g(["tee", p]), { stdin: f.content });
      await this.exec.run(g(["chmod", f.mode.toString(8), p]));
    }
    await this.exec.run(g(["tee", stampFile]), { stdin: `${stamp}\n` });
    return true;
  }

  /**
   * Copies Bun and the shims to `<root>/runtime` (0755 root) when they differ from the host's (size and mtime, kept by
   * `install -p`). runs: stat -c '%s %Y' <src> <dst>; install -p -m 0755|0644 -o root -g root <src> <dst>
   */
  private async ensureRuntime(rt: { bun: string; shims: string }): Promise<boolean> {
    const pairs: [string, string, string][] = [[rt.bun, this.runtimeBun, "0755"]];
    for (const s of SHIM_FILES) {
      pairs.push([join(rt.shims, s.script), join(this.runtimeShims, s.script), "0644"]);
      pairs.push([join(rt.shims, s.name), join(this.runtimeShims, s.name), "0755"]);
    }
    // What `sbx run AGENT` runs first inside (its instruction section and first-run settings), on the same Bun.
    pairs.push([join(rt.shims, AGENT_SETUP_SCRIPT), join(this.runtimeShims, AGENT_SETUP_SCRIPT), "0644"]);
    // What every guest command starts through: its seccomp filter and Landlock scopes.
    pairs.push([join(rt.shims, CONFINE_SCRIPT), join(this.runtimeShims, CONFINE_SCRIPT), "0644"]);
    let changed = false;
    const d = await this.exec.run(["stat", "-c", "%a %u", this.runtimeDir, this.runtimeShims], { check: false });
    if (d.stdout !== "755 0\n755 0\n") {
      await this.exec.run(["install", "-d", "-m", "0755", "-o", "root", "-g", "root", this.runtimeDir, this.runtimeShims]);
      changed = true;
    }
    for (const [src, dst, mode] of pairs) {
      const r = await this.exec.run(["stat", "-L", "-c", "%s %Y", src, dst], { check: false });
      const [a, b] = r.stdout.split("\n");
      if (r.exitCode === 0 && a === b) continue;
      await this.exec.run(["install", "-p", "-m", mode, "-o", "root", "-g", "root", src, dst]);
      changed = true;
    }
    return changed;
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
   * The guest may traverse (`--x`, no listing) each dir down to its socket dir and connect to `bridge.sock`, which it is
   * given; `proxy.sock` stays root's 0600 (the guest reaches the proxy only through its loopback port). The daemon's
   * chmod 700 of a socket dir masks the ACL, so every apply checks the effective entry.
   * runs: getfacl -p --numeric --omit-header <dirs>; setfacl -m u:<uid>:--x <dir>; stat -c %u <bridge.sock>; chown <uid> <bridge.sock>
   */
  private async ensureSockets(spec: SandboxSpec, pw: Passwd): Promise<boolean> {
    const chain = this.socketChain(spec);
    if (chain.length === 0) return false;
    const have = await this.exec.run(["getfacl", "-p", "--numeric", "--omit-header", spec.sockets.dir], { check: false });
    if (have.exitCode !== 0) return false; // no socket dir: the daemon has not started this sandbox's guards
    let changed = false;
    for (const d of chain) {
      const r = await this.exec.run(["getfacl", "-p", "--numeric", "--omit-header", d], { check: false });
      if (r.stdout.split("\n").includes(`user:${pw.uid}:--x`)) continue;
      await this.exec.run(["setfacl", "-m", `u:${pw.uid}:--x`, d]);
      changed = true;
    }
    const s = await this.exec.run(["stat", "-c", "%u", spec.sockets.bridge], { check: false });
    if (s.exitCode === 0 && s.stdout.trim() !== String(pw.uid)) {
      await this.exec.run(["chown", String(pw.uid), spec.sockets.bridge]);
      changed = true;
    }
    return changed;
  }

  /**
   * git as the guest in its clone (how the host reads a clone: never itself). Hooks and fsmonitor off on the command
   * line, so nothing the clone's config names runs behind a stopped sandbox's back.
   * runs: setpriv --reuid=<guest> --regid=<guest> --init-groups --reset-env -- git -c core.hooksPath=/dev/null -c core.fsmonitor=false -C <clone> …
   */
  guestGitArgv(spec: SandboxSpec, args: string[]): string[] {
    return this.asGuestArgv(this.guest(spec), ["git", ...SANDBOX_GIT_SAFE, "-C", this.workspace(spec), ...args]);
  }

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

  /** Blocks everything for the guest, then kills its processes; the account, home and clone stay. */
  async stop(spec: SandboxSpec): Promise<Change> {
    const pw = await this.getUser(this.guest(spec));
    if (!pw) return { changed: false };
    let changed = await this.ensureFirewall({ id: spec.id, uid: pw.uid, mode: "stop" });
    // Its cgroup first: with forks shut off there, even a fork bomb ends; then anything of its uid outside it.
    if (await this.cgroups.killAll(spec.id, spec.limits).catch(() => false)) changed = true;
    if (await this.killGuest(pw.uid)) changed = true;
    return { changed };
  }

  async remove(spec: SandboxSpec): Promise<Change> {
    const inv = (await this.inventory()).get(spec.id);
    if (!inv) return { changed: false };
    await this.removeInventory(inv);
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
      if (!opts.dryRun) await this.removeInventory(inv);
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

  // ── inventory and removal ────────────────────────────────────────────────────

  /**
   * Everything of this backend's on the system, by sandbox id: accounts whose name parses and whose home is
   * under `<root>/homes`, home dirs, nft chains, meta files and staging dirs.
   * runs: getent passwd; nft -j list table …; find <homes> <meta> <stage> -mindepth 1 -maxdepth 1 -printf '%h %f\n'
   */
  async inventory(): Promise<Map<string, Inventory>> {
    const out = new Map<string, Inventory>();
    const at = (id: string) => {
      let i = out.get(id);
      if (!i) out.set(id, (i = { id }));
      return i;
    };
    const pw = await this.exec.run(["getent", "passwd"], { check: false });
    for (const line of pw.stdout.split("\n")) {
      const p = parsePasswdLine(line);
      if (!p) continue;
      const id = parseGuestUser(p.name);
      if (id && p.home === this.home(p.name)) at(id).user = p;
    }
    const t = await this.readTable();
    for (const c of t.chains.values()) {
      const id = parseChainName(c.chain);
      if (id) at(id).chain = c;
    }
    const f = await this.exec.run(
      ["find", this.homesDir, this.metaDir, this.stageDir, join(this.root, "objects"), "-mindepth", "1", "-maxdepth", "1", "-printf", "%h %f\n"],
      { check: false },
    );
    for (const line of f.stdout.split("\n")) {
      const sp = line.indexOf(" ");
      if (sp < 0) continue;
      const dir = line.slice(0, sp);
      const leaf = line.slice(sp + 1);
      if (dir === this.homesDir) {
        const id = parseGuestUser(leaf);
        if (id) at(id).home = join(dir, leaf);
      } else if (dir === this.metaDir) {
        const m = /^([a-z0-9]{1,20})\.json$/.exec(leaf);
        if (m) at(m[1]!).metaFile = join(dir, leaf);
      } else if (dir === this.stageDir && /^[a-z0-9]{1,20}$/.test(leaf)) {
        at(leaf).stage = join(dir, leaf);
      } else if (dir === join(this.root, "objects") && /^[a-z0-9]{1,20}$/.test(leaf)) {
        at(leaf).objectsDir = join(dir, leaf);
      }
    }
    for (const i of out.values()) if (i.metaFile) i.meta = await this.readMeta(i.id);
    return out;
  }

  /**
   * Order matters: block all, kill, take back host-path ACLs, sweep what its uid owns outside its home (holding the uid
   * if anything remains), delete the account, then its files and rules.
   * runs: nft -f -; pkill; setfacl -x; (sweep) …; userdel; groupdel; rm -rf --one-file-system; rm -f
   */
  private async removeInventory(inv: Inventory): Promise<void> {
    const uid = inv.user?.uid ?? inv.meta?.uid ?? inv.chain?.rules?.uid;
    if (inv.user) {
      await this.ensureFirewall({ id: inv.id, uid: inv.user.uid, mode: "stop" });
      await this.cgroups.killAll(inv.id, undefined).catch(() => false);
      await this.killGuest(inv.user.uid);
    }
    if (uid !== undefined && this.opts.runtimeDir) {
      // runs: setfacl -x u:<uid> <runtime dir> <runtime dir>/sb (the guest's traverse entries; its own socket dir goes with the daemon)
      await this.exec.run(["setfacl", "-x", `u:${uid}`, this.opts.runtimeDir, join(this.opts.runtimeDir, "sb")], { check: false });
    }
    if (inv.meta && uid !== undefined) {
      if (inv.meta.traverse.length > 0) await this.exec.run(["setfacl", "-x", `u:${uid}`, ...inv.meta.traverse], { check: false });
      if (inv.meta.objects) await this.exec.run(["setfacl", "-R", "-x", `u:${uid},d:u:${uid}`, inv.meta.objects], { check: false });
    }
    // Its files in the shared temp dirs and its IPC objects, while the account still holds the id (held if any remain).
    // A uid known only from the record (the account already gone) is swept only while no other account has it.
    if (uid !== undefined && uid > 0 && (inv.user || !(await this.getUser(String(uid))))) await this.sweep(uid, inv.user?.gid ?? inv.meta?.gid ?? uid);
    if (inv.user) {
      await this.exec.run(["userdel", inv.user.name]);
      const g = await this.exec.run(["getent", "group", inv.user.name], { check: false });
      if (g.exitCode === 0) await this.exec.run(["groupdel", inv.user.name], { check: false });
    }
    if (inv.objectsDir) {
      const mnt = this.objectsMount(inv.id);
      for (const m of [join(mnt, "info", "alternates"), mnt]) {
        if ((await this.exec.run(["mountpoint", "-q", m], { check: false })).exitCode === 0) await this.exec.run(["umount", m]);
      }
      await this.exec.run(["rm", "-rf", "--one-file-system", inv.objectsDir]);
    }
    for (const d of [inv.home, inv.stage]) if (d) await this.exec.run(["rm", "-rf", "--one-file-system", d]);
    const t = await this.readTable();
    const c = t.chains.get(chainName(inv.id));
    if (c) await this.exec.run(["nft", "-f", "-"], { stdin: renderRemove(inv.id, c.uids, this.table, { uids: c.inUids, chain: c.inChain }, { uids: c.natUids, chain: c.natChain }) });
    if (inv.metaFile) await this.exec.run(["rm", "-f", inv.metaFile]);
    await this.cgroups.remove(inv.id);
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
      if (await this.ensureFirewall(want)) n++;
    }
    return n;
  }
}

/** One sandbox id's leftovers, whichever of them exist. */
export interface Inventory {
  id: string;
  user?: Passwd;
  home?: string;
  chain?: TableState["chains"] extends Map<string, infer C> ? C : never;
  metaFile?: string;
  meta?: GuestMeta | null;
  stage?: string;
  /** `<root>/objects/<id>`, holding the read-only bind mount of the host's objects. */
  objectsDir?: string;
}

function describe(i: Inventory): string[] {
  const out: string[] = [];
  if (i.user) out.push(`user ${i.user.name} (uid ${i.user.uid}) of sandbox ${i.id}`);
  if (i.home) out.push(`home ${i.home} of sandbox ${i.id}`);
  if (i.chain) out.push(`nft chain ${i.chain.chain} of sandbox ${i.id}`);
  if (i.meta?.objects) out.push(`ACLs of uid ${i.meta.uid} on ${i.meta.objects} of sandbox ${i.id}`);
  if (i.metaFile) out.push(`record ${i.metaFile} of sandbox ${i.id}`);
  if (i.stage) out.push(`staging dir ${i.stage} of sandbox ${i.id}`);
  if (i.objectsDir) out.push(`objects mount ${i.objectsDir} of sandbox ${i.id}`);
  return out;
}
