// The LLM handler's way out to the provider (node:http's client, on its own agents or a parent proxy's), attacked as a
// sandbox, a provider or the host's own environment could. Each invariant is proved with the handler's own agents and
// with agents given to it (as the parent proxy's are, sys/parent.ts). Bun's fetch was tried as this transport and is
// not used: it drops what a provider sent just before it cut the stream, see "llm-stream-fidelity" below and
// ARCHITECTURE.md. Everything is on 127.0.0.1: a fake provider per test, the handler on a node:http server as the
// proxy's origin handler is, and a raw client for the sandbox.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { Agent as HttpAgent, createServer, request, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import { connect, createServer as createNetServer, type Server as NetServer, type Socket } from "node:net";
import { gzipSync } from "node:zlib";
import { join } from "node:path";
import { createLlmHandler } from "../../../src/llm/handler";
import { llmServer } from "../../support/llm-server";
import type { CallUsage } from "../../../src/core/llm-usage";

const KEY = "sk-ant-api03-HOSTKEY-transport-0123456789abcdef";
const MiB = 1024 * 1024;

type Answer = (req: IncomingMessage, res: ServerResponse) => void;
let answer: Answer = (_req, res) => res.end("{}");
const seen: Array<{ method: string; url: string; headers: IncomingMessage["headers"] }> = [];
let provider: Server;
let providerUrl = "";
const closers: Array<() => void> = [];

beforeAll(async () => {
  provider = createServer((req, res) => {
    seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers });
    answer(req, res);
  });
  await listen(provider);
  providerUrl = `http://127.0.0.1:${portOf(provider)}`;
});
afterAll(async () => {
  provider.closeAllConnections();
  await new Promise<void>((r) => provider.close(() => r()));
});
afterEach(() => {
  seen.length = 0;
  for (const c of closers.splice(0)) c();
});

function portOf(s: Server | NetServer): number {
  const a = s.address();
  return typeof a === "object" && a ? a.port : 0;
}
function listen(s: Server | NetServer): Promise<void> {
  return new Promise((r) => s.listen(0, "127.0.0.1", () => r()));
}

/** The way out: the proxy's own pool (upstream.ts), straight out (the parent's is parent-proxy.test.ts's). */
const TRANSPORTS = {
  "the proxy's pool": () => undefined,
};

/** The handler for one test on its own server, counting into `records`; `upstream`: where the Anthropic route goes. */
async function handlerOn(transport: keyof typeof TRANSPORTS, upstream = providerUrl): Promise<{ port: number; records: CallUsage[] }> {
  const records: CallUsage[] = [];
  TRANSPORTS[transport]();
  const h = createLlmHandler({
    keys: () => ({ env: { ANTHROPIC_API_KEY: KEY } }),
    upstreams: { anthropic: upstream },
    budget: { admit: () => null, record: (u) => records.push(u) },
  });
  const s = llmServer(h);
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
  closers.push(() => s.close());
  return { port: portOf(s), records };
}

/** One call as an SDK makes it, read whole: status, headers, the body's bytes, and whether it was cut. */
function call(port: number, body = '{"model":"claude-sonnet-4-5","stream":true}'): Promise<{ status: number; headers: IncomingMessage["headers"]; body: Buffer; cut: boolean }> {
  return new Promise((resolve, reject) => {
    const q = request({ host: "127.0.0.1", port, method: "POST", path: "/llm/anthropic/v1/messages", headers: { "content-type": "application/json", "x-api-key": "sbx-placeholder" } }, (res) => {
      const parts: Buffer[] = [];
      res.on("data", (c: Buffer) => parts.push(c));
      res.on("error", () => undefined);
      res.on("close", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts), cut: !res.complete }));
    });
    q.on("error", reject);
    q.end(body);
  });
}

async function until(ok: () => boolean, ms = 5000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!ok() && Date.now() < end) await Bun.sleep(10);
  return ok();
}

