// LinuxUserBackend against FakeExec: the first apply's command transcript (golden), a no-op re-apply, stop and shellArgv.
import { describe, expect, test } from "bun:test";
import type { SandboxSpec } from "../../../../src/core/spec";
import { LinuxUserBackend, PROC_SCRIPT } from "../../../../src/drivers/linux-user/backend";
import { procMountsApart } from "../../../../src/sys/kernel";
import { FakeExec } from "../../../fakes/exec";
import { golden } from "./golden";

const spec: SandboxSpec = {
  id: "abc123def456",
  name: "demo",
  repo: "/home/alice/src/proj",
  dir: "/home/alice/.cache/sbx/sandbox/proj-x/demo",
  hostUser: { name: "alice", uid: 1000, gid: 1000, home: "/home/alice", shell: "/bin/bash" },
  sockets: { dir: "/run/user/1000/sbx/sb/abc123def456", proxy: "/run/user/1000/sbx/sb/abc123def456/proxy.sock", bridge: "/run/user/1000/sbx/sb/abc123def456/bridge.sock" },
  env: { SANDBOX: "demo", HOME: "/home/alice" },
  overlays: [],
  options: { driver: "user", proxyPort: 41234 },
};
const PW = "sbx-alice-abc123def456:x:998:998:sbx sandbox demo:/var/lib/sbx/homes/sbx-alice-abc123def456:/bin/bash\n";
const ACL = "# file: /var/lib/sbx/homes/sbx-alice-abc123def456\n# owner: 998\n# group: 998\nuser::rwx\nuser:1000:rwx\ngroup::---\nmask::rwx\nother::---\ndefault:user::rwx\ndefault:user:1000:rwx\ndefault:group::---\ndefault:mask::rwx\ndefault:other::---\n";
const META = JSON.stringify({ id: spec.id, name: "demo", repo: spec.repo, user: "sbx-alice-abc123def456", uid: 998, traverse: [], objects: "/home/alice/src/proj/.git/objects" });
const TABLE = JSON.stringify({
  nftables: [
    { table: { family: "inet", name: "sbx" } },
    { map: { name: "guests", elem: [[998, { jump: { target: "sb_abc123def456" } }]] } },
    { map: { name: "guests_in", elem: [[998, { jump: { target: "si_abc123def456" } }]] } },
    { map: { name: "guests_nat", elem: [[998, { jump: { target: "sn_abc123def456" } }]] } },
    { chain: { name: "sb_abc123def456" } },
    { chain: { name: "si_abc123def456" } },
    { chain: { name: "sn_abc123def456" } },
    { rule: { chain: "output", comment: "sbx dispatch" } },
    { rule: { chain: "input", comment: "sbx dispatch in" } },
    { rule: { chain: "nat_output", comment: "sbx dispatch nat" } },
    { rule: { chain: "sb_abc123def456", comment: "sbx id=abc123def456 uid=998 mode=run port=41234" } },
    { rule: { chain: "si_abc123def456", comment: "sbx id=abc123def456 uid=998 mode=run port=41234" } },
  ],
});

