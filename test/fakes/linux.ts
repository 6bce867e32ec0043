// A small model of a Linux host's accounts (passwd, groups), files (owner, mode, ACL), bind mounts, processes and one
// nftables table, answering LinuxUserBackend's commands through FakeExec, with the real tools' rules where sbx relies
// on them: useradd refuses a name in use, userdel refuses while the account runs processes, `nft -f` is one atomic
// transaction whose `delete element` of a missing key or `delete chain` still jumped to fails it whole, `rm -rf
// --one-file-system` cannot remove a mount point, rmdir wants an empty dir, and the host's git runs as the host user.
// find runs as whoever starts it (setpriv): it enters only dirs that user may read and search, and `-delete` removes
// only what that user may (a dir it may write; in a sticky dir, only its own); links are never followed (there are none
// to follow here: a link is a file whose content is its target). System V IPC objects live in /proc/sysvipc/*.
import type { Passwd } from "../../src/drivers/linux-user/accounts";
import { ENSURE_LIST } from "../../src/drivers/linux-user/clone";
import { MQUEUE_SCRIPT } from "../../src/drivers/linux-user/uids";
import { FakeExec, type Reply } from "./exec";

/** An account as getent prints it: the backend's own passwd shape. */
type Account = Passwd;

interface Node {
  kind: "dir" | "file" | "link";
  mode: number;
  uid: number;
  gid: number;
  /** ACL entries as getfacl prints them (`user:1000:rwx`, `default:user:1000:rwx`). */
  acl: string[];
  content: string;
}

interface Chain {
  rules: { text: string; comment?: string }[];
}

interface Table {
  /** Verdict maps by name (`guests`: uid → chain, `guests_in`: mark → chain, `guests_nat`: uid → chain), each key to the chain it jumps to. */
  maps: Map<string, Map<number, string>>;
  chains: Map<string, Chain>;
}

/** The key type nft shows for each of sbx's maps. */
const MAP_TYPES: Record<string, string> = { guests: "uid", guests_in: "mark", guests_nat: "uid" };

const ok: Reply = {};
const fail = (exitCode: number, stderr: string): Reply => ({ exitCode, stderr: `${stderr}\n` });

function parentOf(p: string): string {
  const i = p.lastIndexOf("/");
  return i <= 0 ? "/" : p.slice(0, i);
}

function cloneTable(t: Table): Table {
  return { maps: new Map([...t.maps].map(([k, m]) => [k, new Map(m)])), chains: new Map([...t.chains].map(([k, c]) => [k, { rules: [...c.rules] }])) };
}

export class FakeLinux {
  readonly exec = new FakeExec();
  readonly accounts = new Map<string, Account>();
  readonly groups = new Map<string, number>();
  readonly files = new Map<string, Node>();
  readonly mounts = new Map<string, string>();
  readonly readOnlyMounts = new Set<string>();
  /** Live processes per uid. */
  readonly procs = new Map<number, number>();
  /** System V IPC objects (shared memory, queues, semaphores) and who owns and made each. */
  readonly ipc: { kind: "shm" | "msg" | "sem"; id: number; uid: number; cuid: number }[] = [];
  /** POSIX message queues (their own filesystem, seen only where someone mounts it) and their owners. */
  readonly mqueues: { name: string; uid: number }[] = [];
  readonly tables = new Map<string, Table>();
  /** Commands that changed the system, in order. */
  readonly changes: string[] = [];

  constructor(readonly host: { name: string; uid: number; gid: number; home: string; repo: string }) {
    this.accounts.set("root", { name: "root", uid: 0, gid: 0, gecos: "root", home: "/root", shell: "/bin/bash" });
    this.accounts.set(host.name, { name: host.name, uid: host.uid, gid: host.gid, gecos: host.name, home: host.home, shell: "/bin/bash" });
    this.groups.set("root", 0).set(host.name, host.gid);
    this.mk("/", "dir", 0o755, 0);
    this.mk(host.home, "dir", 0o700, host.uid);
    this.mk(`${host.repo}/.git/objects`, "dir", 0o755, host.uid);
    this.exec.always(() => true, (argv, opts) => this.answer(argv, typeof opts.stdin === "string" ? opts.stdin : ""));
  }

