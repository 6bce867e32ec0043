// The guests' seccomp filter, run through a small classic-BPF interpreter: what it refuses, what it lets through, and
// that another architecture or x32 is killed. (The e2e suite loads it into a real kernel: guest-escape-user.test.ts.)
import { describe, expect, test } from "bun:test";
import { archOf, fsHandled, fsRules, seccompProgram } from "../../../shims/confine";

const KILL = 0x80000000;
const ALLOW = 0x7fff0000;
const errno = (e: number) => 0x00050000 | e;

/** Runs the program on one seccomp_data (nr, arch, args[0]). */
function verdict(prog: [number, number, number, number][], data: { nr: number; arch: number; arg0?: number }): number {
  let a = 0;
  for (let pc = 0; pc < prog.length; ) {
    const [code, jt, jf, k] = prog[pc]!;
    if (code === 0x20) {
      a = k === 0 ? data.nr : k === 4 ? data.arch : k === 16 ? (data.arg0 ?? 0) >>> 0 : 0;
      pc++;
    } else if (code === 0x15) pc += 1 + (a >>> 0 === k >>> 0 ? jt : jf);
    else if (code === 0x35) pc += 1 + (a >>> 0 >= k >>> 0 ? jt : jf);
    else if (code === 0x45) pc += 1 + ((a & k) >>> 0 !== 0 ? jt : jf);
    else if (code === 0x06) return k >>> 0;
    else throw new Error(`opcode ${code}`);
  }
  throw new Error("fell off the end");
}

describe("the guests' seccomp filter", () => {
  const x64 = archOf("x64")!;
  const prog = seccompProgram(x64);

  test.each([
    ["unshare", 272],
    ["setns", 308],
    ["mount", 165],
    ["keyctl", 250],
    ["bpf", 321],
    ["io_uring_setup", 425],
    ["userfaultfd", 323],
    ["init_module", 175],
  ])("%s is refused with EPERM", (_name, nr) => expect(verdict(prog, { nr, arch: x64.audit })).toBe(errno(1)));

  test("ordinary syscalls pass: read, openat, execve, socket, connect", () => {
    for (const nr of [0, 257, 59, 41, 42]) expect(verdict(prog, { nr, arch: x64.audit })).toBe(ALLOW);
  });

  test("clone: a thread or a process passes; a namespace flag (user, mount, net, pid) is refused; clone3 is ENOSYS", () => {
    expect(verdict(prog, { nr: 56, arch: x64.audit, arg0: 0x3d0f00 })).toBe(ALLOW); // pthread_create's flags
    expect(verdict(prog, { nr: 56, arch: x64.audit, arg0: 0x01200011 })).toBe(ALLOW); // fork()'s
    for (const flag of [0x10000000, 0x00020000, 0x40000000, 0x20000000]) expect(verdict(prog, { nr: 56, arch: x64.audit, arg0: 0x01200011 | flag })).toBe(errno(1));
    expect(verdict(prog, { nr: 435, arch: x64.audit })).toBe(errno(38));
  });

  test("another architecture, and x32 numbers, are killed", () => {
    expect(verdict(prog, { nr: 0, arch: 0x40000003 })).toBe(KILL); // i386
    expect(verdict(prog, { nr: 0x40000000 | 272, arch: x64.audit })).toBe(KILL);
  });

  test("arm64 has its own numbers, and no x32", () => {
    const arm = archOf("arm64")!;
    const p = seccompProgram(arm);
    expect(verdict(p, { nr: 97, arch: arm.audit })).toBe(errno(1)); // unshare
    expect(verdict(p, { nr: 63, arch: arm.audit })).toBe(ALLOW); // read
    expect(verdict(p, { nr: 0, arch: x64.audit })).toBe(KILL);
  });
});

describe("the guests' Landlock file rules", () => {
  const rules = new Map(fsRules("/var/lib/sbx/homes/g", ["/var/lib/sbx"], 6));
  const W = 1 << 1;
  const MAKE_REG = 1 << 8;
  const X = 1 << 0;
  test("every right the ABI knows is handled (what a rule does not grant is refused)", () => {
    expect(fsHandled(0)).toBe(0);
    expect(fsHandled(1)).toBe(0x1fff);
    expect(fsHandled(3)).toBe(0x7fff);
    expect(fsHandled(6)).toBe(0xffff);
  });
  test("the system and sbx's root are read and run, never written", () => {
    for (const p of ["/usr", "/etc", "/var", "/proc", "/var/lib/sbx"]) {
      expect(rules.get(p)! & X).toBe(X);
      expect(rules.get(p)! & (W | MAKE_REG)).toBe(0);
    }
  });
  test("its home, /tmp, /var/tmp and /dev/shm are its own; /dev's devices are written but nothing is made there", () => {
    for (const p of ["/var/lib/sbx/homes/g", "/tmp", "/var/tmp", "/dev/shm"]) expect(rules.get(p)).toBe(0xffff);
    expect(rules.get("/dev")! & W).toBe(W);
    expect(rules.get("/dev")! & MAKE_REG).toBe(0);
  });
  test("nothing else of the machine: no rule for /home, /root, /srv or /mnt (another user's files, readable or not)", () => {
    for (const p of ["/home", "/root", "/srv", "/mnt", "/media", "/"]) expect(rules.has(p)).toBe(false);
  });
  test("an older ABI's rules ask for no right it does not know", () => {
    for (const [, r] of fsRules("/h", [], 2)) expect(r & ~fsHandled(2)).toBe(0);
  });
});
