// The full in-sandbox path on real sockets: client → forwarder (127.0.0.1:port) → proxy unix socket → loopback server; fail closed.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { connect } from "node:net";
import { startEgressProxy, type EgressProxy } from "../../../src/proxy/egress-proxy";
import { echoServer, echoThrough, httpServer, openTunnel, tempDir } from "./helpers";

const FORWARDER = join(import.meta.dir, "../../../shims/forwarder.ts");

let tmp: ReturnType<typeof tempDir>;
let echo: Awaited<ReturnType<typeof echoServer>>;
let web: Awaited<ReturnType<typeof httpServer>>;
let proxy: EgressProxy | null;
let socketPath: string;
let fw: ReturnType<typeof Bun.spawn>;
let fwPort: number;

const startProxy = () =>
  startEgressProxy({
    socketPath,
    sandbox: { id: 1, name: "demo" },
    policy: () => ({ sandbox: [`web.test:${web.port}`], global: [], published: [`127.0.0.1:${echo.port}`, `127.0.0.1:${web.port}`] }),
    resolve: async (h) => (h === "web.test" ? ["127.0.0.1"] : []),
  });

beforeAll(async () => {
  tmp = tempDir();
  socketPath = join(tmp.dir, "sb", "proxy.sock");
  echo = await echoServer();
  web = await httpServer();
  proxy = await startProxy();
  fw = Bun.spawn(["bun", FORWARDER, "--port", "0"], { env: { PATH: process.env.PATH ?? "", SBX_PROXY_SOCKET: socketPath }, stdout: "pipe", stderr: "pipe" });
  const { value } = await (fw.stdout as ReadableStream<Uint8Array>).getReader().read();
  const line = new TextDecoder().decode(value);
  fwPort = Number(/127\.0\.0\.1:(\d+)/.exec(line)?.[1]);
  expect(fwPort).toBeGreaterThan(0);
});
afterAll(async () => {
  fw.kill();
  await fw.exited;
  await proxy?.close();
  await echo.close();
  await web.close();
  tmp.cleanup();
});

describe("forwarder → socket → proxy → server", () => {
  test("a CONNECT tunnel through the forwarder, with half-close", async () => {
    const t = await openTunnel({ port: fwPort }, `127.0.0.1:${echo.port}`);
    expect(t.status).toBe(200);
    const payload = Buffer.alloc(3_000_000, 7);
    const out = await echoThrough(t, payload);
    expect(out.length).toBe(payload.length + `bye ${payload.length}`.length);
    expect(out.subarray(payload.length).toString()).toBe(`bye ${payload.length}`);
  });

  test("plain HTTP through the forwarder as an ordinary HTTP proxy (fetch's proxy option)", async () => {
    const r = await fetch(`http://web.test:${web.port}/hello`, { proxy: `http://127.0.0.1:${fwPort}` });
    expect(r.status).toBe(200);
    expect(await r.text()).toContain(`hello GET /hello host=web.test:${web.port}`);
  });

  test("a refusal reaches the client intact: 403, header, body", async () => {
    const r = await fetch("http://blocked.test/", { proxy: `http://127.0.0.1:${fwPort}` });
    expect(r.status).toBe(403);
    expect(r.headers.get("x-sbx-blocked")).toBe("not-allowlisted blocked.test:80");
    expect(await r.text()).toContain("sbx allow blocked.test --sandbox demo");
  });

  test("fail closed: with the proxy down the forwarder drops connections; it works again once the proxy is back", async () => {
    await proxy!.close();
    proxy = null;
    const got = await new Promise<string>((resolve) => {
      const s = connect({ port: fwPort, host: "127.0.0.1" });
      let out = "";
      s.on("data", (d) => (out += d));
      s.on("close", () => resolve(out));
      s.on("error", () => {});
      s.write(`CONNECT 127.0.0.1:${echo.port} HTTP/1.1\r\nHost: x\r\n\r\n`);
    });
    expect(got).toBe("");
    proxy = await startProxy();
    const t = await openTunnel({ port: fwPort }, `127.0.0.1:${echo.port}`);
    expect(t.status).toBe(200);
    t.socket.destroy();
  });
});
