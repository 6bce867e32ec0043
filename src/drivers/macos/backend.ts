// MacosBackend: each sandbox is a hidden, non-admin macOS user with its own clone, pf anchor and provisioned home.
//
// Three privilege levels, all through the injected Exec: the host user (reads, its own share and socket dirs),
// the guest (`sudo -n -H -u <guest> …`: the clone and rc files, so root never writes into a guest-owned tree),
// and root (only through `RootRunner`, i.e. privileged.ts behind `sudo -n`).
import { basename, dirname, join } from "node:path";
import { z } from "zod";
import { SbxError } from "../../core/errors";
import type { Exec, ExecOptions, ExecResult } from "../../sys/exec";
import { HOST_GIT_SAFE, hostGitEnv } from "../../sync/git-argv";
import { SANDBOX_GIT_SAFE } from "../../sync/sandbox-git";
import { sha256Hex, type Paths } from "../../sys/paths";
import type { Backend } from "../backend";
import type { Change, CleanupReport, Observed, SandboxSpec, ShellRequest } from "../../core/spec";
import type { AgentPlace, WatchContext, Watcher } from "../driver";
import { auditOfPflog, monitorCommand } from "./monitor";
import { ptyLines, startPflogAudit } from "./pflog-audit";
import { startPfWatchdog } from "./pf-watchdog";
import { renderShimWrappers, type HomeFile } from "../provision/provision";
import { DEFAULT_UID_RANGE, anchorName, guestPrefix, guestUser, hostGroup, inRange, parseGuestUser, pickId, type IdRange } from "./naming";
import { aclGrants, parseDsclList, parseDsclRecord, parseLsEntry } from "./parse";
import { BIN, DEFAULT_ROOT_CONTEXT, HOST_HOME_PERMS, RUNNING_SHELL, STOPPED_SHELL, heldDir, shareDir, type RootRunner } from "./privileged";
import { sudoRoot } from "./sudo-root";
import { kitHelperArgv, kitPaths, requireKit, type KitPaths } from "./install";
import { mirrorFetchArgv } from "./refs";
import { renderSeatbelt, renderZshRc } from "./render";
import { shQuote } from "../../core/sh";
import { key, MIRROR_PERMS, OptionsSchema, realPath, type Ctx, type MacosBackendConfig } from "./backend-config";

export { MIRROR_PERMS, realPath, type MacosBackendConfig } from "./backend-config";

/**
 * The backend as this Mac runs it, for the daemon and the CLI alike: root work through sudo and the root helper, the
 * guests' Bun and shims: all from the root-owned kit `sbx service install` puts in place (install.ts). Creating a
 * sandbox without it refuses with what to run.
 */
export function macosBackendHere(o: { exec: Exec; hostUser: string; runtimeDir: string; kit?: KitPaths }): MacosBackend {
  const k = o.kit ?? kitPaths(o.hostUser);
  return new MacosBackend({
    exec: o.exec,
    root: sudoRoot(o.exec, kitHelperArgv(k)),
    hostUser: o.hostUser,
    runtimeDir: o.runtimeDir,
    runtime: k.bun,
    shimDir: k.shims,
    preflight: () => requireKit(k),
  });
}

/** No fd passing on macOS: the loopback guard relays; pf cannot redirect a guest's name lookups, so no transparent path. */
export const MACOS_REACH = { handsOverListener: false, transparent: null } as const;

export class MacosBackend implements Backend {
  readonly kind = "macos" as const;
  readonly reach = MACOS_REACH;
  private readonly exec: Exec;
  private readonly root: RootRunner;
  private readonly host: string;
  private readonly range: IdRange;
  private readonly usersDir: string;
  private readonly shareRoot: string;

  /**
   * What the daemon watches for these guests: pflog0 (packets their anchors dropped, as audit rows), and pf itself,
   * which root can switch off or reload (the watchdog stops every running guest first, then puts it back).
   */
  watch(ctx: WatchContext, paths: Paths): Watcher[] {
    return [
      startPflogAudit({
        backend: this,
        spawn: this.cfg.spawnLines ?? ptyLines(this.exec),
        store: ctx.store,
        paths,
        log: ctx.log.with({ service: "pflog", command: monitorCommand().join(" ") }),
        onEvent: (sid, e, auditId) => ctx.blocked(sid, auditId, auditOfPflog(e)),
      }),
      startPfWatchdog({
        backend: this,
        store: ctx.store,
        paths,
        log: ctx.log.with({ service: "pf-watchdog" }),
        stopSandbox: ctx.stopSandbox,
        notify: ctx.notify,
        ...(this.cfg.pfWatchMs !== undefined ? { intervalMs: this.cfg.pfWatchMs } : {}),
      }),
    ];
  }

