// The one narrow root module of the macOS backend: validated requests that create/remove guest users and load pf anchors.
//
// The daemon runs as the host user and reaches this module through `sudo -n <bun> <privileged.js> '<json>'` (sudo-root.ts)
// (sudoers rule from render.ts). As root, `helperMain` checks every request against the invoking user
// (SUDO_USER): it only touches users named `sbx_<that user>_<id>` with UIDs in the reserved range, anchors of
// those UIDs, and rules it renders itself. Tests run the same `runRootOp` directly on a fake executor.
import { randomBytes } from "node:crypto";
import { z } from "zod";
import { SbxError, isSbxError, toSbxError } from "../../core/errors";
import { createExec, type Exec, type ExecOptions } from "../../sys/exec";
import { anchorName, guestPrefix, hostGroup, hostTag, inRange, parseGuestUser, type IdRange, DEFAULT_UID_RANGE } from "./naming";
import { parseDsclList, parseDsclRecord, parsePfAnchors, parsePfEnabled, parsePfReferences, parsePfToken } from "./parse";
import { BIN } from "./bin";
import { renderPfAnchor } from "./render";

export { BIN };

/** Shells a guest may have: zsh when running, false when stopped (no logins). */
export const RUNNING_SHELL = "/bin/zsh";
export const STOPPED_SHELL = "/usr/bin/false";

/** What the host user gets on a guest home, inherited by everything the guest creates (so sbx can read the workspace). */
export const HOST_HOME_PERMS = [
  "list", "add_file", "search", "delete", "add_subdirectory", "delete_child",
  "readattr", "writeattr", "readextattr", "writeextattr", "readsecurity",
  "file_inherit", "directory_inherit",
];

const user = z.string().regex(/^sbx_[a-z0-9]{1,16}_[a-z0-9]{1,20}$/, "not an sbx guest user name");
const id = z.number().int().positive();
const line = z.string().min(1).max(1024).refine((s) => !/[\n\r\0]/.test(s), "must be one line");

export const RootOpSchema = z.discriminatedUnion("op", [
  z.strictObject({ op: z.literal("ensure-group"), gid: id }),
  z.strictObject({ op: z.literal("ensure-share") }),
  z.strictObject({ op: z.literal("add-user"), user, uid: id, gid: id, sandbox: line, repo: line }),
  z.strictObject({
    op: z.literal("set-user"),
    user,
    attr: z.enum(["IsHidden", "UserShell", "PrimaryGroupID", "Password", "Comment"]),
    value: line,
  }),
  z.strictObject({ op: z.literal("secure-home"), user }),
  z.strictObject({ op: z.literal("kill-user"), user }),
  z.strictObject({ op: z.literal("delete-user"), user }),
  z.strictObject({ op: z.literal("pf-enable"), uid: id }),
  z.strictObject({ op: z.literal("pf-load"), user, uid: id, port: z.number().int().min(1024).max(65535) }),
  z.strictObject({ op: z.literal("pf-unload"), uid: id }),
  z.strictObject({ op: z.literal("pf-state") }),
  z.strictObject({ op: z.literal("reapply-all") }),
]);
export type RootOp = z.infer<typeof RootOpSchema>;

export interface RootResult {
  changed: boolean;
  /** Op-specific output (JSON for pf-state). */
  out: string;
}

export interface RootRunner {
  run(op: RootOp): Promise<RootResult>;
}

export interface RootContext {
  /** The host user the request is for (SUDO_USER in the helper); null only for `reapply-all` from launchd. */
  hostUser: string | null;
  uidRange: IdRange;
  /** Root-owned state: pf rules and enable tokens per UID, re-loaded at boot. */
  stateDir: string;
  /** Parent of the per-host read-only share dirs (mirrors the guests' alternates point at). */
  shareRoot: string;
  usersDir: string;
  /** A throwaway password for sysadminctl (replaced by `*` at once). */
  secret: () => string;
  /** Shared dirs where a guest leaves files outside its home (temp dirs, per-user caches): swept when it is deleted. */
  tmpRoots: readonly string[];
  /** cron's and at's deny lists: a guest is in them from its creation (their jobs would run outside its session and profile). */
  denyLists: readonly string[];
  /** Waits between looks for a guest's last processes (tests: no wait). */
  sleep?: (ms: number) => Promise<void>;
}

