// The exec agent's wire format: binary frames shared by the in-sandbox agent, the daemon and the CLI. Pure, Bun built-ins only.
//
// A frame is a 9-byte header (type u8, session u32 BE, payload length u32 BE) and the payload. Sessions number the
// commands running at once on one agent connection (the CLI↔daemon stream has one, numbered 0). Payloads are bytes
// (output, input) or a small JSON object (start, exit, kill). Anything longer than MAX_FRAME is a protocol error: the
// reader throws and the connection is dropped, so a sandbox cannot make the daemon buffer without bound.

export const FRAME_HEADER = 9;

/** Exit code of a command that does not exist (what a shell returns for one). */
export const EXIT_COMMAND_NOT_FOUND = 127;

/**
 * The one line every way of running a command in a sandbox says when the command does not exist (the exec agent, the
 * shell line of `docker exec` sessions), instead of a shell's or the engine's own wording.
 */
export function commandNotFound(command: string, sandbox: string): string {
  return `sbx: ${command}: command not found in sandbox ${sandbox}`;
}
export const MAX_FRAME = 1 << 20;

export const FrameType = {
  /** daemon → agent: JSON StartPayload, the command to run. */
  start: 1,
  /** daemon → agent: bytes for the command's stdin. */
  stdin: 2,
  /** daemon → agent: the command's stdin ends (EOF). */
  stdinEnd: 3,
  /** daemon → agent: JSON {signal}, a signal for the command. */
  kill: 4,
  /**
   * daemon → agent: JSON {port}, a TCP connection to that port of the sandbox's own loopback (`sbx port`): its bytes
   * come back as stdout frames, stdin frames go to it, stdinEnd ends its writing side; exit {code: 0} when it closes,
   * or a stderr line and exit {code: 1} when nothing listens.
   */
  dial: 5,
  /** agent → daemon (and daemon → CLI): bytes the command wrote to stdout. */
  stdout: 16,
  /** agent → daemon (and daemon → CLI): bytes the command wrote to stderr. */
  stderr: 17,
  /** agent → daemon (and daemon → CLI): JSON {code}, the command ended; the session's last frame. */
  exit: 18,
  /**
   * agent → daemon: JSON {}, a dial's connection was made and its descriptor sent on dial.sock, tagged with this
   * session (the daemon takes it from there, checks it is the connection asked for, and relays to it itself); the
   * session's last frame.
   */
  dialed: 19,
  /** agent → daemon, once per connection: JSON {v}, the agent's protocol version. */
  hello: 20,
  /** daemon → CLI: JSON {message}, the session failed (the agent went away); the last frame. */
  failed: 21,
} as const;

export const AGENT_PROTOCOL = 2;

/** The signals a kill frame may carry. */
export const AGENT_SIGNALS = ["SIGTERM", "SIGKILL", "SIGINT", "SIGHUP"] as const;

export interface StartPayload {
  argv: string[];
  cwd: string;
  /** Added to the agent's own environment (the container's), the way `docker exec --env` adds to it. */
  env: Record<string, string>;
  /** Whether stdin frames follow; without, the command's stdin is /dev/null. */
  stdin: boolean;
}

export interface Frame {
  type: number;
  session: number;
  payload: Uint8Array;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/** One frame as bytes. */
export function encodeFrame(type: number, session: number, payload: Uint8Array = new Uint8Array(0)): Uint8Array {
  if (payload.length > MAX_FRAME) throw new RangeError(`frame payload of ${payload.length} bytes exceeds ${MAX_FRAME}`);
  const out = new Uint8Array(FRAME_HEADER + payload.length);
  const view = new DataView(out.buffer);
  view.setUint8(0, type);
  view.setUint32(1, session >>> 0);
  view.setUint32(5, payload.length);
  out.set(payload, FRAME_HEADER);
  return out;
}

/** A JSON frame. */
export function jsonFrame(type: number, session: number, value: unknown): Uint8Array {
  return encodeFrame(type, session, enc.encode(JSON.stringify(value)));
}

/** Bytes split into frames of at most MAX_FRAME each (an empty chunk gives none). */
export function dataFrames(type: number, session: number, bytes: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let off = 0; off < bytes.length; off += MAX_FRAME) out.push(encodeFrame(type, session, bytes.subarray(off, off + MAX_FRAME)));
  return out;
}

/** A JSON payload, or undefined when it is not JSON. */
export function parseJson(payload: Uint8Array): unknown {
  try {
    return JSON.parse(dec.decode(payload));
  } catch {
    return undefined;
  }
}