  constructor(private readonly cfg: MacosBackendConfig) {
    this.exec = cfg.exec;
    this.root = cfg.root;
    this.host = cfg.hostUser;
    this.range = cfg.uidRange ?? DEFAULT_UID_RANGE;
    this.usersDir = cfg.usersDir ?? "/Users";
    this.shareRoot = cfg.shareRoot ?? "/private/var/sbx";
  }

  /**
   * The agent cache guests run agents from (`sbx run AGENT`): in the host user's share dir, beside the mirrors, written
   * by the daemon (the host user) and read-only to everyone else (0555/0444); a guest reaches it through the `search`
   * it has on the share dir. Bun and agent-setup come from the root kit.
   */
  private get agentsDir(): string {
    return `${shareDir({ shareRoot: this.shareRoot }, this.host)}/agents`;
  }

  agentPlace(): AgentPlace {
    return { os: "darwin", cacheDir: this.agentsDir, inside: this.agentsDir, bun: this.cfg.runtime, shims: this.cfg.shimDir };
  }

  private ctx(spec: SandboxSpec): Ctx {
    if (spec.hostUser.name !== this.host) {
      throw new SbxError("internal", `sandbox ${spec.name} belongs to ${spec.hostUser.name}, this backend serves ${this.host}`);
    }
    const opts = OptionsSchema.safeParse(spec.options);
    if (!opts.success) throw new SbxError("config", opts.error.issues[0]?.message ?? "bad macOS options", { hint: "This is a bug in sbx's daemon; please report it." });
    const guest = guestUser(this.host, spec.id);
    const home = `${this.usersDir}/${guest}`;
    const share = shareDir({ shareRoot: this.shareRoot }, this.host);
    return { spec, guest, home, port: opts.data.proxyPort, share, mirror: `${share}/${key(spec.repo)}.git`, workspace: `${home}/${basename(spec.repo)}` };
  }

  private run(argv: string[], opts: ExecOptions = {}) {
    return this.exec.run(argv, opts);
  }

  /** runs: sudo -n -H -u <guest> <argv…> */
  private asGuest(guest: string, argv: string[], opts: ExecOptions = {}) {
    return this.exec.run([BIN.sudo, "-n", "-H", "-u", guest, ...argv], opts);
  }

  /** runs: ls -lde[O] <path> (null when it does not exist) */
  private async ls(path: string, flags = false) {
    const r = await this.run([BIN.ls, flags ? "-ldeO" : "-lde", path], { check: false });
    return r.exitCode === 0 ? parseLsEntry(r.stdout, flags) : null;
  }

  /**
   * The guest is in `staff` like every local account, and macOS homes are 750 staff by default: a guest could read
   * the host's home. sbx refuses to run until it is 700. runs: stat -f %Lp <home>
   */
  async checkHostHome(home: string): Promise<{ ok: boolean; mode: string }> {
    const r = await this.run([BIN.stat, "-f", "%Lp", home]);
    const mode = r.stdout.trim();
    return { ok: (Number.parseInt(mode, 8) & 0o077) === 0, mode };
  }

  /** runs: dscl . -list /Users UniqueID */
  private async users(): Promise<Map<string, number>> {
    return parseDsclList((await this.run([BIN.dscl, ".", "-list", "/Users", "UniqueID"])).stdout);
  }

  /** runs: ls <stateDir>/held */
  private async heldUids(): Promise<number[]> {
    const r = await this.run([BIN.ls, heldDir({ stateDir: this.cfg.stateDir ?? DEFAULT_ROOT_CONTEXT.stateDir })], { check: false });
    return r.exitCode === 0 ? r.stdout.split("\n").filter((l) => /^\d+$/.test(l.trim())).map(Number) : [];
  }