export const DEFAULT_ROOT_CONTEXT: Omit<RootContext, "hostUser"> = {
  uidRange: DEFAULT_UID_RANGE,
  stateDir: "/private/var/db/sbx",
  shareRoot: "/private/var/sbx",
  usersDir: "/Users",
  secret: () => randomBytes(24).toString("base64url"),
  tmpRoots: ["/private/tmp", "/private/var/tmp", "/private/var/folders", "/Users/Shared"],
  denyLists: ["/usr/lib/cron/cron.deny", "/usr/lib/cron/at.deny"],
};

/** Root-owned, world-readable: one empty file per UID whose files outlived its account (never given out again until they are gone). */
export function heldDir(ctx: Pick<RootContext, "stateDir">): string {
  return `${ctx.stateDir}/held`;
}

/** How long sysadminctl may take to add an account (it has been seen to hang after writing the record). */
export const SYSADMINCTL_TIMEOUT_MS = 60_000;

const unchanged = (out = ""): RootResult => ({ changed: false, out });
const changed = (out = ""): RootResult => ({ changed: true, out });

/** The host user's share dir: mirrors of its repos, readable by its guests through ACLs only. */
export function shareDir(ctx: Pick<RootContext, "shareRoot">, hostUser: string): string {
  return `${ctx.shareRoot}/${hostTag(hostUser)}`;
}

function pfFiles(ctx: RootContext, uid: number) {
  const dir = `${ctx.stateDir}/pf`;
  return { dir, conf: `${dir}/sbx_${uid}.conf`, token: `${dir}/sbx_${uid}.token` };
}

class Ops {
  constructor(
    private readonly exec: Exec,
    private readonly ctx: RootContext,
  ) {}

  private run(argv: string[], opts: ExecOptions = {}) {
    return this.exec.run(argv, opts);
  }

  private host(): string {
    if (this.ctx.hostUser === null) {
      throw new SbxError("permission", "this request needs the invoking user (SUDO_USER)", {
        hint: "Run it through `sudo -n` as the host user, as sbx does.",
      });
    }
    return this.ctx.hostUser;
  }

  /** Refuses any user that is not one of the invoking host user's guests. */
  private mine(u: string): string {
    if (parseGuestUser(this.host(), u) === null) {
      throw new SbxError("permission", `refusing to touch user '${u}': not a sandbox user of ${this.host()} (${guestPrefix(this.host())}…)`);
    }
    return u;
  }

  private range(n: number, what: string): number {
    if (!inRange(n, this.ctx.uidRange)) {
      throw new SbxError("permission", `refusing ${what} ${n}: outside sbx's reserved range ${this.ctx.uidRange.min}–${this.ctx.uidRange.max}`);
    }
    return n;
  }

  /** runs: dscl . -list /Users UniqueID */
  private async users(): Promise<Map<string, number>> {
    return parseDsclList((await this.run([BIN.dscl, ".", "-list", "/Users", "UniqueID"])).stdout);
  }

  /** Every directory node's records (local, LDAP, AD: `/Search`), for ID collisions. runs: dscl /Search -list <kind> <attr> */
  private async searchList(kind: "/Users" | "/Groups", attr: string): Promise<Map<string, number>> {
    const r = await this.run([BIN.dscl, "/Search", "-list", kind, attr], { check: false });
    return r.exitCode === 0 ? parseDsclList(r.stdout) : new Map();
  }

  /** A UID's anchor may be touched when no user holds it, or one of this host's guests (exactly `want`, if given) does. */
  private async uidIsMine(uid: number, want?: string): Promise<void> {
    this.range(uid, "UID");
    const owner = [...(await this.users())].find(([, u]) => u === uid)?.[0];
    if (owner === undefined && want === undefined) return;
    if (owner !== undefined && (want === undefined ? parseGuestUser(this.host(), owner) !== null : owner === want)) return;
    throw new SbxError("permission", `refusing pf changes for UID ${uid}: it belongs to ${owner ?? "nobody"}, not ${want ?? `a sandbox user of ${this.host()}`}`);
  }

