// Socket file descriptors across processes (Linux, glibc, 64-bit): a loopback TCP listener made by hand, sent with SCM_RIGHTS, checked on arrival.
//
// The in-sandbox forwarder makes its 127.0.0.1:<port> listener here and hands it to the daemon's egress proxy over the
// sandbox's own listen.sock, so the proxy accepts the sandbox's connections itself and no byte is relayed twice. Bun
// has no API for SCM_RIGHTS, so this calls libc through bun:ffi. Lives in shims/ (the forwarder runs from this mounted
// dir): Bun built-ins only, and nothing happens at import; `fdPassing()` loads libc on first use and is null where
// that is not possible (macOS, musl, 32-bit), and callers then keep the plain relay.
import { dlopen, FFIType, ptr, read, CString } from "bun:ffi";

const AF_UNIX = 1;
const AF_INET = 2;
const AF_INET6 = 10;
const SOCK_STREAM = 1;
const SOCK_NONBLOCK = 0o4000;
const SOCK_CLOEXEC = 0o2000000;
const SOL_SOCKET = 1;
const SO_REUSEADDR = 2;
const SO_TYPE = 3;
const SO_ACCEPTCONN = 30;
const SO_PROTOCOL = 38;
const SO_DOMAIN = 39;
const IPPROTO_TCP = 6;
const SCM_RIGHTS = 1;
const MSG_DONTWAIT = 0x40;
const MSG_CTRUNC = 0x8;
const MSG_NOSIGNAL = 0x4000;
const MSG_CMSG_CLOEXEC = 0x40000000;
const EAGAIN = 11;
const SOL_IP = 0;
/** netfilter's getsockopt: the destination a connection had before NAT (linux/netfilter_ipv4.h). */
const SO_ORIGINAL_DST = 80;
// struct msghdr on LP64 Linux: name 0, namelen 8, iov 16, iovlen 24, control 32, controllen 40, flags 48; 56 bytes.
// struct cmsghdr: len (size_t) 0, level 8, type 12, data 16. CMSG_LEN(4n) = 16 + 4n, CMSG_SPACE(4n) rounds that up to 8.
const MSGHDR = 56;
const CMSG_LEN_1 = 20;