  async apply(spec: SandboxSpec): Promise<Change> {
    const c = this.ctx(spec);
    this.cfg.preflight?.();
    let changed = false;
    const did = (r: { changed: boolean }) => {
      changed ||= r.changed;
      return r;
    };

    const hh = await this.checkHostHome(spec.hostUser.home);
    if (!hh.ok) {
      throw new SbxError("permission", `your home ${spec.hostUser.home} has mode ${hh.mode}: a sandbox user could read it`, {
        hint: `Run \`chmod 700 ${spec.hostUser.home}\` (every macOS account is in group staff), then retry.`,
      });
    }

    // Identity: the host's group, then the guest with a UID nobody holds.
    const users = await this.users();
    const groups = parseDsclList((await this.run([BIN.dscl, ".", "-list", "/Groups", "PrimaryGroupID"])).stdout);
    // IDs held in any directory node (a network account's UID would own the guest's files), not only the local one.
    const search = async (kind: string, attr: string) => parseDsclList((await this.run([BIN.dscl, "/Search", "-list", kind, attr], { check: false })).stdout);
    const taken = new Set<number>([...users.values(), ...groups.values(), ...(await search("/Users", "UniqueID")).values(), ...(await search("/Groups", "PrimaryGroupID")).values()]);
    // UIDs whose files outlived their account (the root helper holds them until they are gone): a new guest would own them.
    for (const uid of await this.heldUids()) taken.add(uid);
    const gid = groups.get(hostGroup(this.host)) ?? pickId(taken, this.range, "group id");
    taken.add(gid);
    did(await this.root.run({ op: "ensure-group", gid }));
    let uid = users.get(c.guest);
    if (uid === undefined) {
      uid = pickId(taken, this.range, "user id");
      did(await this.root.run({ op: "add-user", user: c.guest, uid, gid, sandbox: spec.name, repo: spec.repo }));
    } else if (!inRange(uid, this.range)) {
      throw new SbxError("conflict", `${c.guest} has UID ${uid}, outside sbx's range`, { hint: "Remove it with `sbx prune`, then retry." });
    }
    const rec = parseDsclRecord(
      (await this.run([BIN.dscl, ".", "-read", `/Users/${c.guest}`, "UniqueID", "PrimaryGroupID", "UserShell", "IsHidden"])).stdout,
    );
    if (rec.get("UniqueID") !== String(uid)) throw new SbxError("conflict", `${c.guest} reads back with UID ${rec.get("UniqueID")}, expected ${uid}`);
    const want: [("IsHidden" | "UserShell" | "PrimaryGroupID"), string][] = [
      ["IsHidden", "1"],
      ["UserShell", RUNNING_SHELL],
      ["PrimaryGroupID", String(gid)],
    ];
    for (const [attr, value] of want) {
      if (rec.get(attr) !== value) did(await this.root.run({ op: "set-user", user: c.guest, attr, value }));
    }

    // Home: 700, hidden, the host's inheritable ACL.
    const home = await this.ls(c.home, true);
    const homeOk =
      home !== null && home.mode === 0o700 && (home.flags ?? "").split(",").includes("hidden") && aclGrants(home.acl, `user:${this.host}`, HOST_HOME_PERMS);
    if (!homeOk) did(await this.root.run({ op: "secure-home", user: c.guest }));

    // The guards before anything runs as the guest (its clone and provisioning included): pf on with our token, the
    // anchor loaded. Checked on every apply.
    did(await this.root.run({ op: "pf-enable", uid }));
    did(await this.root.run({ op: "pf-load", user: c.guest, uid, port: c.port }));

    // The read-only path: a host-owned mirror outside the host's home; the guest may only read it.
    did(await this.root.run({ op: "ensure-share" }));
    // Made empty and filled with the person's branches only: a `clone --mirror` would copy every ref, other
    // sandboxes' `sandbox-*` commits included, where this guest can read them.
    if ((await this.ls(c.mirror)) === null) {
      await this.run([BIN.git, "init", "--bare", "--quiet", "--", c.mirror], { env: { GIT_CONFIG_NOSYSTEM: "1", GIT_TERMINAL_PROMPT: "0" } });
      await this.run(mirrorFetchArgv({ hostRepo: spec.repo, mirror: c.mirror }), { env: hostGitEnv(), replaceEnv: true });
      changed = true;
    }
    await this.grant(c.share, `user:${c.guest}`, ["search"], false) && (changed = true);
    await this.grant(c.mirror, `user:${c.guest}`, MIRROR_PERMS, true) && (changed = true);

    // Workspace: the guest's own shared clone of the mirror (alternates → the mirror's objects).
    if ((await this.asGuest(c.guest, [BIN.test, "-d", `${c.workspace}/.git`], { check: false })).exitCode !== 0) {
      // The clone checks out the mirror's HEAD: make it the branch the person is on (a bare init names its own default,
      // `master` unless configured, and the clone would check out nothing).
      const head = await this.run([BIN.git, ...HOST_GIT_SAFE, "-C", spec.repo, "symbolic-ref", "-q", "HEAD"], { env: hostGitEnv(), replaceEnv: true, check: false });
      const ref = head.stdout.trim();
      if (head.exitCode === 0 && /^refs\/heads\/[^\s]+$/.test(ref)) {
        await this.run([BIN.git, ...HOST_GIT_SAFE, "-C", c.mirror, "symbolic-ref", "HEAD", ref], { env: hostGitEnv(), replaceEnv: true });
      }
      // The mirror is the host user's, and git (>= 2.39.4; Apple's is 2.39.5) refuses to clone another user's repo
      // ("dubious ownership") in the upload-pack it runs for a local clone; `-c safe.directory` on clone does not reach
      // it, the upload-pack command does. Only this one read: afterwards the clone reaches the mirror through its
      // alternates, which git reads without the check.
      await this.asGuest(c.guest, [BIN.git, "clone", "--quiet", "--shared", "--upload-pack", `${BIN.git} -c safe.directory=${shQuote(c.mirror)} upload-pack`, "--", c.mirror, c.workspace]);
      changed = true;
    }

    // Provisioning: rc files and shims, rewritten only when their rendering changed.
    if (await this.provision(c)) changed = true;

    // Bridge socket: only this guest may traverse to it and connect.
    if (await this.grantSockets(c)) changed = true;

    return { changed };
  }

