// CONNECT edge cases on real sockets: pipelined bytes, heads split over writes, early half-close, malformed and oversized heads, keep-alive then CONNECT.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { join } from "node:path";
import { fdPassing } from "../../../shims/fd-pass";
import type { EgressEvent } from "../../../src/core/egress-events";
import { startEgressProxy, type EgressProxy } from "../../../src/proxy/egress-proxy";
import { echoServer, httpServer, parseResponse, rawExchange, tempDir } from "./helpers";

let tmp: ReturnType<typeof tempDir>;
let echo: Awaited<ReturnType<typeof echoServer>>;
let web: Awaited<ReturnType<typeof httpServer>>;
let proxy: EgressProxy;
const events: EgressEvent[] = [];
const lib = fdPassing();
let handedPort = 0;

beforeAll(async () => {
  tmp = tempDir();
  echo = await echoServer();
  web = await httpServer();
  proxy = await startEgressProxy({
    socketPath: join(tmp.dir, "sb", "proxy.sock"),
    sandbox: { id: 1, name: "fast" },
    policy: () => ({ sandbox: [], global: [], published: [`127.0.0.1:${echo.port}`, `127.0.0.1:${web.port}`, "127.0.0.1:9"] }),
    resolve: async () => [],
    onDecision: (e) => void events.push(e),
    connectTimeoutMs: 300,
  });
  if (lib) {
    const l = lib.listenLoopback(0);
    handedPort = l.port;
    proxy.serveListener(l.fd);
  }
});
afterAll(async () => {
  await proxy.close();
  await echo.close();
  await web.close();
  tmp.cleanup();
});

/** Writes `parts` (each after a short pause), half-closes, and returns everything read until the end. */
function exchange(parts: (string | Buffer)[], gapMs = 0): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const s = connect({ path: proxy.socketPath, allowHalfOpen: true });
    const chunks: Buffer[] = [];
    s.on("data", (d: Buffer) => chunks.push(d));
    s.on("end", () => {
      s.end();
      resolve(Buffer.concat(chunks));
    });
    s.on("error", reject);
    void (async () => {
      for (const p of parts) {
        s.write(p);
        if (gapMs > 0) await Bun.sleep(gapMs);
      }
      s.end();
    })();
  });
}

describe("CONNECT edge cases", () => {
  test("bytes pipelined right after the head reach the server first, in order, and the FIN follows them", async () => {
    const out = await exchange([`CONNECT 127.0.0.1:${echo.port} HTTP/1.1\r\nHost: x\r\n\r\nearly-bytes`]);
    const text = out.toString();
    expect(text.startsWith("HTTP/1.1 200 Connection Established\r\n\r\n")).toBe(true);
    expect(text.endsWith("early-bytesbye 11")).toBe(true);
  });

  test("a head split over many small writes is still one CONNECT", async () => {
    const head = `CONNECT 127.0.0.1:${echo.port} HTTP/1.1\r\nHost: x\r\n\r\n`;
    const out = await exchange([...head.match(/.{1,3}/gs)!, "abc"], 2);
    expect(out.toString()).toBe("HTTP/1.1 200 Connection Established\r\n\r\nabcbye 3");
  });

  test("a large payload through the relay arrives intact (backpressure both ways)", async () => {
    const payload = Buffer.alloc(8_000_000);
    for (let i = 0; i < payload.length; i++) payload[i] = (i * 7) & 0xff;
    const out = await exchange([`CONNECT 127.0.0.1:${echo.port} HTTP/1.1\r\nHost: x\r\n\r\n`, payload]);
    const head = "HTTP/1.1 200 Connection Established\r\n\r\n";
    expect(out.subarray(0, head.length).toString()).toBe(head);
    expect(out.subarray(head.length, head.length + payload.length).equals(payload)).toBe(true);
    expect(out.subarray(head.length + payload.length).toString()).toBe(`bye ${payload.length}`);
  });

  test("malformed and oversized CONNECT heads get 400 and are closed; no tunnel is opened", async () => {
    const connectionsBefore = echo.connections.length;
    for (const bad of ["CONNECT nohostport HTTP/1.1\r\n\r\n", "CONNECT 127.0.0.1:1 HTTP/9\r\n\r\n", "CONNECT 127.0.0.1:1 HTTP/1.1\r\nno colon here\r\n\r\n"]) {
      expect((await rawExchange(proxy.socketPath, bad)).status).toBe(400);
    }
    const big = `CONNECT 127.0.0.1:${echo.port} HTTP/1.1\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`;
    expect((await rawExchange(proxy.socketPath, big)).status).toBe(400);
    expect(echo.connections.length).toBe(connectionsBefore);
    expect(proxy.active()).toBe(0);
  });

  test("a refused upstream connect: 502 with the reason, and nothing stays counted in flight", async () => {
    const r = await rawExchange(proxy.socketPath, "CONNECT 127.0.0.1:9 HTTP/1.1\r\nHost: x\r\n\r\n");
    expect(r.status).toBe(502);
    expect(r.body).toContain("could not connect to 127.0.0.1:9");
    expect(proxy.active()).toBe(0);
  });

  test("a refused CONNECT with a pipelined body still gets its whole 403", async () => {
    const out = await exchange([`CONNECT 10.1.2.3:443 HTTP/1.1\r\nHost: x\r\n\r\n${"x".repeat(100_000)}`]);
    const r = parseResponse(out.toString());
    expect(r.status).toBe(403);
    expect(r.headers["x-sbx-blocked"]).toContain("10.1.2.3:443");
    expect(Number(r.headers["content-length"])).toBe(Buffer.byteLength(r.body));
  });

  test("keep-alive: a plain request, then a CONNECT on the same connection (node:http's connect path)", async () => {
    const out = await exchange(
      [
        `GET http://127.0.0.1:${web.port}/one HTTP/1.1\r\nHost: 127.0.0.1:${web.port}\r\n\r\n`,
        `CONNECT 127.0.0.1:${echo.port} HTTP/1.1\r\nHost: x\r\n\r\n`,
        "ping",
      ],
      100,
    );
    const text = out.toString();
    expect(text).toContain("hello GET /one");
    expect(text).toContain("HTTP/1.1 200 Connection Established\r\n\r\n");
    expect(text.endsWith("pingbye 4")).toBe(true);
  });

  test("the audit event carries bytes each way, counted once at close", async () => {
    events.length = 0;
    await exchange([`CONNECT 127.0.0.1:${echo.port} HTTP/1.1\r\nHost: x\r\n\r\n`, "12345"], 20);
    for (let i = 0; i < 50 && !events.some((e) => e.type === "closed"); i++) await Bun.sleep(10);
    const closed = events.filter((e) => e.type === "closed");
    expect(closed).toHaveLength(1);
    expect(closed[0]).toMatchObject({ bytesUp: 5, bytesDown: 5 + "bye 5".length });
  });
});

