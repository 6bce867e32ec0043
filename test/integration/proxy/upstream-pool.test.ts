// The plain-HTTP pool to servers (src/proxy/upstream.ts) on real sockets: a connection is reused only when idle and
// clean, at most 16 kept per address, and dropped on a stray byte, on the server's end, or once idle too long.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect, createServer, type Server, type Socket } from "node:net";
import { requestHead } from "../../../src/proxy/http1";
import { QUEUED_MAX, UpstreamPool } from "../../../src/proxy/upstream";

let server: Server;
let port = 0;
const sockets = new Set<Socket>();
let accepted = 0;
/** What the server does after answering: nothing, write a stray byte later, or close. */
let after: "nothing" | "stray" | "close" = "nothing";

beforeAll(async () => {
  server = createServer((c) => {
    accepted++;
    sockets.add(c);
    c.on("close", () => sockets.delete(c));
    c.on("error", () => undefined);
    c.on("data", () => {
      c.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
      if (after === "stray") setTimeout(() => c.write("x"), 20);
      if (after === "close") setTimeout(() => c.end(), 20);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  port = (server.address() as { port: number }).port;
});
afterAll(() => {
  for (const s of sockets) s.destroy();
  server.close();
});

/** One GET through the pool: the body, or the error. */
function get(pool: UpstreamPool): Promise<string> {
  return new Promise((resolve) => {
    let body = "";
    pool.request(
      { address: "127.0.0.1", port, method: "GET", head: requestHead("GET", "/", [["host", "t"]], "none"), body: "none", replayable: true },
      {
        head: () => undefined,
        body: (d) => ((body += d.toString()), true),
        end: (last) => resolve(body + (last?.toString() ?? "")),
        error: (why) => resolve(`error: ${why}`),
      },
    );
  });
}

const until = async (pred: () => boolean, ms = 2000) => {
  for (const end = Date.now() + ms; !pred() && Date.now() < end; ) await Bun.sleep(10);
};

test("an idle connection is reused, then closed once idle too long", async () => {
  after = "nothing";
  const pool = new UpstreamPool(1000, 200);
  const before = accepted;
  expect(await get(pool)).toBe("ok");
  expect(await get(pool)).toBe("ok");
  expect(accepted - before).toBe(1);
  expect(pool.size()).toBe(1);
  await until(() => pool.size() === 0);
  expect(pool.size()).toBe(0);
  pool.close();
});

test("a stray byte or the server's end drops an idle connection; the next request takes a new one", async () => {
  for (const how of ["stray", "close"] as const) {
    after = how;
    const pool = new UpstreamPool(1000, 10_000);
    const before = accepted;
    expect(await get(pool)).toBe("ok");
    await until(() => pool.size() === 0);
    expect({ how, open: pool.size() }).toEqual({ how, open: 0 });
    after = "nothing";
    expect(await get(pool)).toBe("ok");
    expect({ how, connections: accepted - before }).toEqual({ how, connections: 2 });
    pool.close();
  }
});

test("at most 16 idle connections are kept per address", async () => {
  after = "nothing";
  const pool = new UpstreamPool(1000, 10_000);
  expect(await Promise.all(Array.from({ length: 30 }, () => get(pool)))).toEqual(Array(30).fill("ok"));
  await until(() => pool.size() <= 16);
  expect(pool.size()).toBe(16);
  pool.close();
  await until(() => pool.size() === 0);
  expect(pool.size()).toBe(0);
});

describe("bounded: a request body for a connection not yet ready is held only up to QUEUED_MAX", () => {
  test("past it, write says wait and drained waits for the connection; once it is up, the body goes and drained calls back", async () => {
    // A dial whose connection is not ready until the test says (a TLS handshake, a parent's tunnel, a slow connect).
    let ready: (() => void) | null = null;
    const received: number[] = [];
    const pool = new UpstreamPool(5000, undefined, (address, p) => {
      const s = connect({ host: address, port: p });
      const real = s.emit.bind(s);
      // The pool waits for "connect": held back until the test lets it through.
      s.emit = ((ev: string, ...a: unknown[]) => {
        if (ev === "connect") {
          ready = () => real("connect");
          return true;
        }
        return real(ev, ...a);
      }) as typeof s.emit;
      return s;
    });
    const sink = { head: () => undefined, body: () => true, end: () => undefined, error: () => undefined };
    const x = pool.request({ address: "127.0.0.1", port, method: "POST", head: requestHead("POST", "/", [["host", "t"]], "chunked"), body: "chunked", replayable: false }, sink);
    const piece = Buffer.alloc(16 * 1024, 0x61);
    let accepted = 0;
    while (x.write(piece)) {
      accepted += piece.length;
      if (accepted > 64 * QUEUED_MAX) break;
    }
    // A sandbox that keeps sending is told to wait before the daemon holds more than a bound.
    expect(accepted).toBeLessThan(QUEUED_MAX);
    let drained = false;
    x.drained(() => (drained = true));
    await Bun.sleep(50);
    expect(drained).toBe(false);
    await until(() => ready !== null);
    ready!();
    await until(() => drained);
    expect(drained).toBe(true);
    received.push(accepted);
    x.abort();
    pool.close();
  });
});