  /** runs: ls -lde <path>; chmod [-R] +a "<who> allow <perms>" <path> (when missing). Returns whether it changed. */
  private async grant(path: string, who: string, perms: string[], recursive: boolean): Promise<boolean> {
    const e = await this.ls(path);
    if (e === null) throw new SbxError("internal", `${path} vanished while applying`);
    if (aclGrants(e.acl, who, perms)) return false;
    await this.run([BIN.chmod, ...(recursive ? ["-R"] : []), "+a", `${who} allow ${perms.join(",")}`, path]);
    return true;
  }

  /** The files a guest home gets; the stamp is a hash of all of them. */
  homeFiles(c: Pick<Ctx, "spec" | "home" | "port">): { files: HomeFile[]; stamp: string } {
    // The spec's environment (drivers/env.ts: proxy, LLM and bridge variables), as every kind gets it.
    const env = c.spec.env;
    const files = [
      ...renderZshRc({ home: c.home, sandbox: c.spec.name, env, lastDir: `${this.agentsDir}/bin` }),
      // binDir: the git shim must skip ~/bin (its own wrapper) when it looks for the real git on PATH.
      ...renderShimWrappers({ runtime: this.cfg.runtime, shimDir: this.cfg.shimDir, binDir: `${c.home}/bin` }),
    ];
    const stamp = sha256Hex(JSON.stringify(files));
    return { files, stamp };
  }

  /** runs (as the guest): cat ~/.sbx/provisioned; mkdir -p ~/bin ~/.sbx; tee <file>; chmod <mode> <file> */
  private async provision(c: Ctx): Promise<boolean> {
    const { files, stamp } = this.homeFiles(c);
    const stampFile = `${c.home}/.sbx/provisioned`;
    const cur = await this.asGuest(c.guest, [BIN.cat, stampFile], { check: false });
    if (cur.exitCode === 0 && cur.stdout.trim() === stamp) return false;
    const dirs = [...new Set([`${c.home}/.sbx`, ...files.map((f) => dirname(`${c.home}/${f.path}`))])].sort();
    await this.asGuest(c.guest, [BIN.mkdir, "-p", ...dirs]);
    for (const f of files) {
      const p = `${c.home}/${f.path}`;
      await this.asGuest(c.guest, [BIN.tee, p], { stdin: f.content });
      await this.asGuest(c.guest, [BIN.chmod, f.mode.toString(8), p]);
    }
    await this.asGuest(c.guest, [BIN.tee, stampFile], { stdin: `${stamp}\n` });
    return true;
  }

