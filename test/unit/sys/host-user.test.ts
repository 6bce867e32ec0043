// Who the host user is, decided once (host-user.ts), on "Linux" (getent) and "macOS" (Directory Services), with and
// without sudo; the CLI, the driver, the lifecycle and the daemon all take that one answer.
import { describe, expect, test } from "bun:test";
import { whereOf } from "../../../src/client/where";
import { ConfigSchema } from "../../../src/core/config";
import { detectUserBackends } from "../../../src/daemon/main";
import { silentLogger } from "../../../src/sys/log";
import type { NewSandbox } from "../../../src/drivers/driver";
import { UserAccountDriver, type UserAccountBackend } from "../../../src/drivers/user-account";
import { readEnv, type Env } from "../../../src/sys/env";
import {
  hostUserOf,
  macosPersonForRoot,
  parseDsclAccount,
  parseDsclSearch,
  selfUser,
  sudoCallerUid,
  userDirectory,
} from "../../../src/sys/host-user";
import { pathsFor } from "../../../src/sys/paths";
import { FakeExec } from "../../fakes/exec";

const envOf = (platform: NodeJS.Platform, uid: number, vars: Record<string, string>): Env =>
  readEnv({ vars: { PATH: "/usr/bin:/bin", ...vars }, uid, gid: uid === 0 ? 0 : platform === "darwin" ? 20 : uid, platform });
/** Root under sudo as macOS's sudo leaves it: USER is root, HOME may still be the caller's (env_keep) or root's. */
const macRoot = (sudo: Record<string, string>) => envOf("darwin", 0, { HOME: "/var/root", USER: "root", SHELL: "/bin/zsh", ...sudo });
const linuxRoot = (sudo: Record<string, string>) => envOf("linux", 0, { HOME: "/root", USER: "root", SHELL: "/bin/bash", ...sudo });

const ALICE_MAC = { name: "alice", uid: 501, gid: 20, home: "/Users/alice", shell: "/bin/zsh" };
const ALICE_LINUX = { name: "alice", uid: 1000, gid: 1000, home: "/home/alice", shell: "/usr/bin/fish" };

const DSCL = "/usr/bin/dscl";
const search = (uid: number) => [DSCL, "/Search", "-search", "/Users", "UniqueID", String(uid)];
const read = (name: string) => [DSCL, "/Search", "-read", `/Users/${name}`, "UniqueID", "PrimaryGroupID", "NFSHomeDirectory", "UserShell"];
/** A Mac whose Directory Services knows alice (501); nothing else is expected. */
const aliceMac = () =>
  new FakeExec()
    .always(search(501), { stdout: "alice\t\tUniqueID = (\n    501\n)\n" })
    .always(search(4242), { stdout: "" })
    .always(read("alice"), { stdout: "NFSHomeDirectory: /Users/alice\nPrimaryGroupID: 20\nUniqueID: 501\nUserShell: /bin/zsh\n" });
/** A Linux whose name service knows alice (1000). */
const aliceLinux = () =>
  new FakeExec()
    .always(["getent", "passwd", "1000"], { stdout: "alice:x:1000:1000:Alice,,,:/home/alice:/usr/bin/fish\n" })
    .always(["getent", "passwd", "4242"], { exitCode: 2 });

const errorOf = (p: Promise<unknown>) => p.then(() => null, (e: unknown) => e as { exitCode: number; message: string; hint?: string });