for (const transport of Object.keys(TRANSPORTS) as Array<keyof typeof TRANSPORTS>) {
  describe(`llm-credential-scope (${transport}): the host's key goes to the provider's endpoint and nowhere else`, () => {
    test("an answer that redirects (307 to another host) reaches the sandbox as it is; the Location is never asked, with or without the key", async () => {
      const elsewhere: string[] = [];
      const other = createServer((req, res) => {
        elsewhere.push(JSON.stringify(req.headers));
        res.end("followed");
      });
      await listen(other);
      closers.push(() => other.close());
      const location = `http://127.0.0.1:${portOf(other)}/steal`;
      answer = (req, res) => {
        req.resume();
        res.writeHead(307, { location, "content-type": "text/plain" });
        res.end("moved");
      };
      const { port } = await handlerOn(transport);
      const r = await call(port);
      expect({ status: r.status, location: r.headers.location, body: r.body.toString() }).toEqual({ status: 307, location, body: "moved" });
      await Bun.sleep(100);
      expect(elsewhere).toEqual([]);
      expect(seen.map((s) => s.headers["x-api-key"])).toEqual([KEY]);
    });

    test("with HTTPS_PROXY, HTTP_PROXY and ALL_PROXY in the daemon's environment and no parent given, nothing goes through that proxy", async () => {
      const viaProxy: string[] = [];
      const proxy = createServer((req, res) => {
        viaProxy.push(`${req.method} ${req.url} ${JSON.stringify(req.headers)}`);
        res.writeHead(502).end();
      });
      proxy.on("connect", (req, sock: Socket) => {
        viaProxy.push(`CONNECT ${req.url}`);
        sock.end("HTTP/1.1 502 no\r\n\r\n");
      });
      await listen(proxy);
      closers.push(() => proxy.close());
      const names = ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"];
      const saved = names.map((n) => [n, process.env[n]] as const);
      const restore = () => {
        for (const [n, v] of saved) v === undefined ? delete process.env[n] : (process.env[n] = v);
      };
      closers.push(restore);
      for (const n of names) process.env[n] = `http://127.0.0.1:${portOf(proxy)}`;
      answer = (req, res) => {
        req.resume();
        res.end('{"ok":true}');
      };
      const { port } = await handlerOn(transport);
      const r = await call(port, '{"model":"claude-sonnet-4-5"}');
      restore();
      expect(viaProxy).toEqual([]);
      expect({ status: r.status, body: r.body.toString() }).toEqual({ status: 200, body: '{"ok":true}' });
      expect(seen.length).toBe(1);
    });
  });

  describe(`llm-no-secret-inside (${transport}): answer headers that carry credentials, cookies or hop-by-hop meaning never reach the sandbox`, () => {
    test("set-cookie, proxy auth, credentials (by name or echoed in a value), hop-by-hop and what Connection names are stripped; the rest passes", async () => {
      answer = (req, res) => {
        req.resume();
        // Raw header lines, as a provider or a gateway in front of it could send them.
        res.writeHead(200, [
          ["content-type", "application/json"],
          ["x-request-id", "req_123"],
          ["set-cookie", "session=abc; Path=/"],
          ["set-cookie2", "old=1"],
          ["proxy-authenticate", 'Basic realm="corp"'],
          ["authorization", `Bearer ${KEY}`],
          ["x-api-key", KEY],
          ["x-debug-request-headers", `x-api-key: ${KEY}`],
          ["connection", "keep-alive, x-hop-secret"],
          ["x-hop-secret", "only-for-the-next-hop"],
          ["keep-alive", "timeout=5"],
          ["upgrade", "h2c"],
        ].flat());
        res.end("{}");
      };
      const { port } = await handlerOn(transport);
      const r = await call(port);
      const names = Object.keys(r.headers);
      for (const n of ["set-cookie", "set-cookie2", "proxy-authenticate", "authorization", "x-api-key", "x-debug-request-headers", "x-hop-secret", "upgrade"]) expect({ n, has: names.includes(n) }).toEqual({ n, has: false });
      expect(JSON.stringify(r.headers)).not.toContain(KEY);
      expect(r.headers["x-request-id"]).toBe("req_123");
      expect(r.status).toBe(200);
    });
  });

  describe(`llm-stream-fidelity (${transport}): the sandbox gets the provider's bytes as they were sent, and the call is counted`, () => {
    test("a compressed answer (the provider ignored accept-encoding: identity) passes byte for byte, counted by its size", async () => {
      const gz = gzipSync(Buffer.from(JSON.stringify({ content: "x".repeat(5000), usage: { input_tokens: 1, output_tokens: 1 } })));
      answer = (req, res) => {
        req.resume();
        res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip", "content-length": gz.length });
        res.end(gz);
      };
      const { port, records } = await handlerOn(transport);
      const r = await call(port, '{"model":"claude-sonnet-4-5"}');
      expect(seen[0]?.headers["accept-encoding"]).toBe("identity");
      expect({ status: r.status, encoding: r.headers["content-encoding"], length: r.headers["content-length"], same: r.body.equals(gz) }).toEqual({ status: 200, encoding: "gzip", length: String(gz.length), same: true });
      expect(await until(() => records.length > 0)).toBe(true);
      // Encoded: its usage cannot be read, so each byte is counted as a token (never less than a report would be).
      expect(records).toMatchObject([{ model: "claude-sonnet-4-5", estimated: true, output: gz.length }]);
    });

    test("streaming stays streaming: the sandbox has the first event while the provider holds the rest back, and the rest after", async () => {
      let release = () => undefined as void;
      const held = new Promise<void>((r) => (release = r));
      answer = (req, res) => {
        req.resume();
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write('event: message_start\ndata: {"type":"message_start","message":{"model":"claude-sonnet-4-5","usage":{"input_tokens":7,"output_tokens":1}}}\n\n');
        // The rest only once the sandbox has the first (or after 5 s, when the test has failed anyway).
        void Promise.race([held, Bun.sleep(5000)]).then(() => {
          for (let i = 0; i < 50; i++) res.write(`event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"w${i}"}}\n\n`);
          res.end('event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":50}}\n\n');
        });
      };
      const { port, records } = await handlerOn(transport);
      const t0 = Date.now();
      const got = await new Promise<{ firstAt: number; body: string }>((resolve, reject) => {
        const q = request({ host: "127.0.0.1", port, method: "POST", path: "/llm/anthropic/v1/messages", headers: { "content-type": "application/json" } }, (res) => {
          let body = "";
          let firstAt = -1;
          res.on("data", (c: Buffer) => {
            body += c.toString();
            if (firstAt < 0 && body.includes("message_start")) {
              firstAt = Date.now() - t0;
              release();
            }
          });
          res.on("end", () => resolve({ firstAt, body }));
        });
        q.on("error", reject);
        q.end('{"model":"claude-sonnet-4-5","stream":true}');
      });
      expect(got.firstAt).toBeGreaterThanOrEqual(0);
      expect(got.firstAt).toBeLessThan(4000);
      expect(got.body.match(/content_block_delta/g)?.length).toBe(100);
      expect(await until(() => records.length === 1)).toBe(true);
      expect([records[0]!.output, records[0]!.estimated]).toEqual([50, false]);
    });

    test("what the provider sent before it cut the stream reaches the sandbox, which sees the cut; the call is counted from it", async () => {
      // The provider's last bytes and its end arrive together (an overloaded upstream dropping the connection).
      const raw = createNetServer((s) => {
        s.once("data", () => {
          s.write(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n" +
              chunk('event: message_start\ndata: {"type":"message_start","message":{"model":"claude-sonnet-4-5","usage":{"input_tokens":800,"output_tokens":1}}}\n\n') +
              chunk('event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"text":"hi"}}\n\n'),
          );
          s.destroy();
        });
      });
      await listen(raw);
      closers.push(() => raw.close());
      const { port, records } = await handlerOn(transport, `http://127.0.0.1:${portOf(raw)}`);
      const r = await call(port);
      expect({ status: r.status, cut: r.cut, start: r.body.toString().includes("message_start"), delta: r.body.toString().includes('"hi"') }).toEqual({ status: 200, cut: true, start: true, delta: true });
      expect(await until(() => records.length > 0)).toBe(true);
      expect(records).toMatchObject([{ input: 800, estimated: true }]);
    });

    test("the sandbox leaving mid-stream ends the request to the provider (it sees the close) and the call is counted", async () => {
      let providerClosed = false;
      answer = (req, res) => {
        req.resume();
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write('event: message_start\ndata: {"type":"message_start","message":{"model":"claude-sonnet-4-5","usage":{"input_tokens":50,"output_tokens":1}}}\n\n');
        const t = setInterval(() => res.write('event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"text":"more"}}\n\n'), 20);
        res.on("close", () => {
          clearInterval(t);
          providerClosed = true;
        });
      };
      const { port, records } = await handlerOn(transport);
      await new Promise<void>((resolve, reject) => {
        const q = request({ host: "127.0.0.1", port, method: "POST", path: "/llm/anthropic/v1/messages", headers: { "content-type": "application/json" } }, (res) => {
          res.once("data", () => {
            q.destroy();
            resolve();
          });
        });
        q.on("error", () => undefined);
        setTimeout(() => reject(new Error("no first event")), 5000);
        q.end('{"model":"claude-sonnet-4-5","stream":true}');
      });
      expect(await until(() => providerClosed)).toBe(true);
      expect(await until(() => records.length > 0)).toBe(true);
      expect(records).toMatchObject([{ model: "claude-sonnet-4-5", input: 50, estimated: true }]);
      expect(records.length).toBe(1);
    });
  });

  describe(`bounded (${transport}): one call holds the provider's or the sandbox's pace, never the daemon's memory`, () => {
    test("a sandbox that reads slowly holds the provider's stream: the provider gets to write little more than socket buffers", async () => {
      let written = 0;
      answer = (req, res) => {
        req.resume();
        res.writeHead(200, { "content-type": "text/event-stream" });
        const block = Buffer.from(`data: {"type":"ping","pad":"${"p".repeat(64 * 1024 - 40)}"}\n\n`);
        const pump = () => {
          while (written < 512 * MiB) {
            written += block.length;
            if (!res.write(block)) return void res.once("drain", pump);
          }
          res.end();
        };
        pump();
        res.on("close", () => (written = -written));
      };
      const { port } = await handlerOn(transport);
      // The sandbox: a raw socket that sends its request and then reads nothing.
      const s = connect(port, "127.0.0.1");
      closers.push(() => s.destroy());
      const body = '{"model":"claude-sonnet-4-5","stream":true}';
      s.write(`POST /llm/anthropic/v1/messages HTTP/1.1\r\nhost: sbx\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
      s.pause();
      await until(() => written > 0);
      await Bun.sleep(1500);
      // Loopback socket buffers on two legs hold a few MiB each; a relay that buffered would have taken all 512.
      expect(Math.abs(written)).toBeLessThan(64 * MiB);
    });

    test("a request body is taken at the provider's pace: a provider that reads nothing holds the sandbox's upload", async () => {
      let providerGot = 0;
      answer = (req, res) => {
        req.pause();
        setTimeout(() => {
          req.on("data", (c: Buffer) => (providerGot += c.length));
          req.on("end", () => res.end("{}"));
          req.resume();
        }, 1500);
      };
      const { port } = await handlerOn(transport);
      const total = 512 * MiB;
      const s = connect(port, "127.0.0.1");
      closers.push(() => s.destroy());
      let sent = 0;
      const block = Buffer.alloc(MiB, 0x20);
      s.write(`POST /llm/anthropic/v1/messages HTTP/1.1\r\nhost: sbx\r\ncontent-type: application/json\r\ncontent-length: ${total}\r\n\r\n`);
      const pump = () => {
        while (sent < total) {
          sent += block.length;
          if (!s.write(block)) return void s.once("drain", pump);
        }
      };
      pump();
      await Bun.sleep(1200);
      expect(providerGot).toBe(0);
      // Held: the handler's bound (1 MiB) and socket buffers, ≈10–15 MiB here; a relay that wrote on regardless took
      // 40–70 MiB in this time, and would take all 512 in time.
      expect(sent).toBeLessThan(32 * MiB);
    });
  });
}

/** One chunk of a chunked body. */
function chunk(s: string): string {
  return `${Buffer.byteLength(s).toString(16)}\r\n${s}\r\n`;
}

describe("llm-no-secret-inside: BUN_CONFIG_VERBOSE_FETCH in the daemon's environment prints no key", () => {
  test.each(Object.keys(TRANSPORTS))("%s: a call's request is not logged with its headers", async (transport) => {
    answer = (req, res) => {
      req.resume();
      res.end('{"ok":true}');
    };
    const child = Bun.spawn([process.execPath, join(import.meta.dir, "transport-child.ts"), providerUrl, transport, KEY], {
      env: { ...process.env, BUN_CONFIG_VERBOSE_FETCH: "curl" },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
    expect({ code, answered: out.includes('{"ok":true}') }).toEqual({ code: 0, answered: true });
    expect(seen.map((s) => s.headers["x-api-key"])).toEqual([KEY]);
    expect(out + err).not.toContain(KEY);
  });
});
