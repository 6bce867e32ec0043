// The splice relay's thread (sys/splice-relay.ts): relays one pair of connected sockets at a time with splice(2)
// through two pipes, poll-driven, so the bytes never enter JavaScript (no copy into the process, no event-loop wake-up
// per chunk on the daemon's thread). Messages in: { a, b, early, earlyEnd } (descriptors this thread owns from then on);
// out: { done: true, up, down, clean } when both directions have ended (clean) or one broke, every descriptor closed.
import { dlopen, FFIType, ptr, read } from "bun:ffi";

const { symbols: c } = dlopen("libc.so.6", {
  poll: { args: [FFIType.ptr, FFIType.u64, FFIType.i32], returns: FFIType.i32 },
  splice: { args: [FFIType.i32, FFIType.ptr, FFIType.i32, FFIType.ptr, FFIType.u64, FFIType.u32], returns: FFIType.i64 },
  write: { args: [FFIType.i32, FFIType.ptr, FFIType.u64], returns: FFIType.i64 },
  pipe2: { args: [FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
  fcntl: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  shutdown: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  close: { args: [FFIType.i32], returns: FFIType.i32 },
  __errno_location: { args: [], returns: FFIType.ptr },
});

const POLLIN = 0x1;
const POLLOUT = 0x4;
const POLLERR = 0x8;
const POLLHUP = 0x10;
const EINTR = 4;
const EAGAIN = 11;
const SPLICE_MOVE_NONBLOCK = 0x1 | 0x2;
const O_CLOEXEC_NONBLOCK = 0o2000000 | 0o4000;
const F_SETPIPE_SZ = 1031;
const F_GETFL = 3;
const F_SETFL = 4;
const O_NONBLOCK = 0o4000;
/** Bytes a direction holds (its pipe): the relay's bound per direction, in the kernel, whatever either end does. */
export const PIPE_BYTES = 1 << 20;
const SHUT_WR = 1;

const errno = (): number => read.i32(c.__errno_location()!, 0);

interface Dir {
  src: number;
  dst: number;
  pipe: Int32Array;
  cap: number;
  held: number;
  eof: boolean;
  shut: boolean;
  moved: number;
}

function pipeOf(): Int32Array | null {
  const p = new Int32Array(2);
  if (c.pipe2(ptr(p), O_CLOEXEC_NONBLOCK) !== 0) return null;
  return p;
}

/** Writes `early` (what the client sent before the upstream existed) to fd, waiting for room; false when it broke. */
function writeAll(fd: number, early: Uint8Array, pfd: DataView, pfdPtr: number): boolean {
  let off = 0;
  while (off < early.length) {
    const n = Number(c.write(fd, ptr(early, off), early.length - off));
    if (n > 0) off += n;
    else if (n < 0 && (errno() === EAGAIN || errno() === EINTR)) {
      pfd.setInt32(0, fd, true);
      pfd.setInt16(4, POLLOUT, true);
      pfd.setInt16(6, 0, true);
      c.poll(pfdPtr, 1, -1);
    } else return false;
  }
  return true;
}

/** Relays a ⇄ b until both directions have ended (each FIN passed on as a shutdown) or one breaks; closes a and b. */
function relay(a: number, b: number, early: Uint8Array, earlyEnd: boolean): { up: number; down: number; clean: boolean } {
  const pfdBuf = new Int32Array(4); // two struct pollfd { int fd; short events; short revents; }
  const pfd = new DataView(pfdBuf.buffer);
  const pfdPtr = ptr(pfdBuf);
  const p0 = pipeOf();
  const p1 = pipeOf();
  const dirs: Dir[] = [];
  let broken = p0 === null || p1 === null;
  // The poll loop needs non-blocking sockets (a handed-over descriptor keeps whatever its maker set).
  for (const fd of [a, b]) c.fcntl(fd, F_SETFL, c.fcntl(fd, F_GETFL, 0) | O_NONBLOCK);
  if (!broken) {
    for (const [src, dst, pipe] of [[a, b, p0!], [b, a, p1!]] as const) {
      const got = c.fcntl(pipe[1]!, F_SETPIPE_SZ, PIPE_BYTES); // the default (64 KB) when the user's pipe pages are spent
      dirs.push({ src, dst, pipe, cap: got > 0 ? got : 65536, held: 0, eof: false, shut: false, moved: 0 });
    }
    if (early.length > 0 && !writeAll(b, early, pfd, pfdPtr)) broken = true;
    if (earlyEnd) {
      dirs[0]!.eof = true;
      dirs[0]!.shut = true;
      c.shutdown(b, SHUT_WR);
    }
  }
  while (!broken && !(dirs[0]!.shut && dirs[1]!.shut)) {
    const events = [0, 0];
    dirs.forEach((d, i) => {
      if (!d.eof && d.held < d.cap) events[i]! |= POLLIN;
      if (d.held > 0) events[1 - i]! |= POLLOUT;
    });
    pfd.setInt32(0, a, true);
    pfd.setInt16(4, events[0]!, true);
    pfd.setInt16(6, 0, true);
    pfd.setInt32(8, b, true);
    pfd.setInt16(12, events[1]!, true);
    pfd.setInt16(14, 0, true);
    if (c.poll(pfdPtr, 2, -1) < 0) {
      if (errno() === EINTR) continue;
      break;
    }
    const revents = [pfd.getInt16(6, true), pfd.getInt16(14, true)];
    // A socket that hung up or failed while nothing is asked of it would wake poll at once, forever: it can take nothing
    // more, so the pair ends (what the other side still sends would have nowhere to go).
    if (revents.some((r, i) => events[i] === 0 && r & (POLLERR | POLLHUP))) break;
    dirs.forEach((d, i) => {
      if (broken) return;
      const inEv = revents[i]!;
      const outEv = revents[1 - i]!;
      if (!d.eof && d.held < d.cap && inEv & (POLLIN | POLLHUP | POLLERR)) {
        const n = Number(c.splice(d.src, null, d.pipe[1]!, null, d.cap - d.held, SPLICE_MOVE_NONBLOCK));
        if (n > 0) d.held += n;
        else if (n === 0) d.eof = true;
        else if (errno() !== EAGAIN && errno() !== EINTR) broken = true;
      }
      if (d.held > 0 && outEv & (POLLOUT | POLLHUP | POLLERR)) {
        const n = Number(c.splice(d.pipe[0]!, null, d.dst, null, d.held, SPLICE_MOVE_NONBLOCK));
        if (n > 0) {
          d.held -= n;
          d.moved += n;
        } else if (n < 0 && errno() !== EAGAIN && errno() !== EINTR) broken = true;
      }
      if (d.eof && d.held === 0 && !d.shut) {
        d.shut = true;
        c.shutdown(d.dst, SHUT_WR);
      }
    });
  }
  for (const p of [p0, p1]) if (p) for (const fd of p) c.close(fd);
  c.close(a);
  c.close(b);
  const clean = dirs.length === 2 && dirs.every((d) => d.shut);
  return { up: dirs[0]?.moved ?? 0, down: dirs[1]?.moved ?? 0, clean };
}

declare const self: Worker;
self.onmessage = (e: MessageEvent<{ a: number; b: number; early: Uint8Array; earlyEnd: boolean }>) => {
  const { a, b, early, earlyEnd } = e.data;
  const moved = relay(a, b, early, earlyEnd);
  self.postMessage({ done: true, ...moved });
};
