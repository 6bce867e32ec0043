// A small model of a Mac's accounts, files, ACLs and pf, answering MacosBackend's commands through FakeExec.
import { createHash } from "node:crypto";
import type { SandboxSpec } from "../../src/core/spec";
import { MacosBackend, type MacosBackendConfig } from "../../src/drivers/macos/backend";
import { directRoot, type RootContext } from "../../src/drivers/macos/privileged";
import type { UserIdentity } from "../../src/drivers/user-account";
import { sandboxEnv } from "../../src/drivers/env";
import type { Exec } from "../../src/sys/exec";
import type { Paths } from "../../src/sys/paths";
import { FakeExec, type Reply } from "./exec";

interface User {
  uid: number;
  gid: number;
  shell: string;
  attrs: Map<string, string>;
}

interface Node {
  kind: "dir" | "file" | "sock";
  mode: number;
  owner: string;
  flags: Set<string>;
  acl: string[];
  content: string;
}

export interface Faults {
  /** sysadminctl writes the record, then fails before the home exists (exit 0, as seen on real Macs, or not). */
  sysadminctlHalfway?: { exitCode: number };
  /** `pfctl -E` fails (MDM, another firewall). */
  pfEnableFails?: boolean;
  /** sysadminctl writes the record and then hangs until its time limit kills it (exit 137); the directory service
   * then answers this many reads of the new record with "not found" before it has it. */
  sysadminctlHangs?: { lateReads: number };
  /** pgrep -U still finds a killed process this many more times (a zombie until init reaps it; Infinity: stuck). */
  lingering?: number;
}

const HOST = "alice";

function parentOf(p: string): string {
  const i = p.lastIndexOf("/");
  return i <= 0 ? "/" : p.slice(0, i);
}

function modeString(n: Node): string {
  const t = n.kind === "dir" ? "d" : n.kind === "sock" ? "s" : "-";
  let s = "";
  for (let i = 8; i >= 0; i--) s += n.mode & (1 << i) ? "rwx"[(8 - i) % 3] : "-";
  return t + s + (n.acl.length ? "+" : "");
}

/** pfctl prints rules back normalized: comments dropped, `port = N`, `user = N`, default `flags S/SA`. */
function pfShow(conf: string): string {
  return conf
    .split("\n")
    .filter((l) => l.trim() !== "" && !l.startsWith("#"))
    .map((l) => l.replace(/ port (\d+)/, " port = $1").replace(/ user (\d+)/, " user = $1").replace(" keep state", " flags S/SA keep state"))
    .join("\n") + "\n";
}

export class FakeMac {
  readonly exec = new FakeExec();
  users = new Map<string, User>();
  groups = new Map<string, number>();
  files = new Map<string, Node>();
  /** Accounts and groups of a network directory (LDAP, AD): seen through `dscl /Search`, never through the local node. */
  readonly directoryUsers = new Map<string, number>();
  readonly directoryGroups = new Map<string, number>();
  pf = { enabled: false, tokens: new Set<string>(), anchors: new Map<number, string>(), next: 18446742069906624000n, pflog: false };
  /** Users with processes running (pkill/pgrep -U by their UID). */
  procs = new Set<string>();
  /** UIDs whose launchd domain holds agents or jobs the guest loaded (launchctl bootout user/<uid>). */
  launchd = new Set<number>();
  /** Crontabs by user. */
  crontabs = new Map<string, string>();
  /** Reads of a new record the directory service still answers "not found" (sysadminctlHangs). */
  readonly lateReads = new Map<string, number>();
  /** UIDs of deleted accounts, by their old name: files keep their numeric owner after the account goes. */
  readonly formerUids = new Map<string, number>();
  /** The host repo's refs, the mirror's objects (oids) and fetches, each clone's refs (by workspace path). */
  repo = {
    host: new Map<string, string>([["refs/heads/main", "1".repeat(40)], ["refs/remotes/origin/main", "1".repeat(40)]]),
    mirrorObjects: new Set<string>(),
    mirrorFetches: [] as string[],
    /** What the mirror's HEAD names (a bare init names `master`); the clone checks it out. */
    mirrorHead: "refs/heads/master",
    clones: new Map<string, Map<string, string>>(),
  };
  faults: Faults = {};
  /** Indices into exec.calls that came through the root runner. */
  readonly rootCalls = new Set<number>();

