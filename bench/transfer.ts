// Shared by the egress benchmarks (proxy, transparent): the loopback servers they move 100 MB through, and the client
// side of one download and one upload over whatever connection a path gives.
import { createServer as createHttpServer } from "node:http";
import { createServer, type Socket } from "node:net";

export const MB = 1024 * 1024;

/**
 * In this process: a server that sends `size` bytes on every connection then ends (download), one that counts what it
 * is sent and answers the count once `size` came (upload; no half-close: squid's tunnels close both ways), and an HTTP
 * server that answers "ok". Prints their ports as one JSON line, for the parent that spawned this role.
 */
export async function serveTransfers(size: number): Promise<void> {
  const chunk = Buffer.alloc(256 * 1024, 0x61);
  const down = createServer((s) => {
    let left = size;
    const pump = () => {
      while (left > 0) {
        const n = Math.min(left, chunk.length);
        left -= n;
        if (!s.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void s.once("drain", pump);
      }
      s.end();
    };
    s.on("error", () => s.destroy());
    pump();
  });
  const up = createServer({ allowHalfOpen: true }, (s) => {
    let n = 0;
    s.on("data", (d) => {
      n += d.length;
      if (n === size) s.write(String(n));
    });
    s.on("end", () => s.end());
    s.on("error", () => s.destroy());
  });
  const web = createHttpServer((_req, res) => res.end("ok"));
  const ports = await Promise.all([down, up, web].map((srv) => new Promise<number>((r) => srv.listen(0, "127.0.0.1", () => r((srv.address() as { port: number }).port)))));
  console.log(JSON.stringify({ down: ports[0], up: ports[1], web: ports[2] }));
}

/** A connection as a path gives it: the socket, paused, and what arrived after a proxy's answer. */
export type Opened = { s: Socket; rest: Buffer };

/** MB/s of one download of `size` bytes over a connection `open` makes. */
export async function download(open: () => Promise<Opened>, size: number, what = "download"): Promise<number> {
  const { s, rest } = await open();
  const t = performance.now();
  let n = rest.length;
  await new Promise<void>((resolve) => {
    s.on("data", (d: Buffer) => (n += d.length));
    s.on("end", () => resolve());
    s.resume();
  });
  const ms = performance.now() - t;
  s.destroy();
  if (n !== size) throw new Error(`${what}: ${n} bytes, expected ${size}`);
  return size / MB / (ms / 1000);
}

/** MB/s of one upload of `size` bytes over a connection `open` makes (the server answers the count it got). */
export async function upload(open: () => Promise<Opened>, size: number, what = "upload"): Promise<number> {
  const { s } = await open();
  const chunk = Buffer.alloc(256 * 1024, 0x62);
  const t = performance.now();
  const answer = new Promise<string>((resolve) => {
    let out = "";
    s.on("data", (d: Buffer) => {
      out += d;
      if (out.length >= String(size).length) resolve(out);
    });
    s.on("end", () => resolve(out));
    s.resume();
  });
  let left = size;
  while (left > 0) {
    const n = Math.min(left, chunk.length);
    left -= n;
    if (!s.write(chunk.subarray(0, n))) await new Promise((r) => s.once("drain", r));
  }
  const got = await answer;
  s.end();
  const ms = performance.now() - t;
  s.destroy();
  if (got !== String(size)) throw new Error(`${what}: the server counted ${got}, expected ${size}`);
  return size / MB / (ms / 1000);
}

/** Reads a child's stdout line by line; what follows a line in the same chunk is kept for the next call. */
export function lineReader(stream: ReadableStream<Uint8Array>): () => Promise<string> {
  const reader = stream.getReader();
  let text = "";
  return async () => {
    while (!text.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    const i = text.indexOf("\n");
    const line = i < 0 ? text : text.slice(0, i);
    text = i < 0 ? "" : text.slice(i + 1);
    return line;
  };
}