  private socketChain(c: Ctx): string[] {
    const dir = c.spec.sockets.dir;
    const chain: string[] = [];
    for (let d = dir; d.startsWith(this.cfg.runtimeDir) && d.length >= this.cfg.runtimeDir.length; d = dirname(d)) chain.unshift(d);
    return chain;
  }

  /** runs: ls -lde <dir>; mkdir -p -m 700 <dir>; chmod +a "user:<guest> allow search" <each dir>; chmod +a "… read,write" <bridge.sock> */
  private async grantSockets(c: Ctx): Promise<boolean> {
    let changed = false;
    if ((await this.ls(c.spec.sockets.dir)) === null) {
      await this.run([BIN.mkdir, "-p", "-m", "700", c.spec.sockets.dir]);
      changed = true;
    }
    for (const d of this.socketChain(c)) if (await this.grant(d, `user:${c.guest}`, ["search"], false)) changed = true;
    const sock = await this.ls(c.spec.sockets.bridge);
    if (sock !== null && !aclGrants(sock.acl, `user:${c.guest}`, ["read", "write"])) {
      await this.run([BIN.chmod, "+a", `user:${c.guest} allow read,write`, c.spec.sockets.bridge]);
      changed = true;
    }
    return changed;
  }

  /** The guest's clone (where the bridge finds its workspace and ref sync reads its refs). Pure. */
  workspace(spec: SandboxSpec): string {
    return this.ctx(spec).workspace;
  }

  /** Exactly what the guest's clone's alternates say: the host-owned mirror's objects. Pure. */
  expectedAlternates(spec: SandboxSpec): string {
    return `${this.ctx(spec).mirror}/objects\n`;
  }

  /** The host-owned mirror the guest's clone borrows objects from (its alternates). Pure. */
  mirror(spec: SandboxSpec): string {
    return this.ctx(spec).mirror;
  }

  /**
   * Host → clone, step 1 (host side, any time): bring the host's branches and their objects into the host-owned
   * mirror, so the guest's clone can reach them through its alternates. Runs as the host user with the hardened env
   * (no system/global config), in a repo no guest can write. `exec` is the host user's (the daemon's by default).
   * runs: git -c core.fsmonitor=false -c core.hooksPath=/dev/null … -C <mirror> fetch --quiet --no-tags … -- <host repo> +refs/heads/*:refs/heads/*
   */
  updateMirror(spec: SandboxSpec, exec: Exec = this.exec): Promise<ExecResult> {
    const c = this.ctx(spec);
    return exec.run(mirrorFetchArgv({ hostRepo: spec.repo, mirror: c.mirror }), { env: hostGitEnv(), replaceEnv: true, check: false, timeoutMs: 120_000 });
  }

  /**
   * git as the guest in its clone (how the host reads a clone: never itself), hooks and fsmonitor off. Pure.
   * runs: sudo -n -H -u <guest> /usr/bin/git -c core.hooksPath=/dev/null -c core.fsmonitor=false -C <workspace> …
   */
  guestGitArgv(spec: SandboxSpec, args: string[]): string[] {
    const c = this.ctx(spec);
    return [BIN.sudo, "-n", "-H", "-u", c.guest, BIN.git, ...SANDBOX_GIT_SAFE, "-C", c.workspace, ...args];
  }

  /** This host user's guests by UID → sandbox id (what the pflog monitor maps a blocked packet's anchor to). runs: dscl . -list /Users UniqueID */
  async guestUids(): Promise<Map<number, string>> {
    const out = new Map<number, string>();
    for (const [user, uid] of await this.users()) {
      const id = parseGuestUser(this.host, user);
      if (id !== null && inRange(uid, this.range)) out.set(uid, id);
    }
    return out;
  }

  /** The argv the daemon runs after it (re)binds a bridge socket, so its guest alone may connect. Pure. */
  bridgeSocketAclArgv(spec: SandboxSpec): string[] {
    return [BIN.chmod, "+a", `user:${guestUser(this.host, spec.id)} allow read,write`, spec.sockets.bridge];
  }

