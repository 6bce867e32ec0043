// Runs a command in a running container through the Docker Engine API on its unix socket (no `docker` CLI process): exec create, a hijacked exec start, the exit code.
import { SbxError } from "../../core/errors";
import { appendBytes } from "../../../shims/exec-frames";

/** The engine's unix socket from DOCKER_HOST (unset → the default), or undefined for tcp/ssh engines. */
export function engineSocket(dockerHost: string | undefined): string | undefined {
  if (dockerHost === undefined || dockerHost === "") return "/var/run/docker.sock";
  return dockerHost.startsWith("unix://") ? dockerHost.slice("unix://".length) : undefined;
}

export interface EngineExecRequest {
  container: string;
  /** `uid:gid`. */
  user: string;
  workdir: string;
  env: Readonly<Record<string, string>>;
  argv: readonly string[];
  /** Bytes for the command's stdin; absent → no stdin attached (it reads EOF). */
  stdin?: Uint8Array;
}

export interface EngineExecIo {
  stdout(chunk: Uint8Array): void;
  stderr(chunk: Uint8Array): void;
}

/** Pure: the body of POST /containers/{id}/exec. Golden-tested. */
export function execCreateBody(req: EngineExecRequest): Record<string, unknown> {
  return {
    AttachStdin: req.stdin !== undefined,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
    User: req.user,
    WorkingDir: req.workdir,
    Env: Object.keys(req.env)
      .sort()
      .map((k) => `${k}=${req.env[k]}`),
    Cmd: [...req.argv],
  };
}

/** Pure: the raw HTTP/1.1 request that starts an exec and asks the engine to hijack the connection for its streams. */
export function execStartRequest(id: string): string {
  const body = JSON.stringify({ Detach: false, Tty: false });
  return [
    `POST /exec/${encodeURIComponent(id)}/start HTTP/1.1`,
    "Host: docker",
    "Content-Type: application/json",
    "Connection: Upgrade",
    "Upgrade: tcp",
    `Content-Length: ${Buffer.byteLength(body)}`,
    "",
    body,
  ].join("\r\n");
}

/**
 * Demultiplexes the engine's non-TTY stream: frames of an 8-byte header (stream: 1 stdout, 2 stderr, 3 engine error;
 * 3 zero bytes; big-endian payload length) and the payload. Keeps a partial frame until the rest arrives.
 */
export class FrameReader {
  private buf: Uint8Array = new Uint8Array(0);
  constructor(private readonly io: EngineExecIo) {}

  push(chunk: Uint8Array): void {
    this.buf = appendBytes(this.buf, chunk);
    let off = 0;
    while (this.buf.length - off >= 8) {
      const kind = this.buf[off]!;
      const size = ((this.buf[off + 4]! << 24) >>> 0) + (this.buf[off + 5]! << 16) + (this.buf[off + 6]! << 8) + this.buf[off + 7]!;
      if (this.buf.length - off - 8 < size) break;
      // A copy: the consumer may write it out later, after the socket has reused its buffer.
      const payload = this.buf.slice(off + 8, off + 8 + size);
      if (kind === 1) this.io.stdout(payload);
      else if (kind === 2 || kind === 3) this.io.stderr(payload);
      off += 8 + size;
    }
    this.buf = off === this.buf.length ? new Uint8Array(0) : this.buf.slice(off);
  }

  /** Bytes of an unfinished frame left when the stream ended. */
  get pending(): number {
    return this.buf.length;
  }
}

interface EngineErrorBody {
  message?: unknown;
}

/** One Engine API call with a JSON body and answer (a non-JSON answer becomes `{ message }`); throws when the socket does not answer. */
export async function engineJson(socket: string, method: "GET" | "POST", path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`http://docker${path}`, {
    method,
    unix: socket,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  } as RequestInit);
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text === "" ? null : JSON.parse(text);
  } catch {
    json = { message: text.trim() };
  }
  return { status: res.status, json };
}

/** The engine's error message in an answer, or "no message". */
export function engineMessage(json: unknown): string {
  const m = (json as EngineErrorBody | null)?.message;
  return typeof m === "string" ? m : "no message";
}

/**
 * Streams one exec's output: connects to the socket, sends the start request, checks the engine switched to the raw
 * stream (101, or 200 on engines that do not answer Upgrade), writes stdin and half-closes, and resolves when the
 * engine closes the stream (the command ended).
 */