describe("hostUserOf on Linux (getent)", () => {
  test("without sudo: this process's own account, as its environment says; nothing is looked up", async () => {
    const exec = new FakeExec();
    const env = envOf("linux", 1000, { HOME: "/home/alice", USER: "alice", SHELL: "/usr/bin/fish" });
    expect(await hostUserOf(env, userDirectory(exec, "linux"))).toEqual(ALICE_LINUX);
    expect(exec.calls).toHaveLength(0);
  });

  test("root under sudo: sudo's caller, from the name service, not root's HOME or USER", async () => {
    const exec = aliceLinux();
    expect(await hostUserOf(linuxRoot({ SUDO_UID: "1000", SUDO_USER: "alice" }), userDirectory(exec, "linux"))).toEqual(ALICE_LINUX);
    expect(exec.calls.map((c) => c.argv.join(" "))).toEqual(["getent passwd 1000"]);
  });

  test("a sudo from root to root, and root's own login: root", async () => {
    const exec = new FakeExec();
    for (const sudo of [{ SUDO_UID: "0", SUDO_USER: "root" }, {}] as Record<string, string>[]) {
      expect(await hostUserOf(linuxRoot(sudo), userDirectory(exec, "linux"))).toMatchObject({ name: "root", uid: 0, home: "/root" });
    }
    expect(exec.calls).toHaveLength(0);
  });

  test("a SUDO_UID no account has is refused (78), naming the uid and where sbx looked, never taken as root", async () => {
    const e = await errorOf(hostUserOf(linuxRoot({ SUDO_UID: "4242" }), userDirectory(aliceLinux(), "linux")));
    expect(e?.exitCode).toBe(78);
    expect(e?.message).toContain("uid 4242");
    expect(e?.message).toContain("getent");
  });

  test("SUDO_UID counts only when this process is root (sudo -u bob keeps the caller's variables)", async () => {
    const env = envOf("linux", 1001, { HOME: "/home/bob", USER: "bob", SUDO_UID: "1000" });
    expect(await hostUserOf(env, userDirectory(new FakeExec(), "linux"))).toMatchObject({ name: "bob", uid: 1001 });
    expect(sudoCallerUid(env)).toBeUndefined();
  });
});

describe("hostUserOf on macOS (Directory Services: /etc/passwd there has no people)", () => {
  test("without sudo: this process's own account; nothing is looked up", async () => {
    const exec = new FakeExec();
    expect(await hostUserOf(envOf("darwin", 501, { HOME: "/Users/alice", USER: "alice", SHELL: "/bin/zsh" }), userDirectory(exec, "darwin"))).toEqual(ALICE_MAC);
    expect(exec.calls).toHaveLength(0);
  });

  test("root under sudo: sudo's caller from dscl (search by uid, then its record), whatever HOME and USER say", async () => {
    const exec = aliceMac();
    const env = macRoot({ SUDO_UID: "501", SUDO_GID: "20", SUDO_USER: "alice", HOME: "/Users/alice" });
    expect(await hostUserOf(env, userDirectory(exec, "darwin"))).toEqual(ALICE_MAC);
    expect(await macosPersonForRoot(env, userDirectory(exec, "darwin"))).toEqual(ALICE_MAC);
    const once = ["/Search -search /Users", "/Search -read /Users/alice"];
    expect(exec.calls.map((c) => c.argv.slice(1, 4).join(" "))).toEqual([...once, ...once]);
  });

  test("a SUDO_UID Directory Services does not know is refused (78), naming it", async () => {
    const e = await errorOf(hostUserOf(macRoot({ SUDO_UID: "4242", SUDO_USER: "ghost" }), userDirectory(aliceMac(), "darwin")));
    expect(e?.exitCode).toBe(78);
    expect(e?.message).toContain("uid 4242");
    expect(e?.message).toContain("Directory Services");
  });

  test("root with no person to work for (root's login, a sudo from root to root) is refused (77) on a Mac", async () => {
    for (const sudo of [{}, { SUDO_UID: "0", SUDO_USER: "root" }] as Record<string, string>[]) {
      const e = await errorOf(macosPersonForRoot(macRoot(sudo), userDirectory(new FakeExec(), "darwin")));
      expect(e?.exitCode).toBe(77);
      expect(e?.message).toContain("not root");
      expect(e?.hint).toContain("your own account");
    }
  });

  test("a record whose uid is not the one asked for (a second name in the search) is not taken", async () => {
    const exec = new FakeExec()
      .always(search(501), { stdout: "other\t\tUniqueID = (\n    501\n)\n" })
      .always(read("other"), { stdout: "NFSHomeDirectory: /Users/other\nPrimaryGroupID: 20\nUniqueID: 502\nUserShell: /bin/zsh\n" });
    expect(await userDirectory(exec, "darwin").byUid(501)).toBeNull();
  });

  test("the dscl parsers: several names in a search; a value on its own line; an incomplete record", () => {
    expect(parseDsclSearch("alice\t\tUniqueID = (\n    501\n)\nadmin2\t\tUniqueID = (\n    501\n)\n")).toEqual(["alice", "admin2"]);
    expect(parseDsclAccount("al", "NFSHomeDirectory:\n /Users/Al Smith\nPrimaryGroupID: 20\nUniqueID: 503\nUserShell: /bin/bash\n")).toEqual({
      name: "al",
      uid: 503,
      gid: 20,
      home: "/Users/Al Smith",
      shell: "/bin/bash",
    });
    expect(parseDsclAccount("x", "UniqueID: 503\nUserShell: /bin/zsh\n")).toBeNull();
  });
});

