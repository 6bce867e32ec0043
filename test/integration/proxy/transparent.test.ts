// The proxy's transparent entry on real sockets: a connection to an address that stands for a name is checked as
// CONNECT name:port (or plain HTTP), by the same decision as the proxy path, and its TLS server name or HTTP Host must
// be that name. Real clients: Bun's TLS, curl. The listener is a real 0.0.0.0 socket; connections reach it at
// 127.77.x.y, as they do inside a container.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { createServer as createHttpsServer } from "node:https";
import { connect as tlsConnect } from "node:tls";
import { join } from "node:path";
import { fdPassing } from "../../../shims/fd-pass";
import type { EgressEvent } from "../../../src/core/egress-events";
import { startEgressProxy, type EgressProxy } from "../../../src/proxy/egress-proxy";
import { httpServer, tempDir } from "./helpers";

const lib = fdPassing();
const skip = lib === null ? "no fd passing on this platform" : undefined;

describe.skipIf(skip !== undefined)(`transparent entry${skip ? ` (skipped: ${skip})` : ""}`, () => {
  let tmp: ReturnType<typeof tempDir>;
  let proxy: EgressProxy;
  let https: { port: number; close(): void };
  let web: Awaited<ReturnType<typeof httpServer>>;
  let listenPort = 0;
  let cert = "";
  const events: EgressEvent[] = [];
  const served: string[] = [];
  const names = new Map<string, string>([
    ["allowed.test", "127.77.0.2"],
    ["blocked.test", "127.77.0.3"],
    ["web.test", "127.77.0.4"],
  ]);

  beforeAll(async () => {
    tmp = tempDir();
    // A TLS site for allowed.test (and blocked.test, to show the refusal is the policy's, not the certificate's).
    const key = join(tmp.dir, "k.pem");
    const crt = join(tmp.dir, "c.pem");
    const r = Bun.spawnSync(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=allowed.test", "-addext", "subjectAltName=DNS:allowed.test,DNS:blocked.test,DNS:other.test", "-keyout", key, "-out", crt], { stderr: "pipe" });
    if (r.exitCode !== 0) throw new Error(r.stderr.toString());
    cert = readFileSync(crt, "utf8");
    const srv = createHttpsServer({ key: readFileSync(key), cert }, (req, res) => {
      served.push(String(req.headers.host));
      res.end(`tls hello ${req.url} host=${req.headers.host}`);
    });
    await new Promise<void>((res) => srv.listen(0, "127.0.0.1", () => res()));
    https = { port: (srv.address() as { port: number }).port, close: () => srv.close() };
    web = await httpServer();
    proxy = await startEgressProxy({
      socketPath: join(tmp.dir, "sb", "proxy.sock"),
      sandbox: { id: 1, name: "tp" },
      policy: () => ({ sandbox: [`allowed.test:${https.port}`, `web.test:${web.port}`], global: [], published: [`127.0.0.1:${https.port}`, `127.0.0.1:${web.port}`] }),
      resolve: async () => ["127.0.0.1"],
      onDecision: (e) => void events.push(e),
      names: { addressOf: (n) => names.get(n) ?? null, nameOf: (a) => [...names].find(([, x]) => x === a)?.[0] ?? null },
      transparentHttpPorts: [web.port],
      connectTimeoutMs: 1000,
    });
    const l = lib!.listenAll(0);
    listenPort = l.port;
    // As inside a container the client dials name-address:port; here the listener's port stands in for the site's.
    proxy.serveTransparent(l.fd, (s) => (s.localAddress ? { address: s.localAddress, port: s.localAddress === "127.77.0.4" ? web.port : https.port } : null));
  });
  afterAll(async () => {
    await proxy?.close();
    https?.close();
    await web?.close();
    tmp?.cleanup();
  });

  const tls = (address: string, servername: string | undefined): Promise<string> =>
    new Promise((resolve) => {
      const s = tlsConnect({ host: address, port: listenPort, ...(servername ? { servername } : {}), ca: cert, checkServerIdentity: () => undefined });
      let out = "";
      s.on("secureConnect", () => s.write(`GET /x HTTP/1.1\r\nHost: ${servername ?? "allowed.test"}\r\nConnection: close\r\n\r\n`));
      s.on("data", (d: Buffer) => (out += d.toString()));
      s.on("close", () => resolve(out));
      s.on("error", (e) => resolve(`error: ${e.message}`));
    });
  const last = (type: EgressEvent["type"]) => [...events].reverse().find((e) => e.type === type);

  test("an allowlisted name: a TLS client gets the site, and the audit marks the transparent path", async () => {
    events.length = 0;
    expect(await tls("127.77.0.2", "allowed.test")).toContain("tls hello /x host=allowed.test");
    await Bun.sleep(50);
    expect(last("closed")).toMatchObject({ type: "closed", path: "transparent", host: "allowed.test", port: https.port });
  });

  test("curl (no proxy at all) reaches it the same way", async () => {
    // Spawned without blocking: the proxy runs in this process.
    const r = Bun.spawn(["curl", "-sS", "--noproxy", "*", "--max-time", "5", "--cacert", join(tmp.dir, "c.pem"), "--resolve", `allowed.test:${listenPort}:127.77.0.2`, `https://allowed.test:${listenPort}/c`], { stdout: "pipe", stderr: "pipe" });
    expect(await new Response(r.stdout).text()).toContain("tls hello /c");
  });

  test("a name that is not allowed: refused connection, denied event with the suggestion (a pending approval)", async () => {
    events.length = 0;
    expect(await tls("127.77.0.3", "blocked.test")).not.toContain("tls hello");
    expect(last("denied")).toMatchObject({ path: "transparent", host: "blocked.test", reason: "not-allowlisted" });
    expect((last("denied") as { suggest: string | null }).suggest).not.toBeNull();
  });

  test("server-name-mismatch: a TLS server name other than the address's name is refused, the site never sees it", async () => {
    events.length = 0;
    expect(await tls("127.77.0.2", "other.test")).not.toContain("tls hello");
    expect(last("denied")).toMatchObject({ path: "transparent", host: "allowed.test", reason: "server-name-mismatch" });
    expect(served).not.toContain("other.test");
  });

  test("server-name-mismatch holds on the proxy path too: CONNECT allowed.test, then a ClientHello for another name", async () => {
    const through = (servername: string) =>
      new Promise<string>((resolve) => {
        const raw = require("node:net").connect({ path: proxy.socketPath });
        let head = "";
        const onHead = (d: Buffer) => {
          head += d.toString("latin1");
          if (!head.includes("\r\n\r\n")) return;
          raw.off("data", onHead);
          if (!head.startsWith("HTTP/1.1 200")) return resolve(`refused at CONNECT: ${head}`);
          const s = tlsConnect({ socket: raw, servername, ca: cert, checkServerIdentity: () => undefined });
          let out = "";
          s.on("secureConnect", () => s.write(`GET /y HTTP/1.1\r\nHost: ${servername}\r\nConnection: close\r\n\r\n`));
          s.on("data", (x: Buffer) => (out += x.toString()));
          s.on("close", () => resolve(out));
          s.on("error", (e: Error) => resolve(`error: ${e.message}`));
        };
        raw.on("data", onHead);
        raw.on("connect", () => raw.write(`CONNECT allowed.test:${https.port} HTTP/1.1\r\nHost: allowed.test:${https.port}\r\n\r\n`));
        raw.on("error", (e: Error) => resolve(`error: ${e.message}`));
      });
    expect(await through("allowed.test")).toContain("tls hello /y");
    events.length = 0;
    expect(await through("other.test")).not.toContain("tls hello");
    expect(last("denied")).toMatchObject({ path: "proxy", host: "allowed.test", reason: "server-name-mismatch" });
    expect(served).not.toContain("other.test");
  });

  test("a ClientHello naming no server is carried (nothing to disagree with)", async () => {
    expect(await tls("127.77.0.2", undefined)).toContain("tls hello /x");
  });

  test("an address the stub never gave out (an IP the sandbox chose) is refused as unnamed", async () => {
    events.length = 0;
    expect(await tls("127.77.0.99", "allowed.test")).not.toContain("tls hello");
    expect(last("denied")).toMatchObject({ path: "transparent", reason: "unnamed-address" });
  });

  test("plain HTTP: origin-form requests go to the name's site; a Host naming another server is refused", async () => {
    const get = (host: string, path = "/p") =>
      new Promise<string>((resolve) => {
        const s = require("node:net").connect({ host: "127.77.0.4", port: listenPort });
        let out = "";
        s.on("connect", () => s.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`));
        s.on("data", (d: Buffer) => (out += d.toString()));
        s.on("close", () => resolve(out));
        s.on("error", () => resolve(out));
      });
    const ok = await get(`web.test:${web.port}`);
    expect(ok).toContain(`hello GET /p host=web.test:${web.port}`);
    events.length = 0;
    const bad = await get("evil.test");
    expect(bad).toContain("400");
    expect(bad).not.toContain("hello");
    expect(last("denied")).toMatchObject({ path: "transparent", reason: "server-name-mismatch" });
    // An absolute form naming another host is refused the same way; the proxy's own paths are not served here.
    expect(await get(`web.test:${web.port}`, "http://evil.test/")).toContain("400");
    expect(await get(`web.test:${web.port}`, "/sbx/names?name=x.test")).toContain("hello GET /sbx/names");
  });

  test("/sbx/transparent: the ports at once when the forwarder's differ; held while they are the same", async () => {
    const ask = async (known: string, ms: number) => {
      const ac = new AbortController();
      const t = setTimeout(() => ac.abort(), ms);
      try {
        const r = await fetch(`http://localhost/sbx/transparent?known=${known}`, { unix: proxy.socketPath, signal: ac.signal } as RequestInit);
        return ((await r.json()) as { ports: number[] }).ports;
      } catch {
        return "held";
      } finally {
        clearTimeout(t);
      }
    };
    // 80 and 443, and the ports the allowlist names (allowed.test:<https>, web.test:<web>), in order.
    const want = [80, 443, https.port, web.port].sort((a, b) => a - b);
    expect(await ask("80,443", 2000)).toEqual(want);
    expect(await ask(want.join(","), 600)).toBe("held");
    // A sandbox cannot pile long polls up: past a few held at once, the next is answered at once.
    const held = Array.from({ length: 4 }, () => ask(want.join(","), 1500));
    await Bun.sleep(100);
    expect(await ask(want.join(","), 1000)).toEqual(want);
    expect(await Promise.all(held)).toEqual(["held", "held", "held", "held"]);
  });

  test("the stub's question: /sbx/names gives the name's address; a bad name is a 400", async () => {
    const ask = async (n: string) => {
      const r = await fetch(`http://localhost/sbx/names?name=${encodeURIComponent(n)}`, { unix: proxy.socketPath } as RequestInit);
      return { status: r.status, body: (await r.json()) as Record<string, string> };
    };
    expect(await ask("Allowed.TEST.")).toEqual({ status: 200, body: { name: "allowed.test", address: "127.77.0.2" } });
    expect((await ask("1.2.3.4")).status).toBe(400);
    expect((await ask("bad name")).status).toBe(400);
  });
});