  /**
   * After a reboot or a pf.conf reload: take a pf token and re-load each sandbox's anchor. Idempotent.
   * runs (through the root helper): pfctl -s info / -s References / -E; pfctl -a com.apple/sbx_<uid> -s rules / -f
   */
  /** Before host → clone: the mirror gets the host's branches first (as the host user). */
  beforeHostRefs(spec: SandboxSpec, hostExec: Exec): Promise<ExecResult> {
    return this.updateMirror(spec, hostExec);
  }

  /** At daemon start: every anchor back (an anchor only ever lets its guest reach its proxy port). */
  async restoreBlockAll(specs: readonly SandboxSpec[]): Promise<number> {
    return (await this.reapply(specs)).changed ? specs.length : 0;
  }

  /**
   * What is wrong with pf for these sandboxes right now, as the person should read it ([] when nothing): pf switched off
   * (`pfctl -d` drops every enable token, sbx's too), or an anchor of a sandbox whose account exists gone (a pf.conf
   * reload). Sandboxes without an account have nothing to guard.
   * runs: dscl . -list /Users UniqueID; (root) pfctl -s info / -s References / -a com.apple -s Anchors; ls <pf state>
   */
  async pfProblems(specs: readonly SandboxSpec[]): Promise<string[]> {
    const users = await this.users();
    const live = specs.flatMap((spec) => {
      const uid = users.get(guestUser(this.host, spec.id));
      return uid !== undefined && inRange(uid, this.range) ? [{ spec, uid }] : [];
    });
    if (live.length === 0) return [];
    const st = z.object({ enabled: z.boolean(), anchors: z.array(z.number()) }).parse(JSON.parse((await this.root.run({ op: "pf-state" })).out));
    const out: string[] = [];
    if (!st.enabled) out.push("pf is disabled");
    for (const { spec, uid } of live) if (!st.anchors.includes(uid)) out.push(`the pf anchor of sandbox ${spec.name} (${anchorName(uid)}) is gone`);
    return out;
  }

  async reapply(specs: readonly SandboxSpec[]): Promise<Change> {
    let changed = false;
    const users = await this.users();
    for (const spec of specs) {
      const c = this.ctx(spec);
      const uid = users.get(c.guest);
      if (uid === undefined) continue;
      changed = (await this.root.run({ op: "pf-enable", uid })).changed || changed;
      changed = (await this.root.run({ op: "pf-load", user: c.guest, uid, port: c.port })).changed || changed;
    }
    return { changed };
  }

  /**
   * No new logins (shell false), then everything of the guest ended: its launchd domain, its crontab, every process
   * (waited for). The account, clone and pf rules stay (fail-closed).
   * runs: dscl . -read /Users/<guest> UserShell; then (root) dscl . -create … UserShell /usr/bin/false; launchctl bootout user/<uid>; crontab -u <guest> -r; pkill/pgrep -U <uid>
   */
  async stop(spec: SandboxSpec): Promise<Change> {
    const guest = guestUser(this.host, spec.id);
    const r = await this.run([BIN.dscl, ".", "-read", `/Users/${guest}`, "UserShell"], { check: false });
    if (r.exitCode !== 0) return { changed: false };
    if (parseDsclRecord(r.stdout).get("UserShell") === STOPPED_SHELL) return { changed: false };
    await this.root.run({ op: "set-user", user: guest, attr: "UserShell", value: STOPPED_SHELL });
    await this.root.run({ op: "kill-user", user: guest });
    return { changed: true };
  }

  async remove(spec: SandboxSpec): Promise<Change> {
    const guest = guestUser(this.host, spec.id);
    let changed = false;
    const r = await this.run([BIN.dscl, ".", "-read", `/Users/${guest}`, "UniqueID"], { check: false });
    const uid = r.exitCode === 0 ? Number(parseDsclRecord(r.stdout).get("UniqueID")) : undefined;
    if (uid !== undefined && Number.isInteger(uid)) {
      await this.root.run({ op: "kill-user", user: guest });
      // Drop the guest's ACEs while its name still resolves.
      const share = shareDir({ shareRoot: this.shareRoot }, this.host);
      const mirror = `${share}/${key(spec.repo)}.git`;
      await this.run([BIN.chmod, "-R", "-a", `user:${guest} allow ${MIRROR_PERMS.join(",")}`, mirror], { check: false });
      await this.run([BIN.chmod, "-a", `user:${guest} allow search`, share], { check: false });
      for (const d of this.socketChainFor(spec)) await this.run([BIN.chmod, "-a", `user:${guest} allow search`, d], { check: false });
      if (inRange(uid, this.range)) await this.root.run({ op: "pf-unload", uid });
      changed = true;
    }
    if ((await this.root.run({ op: "delete-user", user: guest })).changed) changed = true;
    if (await this.removeSockets(spec.sockets.dir)) changed = true;
    return { changed };
  }