  /** runs: dscl . -read /Groups/sbx_<host> PrimaryGroupID; dscl . -create /Groups/sbx_<host> … */
  async ensureGroup(gid: number): Promise<RootResult> {
    const g = hostGroup(this.host());
    this.range(gid, "GID");
    const r = await this.run([BIN.dscl, ".", "-read", `/Groups/${g}`, "PrimaryGroupID"], { check: false });
    if (r.exitCode === 0) {
      const have = parseDsclRecord(r.stdout).get("PrimaryGroupID");
      if (have === String(gid)) return unchanged();
      throw new SbxError("conflict", `group ${g} exists with GID ${have}, not ${gid}`, { hint: "Run `sbx prune`, then retry." });
    }
    const groups = parseDsclList((await this.run([BIN.dscl, ".", "-list", "/Groups", "PrimaryGroupID"])).stdout);
    const everywhere = [...groups.values(), ...(await this.searchList("/Groups", "PrimaryGroupID")).values()];
    if (everywhere.includes(gid)) throw new SbxError("conflict", `GID ${gid} is already taken by another group`);
    await this.run([BIN.dscl, ".", "-create", `/Groups/${g}`]);
    await this.run([BIN.dscl, ".", "-create", `/Groups/${g}`, "PrimaryGroupID", String(gid)]);
    await this.run([BIN.dscl, ".", "-create", `/Groups/${g}`, "RealName", `sbx sandboxes of ${this.host()}`]);
    await this.run([BIN.dscl, ".", "-create", `/Groups/${g}`, "Password", "*"]);
    return changed();
  }

  /** runs: stat -f %Su <share>; mkdir -p <shareRoot>; mkdir -m 700 <share>; chown <host> <share> */
  async ensureShare(): Promise<RootResult> {
    const dir = shareDir(this.ctx, this.host());
    const r = await this.run([BIN.stat, "-f", "%Su", dir], { check: false });
    if (r.exitCode === 0) {
      if (r.stdout.trim() === this.host()) return unchanged(dir);
      throw new SbxError("conflict", `${dir} exists but belongs to ${r.stdout.trim()}`, { hint: `Remove ${dir} (sudo rm -rf) and retry.` });
    }
    await this.run([BIN.mkdir, "-p", "-m", "755", this.ctx.shareRoot]);
    await this.run([BIN.mkdir, "-m", "700", dir]);
    await this.run([BIN.chown, this.host(), dir]);
    return changed(dir);
  }

