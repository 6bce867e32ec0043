// The last step before a user-account guest's command: confinement the kernel keeps for the rest of its life, then exec.
// Runs as the guest (after setpriv), on sbx's Bun, through bun:ffi (no native addon): `bun confine.ts argv…`.
//
// - A seccomp filter that refuses, with EPERM, what a container's default profile refuses that a guest could use:
//   the kernel keyring, bpf, perf_event_open, mounts (old and new API), namespaces (unshare, setns, clone with a
//   namespace flag; clone3 is ENOSYS so libc falls back to clone, whose flags the filter can read), kexec, modules,
//   userfaultfd and io_uring. Another architecture than the one it was built for is killed, and so is x32 on x86_64.
// - Landlock (ABI 6, Linux 6.12, when the kernel has it): the guest may not connect to an abstract unix socket or send
//   a signal outside its own domain (root's abstract sockets, the daemon, the host user's processes); and its files
//   are narrowed (`fsRules`): it reads and runs the system (/usr, /etc, /opt, /var, /proc, …) and sbx's root (`--ro`),
//   writes only its home, /tmp, /var/tmp and /dev/shm, and uses /dev's devices; nothing else of the machine (another
//   user's home, /srv, /mnt, world-readable or not) can even be read.
// A filter that cannot be installed stops the command (exit 126): a guest never runs with less than was asked.
import { dlopen, FFIType, ptr } from "bun:ffi";

const PR_SET_NO_NEW_PRIVS = 38;
const PR_SET_SECCOMP = 22;
const SECCOMP_MODE_FILTER = 2;
const SECCOMP_RET_KILL_PROCESS = 0x80000000;
const SECCOMP_RET_ERRNO = 0x00050000;
const SECCOMP_RET_ALLOW = 0x7fff0000;
const EPERM = 1;
const ENOSYS = 38;

/** clone(2) flags that make a namespace. */
const CLONE_NS_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00000080;

interface Arch {
  audit: number;
  /** Refused with EPERM. */
  deny: Record<string, number>;
  clone: number;
  clone3: number;
  /** x86_64: syscall numbers at or above this are x32's: killed. */
  x32?: number;
}

const ARCHES: Record<string, Arch> = {
  x64: {
    audit: 0xc000003e,
    deny: {
      keyctl: 250, add_key: 248, request_key: 249, bpf: 321, perf_event_open: 298,
      mount: 165, umount2: 166, pivot_root: 155, open_tree: 428, move_mount: 429, fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433, mount_setattr: 442,
      unshare: 272, setns: 308, kexec_load: 246, kexec_file_load: 320, init_module: 175, finit_module: 313, delete_module: 176,
      userfaultfd: 323, io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427,
    },
    clone: 56,
    clone3: 435,
    x32: 0x40000000,
  },
  arm64: {
    audit: 0xc00000b7,
    deny: {
      keyctl: 219, add_key: 217, request_key: 218, bpf: 280, perf_event_open: 241,
      mount: 40, umount2: 39, pivot_root: 41, open_tree: 428, move_mount: 429, fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433, mount_setattr: 442,
      unshare: 97, setns: 268, kexec_load: 104, kexec_file_load: 294, init_module: 105, finit_module: 273, delete_module: 106,
      userfaultfd: 282, io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427,
    },
    clone: 220,
    clone3: 435,
  },
};

// Classic BPF opcodes.
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const JSET_K = 0x45;
const RET_K = 0x06;

type Insn = [code: number, jt: number, jf: number, k: number];