  private socketChainFor(spec: SandboxSpec): string[] {
    // Only the dirs above the sandbox's own (which is deleted whole): <runtime>, <runtime>/sb.
    const out: string[] = [];
    for (let d = dirname(spec.sockets.dir); d.startsWith(this.cfg.runtimeDir) && d.length >= this.cfg.runtimeDir.length; d = dirname(d)) out.unshift(d);
    return out;
  }

  /** runs: test -e <dir>; rm -rf <dir> */
  private async removeSockets(dir: string): Promise<boolean> {
    if ((await this.run([BIN.test, "-e", dir], { check: false })).exitCode !== 0) return false;
    await this.run([BIN.rm, "-rf", dir]);
    return true;
  }

  /** runs: dscl . -read /Users/<guest> UniqueID UserShell */
  async inspect(spec: SandboxSpec): Promise<Observed> {
    const guest = guestUser(this.host, spec.id);
    const base = { id: spec.id, name: spec.name, repo: spec.repo };
    const r = await this.run([BIN.dscl, ".", "-read", `/Users/${guest}`, "UniqueID", "UserShell"], { check: false });
    if (r.exitCode !== 0) return { ...base, phase: "absent", detail: {} };
    const rec = parseDsclRecord(r.stdout);
    const uid = rec.get("UniqueID") ?? "";
    return {
      ...base,
      phase: rec.get("UserShell") === RUNNING_SHELL ? "running" : "stopped",
      detail: { user: guest, uid, home: `${this.usersDir}/${guest}`, anchor: anchorName(Number(uid)), ...(spec.options.driver === "user" ? { proxyPort: String(spec.options.proxyPort) } : {}) },
    };
  }

  /** runs: dscl . -list /Users UniqueID; dscl . -read /Users/<guest> UniqueID UserShell RealName Comment (each guest) */
  async list(): Promise<Observed[]> {
    const out: Observed[] = [];
    for (const [user, uid] of [...(await this.users())].sort(([a], [b]) => a.localeCompare(b))) {
      const id = parseGuestUser(this.host, user);
      if (id === null) continue;
      const r = await this.run([BIN.dscl, ".", "-read", `/Users/${user}`, "UniqueID", "UserShell", "RealName", "Comment"], { check: false });
      const rec = parseDsclRecord(r.stdout);
      out.push({
        id,
        name: (rec.get("RealName") ?? "").replace(/^sbx /, ""),
        repo: rec.get("Comment") ?? "",
        phase: r.exitCode !== 0 ? "absent" : rec.get("UserShell") === RUNNING_SHELL ? "running" : "stopped",
        detail: { user, uid: String(uid) },
      });
    }
    return out;
  }

