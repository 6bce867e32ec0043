// The macOS backend's command sequence with two real uids (and more): the host user and each guest are real Linux users,
// sudo and su run with sbx's own sudoers rule, git and the file permissions are real; only the macOS-only tools are
// modelled (test/support/linux-mac.ts). What the fake Mac could not show, because it ran every step as one uid: the
// guest's clone of the host's mirror (git's ownership check), the sudoers rule as sudo reads it, a session that runs as
// the guest with none of the person's environment, a teardown that leaves no process and no file of the uid behind.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { SandboxSpec } from "../../../src/core/spec";
import type { MacosBackend } from "../../../src/drivers/macos/backend";
import { kitPaths, renderKit } from "../../../src/drivers/macos/install";
import { guestUser, hostTag } from "../../../src/drivers/macos/naming";
import { sandboxEnv } from "../../../src/drivers/env";
import { LinuxMac } from "../../support/linux-mac";
import { cannotCreateUsers, createTestUser, type TestUser } from "../../support/test-user";

const why =
  cannotCreateUsers() ??
  (["/usr/bin/sudo", "/usr/sbin/visudo", "/usr/bin/su", "/usr/bin/setfacl", "/usr/bin/zsh", "/usr/bin/setpriv"].find((p) => !existsSync(p))
    ? "sudo, su, setfacl, setpriv or zsh missing (install.sh installs them)"
    : undefined) ??
  (!existsSync("/etc/sudoers.d") ? "no /etc/sudoers.d on this machine" : undefined);

// A UID range nothing else on the machine uses.
const RANGE = { min: 64100, max: 64199 };