function startAndStream(socket: string, id: string, io: EngineExecIo, stdin: Uint8Array | undefined): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const frames = new FrameReader(io);
    let head: Uint8Array | null = new Uint8Array(0);
    let failed = false;
    let off = 0;
    let eof = false;
    // Stdin goes out once the engine has switched protocols (it reads it from the hijacked connection); the
    // half-close (FIN) is the command's EOF. `write` may take less than asked: the rest goes on `drain`.
    const pump = (s: Bun.Socket<undefined>) => {
      if (stdin === undefined || head !== null || eof) return;
      while (off < stdin.length) {
        const n = s.write(stdin.subarray(off));
        if (n <= 0) return;
        off += n;
      }
      eof = true;
      s.shutdown();
    };
    const fail = (e: SbxError) => {
      failed = true;
      reject(e);
    };
    Bun.connect({
      unix: socket,
      socket: {
        open(s) {
          s.write(execStartRequest(id));
        },
        drain(s) {
          pump(s);
        },
        data(s, chunk) {
          if (failed) return;
          if (head === null) {
            frames.push(new Uint8Array(chunk));
            return;
          }
          const b = new Uint8Array(head.length + chunk.length);
          b.set(head, 0);
          b.set(chunk, head.length);
          const end = Buffer.from(b).indexOf("\r\n\r\n");
          if (end < 0) {
            head = b;
            return;
          }
          const text = new TextDecoder().decode(b.subarray(0, end));
          const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0);
          head = null;
          if (status !== 101 && status !== 200) {
            const rest = new TextDecoder().decode(b.subarray(end + 4)).trim();
            fail(new SbxError("exec_failed", `the Docker engine refused to start the command (HTTP ${status}): ${rest || text.split("\r\n")[0]}`));
            s.end();
            return;
          }
          if (b.length > end + 4) frames.push(b.subarray(end + 4));
          pump(s);
        },
        close() {
          if (!failed) resolve();
        },
        error(_s, err) {
          fail(new SbxError("unavailable", `lost the Docker engine's stream: ${err.message}`, { hint: "Check the engine: `docker info`." }));
        },
      },
    }).catch((err: Error) =>
      fail(new SbxError("unavailable", `cannot reach the Docker engine on ${socket}: ${err.message}`, { hint: "Start it (sudo systemctl start docker)." })),
    );
  });
}

/**
 * Runs argv in a running container as `docker exec -i` (no TTY) would, through the engine's API, and returns its
 * exit code. About one engine round trip plus the command, instead of a docker CLI process (≈80 ms).
 * API: POST /containers/{c}/exec; POST /exec/{id}/start (hijacked); GET /exec/{id}/json.
 */
export async function engineExec(socket: string, req: EngineExecRequest, io: EngineExecIo): Promise<number> {
  const created = await engineJson(socket, "POST", `/containers/${encodeURIComponent(req.container)}/exec`, execCreateBody(req));
  if (created.status !== 201) {
    const code = created.status === 404 ? "not_found" : created.status === 409 ? "unavailable" : "exec_failed";
    throw new SbxError(code, `cannot run a command in ${req.container}: ${engineMessage(created.json)}`, {
      hint: "See `sbx status`; `sbx run <name>` starts a stopped sandbox.",
    });
  }
  const id = (created.json as { Id?: unknown }).Id;
  if (typeof id !== "string" || !/^[0-9a-f]+$/.test(id)) throw new SbxError("exec_failed", "the Docker engine returned no exec id");
  await startAndStream(socket, id, io, req.stdin);
  // The stream ends when the process does; the engine may record the exit code a moment later.
  for (let i = 0; i < 200; i++) {
    const r = await engineJson(socket, "GET", `/exec/${id}/json`);
    const st = r.json as { Running?: unknown; ExitCode?: unknown } | null;
    if (r.status === 200 && st && st.Running === false && typeof st.ExitCode === "number") return st.ExitCode;
    if (r.status !== 200) throw new SbxError("exec_failed", `cannot read the command's exit code: ${engineMessage(r.json)}`);
    await Bun.sleep(i < 10 ? 2 : 20);
  }
  throw new SbxError("exec_failed", "the command's stream ended but the engine still reports it running");
}