const symbols = {
  socket: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  bind: { args: [FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
  listen: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  setsockopt: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
  getsockopt: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  getsockname: { args: [FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  getpeername: { args: [FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  sendmsg: { args: [FFIType.i32, FFIType.ptr, FFIType.i32], returns: FFIType.i64 },
  recvmsg: { args: [FFIType.i32, FFIType.ptr, FFIType.i32], returns: FFIType.i64 },
  dup: { args: [FFIType.i32], returns: FFIType.i32 },
  close: { args: [FFIType.i32], returns: FFIType.i32 },
  strerror: { args: [FFIType.i32], returns: FFIType.ptr },
  __errno_location: { args: [], returns: FFIType.ptr },
} as const;

type Libc = ReturnType<typeof dlopen<typeof symbols>>["symbols"];

/** What a received descriptor turned out to be. */
export interface SocketInfo {
  family: "inet" | "inet6" | "unix" | "other";
  stream: boolean;
  listening: boolean;
  address: string;
  port: number;
  /** The peer's address and port, for a connected socket (else "" and 0). */
  peerAddress?: string;
  peerPort?: number;
  /** Whether the protocol is TCP (a SOCK_STREAM socket may be SCTP or MPTCP too). */
  tcp?: boolean;
}

export interface FdPassing {
  /** A listening TCP socket on 127.0.0.1:port (0 picks one), non-blocking and close-on-exec. Throws with errno's text. */
  listenLoopback(port: number): { fd: number; port: number };
  /**
   * The same on every address (0.0.0.0:port): inside a container with no network, every address it has is its own
   * loopback, and a listener there is how connections to any of 127.0.0.0/8 are taken (the transparent path).
   */
  listenAll(port: number): { fd: number; port: number };
  /** Sends fd over a connected unix socket with one data byte; true when the kernel took it. */
  sendFd(sock: number, fd: number): boolean;
  /** The same with several descriptors in one message (what a receiver must refuse; tests). */
  sendFds(sock: number, fds: readonly number[]): boolean;
  /**
   * Reads one message without blocking: the descriptor it carried (close-on-exec), or why there is none. More than
   * one descriptor is refused (the kernel closes the extras; the first is closed here).
   */
  recvFd(sock: number): { fd: number } | { none: "nothing yet" | "no descriptor was sent" | "closed" | "more than one descriptor" | string };
  /**
   * Sends fd with a 4-byte tag (u32 BE) as the message's data, so the receiver can tell which request it answers; true
   * when the kernel took it (false when the channel is full: the caller keeps the descriptor and does without).
   */
  sendTagged(sock: number, fd: number, tag: number): boolean;
  /** Reads one tagged message without blocking: its tag and descriptor, or why there is none (as recvFd). */
  recvTagged(sock: number): { fd: number; tag: number } | { none: string };
  /** What fd is, or an error text when it is not a socket. */
  socketInfo(fd: number): SocketInfo | { error: string };
  dup(fd: number): number;
  close(fd: number): void;
  /**
   * Where an accepted IPv4 connection was headed before NAT (`SO_ORIGINAL_DST`: a guest's connection the firewall
   * redirected to the proxy); its own destination when nothing rewrote it; null when the kernel has no record.
   */
  originalDst(fd: number): { address: string; port: number } | null;
}

let loaded: FdPassing | null | undefined;

/** libc's socket calls, loaded once; null where this file's struct layouts do not hold. */
export function fdPassing(): FdPassing | null {
  if (loaded !== undefined) return loaded;
  loaded = null;
  if (process.platform !== "linux" || (process.arch !== "x64" && process.arch !== "arm64")) return null;
  let lib: Libc;
  try {
    lib = dlopen("libc.so.6", symbols).symbols;
  } catch {
    return null;
  }
  loaded = make(lib);
  return loaded;
}

function make(c: Libc): FdPassing {
  const errno = () => read.i32(c.__errno_location()!, 0);
  const fail = (what: string): Error => {
    const e = errno();
    return new Error(`${what}: ${new CString(c.strerror(e)!).toString()} (errno ${e})`);
  };
  const intOpt = (fd: number, opt: number): number | null => {
    const v = new Int32Array(1);
    const len = new Uint32Array([4]);
    return c.getsockopt(fd, SOL_SOCKET, opt, ptr(v), ptr(len)) === 0 ? v[0]! : null;
  };
  /** msghdr + one iovec of one byte + a control buffer for n descriptors; the buffers stay referenced by the caller. */
  const message = (n = 1, data: Buffer = Buffer.alloc(1, 0x4c) /* "L" */) => {
    const byte = data;
    const iov = Buffer.alloc(16);
    iov.writeBigUInt64LE(BigInt(ptr(byte)), 0);
    iov.writeBigUInt64LE(BigInt(byte.length), 8);
    const space = 16 + Math.ceil((4 * n) / 8) * 8; // CMSG_SPACE(4n)
    const ctl = Buffer.alloc(space);
    const msg = Buffer.alloc(MSGHDR);
    msg.writeBigUInt64LE(BigInt(ptr(iov)), 16);
    msg.writeBigUInt64LE(1n, 24);
    msg.writeBigUInt64LE(BigInt(ptr(ctl)), 32);
    msg.writeBigUInt64LE(BigInt(space), 40);
    return { byte, iov, ctl, msg };
  };
  /** getsockname or getpeername as address and port ("" and 0 when it fails or the family is not IP). */
  const sockaddr = (fd: number, domain: number, peer: boolean): { address: string; port: number } => {
    const sa = Buffer.alloc(128);
    const len = new Uint32Array([128]);
    if ((peer ? c.getpeername : c.getsockname)(fd, ptr(sa), ptr(len)) !== 0) return { address: "", port: 0 };
    if (domain === AF_INET) return { port: sa.readUInt16BE(2), address: [4, 5, 6, 7].map((i) => sa[i]).join(".") };
    if (domain !== AF_INET6) return { address: "", port: 0 };
    const words = [];
    for (let i = 8; i < 24; i += 2) words.push(sa.readUInt16BE(i).toString(16));
    return { port: sa.readUInt16BE(2), address: words.join(":") };
  };
  function socketInfo(fd: number): SocketInfo | { error: string } {
    const domain = intOpt(fd, SO_DOMAIN);
    if (domain === null) return { error: fail(`fd ${fd} is not a socket`).message };
    const type = intOpt(fd, SO_TYPE);
    const listening = intOpt(fd, SO_ACCEPTCONN) === 1;
    const { address, port } = sockaddr(fd, domain, false);
    const peer = sockaddr(fd, domain, true);
    const family = domain === AF_INET ? "inet" : domain === AF_INET6 ? "inet6" : domain === AF_UNIX ? "unix" : "other";
    return { family, stream: type === SOCK_STREAM, listening, address, port, peerAddress: peer.address, peerPort: peer.port, tcp: intOpt(fd, SO_PROTOCOL) === IPPROTO_TCP };
  }
  function sendFds(sock: number, fds: readonly number[], data?: Buffer): boolean {
    const m = message(fds.length, data);
    m.ctl.writeBigUInt64LE(BigInt(16 + 4 * fds.length), 0); // CMSG_LEN(4n)
    m.ctl.writeInt32LE(SOL_SOCKET, 8);
    m.ctl.writeInt32LE(SCM_RIGHTS, 12);
    fds.forEach((fd, i) => m.ctl.writeInt32LE(fd, 16 + 4 * i));
    return Number(c.sendmsg(sock, ptr(m.msg), MSG_NOSIGNAL | MSG_DONTWAIT)) === m.byte.length;
  }
  /** One message without blocking, with a data buffer of `size` bytes: the descriptor it carried and its data. */
  function recvOne(sock: number, size: number): { fd: number; data: Buffer } | { none: string } {
    const m = message(1, Buffer.alloc(size));
    const n = Number(c.recvmsg(sock, ptr(m.msg), MSG_DONTWAIT | MSG_CMSG_CLOEXEC));
    if (n < 0) return errno() === EAGAIN ? { none: "nothing yet" } : { none: fail("recvmsg").message };
    if (n === 0) return { none: "closed" };
    const controlLen = Number(m.msg.readBigUInt64LE(40));
    const flags = m.msg.readInt32LE(48);
    if (controlLen < CMSG_LEN_1 || m.ctl.readInt32LE(8) !== SOL_SOCKET || m.ctl.readInt32LE(12) !== SCM_RIGHTS) return { none: "no descriptor was sent" };
    // CMSG_SPACE(4) has room for two: every descriptor that arrived is counted, and all are closed unless exactly one.
    const count = Math.min((Number(m.ctl.readBigUInt64LE(0)) - 16) / 4, (m.ctl.length - 16) / 4);
    const fds: number[] = [];
    for (let i = 0; i < count; i++) fds.push(m.ctl.readInt32LE(16 + 4 * i));
    if (fds.length !== 1 || (flags & MSG_CTRUNC) !== 0) {
      for (const fd of fds) c.close(fd);
      return { none: "more than one descriptor" };
    }
    return { fd: fds[0]!, data: m.byte.subarray(0, n) };
  }
  function listenTcp(port: number, address: number): { fd: number; port: number } {
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`bad port ${port}`);
    const fd = c.socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) throw fail("socket");
    try {
      const one = new Int32Array([1]);
      if (c.setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, ptr(one), 4) !== 0) throw fail("setsockopt SO_REUSEADDR");
      const sa = Buffer.alloc(16);
      sa.writeUInt16LE(AF_INET, 0);
      sa.writeUInt16BE(port, 2);
      sa.writeUInt32BE(address, 4);
      if (c.bind(fd, ptr(sa), 16) !== 0) throw fail(`bind ${address === 0 ? "0.0.0.0" : "127.0.0.1"}:${port}`);
      if (c.listen(fd, 511) !== 0) throw fail("listen");
      const info = socketInfo(fd);
      if ("error" in info) throw new Error(info.error);
      return { fd, port: info.port };
    } catch (e) {
      c.close(fd);
      throw e;
    }
  }
  return {
    listenLoopback: (port) => listenTcp(port, 0x7f000001),
    listenAll: (port) => listenTcp(port, 0),
    sendFd: (sock, fd) => sendFds(sock, [fd]),
    sendFds,
    recvFd(sock) {
      const r = recvOne(sock, 1);
      return "fd" in r ? { fd: r.fd } : r;
    },
    sendTagged(sock, fd, tag) {
      const data = Buffer.alloc(4);
      data.writeUInt32BE(tag >>> 0);
      return sendFds(sock, [fd], data);
    },
    recvTagged(sock) {
      const r = recvOne(sock, 4);
      if ("none" in r) return r;
      if (r.data.length !== 4) {
        c.close(r.fd);
        return { none: "a descriptor without its 4-byte tag" };
      }
      return { fd: r.fd, tag: r.data.readUInt32BE(0) };
    },
    socketInfo,
    originalDst(fd) {
      const sa = Buffer.alloc(16);
      const len = new Uint32Array([16]);
      if (c.getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, ptr(sa), ptr(len)) !== 0) return null;
      if (sa.readUInt16LE(0) !== AF_INET) return null;
      return { address: [4, 5, 6, 7].map((i) => sa[i]).join("."), port: sa.readUInt16BE(2) };
    },
    dup(fd) {
      const d = c.dup(fd);
      if (d < 0) throw fail(`dup ${fd}`);
      return d;
    },
    close(fd) {
      c.close(fd);
    },
  };
}

/** Whether a received descriptor is what a forwarder may hand over: a listening TCP socket on a loopback address. */
export function loopbackListener(info: SocketInfo | { error: string }): string | null {
  if ("error" in info) return info.error;
  if (info.family !== "inet" && info.family !== "inet6") return `a ${info.family} socket, not TCP`;
  if (!info.stream) return "not a stream socket";
  if (!info.listening) return "not a listening socket";
  const loop = info.family === "inet" ? info.address.startsWith("127.") : info.address === "0:0:0:0:0:0:0:1";
  if (!loop) return `bound to ${info.address}, not loopback`;
  return null;
}

/**
 * Whether a received descriptor is what the exec agent may hand over for `sbx port`: a TCP connection it made from its own
 * loopback to `port` of its own loopback (127.0.0.1 or ::1), the one the daemon asked it to dial, and nothing else.
 */
export function loopbackConnectionTo(info: SocketInfo | { error: string }, port: number): string | null {
  if ("error" in info) return info.error;
  if (info.family !== "inet" && info.family !== "inet6") return `a ${info.family} socket, not TCP`;
  if (!info.stream || !info.tcp) return "not a TCP stream socket";
  if (info.listening) return "a listening socket, not a connection";
  if (!info.peerPort || info.peerAddress === undefined) return "not connected";
  const loop = (a: string) => (info.family === "inet" ? a === "127.0.0.1" : a === "0:0:0:0:0:0:0:1");
  if (!loop(info.peerAddress) || info.peerPort !== port) return `connected to ${info.peerAddress}:${info.peerPort}, not loopback port ${port}`;
  if (!loop(info.address)) return `made from ${info.address}, not loopback`;
  return null;
}