  constructor() {
    for (const [u, uid] of [["root", 0], ["daemon", 1], ["_www", 70], ["nobody", -2], [HOST, 501]] as const) {
      this.users.set(u, { uid, gid: 20, shell: "/bin/zsh", attrs: new Map() });
    }
    for (const [g, gid] of [["wheel", 0], ["staff", 20], ["admin", 80], ["everyone", 12]] as const) this.groups.set(g, gid);
    this.mk("/Users", "dir", 0o755, "root");
    this.mk("/Users/alice", "dir", 0o700, HOST);
    this.mk("/Users/alice/src/demo/.git", "dir", 0o755, HOST);
    this.mk("/private/var", "dir", 0o755, "root");
    this.mk("/private/var/db", "dir", 0o755, "root");
    this.mk("/private/tmp", "dir", 0o1777, "root");
    this.mk("/private/var/folders", "dir", 0o755, "root");
    this.mk("/usr/lib/cron", "dir", 0o755, "root");
    this.mk("/tmp/sbx-501", "dir", 0o700, HOST);
    this.mk("/tmp/sbx-501/sb", "dir", 0o700, HOST);
    this.exec.always(() => true, (argv, opts) => this.answer(argv, typeof opts.stdin === "string" ? opts.stdin : ""));
  }

  mk(path: string, kind: Node["kind"], mode: number, owner: string, content = ""): Node {
    const parts = path.split("/").filter(Boolean);
    for (let i = 1; i < parts.length; i++) {
      const p = `/${parts.slice(0, i).join("/")}`;
      if (!this.files.has(p)) this.files.set(p, { kind: "dir", mode: 0o755, owner, flags: new Set(), acl: [], content: "" });
    }
    const n: Node = { kind, mode, owner, flags: new Set(), acl: [], content };
    this.files.set(path, n);
    return n;
  }

  /** A new account's home as macOS makes it from the user template: the folders come without any ACE. */
  private mkHome(home: string, owner: string): void {
    this.mk(home, "dir", 0o755, owner);
    for (const d of ["Library", "Library/Preferences", "Desktop", "Documents", "Downloads"]) this.mk(`${home}/${d}`, "dir", 0o700, owner);
  }

  /** A power cycle: runtime pf state is gone (anchors, tokens, enabled); files and accounts stay. */
  reboot(): void {
    this.pf.enabled = false;
    this.pf.tokens.clear();
    this.pf.anchors.clear();
    this.procs.clear();
  }

  /** Root runner that marks its calls, so transcripts show who runs what. */
  rootExec(): Exec {
    return {
      run: (argv, opts) => {
        this.rootCalls.add(this.exec.calls.length);
        return this.exec.run(argv, opts);
      },
      terminal: (argv, opts) => this.exec.terminal(argv, opts),
    };
  }

  /** The macOS backend on this fake Mac; `watching` sets how its watchers run (their child, their timer). */
  backend(secret = () => "s3cret-for-test", watching: Pick<MacosBackendConfig, "spawnLines" | "pfWatchMs"> = {}): MacosBackend {
    const ctx: RootContext = { ...macRootContext(HOST), secret };
    return new MacosBackend({
      exec: this.exec,
      root: directRoot(this.rootExec(), ctx),
      hostUser: HOST,
      runtimeDir: "/tmp/sbx-501",
      runtime: "/usr/local/libexec/sbx/bun",
      shimDir: "/usr/local/libexec/sbx/shims",
      ...watching,
    });
  }