  async cleanup(keep: ReadonlySet<string>, opts: { dryRun?: boolean } = {}): Promise<CleanupReport> {
    const removed: string[] = [];
    const dry = opts.dryRun === true;
    const users = await this.users();
    const uidOwner = new Map([...users].map(([u, n]) => [n, u]));
    const handledUids = new Set<number>();

    // 1. Guest users of this host whose sandbox is not kept (also those a failed create left half-made).
    for (const [user, uid] of [...users].sort(([a], [b]) => a.localeCompare(b))) {
      const id = parseGuestUser(this.host, user);
      if (id === null || keep.has(id)) continue;
      removed.push(`user ${user} (uid ${uid}) of sandbox ${id}`);
      handledUids.add(uid);
      if (dry) continue;
      await this.root.run({ op: "kill-user", user });
      if (inRange(uid, this.range)) await this.root.run({ op: "pf-unload", uid });
      await this.root.run({ op: "delete-user", user });
    }

    // 2. Anchors and recorded pf state of UIDs no account holds any more (or that an orphan above held).
    const pf = z
      .object({ anchors: z.array(z.number()), files: z.array(z.number()) })
      .parse(JSON.parse((await this.root.run({ op: "pf-state" })).out));
    for (const uid of [...new Set([...pf.anchors, ...pf.files])].sort((a, b) => a - b)) {
      if (handledUids.has(uid) || !inRange(uid, this.range)) continue;
      const owner = uidOwner.get(uid);
      if (owner !== undefined) continue; // a live account's anchor: kept (ours) or someone else's
      removed.push(`pf anchor ${anchorName(uid)} (uid ${uid}, no account; sandbox unknown)`);
      if (!dry) await this.root.run({ op: "pf-unload", uid });
    }

    // 3. Homes left without an account.
    const ls = await this.run([BIN.ls, this.usersDir], { check: false });
    for (const name of ls.stdout.split("\n").map((s) => s.trim()).filter((s) => s.startsWith(guestPrefix(this.host))).sort()) {
      const id = parseGuestUser(this.host, name);
      if (id === null || keep.has(id) || users.has(name)) continue;
      removed.push(`home ${this.usersDir}/${name} of sandbox ${id}`);
      if (!dry) await this.root.run({ op: "delete-user", user: name });
    }

    // 4. Socket dirs of sandboxes that are not kept.
    const sb = `${this.cfg.runtimeDir}/sb`;
    const socks = await this.run([BIN.ls, sb], { check: false });
    for (const id of socks.stdout.split("\n").map((s) => s.trim()).filter((s) => /^[a-z0-9]+$/.test(s)).sort()) {
      if (keep.has(id)) continue;
      removed.push(`sockets ${sb}/${id} of sandbox ${id}`);
      if (!dry) await this.run([BIN.rm, "-rf", `${sb}/${id}`]);
    }
    return { removed };
  }

  /**
   * A session of the guest's own, spawned by sbx under its own PTY. Pure.
   * runs: sudo -n /usr/bin/su - <guest> -f -c 'umask 077; [ulimit -u N;] cd -- <dir> && exec sandbox-exec -p <profile> env K=V… zsh -l -c "exec \"\$@\"" sbx-enter <cmd>'
   *
   * `su -` as root (pam_launchd) puts the guest in a login session and bootstrap namespace of its own: `sudo -u` keeps
   * the caller's, where `open`, LaunchServices and the pasteboard act as the person, outside pf's uid rule. `-f` goes to
   * the guest's shell (zsh: no rc file of the guest's runs before the profile is in force); su - keeps none of the
   * person's environment. The Seatbelt profile (render.ts) is inline, so no file a guest could change.
   */
  shellArgv(spec: SandboxSpec, req: ShellRequest): string[] {
    const c = this.ctx(spec);
    const cwd = req.cwd === spec.repo ? c.workspace : req.cwd.startsWith(`${spec.repo}/`) ? c.workspace + req.cwd.slice(spec.repo.length) : c.workspace;
    // sbx's variables for this sandbox (proxy, LLM, bridge) and the caller's terminal ones; the guest's login shell,
    // started under the profile, then reads its rc files (PATH with the shims first), as every kind's shell does.
    const env = Object.entries({ ...spec.env, ...req.env })
      .filter(([k]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([k, v]) => `${k}=${v}`);
    const cmd = req.argv.length > 0 ? req.argv : [RUNNING_SHELL, "-l"];
    // The process limit as the guest's RLIMIT_NPROC, soft and hard (it counts the guest uid's processes, which are
    // this sandbox's alone); the guest cannot raise it again. macOS enforces no memory rlimit and has no CPU quota.
    const pids = spec.limits?.pids;
    const limit = typeof pids === "number" ? `ulimit -u ${pids} || exit 125; ` : "";
    const profile = renderSeatbelt({ port: c.port, sockets: [realPath(spec.sockets.bridge)], home: c.home });
    const run = [BIN.sandboxExec, "-p", profile, "/usr/bin/env", ...env, RUNNING_SHELL, "-l", "-c", 'exec "$@"', "sbx-enter", ...cmd].map(shQuote).join(" ");
    return [BIN.sudo, "-n", BIN.su, "-", c.guest, "-f", "-c", `umask 077; ${limit}cd -- ${shQuote(cwd)} || exit 1; exec ${run}`];
  }
}