  /**
   * runs: sysadminctl -addUser <u> -fullName … -UID <uid> -GID <gid> -shell /bin/zsh -home /Users/<u> -password <random>;
   * dscl . -read (verify); dscl . -create IsHidden 1 / Password * / Comment <repo>; dscl . -delete AuthenticationAuthority
   */
  async addUser(op: Extract<RootOp, { op: "add-user" }>): Promise<RootResult> {
    const u = this.mine(op.user);
    this.range(op.uid, "UID");
    this.range(op.gid, "GID");
    const users = await this.users();
    const have = users.get(u);
    if (have === op.uid) return unchanged();
    if (have !== undefined) throw new SbxError("conflict", `user ${u} exists with UID ${have}, not ${op.uid}`, { hint: "Run `sbx prune`, then retry." });
    // Every directory node, not only the local one: a network account (LDAP, AD) with this UID would own the guest's files.
    const holder = [...users, ...(await this.searchList("/Users", "UniqueID"))].find(([, n]) => n === op.uid)?.[0];
    if (holder !== undefined) {
      throw new SbxError("conflict", `UID ${op.uid} is already used by ${holder}`, { hint: "Another account took this UID meanwhile; retry and sbx picks a free one." });
    }
    await this.refuseHeld(op.uid);
    const home = `${this.ctx.usersDir}/${u}`;
    // sysadminctl has been seen to exit 0 after failing, and to hang after writing the record: it runs with a time
    // limit, the directory cache is flushed, and the record itself is what counts (looked for a few times: the
    // directory service may answer late).
    const add = await this.run(
      [BIN.sysadminctl, "-addUser", u, "-fullName", `sbx ${op.sandbox}`, "-UID", String(op.uid), "-GID", String(op.gid),
        "-shell", RUNNING_SHELL, "-home", home, "-password", this.ctx.secret()],
      { check: false, timeoutMs: SYSADMINCTL_TIMEOUT_MS },
    );
    await this.run([BIN.dscacheutil, "-flushcache"], { check: false });
    const sleep = this.ctx.sleep ?? ((ms: number) => Bun.sleep(ms));
    let rec = await this.run([BIN.dscl, ".", "-read", `/Users/${u}`, "UniqueID"], { check: false });
    for (let i = 0; i < 5 && rec.exitCode !== 0; i++) {
      await sleep(400);
      rec = await this.run([BIN.dscl, ".", "-read", `/Users/${u}`, "UniqueID"], { check: false });
    }
    if (rec.exitCode !== 0 || parseDsclRecord(rec.stdout).get("UniqueID") !== String(op.uid)) {
      throw new SbxError("exec_failed", `sysadminctl did not create ${u} with UID ${op.uid}: ${(add.stderr || add.stdout).trim().split("\n").slice(-2).join(" | ")}`, {
        hint: "Check `sudo sysadminctl -addUser` works on this Mac (MDM can forbid it); `sbx prune` removes what was left.",
      });
    }
    await this.run([BIN.dscl, ".", "-create", `/Users/${u}`, "IsHidden", "1"]);
    // No usable password: `*` matches no hash, and without AuthenticationAuthority there is no ShadowHash to try.
    await this.run([BIN.dscl, ".", "-create", `/Users/${u}`, "Password", "*"]);
    await this.run([BIN.dscl, ".", "-delete", `/Users/${u}`, "AuthenticationAuthority"], { check: false });
    await this.run([BIN.dscl, ".", "-create", `/Users/${u}`, "Comment", op.repo]);
    await this.denyJobs(u, true);
    return changed();
  }

  /**
   * A guest in (or out of) cron's and at's deny lists: a job they run starts outside the guest's session and Seatbelt
   * profile (crontab and at are setuid and read these lists; a copy of them is not). Idempotent.
   * runs: cat <list>; tee <list> (only when the line must be added or removed)
   */
  private async denyJobs(u: string, deny: boolean): Promise<boolean> {
    let did = false;
    for (const list of this.ctx.denyLists) {
      const cur = await this.readFile(list);
      const lines = (cur ?? "").split("\n").filter((l) => l !== "");
      const has = lines.includes(u);
      if (has === deny) continue;
      const next = deny ? [...lines, u] : lines.filter((l) => l !== u);
      await this.run([BIN.tee, list], { stdin: next.length ? `${next.join("\n")}\n` : "" });
      did = true;
    }
    return did;
  }

  /** runs: dscl . -create /Users/<u> <attr> <value> (only a fixed set of attributes and values) */
  async setUser(op: Extract<RootOp, { op: "set-user" }>): Promise<RootResult> {
    const u = this.mine(op.user);
    const ok =
      (op.attr === "IsHidden" && op.value === "1") ||
      (op.attr === "Password" && op.value === "*") ||
      (op.attr === "UserShell" && (op.value === RUNNING_SHELL || op.value === STOPPED_SHELL)) ||
      (op.attr === "PrimaryGroupID" && /^\d+$/.test(op.value) && inRange(Number(op.value), this.ctx.uidRange)) ||
      (op.attr === "Comment" && op.value.startsWith("/"));
    if (!ok) throw new SbxError("permission", `refusing to set ${op.attr}=${op.value} on ${u}`);
    await this.run([BIN.dscl, ".", "-create", `/Users/${u}`, op.attr, op.value]);
    return changed();
  }

  /** runs: test -d /Users/<u> (createhomedir -c -u <u>); chmod 700; chmod -R +a "user:<host> allow …"; chflags hidden */
  async secureHome(u0: string): Promise<RootResult> {
    const u = this.mine(u0);
    const home = `${this.ctx.usersDir}/${u}`;
    if ((await this.run([BIN.test, "-d", home], { check: false })).exitCode !== 0) {
      await this.run([BIN.createhomedir, "-c", "-u", u]);
    }
    await this.run([BIN.chmod, "700", home]);
    // -R: the folders the account came with (~/Library, ~/Desktop, … made before the entry existed, so they do not
    // inherit it) need it too, or the person cannot remove them with the sandbox. chmod -R follows no symlink (-P).
    await this.run([BIN.chmod, "-R", "+a", `user:${this.host()} allow ${HOST_HOME_PERMS.join(",")}`, home]);
    await this.run([BIN.chflags, "hidden", home]);
    return changed();
  }