  /** Transcript with the privilege of each call: `root#`, `<guest>$` (sudo -u), `alice$`. */
  transcript(from = 0): string {
    const q = (a: string) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a));
    return (
      this.exec.calls
        .slice(from)
        .map((c, i) => {
          const argv = [...c.argv];
          if (this.rootCalls.has(from + i)) return `root# ${argv.map(q).join(" ")}`;
          if (argv[0] === "/usr/bin/sudo" && argv[3] === "-u") return `${argv[4]}$ ${argv.slice(5).map(q).join(" ")}`;
          return `${HOST}$ ${argv.map(q).join(" ")}`;
        })
        .join("\n") + "\n"
    );
  }

  /** Count of calls that change state (the contract's "apply twice mutates once"). */
  mutations(): number {
    return this.exec.calls.filter((c) => isMutating(c.argv)).length;
  }

  private ok(stdout = ""): Reply {
    return { exitCode: 0, stdout };
  }

  private fail(stderr: string, exitCode = 1): Reply {
    return { exitCode, stderr };
  }

  private answer(argv0: readonly string[], stdin: string): Reply {
    let argv = [...argv0];
    let actor = "root";
    if (argv[0] === "/usr/bin/sudo") {
      if (argv[3] === "-u") {
        actor = argv[4]!;
        argv = argv.slice(5);
      } else throw new Error(`fake mac: unexpected sudo form ${argv.join(" ")}`);
    }
    const cmd = argv[0]!.split("/").pop()!;
    const a = argv.slice(1);
    switch (cmd) {
      case "dscl":
        return this.dscl(a);
      case "sysadminctl":
        return this.sysadminctl(a);
      case "dscacheutil":
        return actor === "root" ? this.ok() : this.fail("dscacheutil: must be run as root");
      case "createhomedir": {
        const u = a[2]!;
        if (!this.users.has(u)) return this.fail("no such user");
        this.mkHome(`/Users/${u}`, u);
        return this.ok();
      }
      case "chmod":
        return this.chmod(a);
      case "chflags": {
        const n = this.files.get(a[1]!);
        if (!n) return this.fail("No such file");
        n.flags.add(a[0]!);
        return this.ok();
      }
      case "chown": {
        const n = this.files.get(a[1]!);
        if (!n) return this.fail("No such file");
        n.owner = a[0]!;
        return this.ok();
      }
      case "mkdir": {
        let mode = 0o755;
        const paths: string[] = [];
        for (let i = 0; i < a.length; i++) {
          if (a[i] === "-p") continue;
          if (a[i] === "-m") mode = Number.parseInt(a[++i]!, 8);
          else paths.push(a[i]!);
        }
        for (const p of paths) if (!this.files.has(p)) this.mk(p, "dir", mode, actor === "root" ? "root" : actor);
        return this.ok();
      }
      case "rm":
        for (const p of a.filter((x) => !x.startsWith("-"))) {
          for (const k of [...this.files.keys()]) if (k === p || k.startsWith(`${p}/`)) this.files.delete(k);
        }
        return this.ok();
      case "cat": {
        const n = this.files.get(a[0]!);
        if (!n || n.kind !== "file") return this.fail(`cat: ${a[0]}: No such file or directory`);
        if (actor !== "root" && !a[0]!.startsWith(`/Users/${actor}/`)) return this.fail("Permission denied");
        return this.ok(n.content);
      }
      case "tee": {
        if (actor !== "root" && !a[0]!.startsWith(`/Users/${actor}/`)) return this.fail("Permission denied");
        if (!this.files.has(parentOf(a[0]!))) return this.fail("No such file or directory");
        this.mk(a[0]!, "file", 0o644, actor, stdin);
        return this.ok(stdin);
      }
      case "ls":
        return this.ls(a);
      case "test": {
        const n = this.files.get(a[1]!);
        return n && (a[0] === "-e" || n.kind === "dir") ? this.ok() : { exitCode: 1 };
      }
      case "stat": {
        const n = this.files.get(a[2]!);
        if (!n) return this.fail("stat: No such file or directory");
        return this.ok(`${a[1] === "%Su" ? n.owner : n.mode.toString(8)}\n`);
      }
      case "pkill": {
        // pkill -KILL -U <uid>: only root may signal another user's processes.
        const u = this.userOfUid(Number(a[2]));
        if (u === null || !this.procs.has(u)) return { exitCode: 1 };
        if (actor !== "root" && actor !== u) return this.fail("pkill: Operation not permitted");
        this.procs.delete(u);
        return this.ok();
      }
      case "pgrep": {
        if ((this.faults.lingering ?? 0) > 0) {
          this.faults.lingering! -= 1;
          return this.ok("4242\n");
        }
        const u = this.userOfUid(Number(a[1]));
        return u !== null && this.procs.has(u) ? this.ok("4242\n") : { exitCode: 1 };
      }
      case "launchctl": {
        // bootout user/<uid>: root only; exit 0 when there was a domain with something in it.
        if (a[0] !== "bootout" || !/^user\/\d+$/.test(a[1]!)) throw new Error(`fake mac: launchctl ${a.join(" ")}`);
        if (actor !== "root") return this.fail("Boot-out failed: 1: Operation not permitted", 1);
        const uid = Number(a[1]!.slice(5));
        return this.launchd.delete(uid) ? this.ok() : this.fail("Boot-out failed: 3: No such process", 3);
      }
      case "crontab": {
        // crontab -u <user> -r: root only.
        if (actor !== "root") return this.fail("crontab: must be privileged to use -u");
        return this.crontabs.delete(a[1]!) ? this.ok() : this.fail(`crontab: no crontab for ${a[1]}`);
      }
      case "find":
        return this.find(a);
      case "git":
        return this.git(a, actor, stdin);
      case "pfctl":
        return this.pfctl(a);
      case "ifconfig":
        // A stock Mac has no pflog0 until root makes it (`ifconfig pflog0 create`); only root may.
        if (a.length === 1 && a[0] === "pflog0") return this.pf.pflog ? this.ok() : this.fail("ifconfig: interface pflog0 does not exist");
        if (a.length === 2 && a[0] === "pflog0" && a[1] === "create") {
          if (actor !== "root") return this.fail("ifconfig: SIOCIFCREATE2: Operation not permitted");
          if (this.pf.pflog) return this.fail("ifconfig: SIOCIFCREATE2: File exists");
          this.pf.pflog = true;
          return this.ok();
        }
        break;
    }
    throw new Error(`fake mac: no model for ${argv.join(" ")}`);
  }

  /**
   * git, for what the backend and ref sync run: clone (mirror / shared), the host's for-each-ref, the mirror's fetch
   * from the host repo, and the guest's for-each-ref / update-ref in its clone. Objects are modelled as oids: the
   * mirror has what it fetched; a clone sees the mirror's objects (alternates) and nothing else, so update-ref of an
   * oid the mirror lacks fails as it would on a Mac.
   */
  private git(a: string[], actor: string, stdin: string): Reply {
    const at = a.indexOf("-C");
    const dir = at >= 0 ? a[at + 1]! : null;
    const rest = at >= 0 ? a.slice(at + 2) : a.filter((x, i) => !(x === "-c" || a[i - 1] === "-c"));
    const sub = rest[0];
    const who = actor === "root" ? HOST : actor;
    if (sub === "clone") {
      const dst = a[a.length - 1]!;
      const src = a[a.length - 2]!;
      if (!this.files.has(src)) return this.fail(`fatal: repository '${src}' does not exist`, 128);
      // git >= 2.39.4 refuses another user's repo in the upload-pack of a local clone, unless that upload-pack is told
      // the repo is safe (`-c safe.directory=` on clone itself does not reach it).
      const up = a.includes("--upload-pack") ? a[a.indexOf("--upload-pack") + 1]! : "";
      if (this.files.get(src)!.owner !== who && !up.includes(`safe.directory='${src}'`)) {
        return this.fail(`fatal: detected dubious ownership in repository at '${src}'\nfatal: Could not read from remote repository.`, 128);
      }
      if (a.includes("--mirror")) {
        this.mk(dst, "dir", 0o755, who);
        for (const [ref, oid] of this.repo.host) if (ref.startsWith("refs/heads/")) this.repo.mirrorObjects.add(oid);
      } else {
        this.mk(`${dst}/.git`, "dir", 0o755, actor);
        this.repo.clones.set(dst, new Map());
      }
      return this.ok();
    }
    if (sub === "init" && a.includes("--bare")) {
      this.mk(a[a.length - 1]!, "dir", 0o755, who);
      return this.ok();
    }
    if (dir === null) throw new Error(`fake mac: git ${a.join(" ")}`);
    if (sub === "symbolic-ref" && dir === "/Users/alice/src/demo") {
      if (who !== HOST) return this.fail(`fatal: cannot change to '${dir}': Permission denied`, 128);
      return this.ok("refs/heads/main\n");
    }
    if (sub === "symbolic-ref" && rest[1] === "HEAD" && rest[2]) {
      const node = this.files.get(dir);
      if (!node || node.owner !== who) return this.fail(`error: could not lock ${dir}/HEAD: Permission denied`, 1);
      this.repo.mirrorHead = rest[2];
      return this.ok();
    }
    if (sub === "for-each-ref" && dir === "/Users/alice/src/demo") {
      if (who !== HOST) return this.fail(`fatal: cannot change to '${dir}': Permission denied`, 128);
      return this.ok([...this.repo.host].map(([r, o]) => `${o} ${r}`).join("\n") + "\n");
    }
    if (sub === "fetch") {
      const node = this.files.get(dir);
      if (!node) return this.fail(`fatal: cannot change to '${dir}': No such file or directory`, 128);
      if (node.owner !== who) return this.fail(`error: insufficient permission for adding an object to repository database ${dir}/objects`, 255);
      this.repo.mirrorFetches.push(rest.slice(rest.indexOf("--") + 1).join(" "));
      for (const [ref, oid] of this.repo.host) if (ref.startsWith("refs/heads/")) this.repo.mirrorObjects.add(oid);
      return this.ok();
    }
    const clone = this.repo.clones.get(dir);
    if (!clone) return this.fail(`fatal: cannot change to '${dir}': No such file or directory`, 128);
    if (!dir.startsWith(`/Users/${actor}/`)) return this.fail(`fatal: detected dubious ownership in repository at '${dir}'`, 128);
    if (sub === "for-each-ref") {
      const prefix = rest[rest.length - 1]!;
      const withOid = rest.includes("--format=%(objectname) %(refname)");
      return this.ok([...clone].filter(([r]) => r.startsWith(prefix)).sort(([a], [b]) => (a < b ? -1 : 1)).map(([r, o]) => `${withOid ? `${o} ` : ""}${r}\n`).join(""));
    }
    if (sub === "update-ref" && rest[1] === "--stdin") {
      // A transaction's start/commit lines frame the ops; only update and delete change anything.
      const ops = stdin.split("\n").filter((l) => l.startsWith("update ") || l.startsWith("delete ")).map((l) => l.split(" "));
      for (const [op, ref, oid] of ops) {
        if (op === "update" && !this.repo.mirrorObjects.has(oid!)) return this.fail(`fatal: cannot update ref '${ref}': trying to write ref '${ref}' with nonexistent object ${oid}`, 128);
      }
      for (const [op, ref, oid] of ops) op === "update" ? clone.set(ref!, oid!) : clone.delete(ref!);
      return this.ok();
    }
    throw new Error(`fake mac: git ${a.join(" ")}`);
  }

  private userOfUid(uid: number): string | null {
    for (const [n, u] of this.users) if (u.uid === uid) return n;
    return null;
  }

  /** find <roots…> -xdev -user <uid> (-delete | -print): files keep the numeric owner of a deleted account. */
  private find(a: string[]): Reply {
    const i = a.indexOf("-xdev");
    const roots = a.slice(0, i);
    const uid = Number(a[a.indexOf("-user") + 1]);
    const ownerUid = (n: Node) => this.users.get(n.owner)?.uid ?? this.formerUids.get(n.owner);
    const hits = [...this.files.keys()]
      .filter((k) => roots.some((r) => k.startsWith(`${r}/`)) && ownerUid(this.files.get(k)!) === uid)
      .sort()
      .reverse(); // depth first, as -delete goes
    if (a.includes("-delete")) {
      for (const k of hits) {
        const node = this.files.get(k)!;
        // A dir holding someone else's files stays (rmdir fails), as with the real -delete.
        if (node.kind === "dir" && [...this.files.keys()].some((x) => x.startsWith(`${k}/`))) continue;
        this.files.delete(k);
      }
      return this.ok();
    }
    return this.ok(hits.sort().map((k) => `${k}\n`).join(""));
  }

  private dscl(a: string[]): Reply {
    const [node, verb, path, ...rest] = a;
    const [, kind, name] = path!.split("/");
    if (verb === "-list") {
      // `/Search` is every directory node: the local one and the network's (directoryUsers/Groups: LDAP, AD).
      const net = node === "/Search";
      const rows =
        kind === "Users"
          ? [...[...this.users].map(([n, u]) => `${n} ${u.uid}`), ...(net ? [...this.directoryUsers].map(([n, u]) => `${n} ${u}`) : [])]
          : [...[...this.groups].map(([n, g]) => `${n} ${g}`), ...(net ? [...this.directoryGroups].map(([n, g]) => `${n} ${g}`) : [])];
      return this.ok(rows.map((r) => r.replace(" ", "                ")).join("\n") + "\n");
    }
    if (kind === "Groups") {
      if (verb === "-read") return this.groups.has(name!) ? this.ok(`PrimaryGroupID: ${this.groups.get(name!)}\n`) : this.fail("eDSRecordNotFound", 56);
      if (verb === "-create") {
        if (rest[0] === "PrimaryGroupID") this.groups.set(name!, Number(rest[1]));
        else if (!this.groups.has(name!)) this.groups.set(name!, -1);
        return this.ok();
      }
    }
    const u = this.users.get(name!);
    if (verb === "-read") {
      const late = this.lateReads.get(name!) ?? 0;
      if (late > 0) this.lateReads.set(name!, late - 1);
      if (!u || late > 0) return this.fail(`<dscl_cmd> DS Error: -14136 (eDSRecordNotFound)`, 56);
      const vals: Record<string, string | undefined> = {
        UniqueID: String(u.uid),
        PrimaryGroupID: String(u.gid),
        UserShell: u.shell,
        ...Object.fromEntries(u.attrs),
      };
      const out = rest.flatMap((k) => {
        const v = vals[k];
        if (v === undefined) return [];
        return k === "RealName" ? [`${k}:`, ` ${v}`] : [`${k}: ${v}`];
      });
      return this.ok(out.join("\n") + "\n");
    }
    if (verb === "-create") {
      if (!u) return this.fail("eDSRecordNotFound", 56);
      const [k, v] = rest;
      if (k === "UserShell") u.shell = v!;
      else if (k === "PrimaryGroupID") u.gid = Number(v);
      else if (k === "UniqueID") u.uid = Number(v);
      else u.attrs.set(k!, v!);
      return this.ok();
    }
    if (verb === "-delete") {
      if (!u) return this.fail("eDSRecordNotFound", 56);
      if (rest.length === 0) {
        this.formerUids.set(name!, u.uid);
        this.users.delete(name!);
      }
      else if (!u.attrs.delete(rest[0]!)) return this.fail("eDSAttributeNotFound", 56);
      return this.ok();
    }
    throw new Error(`fake mac: dscl ${a.join(" ")}`);
  }

  private sysadminctl(a: string[]): Reply {
    const opt = (k: string) => a[a.indexOf(k) + 1]!;
    if (a[0] === "-addUser") {
      const name = a[1]!;
      const uid = Number(opt("-UID"));
      if ([...this.users.values()].some((x) => x.uid === uid)) return { exitCode: 0, stderr: `UID ${uid} is already in use` };
      this.users.set(name, { uid, gid: Number(opt("-GID")), shell: opt("-shell"), attrs: new Map([["RealName", opt("-fullName")], ["AuthenticationAuthority", ";ShadowHash;"]]) });
      if (this.faults.sysadminctlHangs) {
        this.lateReads.set(name, this.faults.sysadminctlHangs.lateReads);
        this.faults.sysadminctlHangs = undefined;
        this.mkHome(opt("-home"), name);
        return { exitCode: 137, stderr: "" };
      }
      if (this.faults.sysadminctlHalfway) {
        const f = this.faults.sysadminctlHalfway;
        this.faults.sysadminctlHalfway = undefined;
        return { exitCode: f.exitCode, stderr: "Creating home directory failed" };
      }
      this.mkHome(opt("-home"), name);
      return this.ok();
    }
    if (a[0] === "-deleteUser") {
      const gone = this.users.get(a[1]!);
      if (gone) this.formerUids.set(a[1]!, gone.uid);
      this.users.delete(a[1]!);
      for (const k of [...this.files.keys()]) if (k === `/Users/${a[1]}` || k.startsWith(`/Users/${a[1]}/`)) this.files.delete(k);
      return this.ok();
    }
    throw new Error(`fake mac: sysadminctl ${a.join(" ")}`);
  }

  private chmod(a: string[]): Reply {
    const recursive = a[0] === "-R";
    const b = recursive ? a.slice(1) : a;
    const path = b[b.length - 1]!;
    const targets = [...this.files.keys()].filter((k) => k === path || (recursive && k.startsWith(`${path}/`)));
    if (targets.length === 0) return this.fail(`chmod: ${path}: No such file or directory`);
    for (const t of targets) {
      const n = this.files.get(t)!;
      if (b[0] === "+a") {
        const [who] = b[1]!.split(" ");
        if (!this.users.has(who!.replace(/^user:/, ""))) return this.fail(`chmod: Unable to translate '${who}' to a UID/GID`);
        if (!n.acl.includes(b[1]!)) n.acl.push(b[1]!);
      } else if (b[0] === "-a") {
        const i = n.acl.indexOf(b[1]!);
        if (i < 0) return this.fail("chmod: No matching ACL entry");
        n.acl.splice(i, 1);
      } else n.mode = Number.parseInt(b[0]!, 8);
    }
    return this.ok();
  }

  private ls(a: string[]): Reply {
    if (!a[0]!.startsWith("-")) {
      const dir = a[0]!;
      if (!this.files.has(dir)) return this.fail(`ls: ${dir}: No such file or directory`);
      const kids = [...this.files.keys()].filter((k) => parentOf(k) === dir).map((k) => k.slice(dir.length + 1));
      return this.ok(kids.sort().join("\n") + (kids.length ? "\n" : ""));
    }
    const path = a[1]!;
    const n = this.files.get(path);
    if (!n) return this.fail(`ls: ${path}: No such file or directory`);
    const flags = a[0]!.includes("O") ? ` ${n.flags.size ? [...n.flags].join(",") : "-"}` : "";
    const head = `${modeString(n)}  3 ${n.owner}  staff${flags}  96 Nov 22 00:00 ${path}`;
    return this.ok([head, ...n.acl.map((e, i) => ` ${i}: ${e}`)].join("\n") + "\n");
  }

  private pfctl(a: string[]): Reply {
    const key = a.join(" ");
    if (key === "-s info") return this.ok(`Status: ${this.pf.enabled ? "Enabled" : "Disabled"} for 0 days 00:00:01  Debug: Urgent\n`);
    if (key === "-s References") {
      const rows = [...this.pf.tokens].map((t, i) => `${100 + i}    pfctl    ${t}    0 days 00:00:01`);
      return this.ok(["TOKENS:", "PID      Process Name    TOKEN    TIMESTAMP", ...rows].join("\n") + "\n");
    }
    if (key === "-E") {
      if (this.faults.pfEnableFails) return this.fail("pfctl: DIOCSTARTREF: Operation not permitted");
      this.pf.next += 1n;
      const t = String(this.pf.next);
      this.pf.tokens.add(t);
      this.pf.enabled = true;
      return { exitCode: 0, stderr: `pf enabled\nToken : ${t}\n` };
    }
    if (a[0] === "-X") {
      if (!this.pf.tokens.delete(a[1]!)) return this.fail("pfctl: DIOCSTOPREF: Invalid argument");
      if (this.pf.tokens.size === 0) this.pf.enabled = false;
      return { exitCode: 0, stderr: "pf disabled\n" };
    }
    if (key === "-a com.apple -s Anchors") return this.ok([...this.pf.anchors.keys()].sort().map((u) => `  com.apple/sbx_${u}`).join("\n") + "\n");
    if (a[0] === "-a") {
      const m = /^com\.apple\/sbx_(\d+)$/.exec(a[1]!);
      if (!m) throw new Error(`fake mac: anchor ${a[1]}`);
      const uid = Number(m[1]);
      if (a[2] === "-s") return this.ok(this.pf.anchors.has(uid) ? pfShow(this.pf.anchors.get(uid)!) : "");
      if (a[2] === "-F") {
        this.pf.anchors.delete(uid);
        return this.ok();
      }
      if (a[2] === "-f") {
        const f = this.files.get(a[3]!);
        if (!f) return this.fail("pfctl: cannot open the main config file");
        this.pf.anchors.set(uid, f.content);
        return this.ok();
      }
    }
    throw new Error(`fake mac: pfctl ${key}`);
  }
}

