// The macOS backend's command sequence run with real uids on Linux: real users (the host user and each guest), real
// sudo and su with sbx's own sudoers rule, real git, real file modes and ACLs (POSIX ACLs standing in for macOS ACEs, so
// a guest really cannot read what its entries do not grant). Only the macOS-only tools are modelled here: dscl (over
// the real passwd and group files), sysadminctl/createhomedir (useradd), chmod ±a and ls -le (setfacl/getfacl), stat -f,
// chflags, pfctl, ifconfig pflog0, launchctl and sandbox-exec (a stand-in that records the profile it was given).
// The fake Mac (test/fakes/mac.ts) models state; this one never runs a step of one uid as another.
// One difference to know when trying a session by hand: util-linux's `su -c` starts the command in a session of its own
// with no controlling terminal (its guard against TIOCSTI), so an interactive shell there has no job control; BSD su
// on a Mac keeps the terminal. (sbx's sessions run on a PTY sbx owns either way, so nothing typed into it reaches the
// person's own terminal.)
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { MacosBackend } from "../../src/drivers/macos/backend";
import { directRoot, type RootContext } from "../../src/drivers/macos/privileged";
import type { Exec, ExecOptions, ExecResult } from "../../src/sys/exec";
import { ExecError } from "../../src/sys/exec";
import type { TestUser } from "./test-user";

export interface MacOnly {
  pf: { enabled: boolean; tokens: Set<string>; anchors: Map<number, string>; pflog: boolean; next: bigint };
  flags: Map<string, Set<string>>;
  /** The macOS ACEs each path was given (what `ls -le` shows), checked against the real ACL on each read. */
  aces: Map<string, string[]>;
  attrs: Map<string, Map<string, string>>;
  launchd: Set<number>;
  crontabs: Map<string, string>;
  /** Every argv, with who ran it (`root`, or the host user; a guest's commands appear as the host's sudo). */
  calls: { who: string; argv: string[] }[];
}

