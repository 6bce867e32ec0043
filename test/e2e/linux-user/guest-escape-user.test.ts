// The guest-escape suite for the user-account backend (issue 24), run for real as root: a guest gains no privilege
// (no_new_privs, empty capability sets, a setuid-root binary runs as the guest), cannot ptrace or signal the daemon or
// the host user's processes, cannot read the host home's secrets, and cannot write outside its own tree. Each rule
// has a control that shows the probe works (root, or the host user, can do what the guest cannot). A guest command
// starts through confine.ts: a seccomp filter (no namespaces, mounts, keyring, bpf, io_uring, …) and, where the
// kernel has Landlock ABI 6, scopes that keep abstract unix sockets and signals inside the guest's own domain.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { SandboxSpec } from "../../../src/core/spec";
import { landlockAbi } from "../../../src/sys/landlock";
import { makeWorld, sh, whyNot, type World } from "./harness";

const skip = whyNot();

describe.skipIf(skip !== undefined)(`guest-escape: linux-user guests${skip ? ` (skipped: ${skip})` : ""}`, () => {
  let w: World;
  let spec: SandboxSpec;
  let dir = "";
  let suid = "";
  const run = (script: string, tty = false) => sh(w.backend.shellArgv(spec, { argv: ["bash", "-c", script], cwd: w.repo, tty, env: {} }));

  beforeAll(async () => {
    w = await makeWorld();
    spec = w.spec("nopriv");
    await w.backend.apply(spec);
    // A setuid-root copy of `id` where the guest can run it (what a host's sudo, ping or passwd is).
    dir = mkdtempSync("/tmp/sbx-suid-");
    chmodSync(dir, 0o755);
    suid = join(dir, "id-suid");
    copyFileSync("/usr/bin/id", suid);
    chmodSync(suid, 0o4755);
  }, 60_000);
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await w?.teardown();
  }, 60_000);

  test("privilege-gain, the control: the setuid binary does elevate outside the guest (as any user without no_new_privs)", () => {
    const r = Bun.spawnSync(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", suid, "-u"]);
    expect(r.stdout.toString().trim()).toBe("0");
  });

  test("privilege-gain: NoNewPrivs 1 and every capability set empty, in a command and in a terminal session", () => {
    for (const tty of [false, true]) {
      const r = run("grep -E '^(NoNewPrivs|Seccomp|CapInh|CapPrm|CapEff|CapBnd|CapAmb):' /proc/self/status", tty);
      expect({ tty, code: r.code }).toEqual({ tty, code: 0 });
      const got = Object.fromEntries(r.out.trim().split("\n").map((l) => l.split(/:\s+/) as [string, string]));
      expect({ tty, got }).toEqual({ tty, got: { NoNewPrivs: "1", Seccomp: "2", CapInh: "0000000000000000", CapPrm: "0000000000000000", CapEff: "0000000000000000", CapBnd: "0000000000000000", CapAmb: "0000000000000000" } });
    }
  });

  test("privilege-gain: a setuid-root binary runs as the guest: its effective uid stays the guest's", () => {
    const guestUid = run("id -u").out.trim();
    expect(guestUid).not.toBe("0");
    expect(run(`${suid} -u`).out.trim()).toBe(guestUid);
  });

  test("no-namespaces: unshare -U, -m and -n are refused; mount too (the control: root may)", () => {
    const r = run("for a in -U -m -n; do unshare $a true 2>/dev/null; echo \"unshare$a=$?\"; done; python3 -c 'import ctypes,os; l=ctypes.CDLL(None,use_errno=True); r=l.mount(b\"none\", b\"/tmp\", b\"tmpfs\", 0, None); print(\"mount=%d errno=%d\" % (r, ctypes.get_errno()))'");
    expect(r.out).toBe("unshare-U=1\nunshare-m=1\nunshare-n=1\nmount=-1 errno=1\n");
    expect(Bun.spawnSync(["unshare", "-U", "true"]).exitCode).toBe(0);
  });

  test("abstract-sockets: root's abstract unix socket refuses the guest (Landlock's scope); the guest's own works for it", async () => {
    const abi = (await import("../../../src/doctor/confinement")).landlockAbi();
    if (abi === null || abi < 6) return console.warn(`skipped: Landlock ABI ${abi ?? "none"} has no socket scoping (needs 6, Linux 6.12)`);
    const name = `sbx-escape-${w.tag}`;
    const listener = Bun.spawn(["/usr/bin/python3", "-c", `import socket,time; s=socket.socket(socket.AF_UNIX); s.bind('\\0${name}'); s.listen(); print('up', flush=True); time.sleep(30)`], { stdout: "pipe" });
    try {
      const reader = (listener.stdout as ReadableStream<Uint8Array>).getReader();
      await reader.read();
      reader.releaseLock();
      const probe = (who: string) => `python3 -c "import socket; s=socket.socket(socket.AF_UNIX)
try:
  s.connect(b'\\0${who}'); print('connected')
except OSError as e: print('refused', e.errno)"`;
      expect(run(probe(name)).out.trim()).toBe("refused 1");
      // The control: root (outside any domain) connects.
      expect(Bun.spawnSync(["/usr/bin/python3", "-c", `import socket; s=socket.socket(socket.AF_UNIX); s.connect(b'\\0${name}'); print('connected')`]).stdout.toString().trim()).toBe("connected");
      // Its own: a listener and a client in the same guest command.
      const own = run(`python3 -c "import socket; l=socket.socket(socket.AF_UNIX); l.bind(b'\\0own-${w.tag}'); l.listen(); c=socket.socket(socket.AF_UNIX); c.connect(b'\\0own-${w.tag}'); print('own ok')"`);
      expect(own.out.trim()).toBe("own ok");
    } finally {
      listener.kill();
    }
  });

  test("no-ptrace, no-kill: the daemon (root) and the host user's processes can be neither traced nor signalled", () => {
    // A process of the host user's, and this test process (root, standing for the daemon).
    const hostProc = Bun.spawn(["setpriv", `--reuid=${w.host.uid}`, `--regid=${w.host.gid}`, "--clear-groups", "--", "sleep", "60"], { stdout: "ignore", stderr: "ignore" });
    try {
      for (const pid of [process.pid, hostProc.pid]) {
        const r = run(`kill -0 ${pid} 2>&1; echo "kill=$?"; cat /proc/${pid}/environ >/dev/null 2>&1; echo "environ=$?"; readlink /proc/${pid}/cwd >/dev/null 2>&1; echo "cwd=$?"; python3 -c 'import ctypes,sys; l=ctypes.CDLL(None,use_errno=True); r=l.ptrace(16, ${pid}, 0, 0); print("ptrace=%d errno=%d" % (r, ctypes.get_errno()))'`);
        expect({ pid, out: r.out.replace(/^.*Operation not permitted\n/m, "") }).toEqual({ pid, out: "kill=1\nenviron=1\ncwd=1\nptrace=-1 errno=1\n" });
      }
      // The control: the host user itself can signal its own process.
      expect(Bun.spawnSync(["setpriv", `--reuid=${w.host.uid}`, `--regid=${w.host.gid}`, "--clear-groups", "--", "kill", "-0", String(hostProc.pid)]).exitCode).toBe(0);
    } finally {
      hostProc.kill();
    }
  });

  test("no-proc-view: the guest's /proc lists its own processes only: another user's argv (a token in it) is not there", () => {
    if (!w.backend.privateProc) return console.warn("skipped: this kernel's proc mounts share their options (Linux < 5.8)");
    const SECRET = `sbx-proc-secret-${w.tag}`;
    // The host user's shell, its argv holding the token ($0), waiting on a sleep (so it is not replaced by it).
    const hostProc = Bun.spawn(["setpriv", `--reuid=${w.host.uid}`, `--regid=${w.host.gid}`, "--clear-groups", "--", "sh", "-c", "sleep 60; :", SECRET], { stdout: "ignore", stderr: "ignore" });
    try {
      for (let i = 0; i < 100 && !Bun.spawnSync(["cat", `/proc/${hostProc.pid}/cmdline`]).stdout.toString().includes(SECRET); i++) Bun.sleepSync(10);
      const r = run(`cat /proc/${hostProc.pid}/cmdline 2>/dev/null; for p in /proc/[0-9]*; do cat $p/cmdline 2>/dev/null; done | tr '\\0' ' '; echo; ps -eo user= | sort -u | tr '\\n' ' '; echo; echo own=$(ls -d /proc/$$ 2>/dev/null)`);
      expect(r.out).not.toContain(SECRET);
      const users = r.out.split("\n")[1]!.trim().split(/\s+/).filter(Boolean);
      expect(users.every((u) => u === w.backend.guest(spec) || /^\d+$/.test(u))).toBe(true);
      expect(r.out).toContain(`own=/proc/`);
      // The control: root (and the host user) see that argv.
      expect(Bun.spawnSync(["cat", `/proc/${hostProc.pid}/cmdline`]).stdout.toString()).toContain(SECRET);
      // And the machine's own /proc keeps its options: nothing of the guest's mount leaked out.
      expect(Bun.spawnSync(["findmnt", "-no", "OPTIONS", "/proc"]).stdout.toString()).not.toContain("hidepid");
    } finally {
      hostProc.kill();
    }
  });

  test("no-host-secrets: the host home's keys, config and shell history are unreadable; its other repos are not listed", () => {
    const home = w.host.home;
    const plant = (rel: string, text: string, mode: number) =>
      Bun.spawnSync(["setpriv", `--reuid=${w.host.uid}`, `--regid=${w.host.gid}`, "--clear-groups", "--", "sh", "-c", `mkdir -p "$(dirname '${home}/${rel}')" && printf %s '${text}' > '${home}/${rel}' && chmod ${mode.toString(8)} '${home}/${rel}'`]);
    plant(".ssh/id_ed25519", "SECRET-SSH-KEY", 0o600);
    plant(".config/gh/hosts.yml", "SECRET-GH-TOKEN", 0o644);
    plant(".bash_history", "SECRET-HISTORY", 0o600);
    plant("src/other-repo/.git/config", "[remote] SECRET-OTHER-REPO", 0o644);
    const r = run(`for f in .ssh/id_ed25519 .config/gh/hosts.yml .bash_history src/other-repo/.git/config; do cat "${home}/$f" 2>/dev/null; done; ls ${home} ${home}/src 2>/dev/null; echo done`);
    expect(r.out).not.toContain("SECRET");
    expect(r.out).not.toContain("other-repo");
    expect(r.out.trim().endsWith("done")).toBe(true);
    // The control: the host user reads them.
    expect(Bun.spawnSync(["setpriv", `--reuid=${w.host.uid}`, `--regid=${w.host.gid}`, "--clear-groups", "--", "cat", `${home}/.ssh/id_ed25519`]).stdout.toString()).toBe("SECRET-SSH-KEY");
  });

  test("no-files-outside (Landlock): a world-writable dir in the system is not written, a world-readable one elsewhere not read", () => {
    const abi = landlockAbi() ?? 0;
    if (!w.backend.confines || abi < 6) return console.warn(`skipped: Landlock's file rules need confine.ts and ABI 6 (this kernel: ${abi})`);
    const writable = `/opt/sbx-e2e-${w.tag}`;
    const readable = `/srv/sbx-e2e-${w.tag}`;
    sh(["mkdir", "-p", writable, readable]);
    sh(["chmod", "1777", writable]);
    sh(["bash", "-c", `echo WORLD-READABLE > ${readable}/note && chmod 755 ${readable} && chmod 644 ${readable}/note`]);
    try {
      const r = run(`touch ${writable}/x 2>/dev/null && echo WROTE; cat ${readable}/note 2>/dev/null; ls ${readable} 2>/dev/null; echo done`);
      expect(r.out).toBe("done\n");
      // Its own places work as before, and the system reads and runs.
      expect(run('touch "$HOME/lk" /tmp/sbx-lk-$$ && rm /tmp/sbx-lk-$$ && cat /etc/hostname >/dev/null && git --version >/dev/null && echo ok').out.trim()).toBe("ok");
      // The control: any other user writes the one and reads the other.
      const other = (c: string) => Bun.spawnSync(["setpriv", `--reuid=${w.host.uid}`, `--regid=${w.host.gid}`, "--clear-groups", "--", "sh", "-c", c]).stdout.toString();
      expect(other(`touch ${writable}/y && cat ${readable}/note`)).toBe("WORLD-READABLE\n");
    } finally {
      sh(["rm", "-rf", writable, readable]);
    }
  });

  test("private-files: a guest's files are its own (umask 077) and its temp dir is its own (TMPDIR, mode 700), not the shared /tmp", () => {
    // In its home the host user's default ACL entry still applies (the group bits show the ACL's mask); nobody else
    // gets anything. In a dir without one (/tmp), the umask alone: 600.
    const r = run('umask; echo "$TMPDIR"; stat -c "%a %U" "$TMPDIR"; : > "$TMPDIR/f"; stat -c "%A" "$TMPDIR/f"; f=/tmp/sbx-um-$$; : > $f; stat -c "%a" $f; rm -f $f');
    const home = w.backend.home(w.backend.guest(spec));
    const [umask, tmpdir, dirMode, homeFile, tmpFile] = r.out.trim().split("\n");
    expect({ umask, tmpdir, dirMode }).toEqual({ umask: "0077", tmpdir: `${home}/.tmp`, dirMode: `700 ${w.backend.guest(spec)}` });
    expect(homeFile!.slice(-3)).toBe("---");
    expect(tmpFile).toBe("600");
  });

  test("no-writes-outside: the guest writes its own home and clone, and nothing of the system's or the host's", () => {
    const own = run('touch "$HOME/ok" && echo home-ok');
    expect(own.out.trim()).toBe("home-ok");
    for (const target of ["/etc/sbx-escape", "/usr/local/bin/sbx-escape", "/var/lib/sbx-escape", `${w.host.home}/sbx-escape`, `${w.repo}/sbx-escape`, `${w.root}/sbx-escape`]) {
      const r = run(`touch '${target}' 2>/dev/null && echo WROTE`);
      expect({ target, out: r.out }).toEqual({ target, out: "" });
    }
  });
});