/** Whether a command changes state (reads: dscl -list/-read, ls, cat, test, stat, pfctl -s). */
export function isMutating(argv0: readonly string[]): boolean {
  let argv = [...argv0];
  if (argv[0] === "/usr/bin/sudo" && argv[3] === "-u") argv = argv.slice(5);
  const cmd = argv[0]!.split("/").pop()!;
  switch (cmd) {
    case "dscl":
      return argv[2] === "-create" || argv[2] === "-delete" || argv[2] === "-append";
    case "pfctl":
      return argv.includes("-E") || argv.includes("-X") || argv.includes("-f") || argv.includes("-F");
    case "ifconfig":
      return argv.includes("create");
    case "find":
      return argv.includes("-delete");
    case "ls":
    case "cat":
    case "test":
    case "stat":
    case "pgrep":
      return false;
    default:
      return true;
  }
}

/** The root helper's context on the fake Mac (as the helper has it under sudo from `hostUser`; null: from launchd). */
export function macRootContext(hostUser: string | null): RootContext {
  return {
    hostUser,
    uidRange: { min: 7000, max: 7999 },
    stateDir: "/private/var/db/sbx",
    shareRoot: "/private/var/sbx",
    usersDir: "/Users",
    secret: () => "unused",
    tmpRoots: ["/private/tmp", "/private/var/folders"],
    denyLists: ["/usr/lib/cron/cron.deny", "/usr/lib/cron/at.deny"],
    sleep: async () => {},
  };
}