/** a then b in one array (b itself when a is empty): what a stream decoder keeps of a frame cut in two. */
export function appendBytes(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b;
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

/** Reassembles frames from a byte stream cut anywhere; throws on a frame longer than MAX_FRAME. */
export class FrameDecoder {
  private buf: Uint8Array = new Uint8Array(0);

  push(chunk: Uint8Array): Frame[] {
    this.buf = appendBytes(this.buf, chunk);
    const frames: Frame[] = [];
    let off = 0;
    while (this.buf.length - off >= FRAME_HEADER) {
      const view = new DataView(this.buf.buffer, this.buf.byteOffset + off, FRAME_HEADER);
      const len = view.getUint32(5);
      if (len > MAX_FRAME) throw new RangeError(`frame payload of ${len} bytes exceeds ${MAX_FRAME}`);
      if (this.buf.length - off - FRAME_HEADER < len) break;
      // A copy: the caller may keep it after the socket reuses its buffer.
      frames.push({ type: view.getUint8(0), session: view.getUint32(1), payload: this.buf.slice(off + FRAME_HEADER, off + FRAME_HEADER + len) });
      off += FRAME_HEADER + len;
    }
    this.buf = off === this.buf.length ? new Uint8Array(0) : this.buf.slice(off);
    return frames;
  }

  /** Bytes of an unfinished frame. */
  get pending(): number {
    return this.buf.length;
  }
}

/** Pure: checks a start payload by hand (the shims load no zod); undefined when malformed. */
export function parseStart(value: unknown): StartPayload | undefined {
  const v = value as Partial<StartPayload> | null;
  if (!v || typeof v !== "object") return undefined;
  if (!Array.isArray(v.argv) || v.argv.length === 0 || !v.argv.every((a) => typeof a === "string" && !a.includes("\0"))) return undefined;
  if (typeof v.cwd !== "string" || !v.cwd.startsWith("/") || v.cwd.includes("\0")) return undefined;
  if (typeof v.stdin !== "boolean" || !v.env || typeof v.env !== "object" || Array.isArray(v.env)) return undefined;
  const env: Record<string, string> = {};
  for (const [k, val] of Object.entries(v.env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k) || typeof val !== "string" || val.includes("\0")) return undefined;
    env[k] = val;
  }
  return { argv: [...v.argv], cwd: v.cwd, env, stdin: v.stdin };
}

/** Pure: a dial payload's port (1-65535), or undefined when malformed. */
export function parseDial(value: unknown): number | undefined {
  const p = (value as { port?: unknown } | null)?.port;
  return typeof p === "number" && Number.isInteger(p) && p >= 1 && p <= 65535 ? p : undefined;
}

/** Pure: an exit payload's code, clamped to what a process can exit with (anything malformed → 255). */
export function parseExit(value: unknown): number {
  const c = (value as { code?: unknown } | null)?.code;
  return typeof c === "number" && Number.isInteger(c) && c >= 0 && c <= 255 ? c : 255;
}

/** How a session-0 exec stream ended: the command's exit code, or why it did not finish (failed frame, stream cut). */
export type ExecEnd = { code: number } | { failed: string; cancelled?: true };

/**
 * Reads a session-0 exec stream (daemon → CLI, or an agent session the daemon collects) to its end, handing output to
 * the sinks as it comes. `signal` cancels the stream (the command is then stopped by whoever serves it).
 */
export async function readExecStream(
  stream: ReadableStream<Uint8Array>,
  out: { stdout(b: Uint8Array): void; stderr(b: Uint8Array): void },
  signal?: AbortSignal,
): Promise<ExecEnd> {
  const reader = stream.getReader();
  const cancel = () => void reader.cancel();
  signal?.addEventListener("abort", cancel, { once: true });
  const decoder = new FrameDecoder();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return signal?.aborted ? { failed: "cancelled", cancelled: true } : { failed: "the exec stream ended before the command's exit code" };
      for (const f of decoder.push(value)) {
        if (f.type === FrameType.stdout) out.stdout(f.payload);
        else if (f.type === FrameType.stderr) out.stderr(f.payload);
        else if (f.type === FrameType.exit) return { code: parseExit(parseJson(f.payload)) };
        else if (f.type === FrameType.failed) {
          const m = (parseJson(f.payload) as { message?: unknown } | undefined)?.message;
          return { failed: typeof m === "string" ? m : "the exec agent failed" };
        }
      }
    }
  } finally {
    signal?.removeEventListener("abort", cancel);
  }
}