function sh(argv: string[]) {
  const r = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

describe.skipIf(why !== undefined)(`the macOS command sequence with real uids on Linux${why ? ` (skipped: ${why})` : ""}`, () => {
  let host: TestUser;
  let root: string;
  let lm: LinuxMac;
  let b: MacosBackend;
  let sudoers: string;
  let spec: SandboxSpec;
  let other: SandboxSpec;
  let guest: string;
  let ws: string;

  /** As the host user, the way the daemon runs a guest's session (no terminal): sudo … su - <guest> -f -c … */
  const session = (s: SandboxSpec, argv: string[], env: Record<string, string> = {}) =>
    host.run(b.shellArgv(s, { argv, cwd: s.repo, tty: false, env }).map((a) => a.replace("'/usr/bin/sandbox-exec'", `'${lm.standIn}'`)), {
      cwd: "/",
      // What the person's shell would hand sudo: none of it may reach the guest.
      env: { SSH_AUTH_SOCK: "/tmp/agent.sock", EDITOR: "vim", DISPLAY: ":0", GH_TOKEN: "ghp_persons_token" },
    });

  /** As the guest itself, from root (the test's own look, not sbx's): a clean environment with its home. */
  const asGuest = (g: string, argv: string[]) => sh(["runuser", "-u", g, "--", "env", "-i", `HOME=${join(lm.usersDir, g)}`, "PATH=/usr/bin:/bin", ...argv]);

  const specFor = (name: string, id: string, port: number): SandboxSpec => {
    const dir = join(lm.runtimeDir, "sb", id);
    return {
      id,
      name,
      repo: join(host.home, "src", "demo"),
      dir: join(host.home, ".cache", "sandbox", name),
      hostUser: { name: host.name, uid: host.uid, gid: host.gid, home: host.home, shell: "/bin/zsh" },
      sockets: { dir, proxy: `${dir}/proxy.sock`, bridge: `${dir}/bridge.sock` },
      env: sandboxEnv(name, { proxyPort: port, bridgeSocket: `${dir}/bridge.sock` }, { terminal: { TERM: "xterm-256color", LANG: "C.UTF-8" } }),
      overlays: [],
      options: { driver: "user", proxyPort: port },
    };
  };

  beforeAll(() => {
    host = createTestUser({ groups: [], shell: "/bin/zsh" });
    sh(["chmod", "700", host.home]);
    writeFileSync(join(host.home, "secret.txt"), "the person's own file\n");
    sh(["chown", `${host.uid}:${host.gid}`, join(host.home, "secret.txt")]);
    // The host's repo, made by the host user.
    const repo = join(host.home, "src", "demo");
    for (const argv of [
      ["mkdir", "-p", repo],
      ["git", "-C", repo, "init", "-q", "-b", "main"],
      ["sh", "-c", `cd ${repo} && echo hello > README && git add README && git -c user.name=p -c user.email=p@x commit -qm first`],
    ]) {
      const r = host.run(argv, { cwd: host.home });
      if (r.code !== 0) throw new Error(`${argv.join(" ")}: ${r.stderr}`);
    }
    root = mkdtempSync("/tmp/sbx-linuxmac-");
    lm = new LinuxMac(root, host, RANGE);
    b = lm.backend();
    // sbx's own sudoers rule for this host user, checked by visudo and installed as `sbx service install` would.
    sudoers = join("/etc/sudoers.d", `sbx_e2e_${hostTag(host.name)}`);
    const rule = renderKit(host.name, kitPaths(host.name, join(root, "kit"))).sudoers;
    const f = join(root, "rule");
    writeFileSync(f, rule, { mode: 0o440 });
    const check = sh(["visudo", "-cf", f]);
    if (check.code !== 0) throw new Error(`visudo: ${check.stdout}${check.stderr}`);
    writeFileSync(sudoers, rule, { mode: 0o440 });
    spec = specFor("demo", "a1b2c3d4e5f6", 17101);
    other = specFor("other", "f6e5d4c3b2a1", 17102);
    guest = guestUser(host.name, spec.id);
    ws = b.workspace(spec);
  });

  afterAll(async () => {
    for (const s of [spec, other]) await b?.remove(s).catch(() => {});
    rmSync(sudoers ?? "/nonexistent", { force: true });
    sh(["groupdel", `sbx_${hostTag(host?.name ?? "x")}`]);
    host?.remove();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  test("create works across the two owners: the guest's own clone of the host's mirror, its rc files, pf before any guest command", async () => {
    expect((await b.apply(spec)).changed).toBe(true);
    const pw = sh(["getent", "passwd", guest]).stdout.split(":");
    expect(Number(pw[2])).toBeGreaterThanOrEqual(RANGE.min);
    // The clone is the guest's, reads the host's objects through its alternates, and has the host's commit.
    expect(sh(["stat", "-c", "%U", join(ws, ".git")]).stdout.trim()).toBe(guest);
    expect(readFileSync(join(ws, ".git/objects/info/alternates"), "utf8")).toBe(`${b.mirror(spec)}/objects\n`);
    const log = asGuest(guest, ["git", "-C", ws, "log", "--format=%s"]);
    expect(log.stderr).toBe("");
    expect(log.stdout).toBe("first\n");
    expect(readFileSync(join(ws, "README"), "utf8")).toBe("hello\n");
    // The mirror holds the person's branches only.
    expect(host.run(["git", "-C", b.mirror(spec), "for-each-ref", "--format=%(refname)"], { cwd: "/" }).stdout).toBe("refs/heads/main\n");
    // …and its HEAD names the branch the person is on, which the clone checked out.
    expect(asGuest(guest, ["git", "-C", ws, "symbolic-ref", "HEAD"]).stdout).toBe("refs/heads/main\n");
    // cron and at refuse it (their jobs would run outside its session).
    expect(readFileSync(join(root, "cron.deny"), "utf8")).toBe(`${guest}\n`);
    // Provisioned by the guest itself.
    expect(sh(["stat", "-c", "%U", join(lm.usersDir, guest, ".zshenv")]).stdout.trim()).toBe(guest);
    // The anchor was loaded before the first command that ran as the guest.
    const calls = lm.mac.calls.map((c) => c.argv.join(" "));
    const firstGuest = calls.findIndex((c) => c.includes(`-u ${guest} `));
    expect(calls.findIndex((c) => c.includes("pfctl -a com.apple/sbx_") && c.includes(" -f "))).toBeLessThan(firstGuest);
    // Idempotent: a second apply changes nothing.
    expect((await b.apply(spec)).changed).toBe(false);
  }, 60_000);

  test("without the upload-pack's safe.directory, git refuses the guest's clone of the host-owned mirror (the first create on a real Mac)", () => {
    const dst = join(lm.usersDir, guest, "plain-clone");
    const r = host.run(["sudo", "-n", "-H", "-u", guest, "/usr/bin/git", "clone", "--quiet", "--shared", "--", b.mirror(spec), dst], { cwd: "/" });
    expect(r.code).toBe(128);
    expect(r.stderr).toContain("dubious ownership");
  });

  test("the sudoers rule as sudo reads it: the host's own guests and su - to them only", () => {
    const can = (argv: string[]) => host.run(["sudo", "-n", "-l", ...argv], { cwd: "/" }).code === 0;
    expect(can(["-u", guest, "/usr/bin/true"])).toBe(true);
    expect(can(["/usr/bin/su", "-", guest, "-f", "-c", "true"])).toBe(true);
    expect(can(["-u", "root", "/usr/bin/true"])).toBe(false);
    expect(can(["/usr/bin/su", "-", "root", "-f", "-c", "true"])).toBe(false);
    expect(can(["/usr/bin/su", "-", guest, "-c", "true"])).toBe(false); // without -f, the guest's rc files would run first
    expect(can(["/usr/bin/su", guest, "-f", "-c", "true"])).toBe(false); // without -, the person's environment
    expect(can(["-u", host.name === "root" ? "nobody" : "nobody", "/usr/bin/true"])).toBe(false);
  });

  test("a session runs as the guest, in its clone, under the profile, with sbx's environment and none of the person's", () => {
    const r = session(spec, ["sh", "-c", 'id -un; pwd; umask; echo "proxy=$HTTP_PROXY"; env | grep -E "^(SSH_AUTH_SOCK|EDITOR|DISPLAY|GH_TOKEN)=" || echo none'], { FROM_SBX: "1" });
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe(`${guest}\n${ws}\n0077\nproxy=http://127.0.0.1:17101\nnone\n`);
    // The stand-in sandbox-exec was handed the profile: network only to this sandbox's port.
    const profile = readFileSync(join(lm.profiles, `${guest}.sb`), "utf8");
    expect(profile).toContain('(allow network-outbound (remote ip "localhost:17101"))');
    expect(profile).toContain("(deny network*)");
  });

  test("a guest's own rc files do not run before the profile is in force (su - <guest> -f)", () => {
    const rc = join(lm.usersDir, guest, ".zshenv");
    const before = readFileSync(rc, "utf8");
    // The stand-in sandbox-exec marks what runs under it; the rc line says where it ran.
    asGuest(guest, ["sh", "-c", `echo 'echo "rc:\${SBX_TEST_UNDER_PROFILE:-outside}"' >> ${rc}`]);
    try {
      const out = session(spec, ["true"]).stdout;
      // The guest's login shell reads them inside (its PATH and variables come from there), never before.
      expect(out).toContain("rc:under");
      expect(out).not.toContain("rc:outside");
    } finally {
      writeFileSync(rc, before);
    }
  });

  test("guests and the person stay apart: a guest reads neither the person's home nor another guest's clone; the person reads its guests'", async () => {
    await b.apply(other);
    const otherGuest = guestUser(host.name, other.id);
    expect(session(spec, ["cat", join(host.home, "secret.txt")]).code).not.toBe(0);
    expect(session(spec, ["cat", join(b.workspace(other), "README")]).code).not.toBe(0);
    expect(session(other, ["cat", join(ws, "README")]).code).not.toBe(0);
    expect(session(other, ["id", "-un"]).stdout.trim()).toBe(otherGuest);
    // The person (the daemon) reads what its guests write, through the inherited entry.
    expect(session(spec, ["sh", "-c", "echo made-inside > note.txt"]).code).toBe(0);
    expect(host.run(["cat", join(ws, "note.txt")], { cwd: "/" }).stdout).toBe("made-inside\n");
  }, 60_000);

  test("host → clone ref sync: the mirror fetched as the person, update-ref as the guest", async () => {
    const repo = spec.repo;
    host.run(["sh", "-c", `cd ${repo} && echo two >> README && git -c user.name=p -c user.email=p@x commit -qam second`], { cwd: "/" });
    expect((await b.updateMirror(spec)).exitCode).toBe(0);
    const oid = host.run(["git", "-C", repo, "rev-parse", "main"], { cwd: "/" }).stdout.trim();
    const r = host.run([...b.guestGitArgv(spec, ["update-ref", `refs/remotes/host/main`, oid])], { cwd: "/" });
    expect(r.stderr).toBe("");
    expect(asGuest(guest, ["git", "-C", ws, "log", "--format=%s", "refs/remotes/host/main"]).stdout).toBe("second\nfirst\n");
  });

  test("stop: every process of the guest ends (waited for), its crontab and launchd jobs go, and it cannot log in again", async () => {
    const bg = host.spawn(b.shellArgv(spec, { argv: ["sh", "-c", "sleep 300 & sleep 300"], cwd: spec.repo, tty: false, env: {} }).map((a) => a.replace("'/usr/bin/sandbox-exec'", `'${lm.standIn}'`)), { cwd: "/" });
    const uid = Number(sh(["id", "-u", guest]).stdout.trim());
    for (let i = 0; i < 50 && sh(["pgrep", "-U", String(uid)]).code !== 0; i++) await Bun.sleep(50);
    expect(sh(["pgrep", "-U", String(uid)]).code).toBe(0);
    lm.mac.crontabs.set(guest, "* * * * * curl https://example.com/beacon\n");
    lm.mac.launchd.add(uid);
    expect((await b.stop(spec)).changed).toBe(true);
    expect(sh(["pgrep", "-U", String(uid)]).code).toBe(1);
    expect(lm.mac.crontabs.has(guest)).toBe(false);
    expect(lm.mac.launchd.has(uid)).toBe(false);
    await bg.exited;
    // Logins are off: the guest's shell is /usr/bin/false.
    expect(sh(["getent", "passwd", guest]).stdout.trim().endsWith(":/usr/bin/false")).toBe(true);
    expect(session(spec, ["echo", "in"]).stdout).not.toContain("in");
    // And on again at the next apply.
    await b.apply(spec);
    expect(session(spec, ["echo", "in"]).stdout).toBe("in\n");
  }, 60_000);

  test("remove: the account, its home and what its uid left in the shared temp dir are gone; nothing of it runs", async () => {
    expect(session(spec, ["sh", "-c", `echo loot > ${lm.tmp}/loot-$(id -u) && mkdir ${lm.tmp}/dir-$(id -u) && echo x > ${lm.tmp}/dir-$(id -u)/f`]).code).toBe(0);
    const uid = Number(sh(["id", "-u", guest]).stdout.trim());
    expect(existsSync(join(lm.tmp, `loot-${uid}`))).toBe(true);
    expect((await b.remove(spec)).changed).toBe(true);
    expect(sh(["getent", "passwd", guest]).code).not.toBe(0);
    expect(existsSync(join(lm.usersDir, guest))).toBe(false);
    expect(existsSync(join(lm.tmp, `loot-${uid}`))).toBe(false);
    expect(existsSync(join(lm.tmp, `dir-${uid}`))).toBe(false);
    expect(sh(["find", lm.tmp, "-user", String(uid)]).stdout).toBe("");
    expect(lm.mac.pf.anchors.has(uid)).toBe(false);
    expect(existsSync(join(lm.stateDir, "held", String(uid)))).toBe(false);
    expect(readFileSync(join(root, "cron.deny"), "utf8")).not.toContain(guest);
  }, 60_000);
});