describe("everyone takes the one answer", () => {
  test("the CLI's asUid is the uid hostUserOf looks up, and only then", () => {
    const at = (env: Env) => whereOf({ cwd: "/w", env }, undefined).asUid;
    expect(at(linuxRoot({ SUDO_UID: "1000" }))).toBe(1000);
    expect(at(macRoot({ SUDO_UID: "501" }))).toBe(501);
    expect(at(linuxRoot({ SUDO_UID: "0" }))).toBeUndefined();
    expect(at(linuxRoot({}))).toBeUndefined();
    expect(at(envOf("linux", 1000, { HOME: "/home/alice", SUDO_UID: "7" }))).toBeUndefined();
  });

  test("`sudo sbx create --backend user` on Linux: the driver's host user and the lifecycle's (asUid) are the same account", async () => {
    const exec = aliceLinux();
    const env = linuxRoot({ SUDO_UID: "1000", SUDO_USER: "alice" });
    const users = userDirectory(exec, "linux");
    const host = await hostUserOf(env, users);
    const backend = { kind: "linux-user" } as UserAccountBackend;
    const paths = pathsFor(envOf("linux", 1000, { HOME: "/home/alice", XDG_RUNTIME_DIR: "/run/user/1000" }));
    const driver = new UserAccountDriver({ exec, env, paths, backend, hostUser: host, users, portFree: () => true, landlockAbi: () => 7 });
    const n: NewSandbox = { name: "w", repo: "/home/alice/p", dir: "/tmp/x", id: "abc123def456", config: ConfigSchema.parse({}), ...whereOf({ cwd: "/home/alice/p", env }, undefined) };
    const ident = await driver.newIdentity(n, []);
    expect(ident.hostUser).toEqual(ALICE_LINUX);
    expect(driver.hostUser).toEqual(ALICE_LINUX);
  });

  test("macOS daemon: its backend serves the person it runs as; a root daemon gets no macOS backend (and says why)", async () => {
    const alice = envOf("darwin", 501, { HOME: "/Users/alice", USER: "alice" });
    const warnings: string[] = [];
    const log = { ...silentLogger, warn: (m: string) => void warnings.push(m) };
    const d = (env: Env) => ({ env, paths: pathsFor(env), exec: new FakeExec(), log, store: null as never, events: null as never });
    const mine = await detectUserBackends(d(alice), selfUser(alice));
    expect(mine.macos?.agentPlace().cacheDir).toBe("/private/var/sbx/alice/agents");
    const root = macRoot({ SUDO_UID: "501", SUDO_USER: "alice" });
    expect(await detectUserBackends(d(root), ALICE_MAC)).toEqual({});
    expect(warnings.join("\n")).toContain("no macOS sandboxes in a daemon that runs as root");
  });
});