  /** Makes a path (and missing parents, root's 0755, or `uid`'s under the host's home). */
  mk(path: string, kind: Node["kind"], mode: number, uid: number, content = ""): Node {
    const parts = path.split("/").filter(Boolean);
    for (let i = 0; i < parts.length; i++) {
      const p = `/${parts.slice(0, i).join("/")}`.replace(/^\/$/, "/");
      if (!this.files.has(p)) this.files.set(p, { kind: "dir", mode: 0o755, uid: p.startsWith(this.host.home) ? this.host.uid : 0, gid: 0, acl: [], content: "" });
    }
    const n: Node = { kind, mode, uid, gid: uid === 0 ? 0 : this.gidOf(uid), acl: [], content };
    this.files.set(path === "" ? "/" : path, n);
    return n;
  }

  /** An IPC object as `uid` makes one (ipcmk); its id. */
  makeIpc(kind: "shm" | "msg" | "sem", uid: number): number {
    const id = this.ipc.length === 0 ? 0 : Math.max(...this.ipc.map((o) => o.id)) + 1;
    this.ipc.push({ kind, id, uid, cuid: uid });
    return id;
  }

  private gidOf(uid: number): number {
    return [...this.accounts.values()].find((a) => a.uid === uid)?.gid ?? uid;
  }

  private children(dir: string): string[] {
    const prefix = dir === "/" ? "/" : `${dir}/`;
    return [...this.files.keys()].filter((p) => p.startsWith(prefix) && p !== dir && !p.slice(prefix.length).includes("/"));
  }

  private subtree(dir: string): string[] {
    return [...this.files.keys()].filter((p) => p === dir || p.startsWith(`${dir}/`));
  }

  /** Starts `n` processes as `uid` (what a shell or an agent in the sandbox would be). */
  spawnAs(uid: number, n = 1): void {
    this.procs.set(uid, (this.procs.get(uid) ?? 0) + n);
  }

  private change(argv: readonly string[]): void {
    this.changes.push(argv.join(" "));
  }

  private passwdLine(a: Account): string {
    return `${a.name}:x:${a.uid}:${a.gid}:${a.gecos}:${a.home}:${a.shell}`;
  }

