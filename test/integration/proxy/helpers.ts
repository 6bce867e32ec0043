// Test helpers for the egress proxy: loopback servers, raw clients over the proxy's unix socket, temp dirs.
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { connect, createServer, type Server, type Socket } from "node:net";
import type { SecureContext } from "node:tls";
import { leafContext } from "../../../src/tls/leaf-context";
import { issueLeaf, type Ca } from "../../../src/tls/x509";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Short temp dirs: socket paths must stay under 108 bytes. */
export function tempDir(prefix = "sbxp-"): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function openFds(): number {
  return readdirSync("/proc/self/fd").length;
}

export interface Listening<S> {
  server: S;
  port: number;
  close: () => Promise<void>;
}

function listen<S extends Server | HttpServer>(server: S, host: string, port = 0): Promise<Listening<S>> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      const addr = server.address();
      const p = typeof addr === "object" && addr ? addr.port : 0;
      resolve({
        server,
        port: p,
        close: () =>
          new Promise<void>((r) => {
            (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
            server.close(() => r());
          }),
      });
    });
  });
}

/** A TCP echo server that, when the client half-closes, answers `bye <n>` (n = bytes it got) and ends. */
export function echoServer(host = "127.0.0.1", port = 0): Promise<Listening<Server> & { connections: string[] }> {
  const connections: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer({ allowHalfOpen: true }, (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    connections.push(s.localAddress ?? "");
    let n = 0;
    s.on("data", (d) => {
      n += d.length;
      s.write(d);
    });
    s.on("end", () => s.end(`bye ${n}`));
    s.on("error", () => s.destroy());
  });
  return listen(server, host, port).then((l) => ({
    ...l,
    connections,
    close: () => {
      for (const s of sockets) s.destroy();
      return l.close();
    },
  }));
}

/** An HTTP server answering `hello <method> <url> host=<Host> via=<local address>`, echoing a POST body's length. */
export function httpServer(host = "127.0.0.1"): Promise<Listening<HttpServer>> {
  const server = createHttpServer((req, res) => {
    let n = 0;
    req.on("data", (d: Buffer) => (n += d.length));
    req.on("end", () => {
      res.setHeader("X-Seen-Proxy-Connection", String(req.headers["proxy-connection"] ?? ""));
      res.end(`hello ${req.method} ${req.url} host=${req.headers.host} via=${req.socket.localAddress} body=${n}`);
    });
  });
  server.keepAliveTimeout = 500;
  return listen(server, host);
}

export interface RawResponse {
  status: number;
  head: string;
  headers: Record<string, string>;
  body: string;
}

export function parseResponse(raw: string): RawResponse {
  const i = raw.indexOf("\r\n\r\n");
  const head = i < 0 ? raw : raw.slice(0, i);
  const body = i < 0 ? "" : raw.slice(i + 4);
  const [statusLine, ...lines] = head.split("\r\n");
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const c = l.indexOf(":");
    if (c > 0) headers[l.slice(0, c).toLowerCase()] = l.slice(c + 1).trim();
  }
  return { status: Number(statusLine?.split(" ")[1] ?? 0), head, headers, body };
}

/** Writes `text` on a fresh connection to the unix socket and reads until the server ends it. */
export function rawExchange(socketPath: string, text: string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const s = connect({ path: socketPath });
    const chunks: Buffer[] = [];
    s.on("data", (d: Buffer) => chunks.push(d));
    s.on("end", () => resolve(parseResponse(Buffer.concat(chunks).toString())));
    s.on("error", reject);
    s.write(text);
  });
}

export function get(socketPath: string, url: string, extra = ""): Promise<RawResponse> {
  const u = new URL(url);
  return rawExchange(socketPath, `GET ${url} HTTP/1.1\r\nHost: ${u.host}\r\nConnection: close\r\n${extra}\r\n`);
}

/** Opens a CONNECT tunnel; resolves with the status and the still-open socket (data after the head in `rest`). */
export function openTunnel(
  target: { path: string } | { port: number; host?: string },
  authority: string,
): Promise<{ status: number; response: RawResponse; socket: Socket; rest: Buffer }> {
  return new Promise((resolve, reject) => {
    const s = "path" in target ? connect({ path: target.path, allowHalfOpen: true }) : connect({ port: target.port, host: target.host ?? "127.0.0.1", allowHalfOpen: true });
    let buf = Buffer.alloc(0);
    const onData = (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      const i = buf.indexOf("\r\n\r\n");
      if (i < 0) return;
      const response = parseResponse(buf.toString());
      if (response.status !== 200) {
        // Error responses carry a body and end the connection: read it all.
        s.on("end", () => {
          s.destroy();
          resolve({ status: response.status, response: parseResponse(buf.toString()), socket: s, rest: Buffer.alloc(0) });
        });
        return;
      }
      s.off("data", onData);
      s.pause();
      resolve({ status: response.status, response, socket: s, rest: buf.subarray(i + 4) });
    };
    s.on("data", onData);
    s.on("error", reject);
    s.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
  });
}

/** Sends `payload` through an open tunnel to the echo server, half-closes, and collects everything until the end. */
export function echoThrough(t: { socket: Socket; rest: Buffer }, payload: Buffer | string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [t.rest];
    t.socket.on("data", (d: Buffer) => chunks.push(d));
    t.socket.on("end", () => {
      t.socket.end();
      resolve(Buffer.concat(chunks));
    });
    t.socket.on("error", reject);
    t.socket.resume();
    t.socket.end(payload);
  });
}

/** The sandbox's forwarder as the proxy tests stand it in: a loopback port whose connections go to the proxy's socket (as the real one relays). */
export async function forwarderTo(socketPath: string): Promise<{ server: Server; port: number }> {
  const server = createServer((c) => {
    const u = connect({ path: socketPath });
    c.pipe(u).pipe(c);
    c.on("error", () => u.destroy());
    u.on("error", () => c.destroy());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return { server, port: (server.address() as { port: number }).port };
}

/** A SecretBinding's contextFor over a test CA: a leaf for each host, made on first ask and kept. */
export function leafContexts(signer: Ca): (host: string) => Promise<SecureContext> {
  const contexts = new Map<string, Promise<SecureContext>>();
  return (host) => {
    let c = contexts.get(host);
    if (!c) {
      c = issueLeaf(signer, [host]).then((l) => leafContext(l.certPem, l.keyPem));
      contexts.set(host, c);
    }
    return c;
  };
}