  /**
   * Ends everything the guest runs, in the order that leaves it nothing to come back with: its launchd domain (agents
   * and jobs it loaded) booted out, its crontab removed, then every process killed until none is left (a killed
   * process's pid lingers until it is reaped). The account and pf stay.
   * runs: dscl . -read /Users/<u> UniqueID; launchctl bootout user/<uid>; crontab -u <u> -r; pkill -KILL -U <uid>; pgrep -U <uid> (until empty)
   */
  async endUser(u0: string): Promise<RootResult> {
    const u = this.mine(u0);
    const rec = await this.run([BIN.dscl, ".", "-read", `/Users/${u}`, "UniqueID"], { check: false });
    if (rec.exitCode !== 0) return unchanged();
    const uid = this.range(Number(parseDsclRecord(rec.stdout).get("UniqueID")), "UID");
    let did = false;
    // Exit 0 only when there was a domain (or a crontab) to remove.
    if ((await this.run([BIN.launchctl, "bootout", `user/${uid}`], { check: false })).exitCode === 0) did = true;
    if ((await this.run([BIN.crontab, "-u", u, "-r"], { check: false })).exitCode === 0) did = true;
    const sleep = this.ctx.sleep ?? ((ms: number) => Bun.sleep(ms));
    for (let i = 0; ; i++) {
      if ((await this.run([BIN.pkill, "-KILL", "-U", String(uid)], { check: false })).exitCode === 0) did = true;
      const left = await this.run([BIN.pgrep, "-U", String(uid)], { check: false });
      if (left.exitCode !== 0) break;
      if (i >= 100) {
        throw new SbxError("unavailable", `${u} still has processes after SIGKILL (${left.stdout.trim().split("\n").join(", ")})`, {
          hint: "They may be stuck in the kernel (a hung mount?). `ps -U <uid>` shows them; sbx keeps the account and its firewall until they are gone.",
        });
      }
      await sleep(100);
    }
    return did ? changed() : unchanged();
  }

  /**
   * The account, its home, and what its UID still owns in the shared temp dirs (a next guest with the same UID would
   * own it). A UID whose files cannot all be removed is held: never given out again until they are gone.
   * runs: sysadminctl -deleteUser <u>; dscl . -delete /Users/<u> (if sysadminctl left it); rm -rf /Users/<u>;
   *       find <tmp roots> -xdev -user <uid> -delete; find … -print (any left: tee <held>/<uid>)
   */
  async deleteUser(u0: string): Promise<RootResult> {
    const u = this.mine(u0);
    const home = `${this.ctx.usersDir}/${u}`;
    const read = () => this.run([BIN.dscl, ".", "-read", `/Users/${u}`, "UniqueID"], { check: false });
    const first = await read();
    const existed = first.exitCode === 0;
    const uid = existed ? Number(parseDsclRecord(first.stdout).get("UniqueID")) : null;
    if (existed) {
      await this.run([BIN.sysadminctl, "-deleteUser", u], { check: false });
      if ((await read()).exitCode === 0) await this.run([BIN.dscl, ".", "-delete", `/Users/${u}`]);
    }
    const homeLeft = (await this.run([BIN.test, "-e", home], { check: false })).exitCode === 0;
    if (homeLeft) await this.run([BIN.rm, "-rf", home]);
    const listed = await this.denyJobs(u, false);
    if (uid !== null && inRange(uid, this.ctx.uidRange)) {
      const left = await this.sweep(uid);
      if (left.length > 0) {
        await this.run([BIN.mkdir, "-p", "-m", "755", heldDir(this.ctx)]);
        await this.run([BIN.tee, `${heldDir(this.ctx)}/${uid}`], { stdin: left.slice(0, 20).join("\n") + "\n" });
      }
    }
    return existed || homeLeft || listed ? changed() : unchanged();
  }

