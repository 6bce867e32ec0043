// Test-only: a fake Docker engine on a unix socket that speaks just the exec API (create, hijacked start with framed output, inspect).

export interface FakeEngine {
  socket: string;
  created: { container: string; body: Record<string, unknown> }[];
  started: number;
  stop(): Promise<void>;
}

export type ExecScript = (body: Record<string, unknown>, stdin: Uint8Array) => { frames: Uint8Array[]; exitCode: number };

interface Conn {
  buf: Uint8Array;
  /** After the start request: the exec being streamed, collecting stdin until EOF. */
  exec?: { id: string; stdin: Uint8Array[] };
}

/** Starts the fake engine. `createStatus` other than 201 makes exec create fail with that status. */
export async function startFakeEngine(socket: string, script: ExecScript, opts: { createStatus?: number } = {}): Promise<FakeEngine> {
  const execs = new Map<string, { body: Record<string, unknown>; exitCode: number | null }>();
  const created: FakeEngine["created"] = [];
  let n = 0;
  const state = { started: 0 };
  const reply = (status: number, json: unknown) => {
    const body = JSON.stringify(json);
    return `HTTP/1.1 ${status} X\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
  };
  const finish = (s: Bun.Socket<Conn>) => {
    const ex = s.data.exec!;
    const rec = execs.get(ex.id)!;
    const stdin = Buffer.concat(ex.stdin);
    const out = script(rec.body, new Uint8Array(stdin));
    for (const f of out.frames) s.write(f);
    rec.exitCode = out.exitCode;
    s.end();
  };
  const server = Bun.listen<Conn>({
    unix: socket,
    socket: {
      open(s) {
        s.data = { buf: new Uint8Array(0) };
      },
      data(s, chunk) {
        if (s.data.exec) {
          s.data.exec.stdin.push(new Uint8Array(chunk));
          return;
        }
        s.data.buf = Buffer.concat([s.data.buf, chunk]);
        const text = Buffer.from(s.data.buf).toString("latin1");
        const end = text.indexOf("\r\n\r\n");
        if (end < 0) return;
        const len = Number(/content-length: (\d+)/i.exec(text.slice(0, end))?.[1] ?? 0);
        if (s.data.buf.length < end + 4 + len) return;
        const [method = "", path = ""] = text.slice(0, text.indexOf("\r\n")).split(" ");
        const body = len ? JSON.parse(text.slice(end + 4, end + 4 + len)) : {};
        const extra = s.data.buf.subarray(end + 4 + len);
        let m: RegExpExecArray | null;
        if (method === "POST" && (m = /^\/containers\/([^/]+)\/exec$/.exec(path))) {
          if ((opts.createStatus ?? 201) !== 201) {
            s.end(reply(opts.createStatus!, { message: "container is not running" }));
            return;
          }
          const id = (++n).toString(16).padStart(12, "0");
          execs.set(id, { body, exitCode: null });
          created.push({ container: decodeURIComponent(m[1]!), body });
          s.end(reply(201, { Id: id }));
        } else if (method === "POST" && (m = /^\/exec\/([0-9a-f]+)\/start$/.exec(path))) {
          state.started++;
          s.write("HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n");
          s.data.exec = { id: m[1]!, stdin: extra.length ? [new Uint8Array(extra)] : [] };
          if (execs.get(m[1]!)!.body.AttachStdin !== true) finish(s);
        } else if (method === "GET" && (m = /^\/exec\/([0-9a-f]+)\/json$/.exec(path))) {
          const rec = execs.get(m[1]!);
          s.end(rec ? reply(200, { Running: rec.exitCode === null, ExitCode: rec.exitCode }) : reply(404, { message: "no such exec" }));
        } else {
          s.end(reply(404, { message: `no route ${method} ${path}` }));
        }
      },
      end(s) {
        // The client's half-close: stdin is complete.
        if (s.data.exec) finish(s);
      },
    },
  });
  return {
    socket,
    created,
    get started() {
      return state.started;
    },
    async stop() {
      server.stop(true);
    },
  };
}
