// A company's HTTP proxy on loopback, as tests need one: it alone knows where its names are (its own map, as a proxy
// resolves with the company's DNS), speaks CONNECT like squid (2xx then bytes both ways; 407 without the credentials
// it wants, 403 for what its own policy refuses, 503 for a name it cannot resolve), and forwards a plain absolute-form
// request as a real proxy would. It records every request head it gets, so a test can say what it never saw.
import { connect, createServer, type Server, type Socket } from "node:net";

export interface ParentSeen {
  method: string;
  target: string;
  /** Its Proxy-Authorization header, or null. */
  authorization: string | null;
  /** The whole head as it came. */
  head: string;
}

export interface FakeParentOptions {
  /**
   * Name (or address), or `name:port` for that port alone → the loopback port (or unix socket path) that stands for
   * it: the only places it reaches.
   */
  sites: Record<string, number | string>;
  /** The Basic credentials it wants (user:password); none: it wants none. */
  credentials?: string;
  /** Names its own policy refuses (403). */
  deny?: string[];
}

export interface FakeParent {
  port: number;
  url: string;
  seen: ParentSeen[];
  close(): Promise<void>;
}

function statusLine(status: number, reason: string, extra = ""): string {
  const body = `fake parent: ${reason}\n`;
  return `HTTP/1.1 ${status} ${reason}\r\n${extra}Content-Type: text/plain\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
}

export async function startFakeParent(o: FakeParentOptions): Promise<FakeParent> {
  const seen: ParentSeen[] = [];
  const sockets = new Set<Socket>();
  const want = o.credentials === undefined ? null : `Basic ${Buffer.from(o.credentials).toString("base64")}`;
  const server: Server = createServer({ allowHalfOpen: true }, (c) => {
    sockets.add(c);
    c.on("close", () => sockets.delete(c));
    c.on("error", () => c.destroy());
    let buf = Buffer.alloc(0);
    const onData = (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      const i = buf.indexOf("\r\n\r\n");
      if (i < 0) return;
      c.off("data", onData);
      // Held until the site is connected: what the client sends meanwhile (a large body) waits, as a real proxy's does.
      c.pause();
      const head = buf.subarray(0, i).toString("latin1");
      const rest = buf.subarray(i + 4);
      const [line, ...headers] = head.split("\r\n");
      const [method = "", target = ""] = (line ?? "").split(" ");
      const auth = headers.find((h) => /^proxy-authorization:/i.test(h));
      const authorization = auth === undefined ? null : auth.slice(auth.indexOf(":") + 1).trim();
      seen.push({ method, target, authorization, head });
      if (want !== null && authorization !== want) return void c.end(statusLine(407, "Proxy Authentication Required", 'Proxy-Authenticate: Basic realm="corp"\r\n'));
      let host: string;
      let port: number;
      if (method === "CONNECT") {
        const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(target);
        if (!m) return void c.end(statusLine(400, "Bad Request"));
        host = m[1]!.replace(/^\[|\]$/g, "");
        port = Number(m[2]);
      } else {
        let u: URL;
        try {
          u = new URL(target);
        } catch {
          return void c.end(statusLine(400, "Bad Request"));
        }
        host = u.hostname;
        port = u.port === "" ? 80 : Number(u.port);
      }
      if (o.deny?.includes(host)) return void c.end(statusLine(403, "Forbidden"));
      const local = o.sites[`${host}:${port}`] ?? o.sites[host];
      if (local === undefined) return void c.end(statusLine(503, "Service Unavailable"));
      const up = typeof local === "string" ? connect({ path: local, allowHalfOpen: true }) : connect({ host: "127.0.0.1", port: local, allowHalfOpen: true });
      sockets.add(up);
      up.on("close", () => sockets.delete(up));
      up.on("error", () => {
        if (!c.destroyed) c.end(statusLine(502, "Bad Gateway"));
      });
      up.once("connect", () => {
        // A CONNECT: its 200, then the client's bytes; a plain request: forwarded as it came (a proxy's own job).
        if (method === "CONNECT") c.write("HTTP/1.1 200 Connection established\r\n\r\n");
        else up.write(buf.subarray(0, i + 4));
        if (rest.length > 0) up.write(rest);
        up.pipe(c);
        c.pipe(up);
      });
      c.once("close", () => up.destroy());
    };
    c.on("data", onData);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