  /** Removes what the UID owns in the shared temp dirs; returns what is left. runs: find <roots> -xdev -user <uid> -delete; find <roots> -xdev -user <uid> -print */
  private async sweep(uid: number): Promise<string[]> {
    const roots = [];
    for (const r of this.ctx.tmpRoots) if ((await this.run([BIN.test, "-d", r], { check: false })).exitCode === 0) roots.push(r);
    if (roots.length === 0) return [];
    await this.run([BIN.find, ...roots, "-xdev", "-user", String(uid), "-delete"], { check: false });
    const r = await this.run([BIN.find, ...roots, "-xdev", "-user", String(uid), "-print"], { check: false });
    return r.stdout.split("\n").filter((l) => l !== "");
  }

  /** A held UID is given out again only once a sweep finds nothing of it. runs: test -e <held>/<uid>; (sweep); rm -f <held>/<uid> */
  private async refuseHeld(uid: number): Promise<void> {
    const f = `${heldDir(this.ctx)}/${uid}`;
    if ((await this.run([BIN.test, "-e", f], { check: false })).exitCode !== 0) return;
    const left = await this.sweep(uid);
    if (left.length > 0) {
      throw new SbxError("conflict", `UID ${uid} still owns files of a removed sandbox (${left.slice(0, 3).join(", ")}${left.length > 3 ? ", …" : ""})`, {
        hint: "sbx does not give it to a new sandbox until they are gone; retry and it picks another UID.",
      });
    }
    await this.run([BIN.rm, "-f", f]);
  }

  private async pfStatus(): Promise<{ enabled: boolean; tokens: string[] }> {
    const info = await this.run([BIN.pfctl, "-s", "info"], { check: false });
    const refs = await this.run([BIN.pfctl, "-s", "References"], { check: false });
    return { enabled: parsePfEnabled(info.stdout), tokens: parsePfReferences(refs.stdout) };
  }

  private async readFile(path: string): Promise<string | null> {
    const r = await this.run([BIN.cat, path], { check: false });
    return r.exitCode === 0 ? r.stdout : null;
  }

  private async writeFile(path: string, content: string): Promise<void> {
    await this.run([BIN.mkdir, "-p", "-m", "700", path.slice(0, path.lastIndexOf("/"))]);
    await this.run([BIN.tee, path], { stdin: content });
  }

  /** runs: cat <token>; pfctl -s info; pfctl -s References; pfctl -E (token recorded); pfctl -X <stale token> */
  async pfEnableFor(uid: number): Promise<RootResult> {
    await this.ensurePflog();
    const f = pfFiles(this.ctx, uid);
    const old = (await this.readFile(f.token))?.trim() || null;
    const st = await this.pfStatus();
    if (st.enabled && old !== null && st.tokens.includes(old)) return unchanged(old);
    const en = await this.run([BIN.pfctl, "-E"], { check: false });
    const token = parsePfToken(`${en.stdout}\n${en.stderr}`);
    if (en.exitCode !== 0 || token === null) {
      throw new SbxError("unavailable", `pf could not be enabled: ${(en.stderr || en.stdout).trim() || `exit ${en.exitCode}`}`, {
        hint: "The sandbox stays without network until pf runs. Check `sudo pfctl -s info`; an MDM profile or another firewall may hold pf.",
      });
    }
    await this.writeFile(f.token, `${token}\n`);
    if (old !== null && st.tokens.includes(old)) await this.run([BIN.pfctl, "-X", old], { check: false });
    if (!parsePfEnabled((await this.run([BIN.pfctl, "-s", "info"], { check: false })).stdout)) {
      throw new SbxError("unavailable", "pf reports Disabled right after `pfctl -E`", {
        hint: "Something disables pf again (another firewall tool?). sbx will not run the sandbox without it.",
      });
    }
    return changed(token);
  }

