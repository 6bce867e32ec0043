// The root helper refuses anything outside its narrow remit; the sudo client maps its answers back to SbxErrors.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { shQuote } from "../../../../src/core/sh";
import { renderSeatbelt } from "../../../../src/drivers/macos/render";
import { SbxError } from "../../../../src/core/errors";
import { DEFAULT_ROOT_CONTEXT, directRoot, helperMain } from "../../../../src/drivers/macos/privileged";
import { sudoHelperArgv, sudoRoot } from "../../../../src/drivers/macos/sudo-root";
import type { Exec } from "../../../../src/sys/exec";
import { FakeExec } from "../../../fakes/exec";
import { FakeMac, macSpec } from "../../../fakes/mac";

const HELPER = ["/usr/local/libexec/sbx/bun", "/usr/local/libexec/sbx/privileged.js"];

async function helper(args: string[], sudoUser: string | undefined, exec = new FakeExec()) {
  let out = "";
  let err = "";
  const code = await helperMain(args, { exec, sudoUser, out: (s) => (out += s), err: (s) => (err += s), ctx: { ...DEFAULT_ROOT_CONTEXT, uidRange: { min: 7000, max: 7999 } } });
  return { code, out, err, exec };
}

describe("root helper (helperMain)", () => {
  test.each([
    ["another host's guest", { op: "delete-user", user: "sbx_bob_0123456789ab" }, /not a sandbox user of alice/],
    ["a system account", { op: "kill-user", user: "root" }, /not an sbx guest user name/],
    ["a UID outside the range", { op: "add-user", user: "sbx_alice_abc", uid: 501, gid: 7000, sandbox: "x", repo: "/r" }, /outside sbx's reserved range/],
    ["a shell that is not zsh or false", { op: "set-user", user: "sbx_alice_abc", attr: "UserShell", value: "/bin/sh" }, /refusing to set/],
    ["an attribute outside the list", { op: "set-user", user: "sbx_alice_abc", attr: "GroupMembership", value: "admin" }, /bad privileged request/],
    ["a port below 1024", { op: "pf-load", user: "sbx_alice_abc", uid: 7001, port: 22 }, /bad privileged request/],
    ["raw pf rules (unknown keys)", { op: "pf-load", user: "sbx_alice_abc", uid: 7001, port: 17001, rules: "pass all" }, /bad privileged request/],
  ])("refuses %s without running anything", async (_what, op, why) => {
    const r = await helper([JSON.stringify(op)], "alice");
    expect(r.code).not.toBe(0);
    const wire = JSON.parse(r.err.trim()) as { message: string };
    expect(wire.message).toMatch(why);
    expect(r.exec.calls).toEqual([]);
  });

  test("requests not made through sudo are refused, except reapply-all (launchd at boot)", async () => {
    const r = await helper([JSON.stringify({ op: "pf-state" })], undefined);
    expect(r.code).toBe(77);
    const exec = new FakeExec().expect(["/bin/ls", "/private/var/db/sbx/pf"], { exitCode: 1 });
    const boot = await helper([JSON.stringify({ op: "reapply-all" })], undefined, exec);
    expect(boot.code).toBe(0);
    expect(JSON.parse(boot.out)).toEqual({ changed: false, out: "" });
    exec.assertDone();
  });

  test("pf changes for a UID held by a non-sbx account are refused", async () => {
    const exec = new FakeExec().expect(["/usr/bin/dscl", ".", "-list", "/Users", "UniqueID"], { stdout: "alice 501\nsvc 7005\n" });
    const r = await helper([JSON.stringify({ op: "pf-unload", uid: 7005 })], "alice", exec);
    expect(r.code).toBe(77);
    expect(JSON.parse(r.err).message).toContain("belongs to svc");
  });

  test("not JSON, or more than one argument: usage error", async () => {
    expect((await helper(["{"], "alice")).code).toBe(64);
    expect((await helper(["{}", "x"], "alice")).code).toBe(64);
  });
});

describe("sudo client (sudoRoot)", () => {
  test("argv: sudo -n <helper> '<json>'", () => {
    expect(sudoHelperArgv(HELPER, { op: "pf-state" })).toEqual(["/usr/bin/sudo", "-n", ...HELPER, '{"op":"pf-state"}']);
  });

  test("a missing sudoers rule becomes a permission error that says to run `sbx service install`", async () => {
    const exec = new FakeExec().expect(() => true, { exitCode: 1, stderr: "sudo: a password is required\n" });
    const err = await sudoRoot(exec, HELPER).run({ op: "pf-state" }).catch((e: unknown) => e);
    expect((err as SbxError).code).toBe("permission");
    expect((err as SbxError).hint).toContain("sbx service install");
  });

  test("the helper's wire error comes back as the same SbxError", async () => {
    const wire = JSON.stringify({ error: "unavailable", message: "pf could not be enabled", hint: "check pfctl" });
    const exec = new FakeExec().expect(() => true, { exitCode: 69, stderr: `${wire}\n` });
    const err = (await sudoRoot(exec, HELPER).run({ op: "pf-enable", uid: 7001 }).catch((e: unknown) => e)) as SbxError;
    expect([err.code, err.message, err.hint]).toEqual(["unavailable", "pf could not be enabled", "check pfctl"]);
  });

  test("a round trip: sudoRoot → sudo argv → helperMain on the fake Mac → the same result", async () => {
    const mac = new FakeMac();
    const seen: string[][] = [];
    const viaSudo: Exec = {
      run: async (argv) => {
        seen.push([...argv]);
        const r = await helper([argv.at(-1)!], "alice", mac.exec);
        return { argv, exitCode: r.code, stdout: r.out, stderr: r.err };
      },
      terminal: () => {
        throw new Error("no terminal");
      },
    };
    const res = await sudoRoot(viaSudo, HELPER).run({ op: "pf-state" });
    expect(seen).toEqual([sudoHelperArgv(HELPER, { op: "pf-state" })]);
    expect(JSON.parse(res.out)).toEqual({ enabled: false, tokens: [], anchors: [], files: [] });
    const err = await sudoRoot(viaSudo, HELPER).run({ op: "delete-user", user: "sbx_bob_0123456789ab" }).catch((e: unknown) => e);
    expect((err as SbxError).code).toBe("permission");
  });
});

describe("shellArgv", () => {
  const scriptOf = (argv: string[]) => argv[argv.indexOf("-c") + 1]!;

  test("a session of the guest's own (sudo -n su - <guest> -f -c), in the mapped workspace dir, under the Seatbelt profile, with only the given env", () => {
    const mac = new FakeMac();
    const s = macSpec("demo", { port: 17001 });
    const argv = mac.backend().shellArgv(s, { argv: [], cwd: "/Users/alice/src/demo/pkg", tty: true, env: { TERM: "xterm", "BAD-NAME": "x" } });
    expect(argv.join(" ")).not.toContain("BAD-NAME");
    // su as root, not sudo -u: sudo keeps the person's bootstrap namespace and audit session, where `open` and the
    // pasteboard act for the person. `-f` reaches zsh: none of the guest's rc files runs before the profile is in force.
    expect(argv.slice(0, 7)).toEqual(["/usr/bin/sudo", "-n", "/usr/bin/su", "-", `sbx_alice_${s.id}`, "-f", "-c"]);
    expect(argv).toHaveLength(8);
    const profile = renderSeatbelt({ port: 17001, sockets: [`/private/tmp/sbx-501/sb/${s.id}/bridge.sock`], home: `/Users/sbx_alice_${s.id}` });
    // sbx's variables for the sandbox (the spec's), then the caller's terminal ones, which win; bad names dropped.
    const merged = { ...s.env, TERM: "xterm" };
    const envWords = Object.entries(merged).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => shQuote(`${k}=${v}`)).join(" ");
    expect(scriptOf(argv)).toBe(
      `umask 077; cd -- '/Users/sbx_alice_${s.id}/demo/pkg' || exit 1; exec '/usr/bin/sandbox-exec' '-p' ${shQuote(profile)} '/usr/bin/env' ${envWords} '/bin/zsh' '-l' '-c' 'exec "$@"' 'sbx-enter' '/bin/zsh' '-l'`,
    );
  });

  test("the script runs as written: the command gets its argv whole and the env given, in the workspace dir, umask 077", () => {
    const mac = new FakeMac();
    const s = macSpec("demo", { port: 17001 });
    const dir = mkdtempSync(join(tmpdir(), "sbx-enter-"));
    try {
      const ws = `/Users/sbx_alice_${s.id}/demo`;
      const argv = mac.backend().shellArgv(s, { argv: ["printf", "%s|", "a b", "it's", "$HOME"], cwd: "/etc", tty: false, env: { X: "y z" } });
      // sandbox-exec and the workspace are the Mac's: here a stand-in that drops `-p <profile>` and runs the rest.
      const script = scriptOf(argv).replace(`'/usr/bin/sandbox-exec' '-p' `, `${dir}/sandbox-exec `).replace(shQuote(ws), shQuote(dir));
      writeFileSync(`${dir}/sandbox-exec`, '#!/bin/sh\nshift\nexec "$@"\n', { mode: 0o755 });
      const r = Bun.spawnSync(["sh", "-c", `${script.replace("'/usr/bin/env'", "'/usr/bin/env' 'PWD_IS=ok'")}`], { stdout: "pipe", stderr: "pipe" });
      expect(r.stdout.toString()).toBe("a b|it's|$HOME|");
      const env = Bun.spawnSync(["sh", "-c", scriptOf(mac.backend().shellArgv(s, { argv: ["sh", "-c", 'echo "$X"; pwd; umask'], cwd: "/etc", tty: false, env: { X: "y z" } })).replace(`'/usr/bin/sandbox-exec' '-p' `, `${dir}/sandbox-exec `).replace(shQuote(ws), shQuote(dir))], { stdout: "pipe" });
      expect(env.stdout.toString()).toBe(`y z\n${dir}\n0077\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a hostile cwd or argument stays one word: nothing of it runs as shell code", () => {
    const mac = new FakeMac();
    const s = macSpec("demo", { port: 17001 });
    const evil = "/Users/alice/src/demo/x'; touch /tmp/pwned; '";
    const argv = mac.backend().shellArgv(s, { argv: ["echo", "$(id)", "`id`", "'; id; '"], cwd: evil, tty: false, env: { "A;B": "c", K: "v'; id; '" } });
    const script = scriptOf(argv);
    // Parse it the way sh would, without running it: every quoted word comes back whole.
    const r = Bun.spawnSync(["sh", "-c", `set -- ${script.slice(script.indexOf("exec ") + 5)}; printf '%s\\n' "$@"`], { stdout: "pipe" });
    const words = r.stdout.toString().split("\n");
    expect(words.slice(-5, -1)).toEqual(["echo", "$(id)", "`id`", "'; id; '"]);
    expect(words).toContain("K=v'; id; '");
    expect(words.some((w) => w.startsWith("A;B"))).toBe(false);
    expect(script).toContain(shQuote(`/Users/sbx_alice_${s.id}/demo/x'; touch /tmp/pwned; '`));
  });

  test("the process limit is the guest's RLIMIT_NPROC, soft and hard, set before anything of the guest's runs", () => {
    const mac = new FakeMac();
    const s = { ...macSpec("demo", { port: 17001 }), limits: { memory: 1024 ** 3, cpus: 1, pids: 256 } };
    const script = scriptOf(mac.backend().shellArgv(s, { argv: ["make"], cwd: "/etc", tty: false, env: {} }));
    expect(script).toStartWith("umask 077; ulimit -u 256 || exit 125; cd -- ");
    // The script really sets both limits (ulimit without -S/-H), so the guest cannot raise it again.
    const r = Bun.spawnSync(["bash", "-c", "ulimit -u 256 || exit 125; ulimit -Su; ulimit -Hu"]);
    expect(r.stdout.toString()).toBe("256\n256\n");
  });
});

describe("pflog0 (a stock Mac has none)", () => {
  test("the first pf-enable makes it, as root, once; later ones only look; blocked packets then have somewhere to go", async () => {
    const mac = new FakeMac();
    const b = mac.backend();
    expect(mac.pf.pflog).toBe(false);
    await b.apply(macSpec("one"));
    expect(mac.pf.pflog).toBe(true);
    expect(mac.transcript()).toContain("root# /sbin/ifconfig pflog0 create");
    const from = mac.exec.calls.length;
    await b.apply(macSpec("two"));
    expect(mac.transcript(from)).toContain("root# /sbin/ifconfig pflog0\n");
    expect(mac.transcript(from)).not.toContain("pflog0 create");
  });

  test("the fake Mac holds the real rule: only root may create it", async () => {
    const mac = new FakeMac();
    const r = await mac.exec.run(["/usr/bin/sudo", "-n", "-H", "-u", "sbx_alice_x", "/sbin/ifconfig", "pflog0", "create"], { check: false });
    expect(r.exitCode).not.toBe(0);
    expect(mac.pf.pflog).toBe(false);
  });
});

describe("IDs held in a network directory", () => {
  test("a UID or GID an LDAP/AD account holds is never given to a guest (the account would own its files)", async () => {
    const mac = new FakeMac();
    // The first IDs of the range are taken in the network directory only: the local node does not show them.
    for (let i = 0; i < 3; i++) {
      mac.directoryUsers.set(`net${i}`, 7000 + i);
      mac.directoryGroups.set(`netg${i}`, 7000 + i);
    }
    const b = mac.backend();
    await b.apply(macSpec("netids"));
    const guest = [...mac.users].find(([n]) => n.startsWith("sbx_alice_"));
    expect(guest).toBeDefined();
    expect(guest![1].uid).toBeGreaterThanOrEqual(7003);
    expect(mac.groups.get("sbx_alice")).toBeGreaterThanOrEqual(7003);
  });

  test("the root helper refuses such a UID even if asked for it directly", async () => {
    const mac = new FakeMac();
    mac.directoryUsers.set("netuser", 7100);
    const root = directRoot(mac.rootExec(), { ...DEFAULT_ROOT_CONTEXT, hostUser: "alice", secret: () => "x" });
    await root.run({ op: "ensure-group", gid: 7050 });
    await expect(root.run({ op: "add-user", user: "sbx_alice_0123456789ab", uid: 7100, gid: 7050, sandbox: "s", repo: "/Users/alice/src/demo" } as never)).rejects.toThrow(/UID 7100 is already used by netuser/);
  });
});