  private answer(argv: readonly string[], stdin: string): Reply {
    const [cmd, ...args] = argv;
    // The host's own git, as the host user: the only setpriv the backend runs without a runtime.
    if (cmd === "setpriv") {
      const sep = args.indexOf("--");
      const uid = Number(/^--reuid=(\d+)$/.exec(args[0] ?? "")?.[1]);
      return this.asUser(uid, args.slice(sep + 1));
    }
    switch (cmd) {
      case "getent":
        return this.getent(args);
      case "useradd":
        return this.useradd(argv, args);
      case "userdel": {
        const a = this.accounts.get(args[0]!);
        if (!a) return fail(6, `userdel: user '${args[0]}' does not exist`);
        if ((this.procs.get(a.uid) ?? 0) > 0) return fail(8, `userdel: user ${a.name} is currently used by process 4242`);
        this.accounts.delete(a.name);
        this.change(argv);
        return ok;
      }
      case "groupdel":
        if (!this.groups.delete(args[0]!)) return fail(6, `groupdel: group '${args[0]}' does not exist`);
        this.change(argv);
        return ok;
      case "stat":
        return this.stat(args);
      case "install":
        return this.install(argv, args);
      case "getfacl":
        return this.getfacl(args);
      case "setfacl":
        return this.setfacl(argv, args);
      case "nft":
        return args[0] === "-j" ? this.nftList(args[4]!) : this.nftApply(argv, stdin);
      case "cat": {
        const kind = /^\/proc\/sysvipc\/(shm|msg|sem)$/.exec(args[0]!)?.[1];
        if (kind) return { stdout: this.sysvipc(kind as "shm" | "msg" | "sem") };
        const n = this.files.get(args[0]!);
        return n?.kind === "file" ? { stdout: n.content } : fail(1, `cat: ${args[0]}: No such file or directory`);
      }
      case "tee": {
        const dir = this.files.get(parentOf(args[0]!));
        if (dir?.kind !== "dir") return fail(1, `tee: ${args[0]}: No such file or directory`);
        const had = this.files.get(args[0]!);
        this.files.set(args[0]!, { kind: "file", mode: had?.mode ?? 0o644, uid: had?.uid ?? 0, gid: had?.gid ?? 0, acl: had?.acl ?? [], content: stdin });
        this.change(argv);
        return { stdout: stdin };
      }
      case "realpath":
        return this.files.has(args[1]!) ? { stdout: `${args[1]}\n` } : fail(1, `realpath: ${args[1]}: No such file or directory`);
      case "rm":
        return this.rm(argv, args);
      case "rmdir": {
        const n = this.files.get(args[0]!);
        if (n?.kind !== "dir") return fail(1, `rmdir: failed to remove '${args[0]}': No such file or directory`);
        if (this.children(args[0]!).length > 0) return fail(1, `rmdir: failed to remove '${args[0]}': Directory not empty`);
        this.files.delete(args[0]!);
        this.change(argv);
        return ok;
      }
      case "mv":
        return this.mv(argv, args);
      case "chown": {
        const path = args[args.length - 1]!;
        const [u, g] = args[args.length - 2]!.split(":");
        if (!this.files.has(path)) return fail(1, `chown: cannot access '${path}': No such file or directory`);
        for (const p of args.includes("-R") ? this.subtree(path) : [path]) {
          const n = this.files.get(p)!;
          n.uid = Number(u);
          if (g !== undefined) n.gid = Number(g);
        }
        this.change(argv);
        return ok;
      }
      case "mountpoint":
        return this.mounts.has(args[1]!) ? ok : fail(32, `${args[1]} is not a mountpoint`);
      case "mount":
        if (args[0] === "--bind") {
          if (!this.files.has(args[1]!) || !this.files.has(this.throughMounts(args[2]!))) return fail(32, `mount: ${args[2]}: special device ${args[1]} does not exist`);
          this.mounts.set(args[2]!, args[1]!);
        } else if (args[0] === "-o" && args[1] === "remount,bind,ro") {
          if (!this.mounts.has(args[2]!)) return fail(32, `mount: ${args[2]}: not mounted`);
          this.readOnlyMounts.add(args[2]!);
        } else return fail(1, `fake linux: unknown mount ${args.join(" ")}`);
        this.change(argv);
        return ok;
      case "umount":
        if (!this.mounts.delete(args[0]!)) return fail(32, `umount: ${args[0]}: not mounted`);
        this.readOnlyMounts.delete(args[0]!);
        this.change(argv);
        return ok;
      case "pgrep": {
        const n = this.procs.get(Number(args[1])) ?? 0;
        return n > 0 ? { stdout: Array.from({ length: n }, (_, i) => `${4242 + i}\n`).join("") } : { exitCode: 1 };
      }
      case "pkill": {
        const uid = Number(args[2]);
        if ((this.procs.get(uid) ?? 0) === 0) return { exitCode: 1 };
        this.procs.delete(uid);
        this.change(argv);
        return ok;
      }
      case "find":
        return this.find(args, 0);
      case "unshare": {
        // Only the message-queue sweep: a mount namespace of its own, the queues of a uid deleted.
        const i = args.indexOf("-c");
        if (args[i + 1] !== MQUEUE_SCRIPT) return fail(127, "fake linux: unshare: not modelled");
        if (!this.files.has(args[i + 3]!)) return fail(32, `mount: ${args[i + 3]}: mount point does not exist`);
        const uid = Number(args[i + 4]);
        for (let k = this.mqueues.length - 1; k >= 0; k--) if (this.mqueues[k]!.uid === uid) this.mqueues.splice(k, 1);
        this.change(argv);
        return ok;
      }
      case "ipcrm": {
        const kind = ({ "-m": "shm", "-q": "msg", "-s": "sem" } as const)[args[0] as "-m" | "-q" | "-s"];
        const i = this.ipc.findIndex((o) => o.kind === kind && o.id === Number(args[1]));
        if (i < 0) return fail(1, `ipcrm: invalid id (${args[1]})`);
        this.ipc.splice(i, 1);
        this.change(argv);
        return ok;
      }
      default:
        return fail(127, `fake linux: ${cmd}: command not modelled`);
    }
  }