  /**
   * pf's `log` rules write to pflog0, which a stock Mac does not have (xnu makes no instance at boot): without it the
   * blocked packets are dropped unlogged and the daemon's tcpdump of it fails for ever. Made once, as root.
   * runs: ifconfig pflog0 (exists?); ifconfig pflog0 create
   */
  private async ensurePflog(): Promise<void> {
    if ((await this.run([BIN.ifconfig, "pflog0"], { check: false })).exitCode === 0) return;
    const r = await this.run([BIN.ifconfig, "pflog0", "create"], { check: false });
    if (r.exitCode !== 0) {
      throw new SbxError("unavailable", `pflog0 could not be made: ${(r.stderr || r.stdout).trim() || `exit ${r.exitCode}`}`, {
        hint: "sbx logs what pf blocks through pflog0; check `sudo ifconfig pflog0 create` works on this Mac.",
      });
    }
  }

  private loaded(rules: string, uid: number, port?: number): boolean {
    return rules.includes(`user = ${uid}`) && (port === undefined || rules.includes(`port = ${port}`));
  }

  /** runs: cat <conf>; pfctl -a com.apple/sbx_<uid> -s rules; tee <conf>; pfctl -a com.apple/sbx_<uid> -f <conf> */
  async pfLoad(op: Extract<RootOp, { op: "pf-load" }>): Promise<RootResult> {
    const u = this.mine(op.user);
    await this.uidIsMine(op.uid, u);
    const rules = renderPfAnchor({ user: u, uid: op.uid, port: op.port });
    const f = pfFiles(this.ctx, op.uid);
    const a = anchorName(op.uid);
    const show = async () => (await this.run([BIN.pfctl, "-a", a, "-s", "rules"], { check: false })).stdout;
    if ((await this.readFile(f.conf)) === rules && this.loaded(await show(), op.uid, op.port)) return unchanged();
    await this.writeFile(f.conf, rules);
    await this.run([BIN.pfctl, "-a", a, "-f", f.conf]);
    if (!this.loaded(await show(), op.uid, op.port)) {
      throw new SbxError("unavailable", `pf did not keep the rules of anchor ${a}`, { hint: "Check `sudo pfctl -a com.apple -s Anchors` and /etc/pf.conf." });
    }
    return changed();
  }

  /** runs: pfctl -a com.apple/sbx_<uid> -s rules; pfctl -a … -F all; cat <token>; pfctl -X <token>; rm -f <conf> <token> */
  async pfUnload(uid: number, authorize = true): Promise<RootResult> {
    if (authorize) await this.uidIsMine(uid);
    const f = pfFiles(this.ctx, uid);
    const a = anchorName(uid);
    let did = false;
    const rules = (await this.run([BIN.pfctl, "-a", a, "-s", "rules"], { check: false })).stdout;
    if (rules.trim() !== "") {
      await this.run([BIN.pfctl, "-a", a, "-F", "all"]);
      did = true;
    }
    const token = (await this.readFile(f.token))?.trim() || null;
    const conf = await this.readFile(f.conf);
    if (token !== null) await this.run([BIN.pfctl, "-X", token], { check: false });
    if (token !== null || conf !== null) {
      await this.run([BIN.rm, "-f", f.conf, f.token]);
      did = true;
    }
    return did ? changed() : unchanged();
  }

  /** runs: pfctl -s info; pfctl -s References; pfctl -a com.apple -s Anchors; ls <stateDir>/pf */
  async pfState(): Promise<RootResult> {
    const st = await this.pfStatus();
    const anchors = parsePfAnchors((await this.run([BIN.pfctl, "-a", "com.apple", "-s", "Anchors"], { check: false })).stdout)
      .map((x) => /^com\.apple\/sbx_(\d+)$/.exec(x))
      .flatMap((m) => (m ? [Number(m[1])] : []));
    const ls = await this.run([BIN.ls, pfFiles(this.ctx, 0).dir], { check: false });
    const files = [...new Set(ls.stdout.split("\n").flatMap((n) => {
      const m = /^sbx_(\d+)\.(conf|token)$/.exec(n.trim());
      return m ? [Number(m[1])] : [];
    }))];
    return unchanged(JSON.stringify({ enabled: st.enabled, tokens: st.tokens, anchors, files }));
  }

