// Unix socket housekeeping for per-sandbox servers: a 0700 dir, a 0600 socket, and stale sockets probed before unlinking.
import { chmodSync, lstatSync, mkdirSync, unlinkSync } from "node:fs";
import { connect } from "node:net";
import { dirname } from "node:path";
import { SbxError } from "../core/errors";
import { MAX_SOCKET_PATH } from "../sys/paths";

/** Whether something answers HTTP on the socket: sends `GET /health` and waits for a status line. */
export function probeSocket(path: string, timeoutMs = 1000): Promise<"live" | "dead"> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (r: "live" | "dead") => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve(r);
    };
    const s = connect({ path });
    // Connected but silent still counts as live: never unlink a socket something is listening on.
    const timer = setTimeout(() => finish(connected ? "live" : "dead"), timeoutMs);
    let connected = false;
    s.on("connect", () => {
      connected = true;
      s.write("GET /health HTTP/1.1\r\nHost: sbx\r\nConnection: close\r\n\r\n");
    });
    s.on("data", () => finish("live"));
    s.on("end", () => finish(connected ? "live" : "dead"));
    s.on("error", () => finish(connected ? "live" : "dead"));
  });
}

/**
 * Makes the socket's directory (0700) and clears a stale socket at the path. A live one (something answers)
 * is an error: two proxies for one sandbox would split its identity.
 */
export async function prepareSocketPath(path: string): Promise<void> {
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH) {
    throw new SbxError("config", `socket path is ${Buffer.byteLength(path)} bytes, over the ${MAX_SOCKET_PATH}-byte limit: ${path}`, {
      hint: "Set XDG_RUNTIME_DIR to a short directory (sbx falls back to /tmp/sbx-<uid>).",
    });
  }
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  let st;
  try {
    st = lstatSync(path);
  } catch {
    return;
  }
  if (!st.isSocket()) {
    throw new SbxError("conflict", `${path} exists and is not a socket`, { hint: "Move it aside; sbx only replaces its own stale sockets." });
  }
  if ((await probeSocket(path)) === "live") {
    throw new SbxError("conflict", `a server is already listening on ${path}`, {
      hint: "Another sbx daemon may be running: check `sbx status`, or stop the other one first.",
    });
  }
  unlinkSync(path);
}

/** Listens on a unix socket created under umask 0177 (no window where it is reachable by others), then 0600. */
export async function listenUnix(server: { listen(path: string, cb: () => void): unknown; once(ev: "error", cb: (e: Error) => void): unknown }, path: string): Promise<void> {
  await prepareSocketPath(path);
  const old = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(path, () => resolve());
    });
  } finally {
    process.umask(old);
  }
  chmodSync(path, 0o600);
}
