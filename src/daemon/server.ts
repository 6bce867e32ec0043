// The control socket: a 0600 unix socket in a 0700 dir, serving the hono app and the PTY relay (WebSocket at /v1/attach).
import { chmodSync, existsSync, lstatSync, unlinkSync } from "node:fs";
import { dirname } from "node:path";
import type { Server, ServerWebSocket } from "bun";
import { SbxError } from "../core/errors";
import { ensurePrivateDir } from "../sys/private-dir";
import { NO_IDLE_TIMEOUT } from "../sys/serve";
import { errorBody } from "./http";
import type { Logger } from "../sys/log";
import { AttachQuerySchema, ClientFrameSchema, type ServerFrame } from "./protocol";
import type { SessionClient, SessionManager } from "./sessions";

/** The runtime dir's set-up (sys/private-dir.ts): made or taken without following a link, refused when planted. */
export { ensurePrivateDir };

/** Whether a daemon answers /health on this socket within `timeoutMs`. */
export async function socketAnswers(path: string, timeoutMs = 500): Promise<boolean> {
  try {
    const res = await fetch("http://sbx/health", { unix: path, signal: AbortSignal.timeout(timeoutMs) });
    return res.ok;
  } catch {
    return false;
  }
}

/** A stale socket gives EADDRINUSE like a live one: probe it, and unlink it only if nothing answers. */
export async function clearStaleSocket(path: string): Promise<void> {
  if (!existsSync(path)) return;
  if (!lstatSync(path).isSocket()) {
    throw new SbxError("conflict", `${path} exists and is not a socket`, { hint: `Move it aside; sbx needs that path for its control socket.` });
  }
  if (await socketAnswers(path)) {
    throw new SbxError("conflict", `a daemon already answers on ${path}`, { hint: "Use it (`sbx status`), or stop it before starting another." });
  }
  unlinkSync(path);
}

interface WsData {
  session: string;
  client?: SessionClient;
}

export interface ControlServer {
  stop(): Promise<void>;
}

/** Listens on the unix socket under umask 0177, so the socket is never group- or world-accessible, not even for a moment. */
export type FetchHandler = (req: Request, server: Server<WsData>) => Response | Promise<Response>;

export function serveControl(opts: { path: string; fetch: FetchHandler; sessions: SessionManager; log: Logger }): ControlServer {
  const { path, sessions, log } = opts;
  // The socket's dir is this process's own, 0700, and no link: checked again here, where the socket is made.
  ensurePrivateDir(dirname(path), process.getuid?.() ?? 0);
  const old = process.umask(0o177);
  let server: Server<WsData>;
  try {
    server = Bun.serve<WsData>({
      unix: path,
      // No idle limit: Bun's default 10 s cut a quiet command's exec stream, a long-poll and a slow start. Every peer
      // is one of the user's own processes (0600 socket); one that dies aborts its request at once (measured: 3 ms).
      ...NO_IDLE_TIMEOUT,
      fetch(req, srv) {
        const url = new URL(req.url);
        if (url.pathname === "/v1/attach" && req.headers.get("upgrade")?.toLowerCase() === "websocket") {
          try {
            const q = AttachQuerySchema.parse(Object.fromEntries(url.searchParams));
            sessions.check(q.session);
            if (srv.upgrade(req, { data: { session: q.session } })) return undefined;
            throw new SbxError("usage", "WebSocket upgrade failed", { hint: "Use `sbx shell --attach <session>`." });
          } catch (e) {
            const { status, body } = errorBody(e);
            return Response.json(body, { status });
          }
        }
        return opts.fetch(req, srv);
      },
      websocket: {
        open(ws: ServerWebSocket<WsData>) {
          const client: SessionClient = {
            sendData: (d) => void ws.sendBinary(d),
            sendFrame: (f: ServerFrame) => void ws.sendText(JSON.stringify(f)),
            close: () => ws.close(1000, "session ended"),
          };
          ws.data.client = client;
          try {
            sessions.attach(ws.data.session, client);
          } catch (e) {
            const { body } = errorBody(e);
            ws.sendText(JSON.stringify({ type: "error", ...body } satisfies ServerFrame));
            ws.close(1008, body.error);
          }
        },
        message(ws: ServerWebSocket<WsData>, msg: string | Buffer) {
          if (typeof msg !== "string") {
            sessions.input(ws.data.session, new Uint8Array(msg));
            return;
          }
          let frame;
          try {
            frame = ClientFrameSchema.parse(JSON.parse(msg));
          } catch {
            log.warn("bad frame from terminal client", { session: ws.data.session });
            return;
          }
          if (frame.type === "resize") sessions.resize(ws.data.session, frame.cols, frame.rows);
          else if (frame.type === "detach" && ws.data.client) {
            sessions.detach(ws.data.session, ws.data.client);
            ws.close(1000, "detached");
          }
        },
        close(ws: ServerWebSocket<WsData>) {
          if (ws.data.client) sessions.detach(ws.data.session, ws.data.client);
        },
      },
    });
  } finally {
    process.umask(old);
  }
  chmodSync(path, 0o600);
  return {
    async stop() {
      await server.stop(true);
      try {
        unlinkSync(path);
      } catch {
        /* already gone */
      }
    },
  };
}