  /** A path as the kernel finds it: under a bind mount, the same path under its source. */
  private throughMounts(p: string): string {
    for (const [target, source] of this.mounts) if (p.startsWith(`${target}/`)) return `${source}${p.slice(target.length)}`;
    return p;
  }

  private asUser(uid: number, argv0: readonly string[]): Reply {
    // `env -i VAR=… cmd …`: the command, with an environment of its own (nothing here reads it).
    let argv = argv0;
    if (argv[0] === "env" && argv[1] === "-i") {
      argv = argv.slice(2);
      while (argv.length > 0 && /^[A-Z_]+=/.test(argv[0]!)) argv = argv.slice(1);
    }
    if (argv[0] === "find") {
      const r = this.find(argv.slice(1), uid);
      if (argv.includes("-delete") || argv.includes("-exec")) this.change(["setpriv", `--reuid=${uid}`, ...argv]);
      return r;
    }
    if (argv[0] === "sh" && argv[2] === ENSURE_LIST) {
      // The host user makes its objects' list of alternates when it is missing (in a dir it owns).
      const info = `${argv[4]}/info`;
      const dir = this.files.get(info) ?? this.files.get(argv[4]!);
      if (!dir || dir.uid !== uid) return fail(1, `sh: ${info}/alternates: Permission denied`);
      if (!this.files.has(info)) this.mk(info, "dir", 0o755, uid);
      if (!this.files.has(`${info}/alternates`)) this.mk(`${info}/alternates`, "file", 0o644, uid, "");
      return ok;
    }
    if (argv[0] !== "git") return fail(127, `fake linux: setpriv ${argv[0]}: not modelled`);
    const git = argv.slice(1);
    const at = git[0] === "-C" ? git[1]! : "";
    const sub = git[0] === "-C" ? git.slice(2) : git;
    if (sub[0] === "rev-parse") {
      return this.files.has(`${at}/.git`) ? { stdout: `${at}/.git\n` } : fail(128, "fatal: not a git repository");
    }
    if (sub[0] === "config") return { exitCode: 1 }; // the host repo has no origin here
    if (sub[0] === "remote") return ok;
    if (sub[0] === "clone") {
      const [src, dst] = sub.slice(-2) as [string, string];
      const parent = this.files.get(parentOf(dst));
      if (!this.files.has(`${src}/.git`)) return fail(128, `fatal: repository '${src}' does not exist`);
      // The host user writes only where it may: the stage dir is made its own first.
      if (!parent || parent.uid !== uid) return fail(128, `fatal: could not create work tree dir '${dst}': Permission denied`);
      this.mk(`${dst}/.git/objects/info`, "dir", 0o755, uid);
      this.mk(`${dst}/README`, "file", 0o644, uid, "hello\n");
      this.change(["git", ...git]);
      return ok;
    }
    return fail(127, `fake linux: git ${sub[0]}: not modelled`);
  }