/** Pure: the filter program for an architecture, as instructions (exported for its test). */
export function seccompProgram(arch: Arch): Insn[] {
  const p: Insn[] = [];
  // The architecture first: a syscall of another ABI has other numbers.
  p.push([LD_W_ABS, 0, 0, 4]);
  p.push([JEQ_K, 1, 0, arch.audit]);
  p.push([RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS]);
  p.push([LD_W_ABS, 0, 0, 0]);
  if (arch.x32 !== undefined) {
    p.push([JGE_K, 0, 1, arch.x32]);
    p.push([RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS]);
  }
  for (const nr of Object.values(arch.deny)) {
    p.push([JEQ_K, 0, 1, nr]);
    p.push([RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM]);
  }
  p.push([JEQ_K, 0, 1, arch.clone3]);
  p.push([RET_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS]);
  // clone: its flags (the low 32 bits of args[0], little-endian at offset 16) may make no namespace.
  p.push([JEQ_K, 0, 3, arch.clone]);
  p.push([LD_W_ABS, 0, 0, 16]);
  p.push([JSET_K, 0, 1, CLONE_NS_FLAGS]);
  p.push([RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM]);
  p.push([RET_K, 0, 0, SECCOMP_RET_ALLOW]);
  return p;
}

// Landlock's filesystem rights (linux/landlock.h), and which ABI brought each.
const FS = {
  EXECUTE: 1 << 0, WRITE_FILE: 1 << 1, READ_FILE: 1 << 2, READ_DIR: 1 << 3, REMOVE_DIR: 1 << 4, REMOVE_FILE: 1 << 5,
  MAKE_CHAR: 1 << 6, MAKE_DIR: 1 << 7, MAKE_REG: 1 << 8, MAKE_SOCK: 1 << 9, MAKE_FIFO: 1 << 10, MAKE_BLOCK: 1 << 11,
  MAKE_SYM: 1 << 12, REFER: 1 << 13, TRUNCATE: 1 << 14, IOCTL_DEV: 1 << 15,
} as const;

/** Pure: every filesystem right this Landlock ABI knows (all are handled: what a rule does not grant is refused). */
export function fsHandled(abi: number): number {
  if (abi < 1) return 0;
  let m = (1 << 13) - 1;
  if (abi >= 2) m |= FS.REFER;
  if (abi >= 3) m |= FS.TRUNCATE;
  if (abi >= 5) m |= FS.IOCTL_DEV;
  return m;
}

/**
 * Pure: the guest's filesystem, as Landlock rules (path → rights, masked by what the ABI handles): the system read and
 * run; `ro` (sbx's root: its Bun, shims, agents and the host repo's objects) the same; its home, /tmp, /var/tmp and
 * /dev/shm read and written; /dev's devices used (read, write, truncate, ioctl: terminals, /dev/null). A path that is
 * not there is passed over by the caller.
 */
export function fsRules(home: string, ro: readonly string[], abi: number): [path: string, rights: number][] {
  const handled = fsHandled(abi);
  const read = FS.EXECUTE | FS.READ_FILE | FS.READ_DIR;
  const dev = FS.READ_FILE | FS.WRITE_FILE | FS.READ_DIR | FS.TRUNCATE | FS.IOCTL_DEV;
  const system = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/var", "/run", "/proc", "/sys", "/snap"];
  return [
    ...system.map((p): [string, number] => [p, read & handled]),
    ...ro.map((p): [string, number] => [p, read & handled]),
    ["/dev", dev & handled],
    ...[home, "/tmp", "/var/tmp", "/dev/shm"].map((p): [string, number] => [p, handled]),
  ];
}

export function archOf(name: string): Arch | undefined {
  return ARCHES[name];
}

function fail(msg: string): never {
  process.stderr.write(`sbx confine: ${msg}\n`);
  process.exit(126);
}