let counter = 0;

/** A spec for the fake Mac's host user alice; ids are stable per name (for golden files). */
export function macSpec(name: string, opts: { port?: number } = {}): SandboxSpec {
  const id = createHash("sha256").update(`demo\0${name}`).digest("hex").slice(0, 12);
  counter++;
  const dir = `/tmp/sbx-501/sb/${id}`;
  const port = opts.port ?? 17000 + (counter % 1000);
  return {
    id,
    name,
    repo: "/Users/alice/src/demo",
    dir: `/Users/alice/.cache/sandbox/demo-x/${name}`,
    hostUser: { name: HOST, uid: 501, gid: 20, home: "/Users/alice", shell: "/bin/zsh" },
    sockets: { dir, proxy: `${dir}/proxy.sock`, bridge: `${dir}/bridge.sock` },
    // As userSpec builds it: the one sandbox environment for this port and socket dir.
    env: sandboxEnv(name, { proxyPort: port, bridgeSocket: `${dir}/bridge.sock` }, { terminal: { TERM: "xterm-256color", LANG: "en_US.UTF-8" } }),
    overlays: [],
    options: { driver: "user", proxyPort: port },
  };
}

/** The fake Mac host user alice's sbx paths (XDG defaults under /Users/alice, runtime dir /tmp/sbx-501). */
export const ALICE_PATHS: Paths = {
  stateDir: "/Users/alice/.local/state/sbx",
  configDir: "/Users/alice/.config/sbx",
  cacheDir: "/Users/alice/.cache",
  sandboxRoot: "/Users/alice/.cache/sandbox",
  agentsDir: "/Users/alice/.cache/sbx/agents",
  runtimeDir: "/tmp/sbx-501",
  dbFile: ":memory:",
  configFile: "/Users/alice/.config/sbx/config.json",
  daemonLog: "/Users/alice/.local/state/sbx/daemon.log",
  controlSocket: "/tmp/sbx-501/control.sock",
};

/** A stored user-account identity of one of alice's sandboxes (proxy port 17001). */
export const ALICE_IDENTITY: UserIdentity = {
  kind: "user",
  id: "0a1b2c3d4e5f",
  dir: "/Users/alice/.cache/sandbox/demo-x/demo",
  proxyPort: 17001,
  hostUser: { name: "alice", uid: 501, gid: 20, home: "/Users/alice", shell: "/bin/zsh" },
};