  private getent(args: readonly string[]): Reply {
    if (args[0] === "group" && args.length === 1) return { stdout: [...this.groups].map(([n, g]) => `${n}:x:${g}:\n`).join("") };
    if (args[0] === "group") {
      const gid = this.groups.get(args[1]!);
      return gid === undefined ? { exitCode: 2 } : { stdout: `${args[1]}:x:${gid}:\n` };
    }
    if (args.length === 1) return { stdout: [...this.accounts.values()].map((a) => `${this.passwdLine(a)}\n`).join("") };
    // As getent does: a number is a uid, anything else a name.
    const key = args[1]!;
    const a = /^\d+$/.test(key) ? [...this.accounts.values()].find((x) => String(x.uid) === key) : this.accounts.get(key);
    return a ? { stdout: `${this.passwdLine(a)}\n` } : { exitCode: 2 };
  }

  private useradd(argv: readonly string[], args: readonly string[]): Reply {
    const name = args[args.length - 1]!;
    const opt = (k: string) => args[args.indexOf(k) + 1]!;
    if (this.accounts.has(name)) return fail(9, `useradd: user '${name}' already exists`);
    if (name.length > 32) return fail(3, `useradd: invalid user name '${name}'`);
    // System accounts: the highest free id below 1000, as shadow-utils picks them, unless --uid names one (exit 4 when
    // an account has it). The user group gets the same id when no group has it.
    const used = new Set([...this.accounts.values()].map((a) => a.uid));
    let uid = 999;
    if (args.includes("--uid")) {
      uid = Number(opt("--uid"));
      if (used.has(uid)) return fail(4, `useradd: UID ${uid} is not unique`);
    } else while (used.has(uid)) uid--;
    const gids = new Set(this.groups.values());
    let gid = uid;
    while (gids.has(gid)) gid--;
    this.accounts.set(name, { name, uid, gid, gecos: opt("--comment"), home: opt("--home-dir"), shell: opt("--shell") });
    this.groups.set(name, gid);
    this.change(argv);
    return ok;
  }

  private stat(args: readonly string[]): Reply {
    const fmtAt = args.indexOf("-c");
    const fmt = args[fmtAt + 1]!;
    const paths = args.slice(fmtAt + 2);
    const out: string[] = [];
    let missing = false;
    for (const p of paths) {
      const n = this.files.get(p);
      if (!n) {
        missing = true;
        continue;
      }
      out.push(
        fmt
          .replace("%a", n.mode.toString(8))
          .replace("%u", String(n.uid))
          .replace("%g", String(n.gid))
          .replace("%F", n.kind === "dir" ? "directory" : "regular file"),
      );
    }
    return { exitCode: missing ? 1 : 0, stdout: out.map((l) => `${l}\n`).join("") };
  }

  private install(argv: readonly string[], args: readonly string[]): Reply {
    if (args[0] !== "-d") return fail(1, "fake linux: only install -d is modelled without a runtime");
    const opt = (k: string) => args[args.indexOf(k) + 1]!;
    const uidOf = (v: string) => (v === "root" ? 0 : Number(v));
    const dirs = args.slice(args.indexOf("-g") + 2);
    for (const d of dirs) {
      const n = this.files.get(d) ?? this.mk(d, "dir", 0o755, 0);
      n.mode = Number.parseInt(opt("-m"), 8);
      n.uid = uidOf(opt("-o"));
      n.gid = uidOf(opt("-g"));
    }
    this.change(argv);
    return ok;
  }

  private getfacl(args: readonly string[]): Reply {
    const path = args[args.length - 1]!;
    const n = this.files.get(path);
    if (!n) return fail(1, `getfacl: ${path}: No such file or directory`);
    const bits = (shift: number) => ["r", "w", "x"].map((c, i) => (n.mode & (1 << (shift + 2 - i)) ? c : "-")).join("");
    const named = n.acl.filter((e) => !e.startsWith("default:"));
    const lines = [`user::${bits(6)}`, ...named.filter((e) => e.startsWith("user:")), `group::${bits(3)}`, ...named.filter((e) => e.startsWith("mask:")), `other::${bits(0)}`, ...n.acl.filter((e) => e.startsWith("default:"))];
    const head = args.includes("--omit-header") ? [] : [`# file: ${path}`, `# owner: ${n.uid}`, `# group: ${n.gid}`];
    return { stdout: [...head, ...lines].join("\n") + "\n" };
  }