describe("a tunnel whose client ends before it sends anything", () => {
  for (const way of lib ? (["socket", "port"] as const) : (["socket"] as const)) {
    test(`${way}: the server hears the end, its answer still comes back, and nothing stays open`, async () => {
      const s = way === "socket" ? connect({ path: proxy.socketPath, allowHalfOpen: true }) : connect({ host: "127.0.0.1", port: handedPort, allowHalfOpen: true });
      let got = "";
      const ended = new Promise<void>((r) => s.on("end", () => r()));
      s.on("data", (d: Buffer) => {
        got += d.toString();
        // The tunnel is up: end our side without a byte (a client that gave up, or one whose server speaks first).
        if (got.includes("\r\n\r\n") && !s.writableEnded) s.end();
      });
      s.write(`CONNECT 127.0.0.1:${echo.port} HTTP/1.1\r\nHost: 127.0.0.1:${echo.port}\r\n\r\n`);
      await ended;
      // The echo server answers `bye <n>` when its client's end reaches it.
      expect(got.slice(got.indexOf("\r\n\r\n") + 4)).toBe("bye 0");
      for (let i = 0; i < 100 && proxy.active() > 0; i++) await Bun.sleep(20);
      expect(proxy.active()).toBe(0);
      s.destroy();
    }, 5_000);
    test(`${way}: a ClientHello begun and then ended is not carried: no byte of it reaches the server, nothing stays open`, async () => {
      const s = way === "socket" ? connect({ path: proxy.socketPath, allowHalfOpen: true }) : connect({ host: "127.0.0.1", port: handedPort, allowHalfOpen: true });
      let got = "";
      const closed = new Promise<void>((r) => s.on("close", () => r()));
      s.on("error", () => undefined);
      s.on("data", (d: Buffer) => {
        got += d.toString("latin1");
        // A TLS record header that promises 80 bytes, and 3 of them; then the end.
        if (got.includes("\r\n\r\n") && !s.writableEnded) s.end(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x50, 0x01, 0x00, 0x00]));
      });
      s.write(`CONNECT 127.0.0.1:${echo.port} HTTP/1.1\r\nHost: 127.0.0.1:${echo.port}\r\n\r\n`);
      await closed;
      // The echo server would have echoed what reached it, and said `bye <n>`: nothing came back after the 200.
      expect(got.slice(got.indexOf("\r\n\r\n") + 4)).toBe("");
      for (let i = 0; i < 100 && proxy.active() > 0; i++) await Bun.sleep(20);
      expect(proxy.active()).toBe(0);
    }, 5_000);
  }
});