if (import.meta.main) {
  // `bun confine.ts [--ro PATH]… -- argv…` (Bun may keep or drop the `--`).
  let rest = process.argv.slice(2);
  const ro: string[] = [];
  while (rest[0] === "--ro" && rest[1] !== undefined) {
    ro.push(rest[1]);
    rest = rest.slice(2);
  }
  const argv = rest[0] === "--" ? rest.slice(1) : rest;
  if (argv.length === 0) fail("usage: confine.ts -- argv…");
  const arch = ARCHES[process.arch];
  if (!arch) fail(`no seccomp filter for ${process.arch}`);
  const libc = dlopen("libc.so.6", {
    prctl: { args: [FFIType.i32, FFIType.u64, FFIType.u64, FFIType.u64, FFIType.u64], returns: FFIType.i32 },
    // syscall(nr, a, b, c, d): landlock_add_rule takes four arguments (its flags must be 0, not whatever a register holds).
    syscall: { args: [FFIType.i64, FFIType.i64, FFIType.i64, FFIType.i64, FFIType.i64], returns: FFIType.i64 },
    open: { args: [FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
    close: { args: [FFIType.i32], returns: FFIType.i32 },
    execvp: { args: [FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  }).symbols;
  if (libc.prctl(PR_SET_NO_NEW_PRIVS, 1n, 0n, 0n, 0n) !== 0) fail("no_new_privs refused");
  // Landlock (ABI ≥ 6): the scopes (abstract unix sockets and signals stay inside the guest's own domain) and the
  // filesystem rules, in one ruleset. (Below ABI 6 a guest was made only with --allow-weaker: it gets neither.)
  const abi = Number(libc.syscall(444n, 0n, 0n, 1n, 0n));
  if (abi >= 6) {
    const home = process.env.HOME;
    if (!home || !home.startsWith("/")) fail("no HOME to confine the guest's files to");
    const attr = new BigUint64Array([BigInt(fsHandled(abi)), 0n, 0x1n | 0x2n]); // handled_access_fs, handled_access_net, scoped
    const fd = Number(libc.syscall(444n, BigInt(ptr(attr)), 24n, 0n, 0n));
    if (fd < 0) fail("Landlock refused the ruleset");
    const O_PATH = 0o10000000;
    const O_CLOEXEC = 0o2000000;
    for (const [path, rights] of fsRules(home, ro, abi)) {
      const dir = libc.open(ptr(Buffer.from(`${path}\0`)), O_PATH | O_CLOEXEC);
      if (dir < 0) continue; // not on this machine
      // struct landlock_path_beneath_attr { u64 allowed_access; s32 parent_fd; } __attribute__((packed))
      const rule = Buffer.alloc(12);
      rule.writeBigUInt64LE(BigInt(rights), 0);
      rule.writeInt32LE(dir, 8);
      const added = Number(libc.syscall(445n, BigInt(fd), 1n, BigInt(ptr(rule)), 0n));
      libc.close(dir);
      if (added !== 0) fail(`Landlock refused the rule for ${path}`);
    }
    if (Number(libc.syscall(446n, BigInt(fd), 0n, 0n, 0n)) !== 0) fail("Landlock refused its ruleset");
  }
  const prog = seccompProgram(arch);
  const filter = new Uint8Array(prog.length * 8);
  const dv = new DataView(filter.buffer);
  prog.forEach(([code, jt, jf, k], i) => {
    dv.setUint16(i * 8, code, true);
    dv.setUint8(i * 8 + 2, jt);
    dv.setUint8(i * 8 + 3, jf);
    dv.setUint32(i * 8 + 4, k >>> 0, true);
  });
  const fprog = new BigUint64Array([BigInt(prog.length), BigInt(ptr(filter))]);
  if (libc.prctl(PR_SET_SECCOMP, BigInt(SECCOMP_MODE_FILTER), BigInt(ptr(fprog)), 0n, 0n) !== 0) fail("the seccomp filter was refused");
  const strs = argv.map((a) => Buffer.from(`${a}\0`));
  const list = new BigUint64Array(strs.length + 1);
  strs.forEach((b, i) => (list[i] = BigInt(ptr(b))));
  libc.execvp(ptr(strs[0]!), ptr(list));
  process.stderr.write(`sbx: ${argv[0]}: cannot run it (${argv[0]!.includes("/") ? "not there, or not executable" : "not found on PATH"})\n`);
  process.exit(127);
}