  private setfacl(argv: readonly string[], args: readonly string[]): Reply {
    const recursive = args[0] === "-R";
    const rest = recursive ? args.slice(1) : args;
    const [op, spec, ...paths] = rest as [string, string, ...string[]];
    const long = (e: string) =>
      e
        .replace(/^d:/, "default:")
        .replace(/(^|:)u:/, "$1user:")
        .replace(/(^|:)g:/, "$1group:")
        .replace(/(^|:)m:/, "$1mask:")
        .replace(/(^|:)o:/, "$1other:");
    for (const p of paths) {
      if (!this.files.has(p)) return fail(1, `setfacl: ${p}: No such file or directory`);
      for (const q of recursive ? this.subtree(p) : [p]) {
        const n = this.files.get(q)!;
        for (const e of spec.split(",").map(long)) {
          const key = e.split(":").slice(0, e.startsWith("default:") ? 3 : 2).join(":");
          // Owner, group and other entries are the mode; named entries and the mask are the ACL.
          if (/^(default:)?(user|group|other)::/.test(e) && !e.startsWith("default:")) continue;
          n.acl = n.acl.filter((x) => !x.startsWith(`${key}:`));
          if (op === "-m") n.acl.push(e);
        }
      }
    }
    this.change(argv);
    return ok;
  }

  private rm(argv: readonly string[], args: readonly string[]): Reply {
    const path = args[args.length - 1]!;
    if (!this.files.has(path)) return ok; // -f
    const inside = [...this.mounts.keys()].filter((m) => m === path || m.startsWith(`${path}/`));
    if (inside.length > 0 && args.includes("--one-file-system")) {
      return fail(1, `rm: skipping '${inside[0]}', since it's on a different device\nrm: cannot remove '${inside[0]}': Device or resource busy`);
    }
    for (const p of this.subtree(path)) this.files.delete(p);
    this.change(argv);
    return ok;
  }

  private mv(argv: readonly string[], args: readonly string[]): Reply {
    const [src, dst] = args.slice(-2) as [string, string];
    if (!this.files.has(src)) return fail(1, `mv: cannot stat '${src}': No such file or directory`);
    if (this.files.has(dst) && this.children(dst).length > 0) return fail(1, `mv: cannot overwrite '${dst}': Directory not empty`);
    if (!this.files.has(parentOf(dst))) return fail(1, `mv: cannot move '${src}' to '${dst}': No such file or directory`);
    for (const p of this.subtree(src)) {
      const n = this.files.get(p)!;
      this.files.delete(p);
      this.files.set(dst + p.slice(src.length), n);
    }
    this.change(argv);
    return ok;
  }