function sh(argv: string[], opts: { stdin?: string } = {}): { code: number; stdout: string; stderr: string } {
  const r = Bun.spawnSync(argv, { stdin: opts.stdin === undefined ? "ignore" : Buffer.from(opts.stdin), stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

const READ = new Set(["list", "read", "readattr", "readextattr", "readsecurity"]);
const WRITE = new Set(["add_file", "add_subdirectory", "delete_child", "writeattr", "writeextattr", "write", "delete", "append"]);

/** A macOS ACE (`user:X allow a,b,…`) as a POSIX ACL entry (and whether it is inherited). */
function aclOf(ace: string): { who: string; perms: string; inherit: boolean } {
  const m = /^user:(\S+) allow (\S+)$/.exec(ace);
  if (!m) throw new Error(`linux-mac: ACE ${ace}`);
  const ps = m[2]!.split(",");
  const r = ps.some((p) => READ.has(p)) ? "r" : "-";
  const w = ps.some((p) => WRITE.has(p)) ? "w" : "-";
  const x = ps.includes("search") || ps.includes("execute") ? "x" : "-";
  return { who: m[1]!, perms: `${r}${w}${x}`, inherit: ps.includes("file_inherit") || ps.includes("directory_inherit") };
}

export class LinuxMac {
  readonly usersDir: string;
  readonly shareRoot: string;
  readonly stateDir: string;
  readonly runtimeDir: string;
  readonly tmp: string;
  readonly standIn: string;
  readonly profiles: string;
  readonly mac: MacOnly = {
    pf: { enabled: false, tokens: new Set(), anchors: new Map(), pflog: false, next: 18446742069906624000n },
    flags: new Map(),
    aces: new Map(),
    attrs: new Map(),
    launchd: new Set(),
    crontabs: new Map(),
    calls: [],
  };

  constructor(
    readonly root: string,
    readonly host: TestUser,
    readonly uidRange: { min: number; max: number },
  ) {
    this.usersDir = join(root, "Users");
    this.shareRoot = join(root, "private/var/sbx");
    this.stateDir = join(root, "private/var/db/sbx");
    this.runtimeDir = join(root, "run");
    this.tmp = join(root, "tmp");
    this.profiles = join(root, "profiles");
    for (const d of [this.usersDir, join(root, "private/var/db"), this.tmp, this.profiles]) mkdirSync(d, { recursive: true, mode: 0o755 });
    chmodSync(root, 0o755);
    chmodSync(this.tmp, 0o1777);
    chmodSync(this.profiles, 0o1777);
    mkdirSync(this.runtimeDir, { mode: 0o700 });
    sh(["chown", `${host.uid}:${host.gid}`, this.runtimeDir]);
    // sandbox-exec is macOS's: this stand-in keeps the profile where the test can read it, then runs the command.
    this.standIn = join(root, "sandbox-exec");
    writeFileSync(this.standIn, `#!/bin/sh\n[ "$1" = -p ] || exit 64\nprintf '%s' "$2" > ${this.profiles}/$(id -un).sb\nshift 2\nSBX_TEST_UNDER_PROFILE=under exec "$@"\n`, { mode: 0o755 });
  }

  /** Runs argv as the host user (`setpriv`, its own groups, a clean environment) or as root. */
  private real(who: "root" | "host", argv: string[], opts: ExecOptions): { code: number; stdout: string; stderr: string } {
    const env = { HOME: who === "root" ? "/root" : this.host.home, USER: who === "root" ? "root" : this.host.name, PATH: "/usr/bin:/bin:/usr/sbin:/sbin", LANG: "C", ...(opts.env ?? {}) };
    const pre = who === "root" ? [] : ["setpriv", `--reuid=${this.host.uid}`, `--regid=${this.host.gid}`, "--init-groups", "--"];
    const r = Bun.spawnSync([...pre, "env", "-i", ...Object.entries(env).map(([k, v]) => `${k}=${v}`), ...argv], {
      cwd: opts.cwd ?? "/",
      stdin: typeof opts.stdin === "string" ? Buffer.from(opts.stdin) : "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    return { code: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
  }

  private exec(who: "root" | "host"): Exec {
    return {
      run: async (argv0: readonly string[], opts: ExecOptions = {}): Promise<ExecResult> => {
        const argv = [...argv0];
        this.mac.calls.push({ who: who === "root" ? "root" : this.host.name, argv });
        const r = this.answer(who, argv, opts) ?? this.real(who, this.session(argv), opts);
        const result: ExecResult = { argv, exitCode: r.code, stdout: r.stdout, stderr: r.stderr };
        if (r.code !== 0 && opts.check !== false) throw new ExecError(result);
        return result;
      },
      terminal: () => {
        throw new Error("linux-mac: no terminal");
      },
    };
  }

  /** A session's script names sandbox-exec, which Linux has not: the stand-in takes its place. */
  private session(argv: string[]): string[] {
    if (argv[0] !== "/usr/bin/sudo" || argv[2] !== "/usr/bin/su") return argv;
    const i = argv.indexOf("-c");
    return [...argv.slice(0, i + 1), argv[i + 1]!.replace("'/usr/bin/sandbox-exec'", `'${this.standIn}'`)];
  }

  hostExec(): Exec {
    return this.exec("host");
  }

  rootExec(): Exec {
    return this.exec("root");
  }

  rootContext(): RootContext {
    return {
      hostUser: this.host.name,
      uidRange: this.uidRange,
      stateDir: this.stateDir,
      shareRoot: this.shareRoot,
      usersDir: this.usersDir,
      secret: () => "unused-password",
      tmpRoots: [this.tmp],
      denyLists: [join(this.root, "cron.deny"), join(this.root, "at.deny")],
    };
  }

  backend(): MacosBackend {
    return new MacosBackend({
      exec: this.hostExec(),
      root: directRoot(this.rootExec(), this.rootContext()),
      hostUser: this.host.name,
      runtimeDir: this.runtimeDir,
      runtime: "/usr/local/bin/bun",
      shimDir: join(this.root, "shims"),
      uidRange: this.uidRange,
      usersDir: this.usersDir,
      shareRoot: this.shareRoot,
      stateDir: this.stateDir,
    });
  }

  /** The macOS-only tools (and the BSD forms of ls/stat/chown); null: run argv for real. */
  private answer(who: "root" | "host", argv: string[], opts: ExecOptions): { code: number; stdout: string; stderr: string } | null {
    const ok = (stdout = "") => ({ code: 0, stdout, stderr: "" });
    const fail = (stderr: string, code = 1) => ({ code, stdout: "", stderr });
    const rootOnly = () => (who === "root" ? null : fail("Operation not permitted"));
    const [bin, ...a] = argv;
    switch (bin) {
      case "/usr/bin/dscl":
        return this.dscl(who, a);
      case "/usr/sbin/sysadminctl": {
        const denied = rootOnly();
        if (denied) return denied;
        const opt = (k: string) => a[a.indexOf(k) + 1]!;
        if (a[0] === "-addUser") {
          const r = sh(["useradd", "-M", "-u", opt("-UID"), "-g", opt("-GID"), "-s", opt("-shell"), "-d", opt("-home"), "-c", opt("-fullName"), a[1]!]);
          if (r.code !== 0) return { code: 0, stdout: "", stderr: r.stderr }; // sysadminctl exits 0 after failing
          this.makeHome(opt("-home"), a[1]!);
          this.mac.attrs.set(a[1]!, new Map([["RealName", opt("-fullName")], ["AuthenticationAuthority", ";ShadowHash;"]]));
          return ok();
        }
        if (a[0] === "-deleteUser") {
          const r = sh(["userdel", a[1]!]);
          this.mac.attrs.delete(a[1]!);
          return r.code === 0 ? ok() : fail(r.stderr);
        }
        throw new Error(`linux-mac: sysadminctl ${a.join(" ")}`);
      }
      case "/usr/bin/dscacheutil":
        return rootOnly() ?? ok();
      case "/usr/sbin/createhomedir": {
        const denied = rootOnly();
        if (denied) return denied;
        const u = a[2]!;
        const home = sh(["getent", "passwd", u]).stdout.split(":")[5];
        if (!home) return fail("no such user");
        this.makeHome(home, u);
        return ok();
      }
      case "/bin/chmod":
        if (a.includes("+a") || a.includes("-a")) return this.chmodAce(who, a);
        return null;
      case "/bin/ls":
        if (a[0]?.startsWith("-lde")) return this.lsLong(who, a[0], a[1]!);
        return null;
      case "/usr/bin/stat": {
        // BSD stat -f %Lp (mode, as macOS keeps it beside its ACEs) / %Su (owner).
        const path = a[2]!;
        if (a[1] === "%Su") return this.asReal(who, ["stat", "-c", "%U", path]);
        const m = this.modeOf(who, path);
        return m === null ? fail(`stat: ${path}: No such file or directory`) : ok(`${m.toString(8)}\n`);
      }
      case "/usr/sbin/chown":
        return this.asReal(who, ["chown", ...a]);
      case "/usr/bin/chflags": {
        if (!existsSync(a[1]!)) return fail("chflags: No such file or directory");
        const f = this.mac.flags.get(a[1]!) ?? new Set<string>();
        f.add(a[0]!);
        this.mac.flags.set(a[1]!, f);
        return ok();
      }
      case "/sbin/ifconfig": {
        if (a.length === 1) return this.mac.pf.pflog ? ok() : fail("ifconfig: interface pflog0 does not exist");
        const denied = rootOnly();
        if (denied) return denied;
        this.mac.pf.pflog = true;
        return ok();
      }
      case "/sbin/pfctl":
        return rootOnly() ?? this.pfctl(a);
      case "/bin/launchctl": {
        const denied = rootOnly();
        if (denied) return denied;
        return this.mac.launchd.delete(Number(a[1]!.slice(5))) ? ok() : fail("Boot-out failed: 3: No such process", 3);
      }
      case "/usr/bin/crontab": {
        // cron is not installed here: its state is modelled, with the rule that only root may name another user.
        const denied = rootOnly();
        if (denied) return denied;
        return this.mac.crontabs.delete(a[1]!) ? ok() : fail(`no crontab for ${a[1]}`);
      }
    }
    if (bin?.startsWith("/usr/sbin/") && !existsSync(bin)) throw new Error(`linux-mac: no model for ${argv.join(" ")}`);
    void opts;
    return null;
  }

  private asReal(who: "root" | "host", argv: string[]) {
    return this.real(who, argv, {});
  }

  /** A new account's home as macOS makes it from the user template: Library and friends, no ACE on them. */
  private makeHome(home: string, u: string): void {
    for (const d of ["", "/Library", "/Library/Preferences", "/Desktop", "/Documents"]) mkdirSync(home + d, { recursive: true, mode: 0o755 });
    sh(["chown", "-R", `${u}:`, home]);
    for (const d of ["/Library", "/Desktop", "/Documents"]) chmodSync(home + d, 0o700);
  }

  /** The mode macOS would report: the owner, group and other entries (a POSIX ACL's mask is not macOS's group bits). */
  private modeOf(who: "root" | "host", path: string): number | null {
    const r = this.asReal(who, ["getfacl", "-p", "-c", path]);
    if (r.code !== 0) return null;
    const bits = (tag: string) => {
      const e = r.stdout.split("\n").find((l) => l.startsWith(`${tag}::`))?.split("::")[1] ?? "---";
      return (e[0] === "r" ? 4 : 0) + (e[1] === "w" ? 2 : 0) + (e[2] === "x" ? 1 : 0);
    };
    const st = this.asReal(who, ["stat", "-c", "%a", path]);
    const special = Number.parseInt(st.stdout.trim(), 8) & 0o7000;
    return special | (bits("user") << 6) | (bits("group") << 3) | bits("other");
  }

  private lsLong(who: "root" | "host", flags: string, path: string) {
    const m = this.modeOf(who, path);
    if (m === null) return { code: 1, stdout: "", stderr: `ls: ${path}: No such file or directory` };
    const st = this.asReal(who, ["stat", "-c", "%F|%U|%G", path]).stdout.trim().split("|");
    const kind = st[0] === "directory" ? "d" : st[0] === "socket" ? "s" : "-";
    const real = this.asReal(who, ["getfacl", "-p", "-c", path]).stdout;
    // Only entries the real ACL still grants (an ACE removed by chmod -a, or never applied, is not shown).
    const aces = (this.mac.aces.get(path) ?? []).filter((ace) => real.includes(`user:${aclOf(ace).who}:`));
    let s = kind;
    for (let i = 8; i >= 0; i--) s += m & (1 << i) ? "rwx"[(8 - i) % 3] : "-";
    const fl = flags.includes("O") ? ` ${[...(this.mac.flags.get(path) ?? [])].join(",") || "-"}` : "";
    const head = `${s}${aces.length ? "+" : ""}  3 ${st[1]}  ${st[2]}${fl}  96 Nov 22 00:00 ${path}`;
    return { code: 0, stdout: [head, ...aces.map((e, i) => ` ${i}: ${e}`)].join("\n") + "\n", stderr: "" };
  }

  /** chmod [-R] ±a "user:X allow …" <path>: setfacl as the same actor (the owner, or root), so its permission rules hold. */
  private chmodAce(who: "root" | "host", a: string[]) {
    const recursive = a[0] === "-R";
    const b = recursive ? a.slice(1) : a;
    const [op, ace, path] = b as [string, string, string];
    const e = aclOf(ace);
    const add = op === "+a";
    const spec = add ? `u:${e.who}:${e.perms}` : `u:${e.who}`;
    const args = [...(recursive ? ["-R"] : []), add ? "-m" : "-x", spec];
    let r = this.asReal(who, ["setfacl", ...args, path]);
    if (r.code === 0 && e.inherit) {
      // Inherited: the default ACL on every directory (what file_inherit,directory_inherit do for new entries).
      const dirs = recursive ? this.asReal(who, ["find", path, "-type", "d"]).stdout.split("\n").filter(Boolean) : [path];
      for (const d of dirs) {
        r = this.asReal(who, ["setfacl", add ? "-m" : "-x", add ? `d:u:${e.who}:${e.perms}` : `d:u:${e.who}`, d]);
        if (r.code !== 0) break;
      }
    }
    if (r.code !== 0) return { code: 1, stdout: "", stderr: `chmod: ${r.stderr.trim()}` };
    const targets = recursive ? this.asReal(who, ["find", path]).stdout.split("\n").filter(Boolean) : [path];
    for (const t of targets) {
      const list = (this.mac.aces.get(t) ?? []).filter((x) => x !== ace);
      if (add) list.push(ace);
      this.mac.aces.set(t, list);
    }
    return { code: 0, stdout: "", stderr: "" };
  }

  private dscl(who: "root" | "host", a: string[]) {
    const ok = (stdout = "") => ({ code: 0, stdout, stderr: "" });
    const notFound = { code: 56, stdout: "", stderr: "<dscl_cmd> DS Error: -14136 (eDSRecordNotFound)" };
    const [, verb, path, ...rest] = a as [string, string, string, ...string[]];
    const [, kind, name] = path.split("/");
    const passwd = () => readFileSync("/etc/passwd", "utf8").split("\n").filter(Boolean).map((l) => l.split(":"));
    const group = () => readFileSync("/etc/group", "utf8").split("\n").filter(Boolean).map((l) => l.split(":"));
    if (verb === "-list") {
      const rows = kind === "Users" ? passwd().map((p) => `${p[0]} ${p[2]}`) : group().map((g) => `${g[0]} ${g[2]}`);
      return ok(rows.map((r) => r.replace(" ", "                ")).join("\n") + "\n");
    }
    if (verb !== "-read" && who !== "root") return { code: 1, stdout: "", stderr: "DS Error: -14120 (eDSPermissionError)" };
    if (kind === "Groups") {
      const g = group().find((x) => x[0] === name);
      if (verb === "-read") return g ? ok(`PrimaryGroupID: ${g[2]}\n`) : notFound;
      if (verb === "-create") {
        if (rest[0] === "PrimaryGroupID") {
          const r = sh(["groupadd", "-g", rest[1]!, name!]);
          return r.code === 0 ? ok() : { code: 1, stdout: "", stderr: r.stderr };
        }
        return ok(); // the record itself, RealName, Password: nothing Linux keeps
      }
    }
    const p = passwd().find((x) => x[0] === name);
    if (verb === "-read") {
      if (!p) return notFound;
      const vals: Record<string, string | undefined> = { UniqueID: p[2], PrimaryGroupID: p[3], NFSHomeDirectory: p[5], UserShell: p[6], ...Object.fromEntries(this.mac.attrs.get(name!) ?? []) };
      return ok(rest.flatMap((k) => (vals[k] === undefined ? [] : k === "RealName" ? [`${k}:`, ` ${vals[k]}`] : [`${k}: ${vals[k]}`])).join("\n") + "\n");
    }
    if (!p) return notFound;
    const attrs = this.mac.attrs.get(name!) ?? new Map<string, string>();
    this.mac.attrs.set(name!, attrs);
    if (verb === "-create") {
      const [k, v] = rest as [string, string];
      if (k === "UserShell") sh(["usermod", "-s", v, name!]);
      else if (k === "PrimaryGroupID") sh(["usermod", "-g", v, name!]);
      else attrs.set(k, v);
      return ok();
    }
    if (verb === "-delete") {
      if (rest.length === 0) {
        sh(["userdel", name!]);
        return ok();
      }
      return attrs.delete(rest[0]!) ? ok() : { code: 56, stdout: "", stderr: "eDSAttributeNotFound" };
    }
    throw new Error(`linux-mac: dscl ${a.join(" ")}`);
  }

  private pfctl(a: string[]) {
    const ok = (stdout = "", stderr = "") => ({ code: 0, stdout, stderr });
    const pf = this.mac.pf;
    const key = a.join(" ");
    if (key === "-s info") return ok(`Status: ${pf.enabled ? "Enabled" : "Disabled"} for 0 days 00:00:01  Debug: Urgent\n`);
    if (key === "-s References") return ok(["TOKENS:", "PID      Process Name    TOKEN    TIMESTAMP", ...[...pf.tokens].map((t, i) => `${100 + i}    pfctl    ${t}    0 days 00:00:01`)].join("\n") + "\n");
    if (key === "-E") {
      pf.next += 1n;
      pf.tokens.add(String(pf.next));
      pf.enabled = true;
      return ok("", `pf enabled\nToken : ${pf.next}\n`);
    }
    if (a[0] === "-X") {
      pf.tokens.delete(a[1]!);
      if (pf.tokens.size === 0) pf.enabled = false;
      return ok("", "pf disabled\n");
    }
    if (key === "-a com.apple -s Anchors") return ok([...pf.anchors.keys()].map((u) => `  com.apple/sbx_${u}`).join("\n") + "\n");
    const uid = Number(/^com\.apple\/sbx_(\d+)$/.exec(a[1] ?? "")?.[1]);
    if (a[0] === "-a" && Number.isInteger(uid)) {
      if (a[2] === "-s") {
        const conf = pf.anchors.get(uid);
        return ok(conf === undefined ? "" : conf.split("\n").filter((l) => l && !l.startsWith("#")).map((l) => l.replace(/ port (\d+)/, " port = $1").replace(/ user (\d+)/, " user = $1")).join("\n") + "\n");
      }
      if (a[2] === "-F") {
        pf.anchors.delete(uid);
        return ok();
      }
      if (a[2] === "-f") {
        pf.anchors.set(uid, readFileSync(a[3]!, "utf8"));
        return ok();
      }
    }
    throw new Error(`linux-mac: pfctl ${key}`);
  }
}
