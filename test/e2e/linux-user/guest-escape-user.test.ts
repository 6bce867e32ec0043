// The guest-escape suite for the user-account backend (issue 24), run for real as root: a guest gains no privilege
// (no_new_privs, empty capability sets, a setuid-root binary runs as the guest), cannot ptrace or signal the daemon or
// the host user's processes, cannot read the host home's secrets, and cannot write outside its own tree. Each rule
// has a control that shows the probe works (root, or the host user, can do what the guest cannot). A guest command
// starts through confine.ts: a seccomp filter (no namespaces, mounts, keyring, bpf, io_uring, …) and, where the
// kernel has Landlock ABI 6, scopes that keep abstract unix sockets and signals inside the guest's own domain.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { SandboxSpec } from "../../../src/drivers/backend";
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

  test("no-writes-outside: the guest writes its own home and clone, and nothing of the system's or the host's", () => {
    const own = run('touch "$HOME/ok" && echo home-ok');
    expect(own.out.trim()).toBe("home-ok");
    for (const target of ["/etc/sbx-escape", "/usr/local/bin/sbx-escape", "/var/lib/sbx-escape", `${w.host.home}/sbx-escape`, `${w.repo}/sbx-escape`, `${w.root}/sbx-escape`]) {
      const r = run(`touch '${target}' 2>/dev/null && echo WROTE`);
      expect({ target, out: r.out }).toEqual({ target, out: "" });
    }
  });
});