  /**
   * find as `actor`: start points, then `-mindepth`/`-maxdepth`, `-xdev` (one filesystem here), tests (`-uid`, `-gid`
   * joined by `-o` in parentheses, `-type d`, `! -perm -u=rwx`) and one action (`-printf` with %h %f %p %U %G, `-delete`,
   * `-exec chmod u+rwx {} ;`). It enters a dir only when the actor may read and search it, as the kernel says.
   */
  private find(args: readonly string[], actor: number): Reply {
    let k = 0;
    const starts: string[] = [];
    while (k < args.length && !args[k]!.startsWith("-") && args[k] !== "(" && args[k] !== "!") starts.push(args[k++]!);
    const rest = args.slice(k);
    const num = (flag: string) => (rest.includes(flag) ? Number(rest[rest.indexOf(flag) + 1]) : undefined);
    const [minDepth, maxDepth] = [num("-mindepth") ?? 0, num("-maxdepth") ?? Infinity];
    const uids = rest.flatMap((a, i) => (a === "-uid" ? [Number(rest[i + 1])] : []));
    const gids = rest.flatMap((a, i) => (a === "-gid" ? [Number(rest[i + 1])] : []));
    const onlyDirs = rest.includes("-type");
    const notFullPerm = rest.includes("-perm");
    const printf = rest.includes("-printf") ? rest[rest.indexOf("-printf") + 1]! : null;
    const matches = (n: Node) =>
      (uids.length + gids.length === 0 || uids.includes(n.uid) || gids.includes(n.gid)) && (!onlyDirs || n.kind === "dir") && (!notFullPerm || (n.mode & 0o700) !== 0o700);
    const may = (n: Node, bits: number) => actor === 0 || (n.uid === actor ? (n.mode >> 6) & bits : n.mode & bits) === bits;
    let missing = false;
    const out: string[] = [];
    const found: string[] = [];
    const walk = (p: string, depth: number) => {
      const n = this.files.get(p)!;
      if (depth >= minDepth && matches(n)) {
        found.push(p);
        if (rest.includes("-exec") && n.uid === actor) n.mode |= 0o700; // chmod u+rwx, at once: find goes on into it
      }
      if (n.kind !== "dir" || depth >= maxDepth || !may(n, 0o5)) return;
      for (const c of this.children(p).sort()) walk(c, depth + 1);
    };
    for (const d of starts) {
      if (!this.files.has(d)) {
        missing = true;
        continue;
      }
      walk(d, 0);
    }
    if (printf !== null) {
      for (const p of found) {
        const n = this.files.get(p)!;
        out.push(printf.replace("%h", parentOf(p)).replace("%f", p.slice(p.lastIndexOf("/") + 1)).replace("%p", p).replace("%U", String(n.uid)).replace("%G", String(n.gid)).replace("\\n", "\n"));
      }
    }
    let failed = missing;
    if (rest.includes("-delete")) {
      // Deepest first; a dir goes only once empty, and only where the actor may write its parent (sticky: its own).
      for (const p of found.sort((a, b) => b.length - a.length)) {
        const n = this.files.get(p)!;
        const dir = this.files.get(parentOf(p))!;
        const sticky = (dir.mode & 0o1000) !== 0;
        const allowed = actor === 0 || (may(dir, 0o3) && (!sticky || n.uid === actor || dir.uid === actor));
        if (!allowed || (n.kind === "dir" && this.children(p).length > 0)) {
          failed = true;
          continue;
        }
        this.files.delete(p);
      }
    }
    return { exitCode: failed ? 1 : 0, stdout: out.join("") };
  }

  /** `/proc/sysvipc/<kind>` as the kernel prints it (the columns sbx reads). */
  private sysvipc(kind: "shm" | "msg" | "sem"): string {
    const id = { shm: "shmid", msg: "msqid", sem: "semid" }[kind];
    const rows = this.ipc.filter((o) => o.kind === kind).map((o) => `0 ${o.id} 600 ${o.uid} ${o.uid} ${o.cuid} ${o.cuid}`);
    return [`key ${id} perms uid gid cuid cgid`, ...rows].join("\n") + "\n";
  }

  // ── nftables: one table modelled, every `nft -f` one transaction ──

  private nftList(name: string): Reply {
    const t = this.tables.get(name);
    if (!t) return fail(1, `Error: No such file or directory; did you mean table 'filter' in family inet?\nlist table inet ${name}`);
    const out: Record<string, unknown>[] = [{ metainfo: { version: "1.0.6", json_schema_version: 1 } }, { table: { family: "inet", name, handle: 1 } }];
    for (const [mapName, m] of t.maps) {
      const elem = [...m].map(([key, chain]) => [key, { jump: { target: chain } }]);
      out.push({ map: { family: "inet", name: mapName, table: name, type: MAP_TYPES[mapName] ?? "uid", handle: 2, map: "verdict", ...(elem.length ? { elem } : {}) } });
    }
    for (const c of t.chains.keys()) out.push({ chain: { family: "inet", table: name, name: c, handle: 3 } });
    for (const [c, chain] of t.chains) {
      for (const r of chain.rules) out.push({ rule: { family: "inet", table: name, chain: c, handle: 4, ...(r.comment ? { comment: r.comment } : {}), expr: [] } });
    }
    return { stdout: JSON.stringify({ nftables: out }) };
  }