describe("LinuxUserBackend (FakeExec)", () => {
  test("first apply: base dirs, account, firewall before anything else, home ACL, objects mount, clone", async () => {
    let userMade = false;
    const exec = new FakeExec()
      .expect((a) => a[0] === "stat" && a[3] === "/var/lib/sbx", { exitCode: 1 })
      .always((a) => a[0] === "install" || a[0] === "setfacl" || a[0] === "tee" || a[0] === "mount" || a[0] === "chown" || a[0] === "mv" || a[0] === "rmdir" || (a[0] === "rm" && a[2] !== "--"))
      .always(["getent", "passwd", "sbx-alice-abc123def456"], () => (userMade ? { stdout: PW } : { exitCode: 2 }))
      // The id: the highest of the system range that no account, group or hold has (999 held and still owning a file;
      // 997 held with nothing left, so let go; 996 a group's).
      .expect(["getent", "passwd"], { stdout: "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/bash\n" })
      .expect(["getent", "group"], { stdout: "root:x:0:\nsystemd-journal:x:996:\nalice:x:1000:\n" })
      .expect(["cat", "/etc/login.defs"], { stdout: "#SYS_UID_MIN 100\nSYS_UID_MAX 999\n" })
      .expect((a) => a[0] === "find" && a[1] === "/var/lib/sbx/held", { stdout: "999\n997\nnot-an-id\n" })
      .expect((a) => a[0] === "find" && a[1] === "/tmp", { stdout: "999 999 /tmp/left-by-999\n" })
      .expect(["rm", "-f", "--", "/var/lib/sbx/held/997"])
      .expect(["nft", "-j", "list", "table", "inet", "sbx"], { exitCode: 1 })
      // 998 owns nothing in the shared temp dirs: it is given out.
      .expect((a) => a[0] === "find" && a[1] === "/tmp" && a.includes("998"), { stdout: "" })
      .expect((a) => a[0] === "useradd" && a[2] === "--uid" && a[3] === "998", () => ((userMade = true), {}))
      .expect(["nft", "-j", "list", "table", "inet", "sbx"], { exitCode: 1 })
      .expect(["nft", "-f", "-"])
      .expect((a) => a[0] === "getfacl", { exitCode: 1 })
      .expect((a) => a[0] === "stat" && a[3]?.endsWith("/.git") === true, { exitCode: 1 })
      .expect((a) => a[0] === "cat", { exitCode: 1 })
      .expect((a) => a[0] === "setpriv" && a.includes("rev-parse"), { stdout: "/home/alice/src/proj/.git\n" })
      .expect((a) => a[0] === "realpath", { stdout: "/home/alice/src/proj/.git/objects\n" })
      .expect((a) => a[0] === "mountpoint", { exitCode: 1 })
      .expect((a) => a[0] === "mountpoint" && a[2]!.endsWith("/info/alternates"), { exitCode: 1 })
      .expect((a) => a[0] === "setpriv" && a.includes("sh"))
      .expect((a) => a[0] === "setpriv" && a.includes("clone"))
      .expect((a) => a[0] === "setpriv" && a.includes("rename"))
      .expect((a) => a[0] === "setpriv" && a.includes("--get-regexp"), { exitCode: 1 })
      .expect((a) => a[0] === "stat" && a[3]?.endsWith("/work") === true, { exitCode: 1 })
      .expect(["stat", "-c", "%a", "/home/alice"], { stdout: "755\n" });
    const warnings: string[] = [];
    const b = new LinuxUserBackend({ exec, warn: (m) => warnings.push(m) });
    expect((await b.apply(spec)).changed).toBe(true);
    exec.assertDone();
    golden("apply.transcript", exec.transcript());
    const nft = exec.calls.find((c) => c.argv[0] === "nft" && c.argv[1] === "-f")!;
    golden("apply-stdin.nft", String(nft.opts.stdin));
    // the firewall goes in right after the account exists, before any file of the guest's is made
    const order = exec.calls.map((c) => c.argv[0]);
    expect(order.indexOf("nft")).toBeLessThan(order.indexOf("getfacl"));
    expect(warnings.join()).toMatch(/chmod 700 \/home\/alice/);
  });

  test("re-apply on a converged system only reads", async () => {
    const exec = new FakeExec()
      .expect((a) => a[0] === "stat" && a[3] === "/var/lib/sbx", { stdout: "755 0 0\n711 0 0\n700 0 0\n711 0 0\n" })
      .always(["getent", "passwd", "sbx-alice-abc123def456"], { stdout: PW })
      .expect(["nft", "-j", "list", "table", "inet", "sbx"], { stdout: TABLE })
      .expect((a) => a[0] === "getfacl", { stdout: ACL })
      .expect((a) => a[0] === "stat" && a[3]?.endsWith("/.git") === true, { stdout: "998\n" })
      .expect((a) => a[0] === "cat", { stdout: META })
      .expect((a) => a[0] === "mountpoint", { exitCode: 0 }, 2)
      .expect(["stat", "-c", "%a", "/home/alice"], { stdout: "700\n" });
    const b = new LinuxUserBackend({ exec, warn: () => undefined });
    expect((await b.apply(spec)).changed).toBe(false);
    exec.assertDone();
  });

  test("stop blocks everything, then kills the guest's processes by uid", async () => {
    const exec = new FakeExec()
      .always(["getent", "passwd", "sbx-alice-abc123def456"], { stdout: PW })
      .expect(["nft", "-j", "list", "table", "inet", "sbx"], { stdout: TABLE })
      .expect(["nft", "-f", "-"])
      .expect(["pgrep", "-u", "998", "--runstates", "R,S,D,T,t,I"], { stdout: "4242\n" })
      .expect(["pkill", "-KILL", "-u", "998"])
      .expect(["pgrep", "-u", "998", "--runstates", "R,S,D,T,t,I"], { exitCode: 1 });
    const b = new LinuxUserBackend({ exec });
    expect((await b.stop(spec)).changed).toBe(true);
    exec.assertDone();
    expect(String(exec.calls[2]!.opts.stdin)).toContain("mode=stop");
    expect(String(exec.calls[2]!.opts.stdin)).not.toContain("accept");
  });

  test("shellArgv: setpriv to the guest, cwd mapped into its clone, identity vars not overridable", () => {
    const b = new LinuxUserBackend({ exec: new FakeExec(), privateProc: true });
    golden("shell.argv", JSON.stringify(b.shellArgv(spec, { argv: [], cwd: "/home/alice/src/proj/lib", tty: true, env: { TERM: "xterm" } }), null, 1) + "\n");
    const cmd = b.shellArgv(spec, { argv: ["git", "status"], cwd: "/elsewhere", tty: false, env: {} });
    expect(cmd.slice(-5)).toEqual(["-c", 'exec "$@"', "sbx", "git", "status"]);
    expect(cmd).toContain("/var/lib/sbx/homes/sbx-alice-abc123def456");
    expect(cmd.some((a) => a.startsWith("HOME="))).toBe(false);
    // A /proc of the command's own, mounted as root before setpriv drops to the guest.
    const at = cmd.indexOf("unshare");
    expect(cmd.slice(at, at + 9)).toEqual(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", PROC_SCRIPT, "sbx-proc"]);
    expect(cmd.indexOf("setpriv")).toBeGreaterThan(at);
  });

  test("a kernel whose proc mounts share their options (before 5.8) gets no /proc of its own: sbx never changes the machine's", () => {
    expect(new LinuxUserBackend({ exec: new FakeExec(), privateProc: false }).shellArgv(spec, { argv: ["true"], cwd: "/x", tty: false, env: {} })).not.toContain("unshare");
    expect(["5.8.0", "6.18.1-x", "10.0"].map(procMountsApart)).toEqual([true, true, true]);
    expect(["5.7.19", "4.19.0", "garbage"].map(procMountsApart)).toEqual([false, false, false]);
  });
});

describe("hostUpdateRefs (host → clone as the sandbox)", () => {
  const { hostUpdateRefs } = require("../../../../src/sync/import") as typeof import("../../../../src/sync/import");
  const A = "a".repeat(40);
  const B = "b".repeat(40);
  test("host branches become refs/remotes/host/*, gone ones are deleted, HEAD (a symref) and odd names are left alone", () => {
    const host = new Map([
      ["refs/heads/main", A],
      ["refs/heads/feat/x", B],
      ["refs/tags/v1", A],
      ["refs/heads/bad..name", A],
      ["refs/heads/evil", "not-an-oid"],
    ]);
    expect(hostUpdateRefs(host, ["refs/remotes/host/HEAD", "refs/remotes/host/main", "refs/remotes/host/old"])).toEqual([
      `update refs/remotes/host/feat/x ${B}`,
      `update refs/remotes/host/main ${A}`,
      "delete refs/remotes/host/old",
    ]);
    expect(hostUpdateRefs(new Map(), [])).toEqual([]);
  });
});

describe("a command with no terminal ends with what it left running (GROUP_SCRIPT, real sh and setsid)", () => {
  const { GROUP_SCRIPT } = require("../../../../src/drivers/linux-user/backend") as typeof import("../../../../src/drivers/linux-user/backend");
  const run = (argv: string[], stdin?: string) => {
    const started = Date.now();
    const r = Bun.spawnSync(["sh", "-c", GROUP_SCRIPT, "sbx-group", ...argv], { stdin: stdin === undefined ? "ignore" : new TextEncoder().encode(stdin), stdout: "pipe", stderr: "pipe" });
    return { code: r.exitCode, out: r.stdout.toString(), ms: Date.now() - started };
  };

  test("a leftover in the background is killed when the command ends (its output does not hold the caller)", () => {
    const r = run(["sh", "-c", "sleep 30 & echo started"]);
    expect({ code: r.code, out: r.out }).toEqual({ code: 0, out: "started\n" });
    expect(r.ms).toBeLessThan(10_000);
  });

  test("the command returns only once its leftovers are reaped (their pids no longer hold the process limit)", () => {
    // The orphans are init's to reap; an init that polls (this machine's reaps every 2 s) leaves them zombies a while,
    // and each zombie still counts against the sandbox's pids.max, so the next command could not start.
    const r = run(["sh", "-c", "for i in 1 2 3 4 5; do sleep 0.2 & done; echo $$"]);
    const group = Number(r.out.trim());
    expect(group).toBeGreaterThan(1);
    let left = true;
    try {
      process.kill(-group, 0); // succeeds while any member, a zombie too, is in the group
    } catch {
      left = false;
    }
    expect(left).toBe(false);
  }, 20_000);

  test("the exit status is the command's, and stdin reaches it", () => {
    expect(run(["sh", "-c", "exit 7"]).code).toBe(7);
    expect(run(["cat"], "piped in\n").out).toBe("piped in\n");
  });

  test("a process that left the group (a daemon) outlives the command", () => {
    const marker = `/tmp/sbx-group-${process.pid}`;
    const ready = `${marker}.ready`;
    // The command ends only once its daemon has left the group (as a daemon does before its parent returns).
    const r = run(["sh", "-c", `setsid sh -c 'touch ${ready}; sleep 1; touch ${marker}' >/dev/null 2>&1 < /dev/null & while [ ! -e ${ready} ]; do :; done; echo ok`]);
    expect(r.out).toBe("ok\n");
    let made = false;
    for (let i = 0; i < 100 && !made; i++) {
      Bun.sleepSync(100);
      made = Bun.spawnSync(["test", "-e", marker]).exitCode === 0;
    }
    expect(made).toBe(true);
    Bun.spawnSync(["rm", "-f", marker, ready]);
  }, 20_000);
});