  /** At boot / pf.conf reload: re-load every recorded anchor and take an enable token for it. runs: ls; pfctl -a … -f; pfctl -E */
  async reapplyAll(): Promise<RootResult> {
    const dir = pfFiles(this.ctx, 0).dir;
    const ls = await this.run([BIN.ls, dir], { check: false });
    let did = false;
    for (const n of ls.stdout.split("\n").map((s) => s.trim()).sort()) {
      const m = /^sbx_(\d+)\.conf$/.exec(n);
      if (!m) continue;
      const uid = Number(m[1]);
      if (!inRange(uid, this.ctx.uidRange)) continue;
      const f = pfFiles(this.ctx, uid);
      const a = anchorName(uid);
      const rules = (await this.run([BIN.pfctl, "-a", a, "-s", "rules"], { check: false })).stdout;
      if (!this.loaded(rules, uid)) {
        await this.run([BIN.pfctl, "-a", a, "-f", f.conf]);
        did = true;
      }
      if ((await this.pfEnableFor(uid)).changed) did = true;
    }
    return did ? changed() : unchanged();
  }
}

/** Executes one validated request. The helper runs this as root; tests run it on a fake executor. */
export async function runRootOp(exec: Exec, ctx: RootContext, raw: unknown): Promise<RootResult> {
  const parsed = RootOpSchema.safeParse(raw);
  if (!parsed.success) {
    throw new SbxError("usage", `bad privileged request: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  }
  const op = parsed.data;
  const o = new Ops(exec, ctx);
  switch (op.op) {
    case "ensure-group":
      return o.ensureGroup(op.gid);
    case "ensure-share":
      return o.ensureShare();
    case "add-user":
      return o.addUser(op);
    case "set-user":
      return o.setUser(op);
    case "secure-home":
      return o.secureHome(op.user);
    case "kill-user":
      return o.endUser(op.user);
    case "delete-user":
      return o.deleteUser(op.user);
    case "pf-enable":
      return o.pfEnableFor(op.uid);
    case "pf-load":
      return o.pfLoad(op);
    case "pf-unload":
      return o.pfUnload(op.uid);
    case "pf-state":
      return o.pfState();
    case "reapply-all":
      return o.reapplyAll();
  }
}

/** In-process runner (tests; or a daemon already running as root). */
export function directRoot(exec: Exec, ctx: RootContext): RootRunner {
  return { run: (op) => runRootOp(exec, ctx, op) };
}

export interface HelperIo {
  exec: Exec;
  /** SUDO_USER of the request; undefined when launchd runs the helper. */
  sudoUser: string | undefined;
  out: (s: string) => void;
  err: (s: string) => void;
  ctx?: Omit<RootContext, "hostUser">;
}

/** The root helper's entry: one JSON request in argv, one JSON result on stdout (or a wire error on stderr). */
export async function helperMain(args: readonly string[], io: HelperIo): Promise<number> {
  try {
    if (args.length !== 1) throw new SbxError("usage", "usage: privileged '<json request>'");
    let raw: unknown;
    try {
      raw = JSON.parse(args[0]!);
    } catch {
      throw new SbxError("usage", "the request is not JSON");
    }
    const isReapply = (raw as { op?: unknown } | null)?.op === "reapply-all";
    if (io.sudoUser === undefined && !isReapply) {
      throw new SbxError("permission", "the helper only serves requests made through sudo", { hint: "sbx runs it as `sudo -n …`." });
    }
    const ctx: RootContext = { ...(io.ctx ?? DEFAULT_ROOT_CONTEXT), hostUser: io.sudoUser ?? null };
    const res = await runRootOp(io.exec, ctx, raw);
    io.out(`${JSON.stringify(res)}\n`);
    return 0;
  } catch (e) {
    const err = isSbxError(e) ? e : toSbxError(e);
    io.err(`${JSON.stringify(err.toWire())}\n`);
    return err.exitCode;
  }
}

if (import.meta.main) {
  // Root must not inherit the caller's environment: a fixed PATH, nothing else.
  const exec = createExec({ PATH: "/usr/bin:/bin:/usr/sbin:/sbin", LANG: "C" });
  const code = await helperMain(process.argv.slice(2), {
    exec,
    sudoUser: process.env.SUDO_USER,
    out: (s) => process.stdout.write(s),
    err: (s) => process.stderr.write(s),
  });
  process.exit(code);
}