  /** Applies a script to copies of the tables; any error leaves every table as it was (nft's transaction). */
  private nftApply(argv: readonly string[], script: string): Reply {
    const work = new Map([...this.tables].map(([k, t]) => [k, cloneTable(t)]));
    const stack: string[] = [];
    let table: Table | null = null;
    let chain: Chain | null = null;
    const tableOf = (name: string): Table | null => work.get(name) ?? null;
    const lines = script.split("\n");
    for (const [i, raw] of lines.entries()) {
      const line = raw.trim();
      const err = (msg: string): Reply => fail(1, `Error: ${msg}\n${raw}\n(line ${i + 1})`);
      if (line === "") continue;
      let m: RegExpExecArray | null;
      if ((m = /^table inet (\S+) \{$/.exec(line))) {
        if (!work.has(m[1]!)) work.set(m[1]!, { maps: new Map(), chains: new Map() });
        table = work.get(m[1]!)!;
        stack.push("table");
      } else if ((m = /^map (\S+) \{$/.exec(line))) {
        if (!table) return err("map outside a table");
        if (!table.maps.has(m[1]!)) table.maps.set(m[1]!, new Map());
        stack.push("map");
      } else if ((m = /^chain (\S+) \{$/.exec(line))) {
        if (!table) return err("chain outside a table");
        if (!table.chains.has(m[1]!)) table.chains.set(m[1]!, { rules: [] });
        chain = table.chains.get(m[1]!)!;
        stack.push("chain");
      } else if (line === "}") {
        const closed = stack.pop();
        if (closed === "chain") chain = null;
        if (closed === "table") table = null;
      } else if (stack[stack.length - 1] === "map") {
        continue; // type uid : verdict
      } else if (stack[stack.length - 1] === "chain") {
        if (/^type filter hook/.test(line)) continue;
        const comment = /comment "([^"]*)"/.exec(line)?.[1];
        const vmap = /vmap @(\S+)/.exec(line)?.[1];
        if (vmap !== undefined && !table!.maps.has(vmap)) return err("No such file or directory (map)");
        chain!.rules.push({ text: line, ...(comment !== undefined ? { comment } : {}) });
      } else if ((m = /^flush chain inet (\S+) (\S+)$/.exec(line))) {
        const c = tableOf(m[1]!)?.chains.get(m[2]!);
        if (!c) return err("No such file or directory");
        c.rules = [];
      } else if ((m = /^add element inet (\S+) (\S+) \{ (\d+) : jump (\S+) \}$/.exec(line))) {
        const map = tableOf(m[1]!)?.maps.get(m[2]!);
        if (!map) return err("No such file or directory");
        if (!tableOf(m[1]!)!.chains.has(m[4]!)) return err("Could not process rule: No such file or directory");
        const have = map.get(Number(m[3]));
        if (have !== undefined && have !== m[4]) return err("Could not process rule: File exists");
        map.set(Number(m[3]), m[4]!);
      } else if ((m = /^delete element inet (\S+) (\S+) \{ (\d+) \}$/.exec(line))) {
        if (!tableOf(m[1]!)?.maps.get(m[2]!)?.delete(Number(m[3]))) return err("Could not process rule: No such file or directory");
      } else if ((m = /^delete chain inet (\S+) (\S+)$/.exec(line))) {
        const t = tableOf(m[1]!);
        if (!t?.chains.has(m[2]!)) return err("Could not process rule: No such file or directory");
        if ([...t.maps.values()].some((map) => [...map.values()].includes(m![2]!))) return err("Could not process rule: Device or resource busy");
        t.chains.delete(m[2]!);
      } else {
        return err("syntax error (not modelled by the fake)");
      }
    }
    this.tables.clear();
    for (const [k, t] of work) this.tables.set(k, t);
    this.change(argv);
    return ok;
  }
}
