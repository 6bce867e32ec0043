// The proxy under load on real sockets: 200 parallel tunnels, and no file descriptor leak after 10,000 requests.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { join } from "node:path";
import { fdPassing } from "../../../shims/fd-pass";
import { startEgressProxy, type EgressProxy } from "../../../src/proxy/egress-proxy";
import { echoServer, echoThrough, get, httpServer, openFds, openTunnel, tempDir } from "./helpers";

let tmp: ReturnType<typeof tempDir>;
let echo: Awaited<ReturnType<typeof echoServer>>;
let web: Awaited<ReturnType<typeof httpServer>>;
let proxy: EgressProxy;
let decisions = 0;
const lib = fdPassing();
let handedPort = 0;

beforeAll(async () => {
  tmp = tempDir();
  echo = await echoServer();
  web = await httpServer();
  proxy = await startEgressProxy({
    // The proxy's own cost, unpaced (a sandbox's proxy paces its requests: test/integration/proxy/bounded.test.ts).
    pace: null,
    socketPath: join(tmp.dir, "proxy.sock"),
    sandbox: { id: 1, name: "load" },
    policy: () => ({ sandbox: [`svc.test:${web.port}`], global: [], published: [`127.0.0.1:${echo.port}`, `127.0.0.1:${web.port}`] }),
    resolve: async (h) => (h === "svc.test" ? ["127.0.0.1"] : []),
    onDecision: () => void decisions++,
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

async function settle(): Promise<void> {
  for (let i = 0; i < 200 && proxy.active() > 0; i++) await Bun.sleep(10);
  await Bun.sleep(100);
}

async function pool<T>(n: number, concurrency: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await fn(i);
      }
    }),
  );
  return out;
}

describe("load", () => {
  test("200 tunnels open at once each carry their own bytes", async () => {
    const tunnels = await Promise.all(Array.from({ length: 200 }, () => openTunnel({ path: proxy.socketPath }, `127.0.0.1:${echo.port}`)));
    expect(tunnels.every((t) => t.status === 200)).toBe(true);
    expect(proxy.active()).toBe(200);
    const payloads = tunnels.map((_, i) => Buffer.alloc(10_000 + i, i % 251));
    const outs = await Promise.all(tunnels.map((t, i) => echoThrough(t, payloads[i]!)));
    outs.forEach((o, i) => {
      expect(o.subarray(0, payloads[i]!.length).equals(payloads[i]!)).toBe(true);
      expect(o.subarray(payloads[i]!.length).toString()).toBe(`bye ${payloads[i]!.length}`);
    });
    await settle();
    expect(proxy.active()).toBe(0);
  }, 60_000);

  test("no fd leak after 10,000 requests (tunnels, plain HTTP, refusals)", async () => {
    const kinds = async (i: number): Promise<number> => {
      switch (i % 4) {
        case 0:
        case 1: {
          const t = await openTunnel({ path: proxy.socketPath }, `127.0.0.1:${echo.port}`);
          const out = await echoThrough(t, "x");
          return out.toString() === "xbye 1" ? 200 : 0;
        }
        case 2:
          return (await get(proxy.socketPath, `http://svc.test:${web.port}/n${i}`)).status;
        default:
          return (await openTunnel({ path: proxy.socketPath }, "blocked.test:443")).status;
      }
    };
    // Warm-up at the same concurrency so pools (the upstream keep-alive agent) are at their steady size.
    await pool(400, 50, kinds);
    await settle();
    const before = openFds();
    const statuses = await pool(10_000, 50, kinds);
    await settle();
    const after = openFds();
    const counts = statuses.reduce<Record<number, number>>((m, s) => ((m[s] = (m[s] ?? 0) + 1), m), {});
    expect(counts).toEqual({ 200: 7500, 403: 2500 });
    expect(proxy.active()).toBe(0);
    // A leak of even one fd per thousand requests would show as ≥ 10.
    expect(after - before).toBeLessThan(10);
  }, 120_000);
});

/** Writes `text` on a fresh connection to the sandbox's port and reads until the proxy ends it: the status lines. */
function onPort(text: string, closeEarly = false): Promise<string[]> {
  return new Promise((resolve) => {
    const s = connect({ host: "127.0.0.1", port: handedPort });
    let out = "";
    s.on("data", (d: Buffer) => {
      out += d.toString("latin1");
      if (closeEarly && out.includes("\r\n\r\n")) s.destroy();
    });
    s.on("close", () => resolve([...out.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]!)));
    s.on("error", () => undefined);
    s.write(text);
  });
}

describe.skipIf(!lib)("load on the sandbox's port", () => {
  test("no fd leak after 10,000 requests (tunnels, tunnels given up at once, plain HTTP kept alive or not, refusals)", async () => {
    const u = `http://svc.test:${web.port}`;
    const h = `Host: svc.test:${web.port}\r\n`;
    const kinds = async (i: number): Promise<string> => {
      switch (i % 5) {
        case 0: {
          const t = await openTunnel({ port: handedPort }, `127.0.0.1:${echo.port}`);
          return (await echoThrough(t, "x")).toString() === "xbye 1" ? "tunnel" : "bad tunnel";
        }
        case 1:
          return (await onPort(`CONNECT 127.0.0.1:${echo.port} HTTP/1.1\r\nHost: x\r\n\r\n`, true)).join(",");
        case 2:
          return (await onPort(`GET ${u}/a${i} HTTP/1.1\r\n${h}Connection: close\r\n\r\n`)).join(",");
        case 3:
          return (await onPort(`GET ${u}/a HTTP/1.1\r\n${h}\r\nPOST ${u}/b HTTP/1.1\r\n${h}Content-Length: 2\r\nConnection: close\r\n\r\nhi`)).join(",");
        default:
          return (await onPort(`GET http://blocked.test/ HTTP/1.1\r\nHost: blocked.test\r\nConnection: close\r\n\r\n`)).join(",");
      }
    };
    await pool(500, 50, kinds);
    await settle();
    const before = openFds();
    const results = await pool(10_000, 50, kinds);
    await settle();
    const after = openFds();
    const counts = results.reduce<Record<string, number>>((m, r) => ((m[r] = (m[r] ?? 0) + 1), m), {});
    expect(counts).toEqual({ tunnel: 2000, "200": 4000, "200,200": 2000, "403": 2000 });
    expect(proxy.active()).toBe(0);
    expect(after - before).toBeLessThan(10);
  }, 120_000);
});
