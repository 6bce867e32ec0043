// Relays pairs of connected sockets with splice(2) on threads of their own (sys/splice-worker.ts): the bytes go from
// one socket to a pipe to the other inside the kernel, never copied into the daemon or waking its event loop. Used by
// `sbx port` for a connection the sandbox's agent handed over (measured, issue 42: one Bun relay 0.37–0.57x direct
// throughput on this machine, this relay 0.61–0.66x, as a C splice relay). Bounded: at most `threads` pairs at once
// (the caller relays the rest itself), and a pipe's worth (1 MB) per direction, held by the kernel.
import { dlopen, FFIType } from "bun:ffi";

const SHUT_RDWR = 2;

export interface SplicedPair {
  /** Cuts the pair at once (both directions; the thread then closes its descriptors and `done` runs). */
  cut(): void;
}

export interface SpliceRelay {
  /**
   * Relays `client` (a descriptor another owner keeps open: it is duplicated) and `up` (taken: closed when the pair
   * ends), after writing `early` to up (and ending up's writing side when `earlyEnd`). Null when every thread is busy
   * (nothing taken). `done` runs once both directions have ended (`clean`: each end's FIN passed on) or one broke.
   */
  start(client: number, up: number, early: Uint8Array, earlyEnd: boolean, done: (clean: boolean) => void): SplicedPair | null;
}

let libc: { dup(fd: number): number; close(fd: number): number; shutdown(fd: number, how: number): number } | null | undefined;

function loadLibc(): typeof libc {
  if (libc !== undefined) return libc;
  libc = null;
  if (process.platform !== "linux") return null;
  try {
    libc = dlopen("libc.so.6", {
      dup: { args: [FFIType.i32], returns: FFIType.i32 },
      close: { args: [FFIType.i32], returns: FFIType.i32 },
      shutdown: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    }).symbols;
  } catch {
    libc = null;
  }
  return libc;
}

/** A relay with up to `threads` pairs at once; null where splice cannot be used (not Linux, no libc for bun:ffi). */
export function spliceRelay(threads = 16): SpliceRelay | null {
  const c = loadLibc();
  if (!c) return null;
  const idle: Worker[] = [];
  let busy = 0;
  return {
    start(client, up, early, earlyEnd, done) {
      if (busy >= threads) return null;
      const a = c.dup(client);
      if (a < 0) return null;
      // Kept by this thread to cut the pair: the client's own descriptor may be closed (and its number reused) first.
      const k = c.dup(client);
      if (k < 0) {
        c.close(a);
        return null;
      }
      const w = idle.pop() ?? new Worker(new URL("./splice-worker.ts", import.meta.url).href);
      w.unref();
      busy++;
      let over = false;
      const finish = (e: MessageEvent<{ clean?: boolean }>) => {
        if (over) return;
        over = true;
        busy--;
        c.close(k);
        w.onmessage = null;
        w.onerror = null;
        idle.push(w);
        done(e.data.clean === true);
      };
      w.onmessage = finish;
      w.onerror = () => {
        // The thread died mid-pair: cut the client (the thread's own descriptors cannot be reached) and drop the thread.
        c.shutdown(k, SHUT_RDWR);
        w.terminate();
        if (over) return;
        over = true;
        busy--;
        c.close(k);
        done(false);
      };
      w.postMessage({ a, b: up, early, earlyEnd });
      return { cut: () => void (over || c.shutdown(k, SHUT_RDWR)) };
    },
  };
}
